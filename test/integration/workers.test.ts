// test-lists: default
// WORKERS > 1 (issue 16, process/workers.ts): a supervisor and serving processes sharing the port
// with SO_REUSEPORT. Which worker a connection reaches is read from the kernel (`ss -tnp`), so
// the tests know when they have one connection on each worker instead of hoping for it.
import { expect, test } from "bun:test";
import fs from "node:fs";
import net from "node:net";
import { childrenOf, isRunning, waitGone } from "../support/processes.ts";
import { client, runCli, startServer, tempDir, type RunningServer } from "../support/server.ts";
import { RawHttp } from "../support/raw-http.ts";
import { serverSide } from "../support/sockets.ts";
import { createUpload, headOffset, TUS } from "../support/tus.ts";
import { waitFor } from "../support/wait.ts";

const WORKERS = { WORKERS: "2" };

/** An open TCP connection to `port` and the worker serving it. */
async function connect(port: number): Promise<{ c: RawHttp; pid: number }> {
  const c = await RawHttp.connect(port);
  // The kernel lists the accepted side once the worker's accept() took it; one request makes sure.
  c.write("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
  await c.next();
  const pid = serverSide(port, c.socket.localPort!)?.pid;
  if (pid === undefined) throw new Error("no serving process found for the connection");
  return { c, pid };
}

/** Opens connections until one is served by each of `pids`; the others are closed. */
async function oneConnectionPerWorker(port: number, pids: number[]): Promise<Map<number, RawHttp>> {
  const found = new Map<number, RawHttp>();
  for (let i = 0; i < 200 && found.size < pids.length; i++) {
    const { c, pid } = await connect(port);
    if (found.has(pid)) c.socket.destroy();
    else found.set(pid, c);
  }
  if (found.size < pids.length) throw new Error(`connections reached only ${found.size} of ${pids.length} workers`);
  return found;
}

function workersOf(server: RunningServer): number[] {
  return childrenOf(server.proc.pid);
}

test("WORKERS=2: two serving processes, both taking connections, one aggregated /metrics", async () => {
  await using server = await startServer({ env: WORKERS });
  const pids = workersOf(server);
  expect(pids).toHaveLength(2);
  expect(server.output()).toContain(`2 worker processes (pids ${pids.join(", ")})`);
  const sockets = await oneConnectionPerWorker(server.port, pids);
  for (const s of sockets.values()) s.socket.destroy();

  // Files counted once (each worker reads the same store), requests summed over the workers.
  const key = await server.mintKey("alice@example.com");
  for (let i = 0; i < 3; i++) await client(server, key).upload("x");
  const before = await healthzCount(server);
  for (let i = 0; i < 30; i++) {
    const res = await fetch(`${server.url}/healthz`, { headers: { connection: "close" } });
    expect(res.status).toBe(200);
  }
  const text = await (await fetch(`${server.url}/metrics`)).text();
  expect(text).toContain("cubby_files 3\n");
  expect(metricValue(text, 'cubby_http_requests_total{method="GET",route="/healthz",status="200"}')).toBe(before + 30);
});

async function healthzCount(server: RunningServer): Promise<number> {
  return metricValue(await (await fetch(`${server.url}/metrics`)).text(), 'cubby_http_requests_total{method="GET",route="/healthz",status="200"}');
}

function metricValue(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

test("a worker that dies is started again; the others serve meanwhile", async () => {
  await using server = await startServer({ env: WORKERS });
  const [victim, survivor] = workersOf(server) as [number, number];
  process.kill(victim, "SIGKILL");
  // Connections the kernel had queued on the victim's socket are reset with it. Once the
  // supervisor has reaped it (its last thread gone, its sockets closed: a zombie leader may still
  // hold them), the survivor takes every new connection until the victim is back.
  await server.waitForErrors(`(pid ${victim}) exited with signal SIGKILL; starting it again`);
  for (let i = 0; i < 10; i++) expect((await fetch(`${server.url}/healthz`, { headers: { connection: "close" } })).status).toBe(200);
  await server.waitForOutput(/worker \d listening again \(pid (\d+)\)/);
  const now = workersOf(server);
  expect(now).toHaveLength(2);
  expect(now).toContain(survivor);
  expect(now).not.toContain(victim);
  const sockets = await oneConnectionPerWorker(server.port, now);
  for (const s of sockets.values()) s.socket.destroy();
});

test("SIGTERM drains every worker: downloads in flight on each finish, then all exit 0", async () => {
  await using server = await startServer({ env: WORKERS });
  const key = await server.mintKey("alice@example.com");
  const size = 16 * 1024 * 1024;
  const file = await client(server, key).upload(new Uint8Array(size).fill(7), "?visibility=public");
  const sockets = await oneConnectionPerWorker(server.port, workersOf(server));
  // Each client reads the first bytes of its download, then stops reading: the response is
  // under way on both workers, held back by TCP flow control, when the stop comes.
  const downloads = [...sockets.values()].map(({ socket }) => {
    let bytes = 0;
    let started: () => void = () => {};
    const underway = new Promise<void>((resolve) => (started = resolve));
    socket.on("data", (c: Buffer) => {
      bytes += c.length;
      if (bytes === c.length) {
        socket.pause();
        started();
      }
    });
    const done = new Promise<number>((resolve) => socket.on("close", () => resolve(bytes)));
    socket.write(`GET /${file.id} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
    return { underway, done };
  });
  await Promise.all(downloads.map((d) => d.underway));
  const pids = workersOf(server);
  server.proc.kill("SIGTERM");
  await server.waitForOutput("SIGTERM: stopping");
  for (const s of sockets.values()) s.socket.resume();
  for (const bytes of await Promise.all(downloads.map((d) => d.done))) expect(bytes).toBeGreaterThan(size);
  expect(await server.proc.exited).toBe(0);
  expect(await waitGone(pids, 5000)).toBe(true);
});

test("workers stop by themselves when the supervisor is killed", async () => {
  await using server = await startServer({ env: WORKERS });
  const pids = workersOf(server);
  process.kill(server.proc.pid, "SIGKILL");
  await server.proc.exited;
  expect(await waitGone(pids, 15_000)).toBe(true);
});

test("a port another program holds is refused, not shared", async () => {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, () => resolve()));
  try {
    const port = (holder.address() as net.AddressInfo).port;
    using data = tempDir();
    const r = await runCli(["serve", "--port", String(port), "--data-dir", data.path], { env: WORKERS });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`port ${port} is already in use by another program`);
  } finally {
    holder.close();
  }
});

test("one resumable upload written from two workers at once: one writer, the other 409, the bytes intact", async () => {
  await using server = await startServer({ env: WORKERS });
  const key = await server.mintKey("alice@example.com");
  const url = await createUpload(server.url, key, 8);
  const sockets = [...(await oneConnectionPerWorker(server.port, workersOf(server))).values()] as [RawHttp, RawHttp];
  const answer = async (s: RawHttp) => (await s.next("PATCH")).head;
  const patch = (body: string) =>
    `PATCH ${new URL(url).pathname} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ntus-resumable: ${TUS["tus-resumable"]}\r\nupload-offset: 0\r\ncontent-type: application/offset+octet-stream\r\ncontent-length: 8\r\n\r\n${body}`;
  // The first writer sends half its chunk and holds; the second, on the other worker, is refused.
  const first = answer(sockets[0]);
  sockets[0].write(patch("AAAA"));
  await waitForLock(server, new URL(url).pathname.split("/").pop()!);
  const second = answer(sockets[1]);
  sockets[1].write(patch("BBBBBBBB"));
  expect(await second).toStartWith("HTTP/1.1 409");
  sockets[0].write("AAAA");
  expect(await first).toStartWith("HTTP/1.1 204");
  for (const s of sockets) s.socket.destroy();
  expect(await headOffset(url, key)).toBe(8);
});

/** Waits until upload `id`'s lock file names its holder (its first writer holds it). */
async function waitForLock(server: RunningServer, id: string): Promise<void> {
  const file = `${server.dataDir}/uploads/${id}.lock`;
  // The holder writes its PID once it has the lock (storage/upload-locks.ts).
  await waitFor(async () => /^\d+$/.test(await Bun.file(file).text().catch(() => "")), `${file} to name its holder`, 5_000, 10);
  expect(isRunning(Number(await Bun.file(file).text()))).toBe(true);
}

test("rate-limit windows are shared by the workers: an address gets the budget once, whichever worker counts", async () => {
  await using server = await startServer({ env: { ...WORKERS, RATE_LIMIT_AUTH_FAILURES: "2" } });
  const [first, second] = [...(await oneConnectionPerWorker(server.port, workersOf(server))).values()] as [RawHttp, RawHttp];
  const fail = async (socket: RawHttp) => {
    const answer = responseStatus(socket);
    socket.write("GET /v1/files HTTP/1.1\r\nhost: x\r\nauthorization: Bearer cubby_wrong\r\n\r\n");
    return answer;
  };
  // One failure on each worker spends the budget of two; each worker then refuses the address.
  expect([await fail(first), await fail(second), await fail(first), await fail(second)]).toEqual(["401", "401", "429", "429"]);
  first.socket.destroy();
  second.socket.destroy();
});

// A content GET with a bearer key whose row and user a worker has cached is decided from the
// caches, without reading the shared rate-limit window (docs/design.md, "Rate limits and the
// answer decided now"): the key was verified before, and a guessing client is caught by its
// failed guesses, which every worker charges to the shared window. What a limited address still
// gets, whichever worker its connections reach: 429 for every guess, for REST and RPC with the
// right key, and for content GETs with the key once that worker has seen the address limited.
test("WORKERS=2: a limited address gets 429 for its guesses and its REST calls on both workers, and for content GETs once the worker has seen it limited", async () => {
  await using server = await startServer({ env: { ...WORKERS, RATE_LIMIT_AUTH_FAILURES: "2" } });
  const key = await server.mintKey("limited@example.com");
  const file = await client(server, key).upload("internal bytes", "?visibility=internal");
  const [first, second] = [...(await oneConnectionPerWorker(server.port, workersOf(server))).values()] as [RawHttp, RawHttp];
  const send = async (socket: RawHttp, target: string, bearer: string) => {
    socket.write(`GET ${target} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${bearer}\r\n\r\n`);
    return responseStatus(socket);
  };
  // Each worker verifies the key and caches its row, its user and the file's row.
  for (const socket of [first, second, first, second]) expect(await send(socket, `/${file.id}`, key)).toBe("200");
  // One failed guess on each worker spends the budget of two; every further guess is refused.
  const wrong = "cubby_wrong0000000000000000000000000000000";
  expect([await send(first, `/${file.id}`, wrong), await send(second, "/v1/files", wrong)]).toEqual(["401", "401"]);
  expect([await send(first, "/v1/files", key), await send(second, "/v1/files", key)]).toEqual(["429", "429"]);
  expect([await send(first, `/${file.id}`, wrong), await send(second, `/${file.id}`, wrong)]).toEqual(["429", "429"]);
  // Both workers have now seen the address limited: the cached key is refused on content URLs too.
  expect([await send(first, `/${file.id}`, key), await send(second, `/${file.id}`, key)]).toEqual(["429", "429"]);
  first.socket.destroy();
  second.socket.destroy();
});

/** The status of the next whole response on `c`. */
async function responseStatus(c: RawHttp): Promise<string> {
  return (await response(c)).status;
}

test("/metrics with one worker stopped (SIGSTOP): a scrape on the other answers within the bound and names the stopped one", async () => {
  await using server = await startServer({ env: WORKERS });
  const pids = workersOf(server);
  // A keep-alive connection on each worker, opened while both run: the scrape goes out on the
  // live one's (a new connection may be queued on the stopped worker's socket, and hang there).
  const sockets = await oneConnectionPerWorker(server.port, pids);
  const [live, stopped] = pids as [number, number];
  const workerNumber = (pid: number) => /(?:^|\0)CUBBY_WORKER=(\d+)\0/.exec(fs.readFileSync(`/proc/${pid}/environ`, "latin1"))![1]!;
  process.kill(stopped, "SIGSTOP");
  try {
    const started = performance.now();
    const answer = response(sockets.get(live)!);
    sockets.get(live)!.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
    const { status, body } = await answer;
    const ms = performance.now() - started;
    console.log(`scrape with worker ${workerNumber(stopped)} stopped answered in ${ms.toFixed(0)} ms`);
    expect(status).toBe("200");
    // The gathering's deadline is 500 ms (process/workers.ts); 2 s before it was bounded.
    expect(ms).toBeLessThan(1500);
    expect(body).toContain(`cubby_metrics_worker_up{worker="${workerNumber(stopped)}"} 0\n`);
    expect(body).toContain(`cubby_metrics_worker_up{worker="${workerNumber(live)}"} 1\n`);
    expect(body).toContain('cubby_http_requests_total{method="GET",route="/healthz",status="200"}');
    await server.waitForErrors(`metrics: worker ${workerNumber(stopped)} (pid ${stopped}) did not answer within 500 ms`);
    await expectPromtoolAccepts(body);
  } finally {
    process.kill(stopped, "SIGCONT");
  }
  // Running again, it answers the next scrape, and says so once.
  const again = response(sockets.get(live)!);
  sockets.get(live)!.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
  expect((await again).body).toContain(`cubby_metrics_worker_up{worker="${workerNumber(stopped)}"} 1\n`);
  await server.waitForOutput(`metrics: worker ${workerNumber(stopped)} (pid ${stopped}) answers again`);
  for (const s of sockets.values()) s.socket.destroy();
});

/** `promtool check metrics` (Debian's prometheus package) accepts `text`; skipped without promtool unless in CI. */
async function expectPromtoolAccepts(text: string): Promise<void> {
  const promtool = Bun.which("promtool");
  if (promtool === null) {
    if (process.env.CI) throw new Error("promtool is missing (Debian: apt-get install prometheus)");
    console.warn("skipped the promtool check: promtool is not installed (Debian's prometheus package)");
    return;
  }
  const check = Bun.spawn([promtool, "check", "metrics"], { stdin: new TextEncoder().encode(text), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(check.stdout).text(), new Response(check.stderr).text(), check.exited]);
  expect({ code, out, err }).toEqual({ code: 0, out: "", err: "" });
}

/** The next whole response on `c`: its status (as text) and body (UTF-8). */
async function response(c: RawHttp): Promise<{ status: string; body: string }> {
  const { status, body } = await c.next();
  return { status: String(status), body: body.toString("utf8") };
}

test("/metrics with the supervisor stopped (SIGSTOP): a worker fails the scrape with 503 in about 2 s instead of hanging", async () => {
  await using server = await startServer({ env: WORKERS });
  const sockets = await oneConnectionPerWorker(server.port, workersOf(server));
  const socket = [...sockets.values()][0]!;
  process.kill(server.proc.pid, "SIGSTOP");
  try {
    const started = performance.now();
    const answer = response(socket);
    socket.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
    const { status, body } = await answer;
    expect(performance.now() - started).toBeLessThan(4000);
    expect({ status, body: JSON.parse(body) }).toEqual({ status: "503", body: { code: 14, message: "metrics: the supervisor did not answer within 2000 ms; try again later", details: [] } });
  } finally {
    process.kill(server.proc.pid, "SIGCONT");
  }
  for (const s of sockets.values()) s.socket.destroy();
});
