// test-lists: workers postgres-s3
// WebDAV across processes (CONTRACT §12): locks live in the metadata store, so a lock taken
// through one worker (or instance) holds on every other, and PUTs racing for one new name make
// one file. Run with WORKERS=2 (npm run test:workers) and on PostgreSQL + S3
// (test:postgres-s3): one connection per serving process, found with the kernel's socket table,
// so each request's worker is known, not hoped for (two connections to the one process else).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { basicAuth } from "../support/dav.ts";
import { RawHttp } from "../support/raw-http.ts";
import { startServer, type RunningServer } from "../support/server.ts";
import { serverSide } from "../support/sockets.ts";

let server: RunningServer;
let auth: string;
/** One keep-alive connection per serving process. */
let conns: RawHttp[];

/** Opens connections until one is served by each serving process; the others are closed. */
async function onePerProcess(): Promise<RawHttp[]> {
  const pids = server.servingPids();
  const found = new Map<number, RawHttp>();
  for (let i = 0; i < 200 && found.size < pids.length; i++) {
    const c = await RawHttp.connect(server.port);
    c.write(`OPTIONS /dav/ HTTP/1.1\r\nhost: x\r\nauthorization: ${auth}\r\n\r\n`);
    await c.next("OPTIONS");
    const pid = serverSide(server.port, c.socket.localPort!)?.pid;
    if (pid === undefined || found.has(pid)) c.socket.destroy();
    else found.set(pid, c);
  }
  if (found.size < pids.length) throw new Error(`connections reached only ${found.size} of ${pids.length} serving processes`);
  return [...found.values()];
}

/** Sends one request on `c` and reads its answer. */
async function send(c: RawHttp, method: string, path: string, headers: Record<string, string> = {}, body = "") {
  const lines = Object.entries({ host: "x", authorization: auth, "content-length": String(Buffer.byteLength(body)), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  c.write(`${method} ${path} HTTP/1.1\r\n${lines.join("")}\r\n${body}`);
  return c.next(method);
}

const LOCKINFO = (scope: "exclusive" | "shared") =>
  `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:${scope}/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>test</D:owner></D:lockinfo>`;

beforeAll(async () => {
  server = await startServer({ checkResponses: false });
  auth = basicAuth(await server.mintKey("locks@example.com"));
  conns = await onePerProcess();
  if (conns.length === 1) conns.push(await RawHttp.connect(server.port));
});
afterAll(async () => {
  for (const c of conns ?? []) c.socket.destroy();
  await server[Symbol.asyncDispose]();
});

test("a lock taken through one process refuses a PUT without its token on every process (423), and lets one with it through", async () => {
  const [first] = conns as [RawHttp];
  expect((await send(first, "PUT", "/dav/locked.txt", {}, "v1")).status).toBe(201);
  const locked = await send(first, "LOCK", "/dav/locked.txt", { "content-type": "application/xml", timeout: "Second-600" }, LOCKINFO("exclusive"));
  expect(locked.status).toBe(200);
  const token = locked.headers["lock-token"]!;
  expect(token).toMatch(/^<urn:uuid:[0-9a-f-]{36}>$/);
  // Several PUTs on every process's connection, each refused.
  const refused = [];
  for (let round = 0; round < 3; round++) for (const c of conns) refused.push((await send(c, "PUT", "/dav/locked.txt", {}, "intruder")).status);
  expect(refused).toEqual(refused.map(() => 423));
  // With the token, from the last process, the PUT goes through; then UNLOCK from the first.
  const last = conns[conns.length - 1]!;
  expect((await send(last, "PUT", "/dav/locked.txt", { if: `(${token})` }, "v2")).status).toBe(204);
  expect((await send(first, "UNLOCK", "/dav/locked.txt", { "lock-token": token })).status).toBe(204);
  expect((await send(last, "PUT", "/dav/locked.txt", {}, "v3")).status).toBe(204);
  const got = await send(first, "GET", "/dav/locked.txt");
  expect({ status: got.status, body: got.body.toString() }).toEqual({ status: 200, body: "v3" });
});

test("two exclusive LOCKs of one path sent at once through different processes: one granted, the other 423", async () => {
  const both = await Promise.all(conns.slice(0, 2).map((c) => send(c, "LOCK", "/dav/raced.txt", { "content-type": "application/xml" }, LOCKINFO("exclusive"))));
  expect(both.map((r) => r.status).sort()).toEqual([201, 423]);
});

test("PUTs racing for one new name through different processes make one file, with one of their contents", async () => {
  const [first] = conns as [RawHttp];
  expect((await send(first, "MKCOL", "/dav/race/")).status).toBe(201);
  const statuses: number[][] = [];
  for (let round = 0; round < 5; round++) {
    const answers = await Promise.all(conns.slice(0, 2).map((c, i) => send(c, "PUT", `/dav/race/same-${round}.txt`, {}, `writer ${i} `.repeat(2000))));
    statuses.push(answers.map((r) => r.status).sort());
  }
  expect(statuses).toEqual(statuses.map(() => [201, 204]));
  const listing = await send(first, "PROPFIND", "/dav/race/", { depth: "1" });
  const hrefs = [...listing.body.toString().matchAll(/<D:href>([^<]+)<\/D:href>/g)].map((m) => m[1]).sort();
  expect(hrefs).toEqual(["/dav/race/", ...[0, 1, 2, 3, 4].map((r) => `/dav/race/same-${r}.txt`)]);
  for (let round = 0; round < 5; round++) {
    const got = (await send(first, "GET", `/dav/race/same-${round}.txt`)).body.toString();
    expect([`writer 0 `.repeat(2000), `writer 1 `.repeat(2000)]).toContain(got);
  }
});
