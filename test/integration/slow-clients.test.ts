// test-lists: default
// Slow clients: hundreds of connections trickling bytes must not stop normal requests, and the
// header and idle timeouts close what never finishes.
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect, test } from "bun:test";
import { checksumOf } from "../../src/domain/checksum.ts";
import { FileService } from "../../src/gen/cubby/v1/files_pb.ts";
import { parseResponses, RawHttp } from "../support/raw-http.ts";
import { client, startServer } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";

/** A raw connection (test/support/raw-http.ts), from the local address `from` when given. */
const rawConnection = (port: number, from?: string) => RawHttp.connect(port, { localAddress: from });

/** Waits for the server to close `c` and returns the status lines it sent (requests of `methods`). */
async function statusesAtClose(c: RawHttp, methods: string[]): Promise<string[]> {
  await c.whenClosed();
  return parseResponses(c.received, methods, true).map((r) => r.statusLine);
}

test("300 header tricklers and 50 body tricklers do not stop normal requests", async () => {
  await using server = await startServer({ env: { HEADER_TIMEOUT_SECONDS: "120", MAX_CONNECTIONS_PER_CLIENT: "0" } });
  const key = await server.mintKey("slow@example.com");
  const api = client(server, key);
  const kept = await api.upload(crypto.getRandomValues(new Uint8Array(64 * 1024)), "?visibility=public");

  const headerTricklers = await Promise.all(Array.from({ length: 300 }, () => rawConnection(server.port)));
  const bodyTricklers = await Promise.all(Array.from({ length: 50 }, () => rawConnection(server.port)));
  for (const c of headerTricklers) c.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
  for (const c of bodyTricklers) {
    c.write(`POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 10000000\r\n\r\nab`);
  }
  let trickling = true;
  const trickle = (async () => {
    while (trickling) {
      for (const c of headerTricklers) if (!c.closed) c.write("X");
      for (const c of bodyTricklers) if (!c.closed) c.write("y");
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  try {
    // Normal traffic, each request on a new connection, while the tricklers hold theirs.
    for (let i = 0; i < 20; i++) {
      const health = await fetch(`${server.url}/healthz`, { headers: { connection: "close" } });
      expect(health.status).toBe(200);
      await health.arrayBuffer();
      const body = new Uint8Array(await (await fetch(kept.url, { headers: { connection: "close" } })).arrayBuffer());
      expect(checksumOf(body)).toBe(kept.checksum);
      const up = await api.upload(crypto.getRandomValues(new Uint8Array(16 * 1024)), "", { connection: "close" });
      expect(up.size).toBe(String(16 * 1024));
    }
    // The slow connections were all still there while the normal ones were served.
    expect(headerTricklers.filter((c) => !c.closed).length).toBe(300);
    expect(bodyTricklers.filter((c) => !c.closed).length).toBe(50);
  } finally {
    trickling = false;
    await trickle;
    for (const c of [...headerTricklers, ...bodyTricklers]) c[Symbol.dispose]();
  }
});

test("a client that does not finish its headers in time gets 408 and is closed", async () => {
  await using server = await startServer({ env: { HEADER_TIMEOUT_SECONDS: "1" } });
  using c = await rawConnection(server.port);
  c.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
  const timer = setInterval(() => !c.closed && c.write("X"), 100);
  const statuses = await statusesAtClose(c, ["GET"]).finally(() => clearInterval(timer));
  expect(statuses).toEqual(["HTTP/1.1 408 Request Timeout"]);
});

// Slowloris on a kept-alive connection: every request has the header timeout, not only the first.
for (const [name, first] of [
  ["after one complete request and response", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"],
  ["pipelined behind a complete request", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\n"],
  ["after an upload's body", "POST /v1/files HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"],
] as const) {
  test(`a request trickling its headers ${name} gets 408 and is closed`, async () => {
    await using server = await startServer({ env: { HEADER_TIMEOUT_SECONDS: "1" } });
    using c = await rawConnection(server.port);
    c.write(first);
    const started = Date.now();
    let sent = 0;
    const timer = setInterval(() => {
      if (c.closed) return;
      c.write(sent++ === 0 && !first.endsWith("HTTP/1.1\r\n") ? "GET /healthz HTTP/1.1\r\n" : "X-Slow: 1\r\n");
    }, 200);
    const statuses = await statusesAtClose(c, [first.split(" ")[0]!, "GET"]).finally(() => clearInterval(timer));
    // The first request was answered, the slow one refused.
    expect({ answers: statuses.length, last: statuses[1] }).toEqual({ answers: 2, last: "HTTP/1.1 408 Request Timeout" });
    expect(Date.now() - started).toBeLessThan(5000);
  });
}

test("a kept-alive connection that stays silent between requests is not refused by the header timeout", async () => {
  await using server = await startServer({ env: { HEADER_TIMEOUT_SECONDS: "1" } });
  using c = await rawConnection(server.port);
  c.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  // Silent for twice the header timeout (the idle timeout, 60 s, governs silence), then a request.
  // Time must pass here, not a condition come true; a connection once closed stays closed.
  await Bun.sleep(2000);
  expect(c.closed).toBe(false);
  c.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  expect(await statusesAtClose(c, ["GET", "GET"])).toEqual(["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"]);
});

test("connections over MAX_CONNECTIONS_PER_CLIENT or MAX_CONNECTIONS are closed at once; others are served", async () => {
  // The caps are counted per serving process (docs/scale-out.md): one here.
  await using server = await startServer({ env: { MAX_CONNECTIONS_PER_CLIENT: "5", MAX_CONNECTIONS: "8", WORKERS: "1" } });
  // 127.0.0.1 may hold five; a sixth is closed without a byte read.
  const held = await Promise.all(Array.from({ length: 5 }, () => rawConnection(server.port)));
  using sixth = await rawConnection(server.port);
  await sixth.whenClosed();
  expect(sixth.length).toBe(0);
  // Another address (127.0.0.2 is loopback too) is not held to 127.0.0.1's count, but the total is 8.
  const other = await Promise.all(Array.from({ length: 3 }, () => rawConnection(server.port, "127.0.0.2")));
  using ninth = await rawConnection(server.port, "127.0.0.2");
  await ninth.whenClosed();
  expect(ninth.length).toBe(0);
  for (const c of other) expect(c.closed).toBe(false);
  // Once some close, new connections are served again.
  try {
    held[0]!.socket.destroy();
    other[0]!.socket.destroy();
    await Promise.all([held[0]!.whenClosed(), other[0]!.whenClosed()]);
    // The server counts a connection out once it sees the close: a refusal before that is retried.
    const res = await waitFor(() => fetch(`${server.url}/healthz`, { headers: { connection: "close" } }).catch(() => undefined), "a new connection to be served", { pollMs: 0 });
    expect(res.status).toBe(200);
  } finally {
    for (const c of [...held, ...other]) c[Symbol.dispose]();
  }
});

test("headers larger than 64 KiB get 431 and the connection is closed", async () => {
  await using server = await startServer();
  using c = await rawConnection(server.port);
  c.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(70 * 1024)}`);
  expect(await statusesAtClose(c, ["GET"])).toEqual(["HTTP/1.1 431 Request Header Fields Too Large"]);
});

test("a silent keep-alive connection is closed after the idle timeout", async () => {
  await using server = await startServer({ env: { IDLE_TIMEOUT_SECONDS: "1" } });
  using c = await rawConnection(server.port);
  c.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  expect(await statusesAtClose(c, ["GET"])).toEqual(["HTTP/1.1 200 OK"]);
});

test("a silent HTTP/2 connection is closed after the idle timeout", async () => {
  await using server = await startServer({ env: { IDLE_TIMEOUT_SECONDS: "1" } });
  using c = await rawConnection(server.port);
  c.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  // It was an HTTP/2 connection (the server's first frame is SETTINGS, type 4), then it closed.
  await c.whenClosed();
  expect(c.received[3]).toBe(4);
});

test("a busy HTTP/2 connection is not cut by the idle timeout", async () => {
  await using server = await startServer({ env: { IDLE_TIMEOUT_SECONDS: "1" } });
  const key = await server.mintKey("busy@example.com");
  const file = await client(server, key).upload(new Uint8Array(10), "?visibility=public");
  const rpc = createClient(FileService, createGrpcTransport({ baseUrl: server.url }));
  // One connection, kept busy for three idle timeouts.
  const until = Date.now() + 3000;
  let calls = 0;
  while (Date.now() < until) {
    const { file: got } = await rpc.getFile({ id: file.id }, { headers: { authorization: `Bearer ${key}` } });
    expect(got!.id).toBe(file.id);
    calls++;
  }
  expect(calls).toBeGreaterThan(10);
});

test("headers ended by bare line feeds get an answer at once, not the header timeout", async () => {
  await using server = await startServer({ env: { HEADER_TIMEOUT_SECONDS: "30" } });
  using c = await rawConnection(server.port);
  c.write("GET /healthz HTTP/1.1\nHost: x\nConnection: close\n\n");
  // Bun's HTTP/1 parser does not take bare-LF requests (RFC 9112 §2.2 allows either); it says so at once.
  expect(await statusesAtClose(c, ["GET"])).toEqual(["HTTP/1.1 400 Bad Request"]);
});
