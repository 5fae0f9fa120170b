// test-lists: workers
// The HTTP/1.1 fast path (src/server/http1-fast.ts) over raw TCP: pipelining across the
// hand-over to node:http, keep-alive rules of both versions, HEAD, a client that stops reading a
// large download, one that leaves, a stop during a download, and the header and idle timeouts
// on fast-path connections.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import { checksumOf } from "../../src/domain/checksum.ts";
import { BACKEND } from "../support/backend.ts";
import { blobDescriptors, processUsage } from "../support/h2-raw.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { serverSide } from "../support/sockets.ts";
import { parseResponses, RawHttp } from "../support/raw-http.ts";
import { waitFor } from "../support/wait.ts";

/** Resident memory of the server's serving processes together (one, or its workers), MiB. */
function servingRss(server: RunningServer): { rssMiB: number } {
  return { rssMiB: server.servingPids().reduce((sum, pid) => sum + processUsage(pid).rssMiB, 0) };
}

/** Request IDs of the access-log lines for `path` so far. */
function loggedIds(server: RunningServer, path: string): string[] {
  return server
    .output()
    .split("\n")
    .filter((l) => l.includes(`path=${JSON.stringify(path)} `))
    .map((l) => /request_id=(\S+)/.exec(l)![1]!);
}

describe("on one server", () => {
  let server: RunningServer;
  let key: string;
  let small: FileJson;
  let smallBytes: Uint8Array;
  beforeAll(async () => {
    server = await startServer();
    key = await server.mintKey("fast@example.com");
    smallBytes = crypto.getRandomValues(new Uint8Array(4096));
    small = await client(server, key).upload(smallBytes, "?visibility=public");
  });
  afterAll(() => server[Symbol.asyncDispose]());
  const path = () => `/${small.id}`;

  test("pipelined GET, GET, POST, GET on one connection are answered in order; the POST and what follows go through node:http", async () => {
    const c = await RawHttp.connect(server.port);
    const body = "hello, pipelined upload";
    c.socket.write(
      `GET ${path()} HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\n` +
        `GET ${path()} HTTP/1.1\r\nHost: x\r\nX-Request-Id: fast-second\r\n\r\n` +
        `POST /v1/files?visibility=public HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
        `GET ${path()} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    const [ranged, whole, upload, last] = await c.responses(["GET", "GET", "POST", "GET"]);
    await c.whenClosed();
    expect([ranged!.status, ranged!.headers["content-range"], Buffer.from(ranged!.body).equals(Buffer.from(smallBytes.subarray(0, 10)))]).toEqual([206, "bytes 0-9/4096", true]);
    expect([whole!.status, whole!.headers["x-request-id"], checksumOf(whole!.body)]).toEqual([200, "fast-second", small.checksum]);
    expect(upload!.status).toBe(200);
    const uploaded = JSON.parse(upload!.body.toString()) as FileJson;
    expect(await (await fetch(uploaded.url)).text()).toBe(body);
    expect([last!.status, last!.headers.connection, checksumOf(last!.body)]).toEqual([200, "close", small.checksum]);
    // Each was logged with the request ID it was answered with.
    const ids = [ranged, whole, last].map((r) => r!.headers["x-request-id"]!);
    await waitFor(() => ids.every((id) => loggedIds(server, path()).includes(id)), "the access-log lines");
    await waitFor(() => loggedIds(server, "/v1/files").includes(upload!.headers["x-request-id"]!), "the upload's access-log line");
  });

  for (const [version, connection, persists] of [
    ["HTTP/1.1", undefined, true],
    ["HTTP/1.1", "close", false],
    ["HTTP/1.1", "keep-alive", true],
    ["HTTP/1.0", undefined, false],
    ["HTTP/1.0", "keep-alive", true],
    ["HTTP/1.0", "close", false],
  ] as const) {
    test(`${version} with ${connection === undefined ? "no Connection header" : `Connection: ${connection}`} ${persists ? "stays open" : "is closed after the response"} (RFC 9112 §9.3)`, async () => {
      const c = await RawHttp.connect(server.port);
      const head = `GET ${path()} ${version}\r\n${connection === undefined ? "" : `Connection: ${connection}\r\n`}\r\n`;
      c.socket.write(head);
      const [first] = await c.responses(["GET"]);
      expect([first!.status, first!.headers.connection, checksumOf(first!.body)]).toEqual([200, persists ? "keep-alive" : "close", small.checksum]);
      if (persists) {
        // The same connection answers another request.
        c.socket.write(`HEAD ${path()} ${version}\r\nConnection: close\r\n\r\n`);
        const [, second] = await c.responses(["GET", "HEAD"]);
        expect(second!.status).toBe(200);
      }
      await c.whenClosed();
    });
  }

  test("HEAD is answered with GET's headers and no body; a request pipelined behind it is read right after its head", async () => {
    const c = await RawHttp.connect(server.port);
    c.socket.write(`HEAD ${path()} HTTP/1.1\r\n\r\nGET ${path()} HTTP/1.1\r\nConnection: close\r\n\r\n`);
    const [head, get] = await c.responses(["HEAD", "GET"]);
    await c.whenClosed();
    const without = (h: Record<string, string>) => {
      const { "x-request-id": _id, date: _date, connection: _c, "keep-alive": _k, ...rest } = h;
      return rest;
    };
    expect(head!.status).toBe(200);
    expect(without(head!.headers)).toEqual(without(get!.headers));
    expect(head!.headers["content-length"]).toBe("4096");
    expect(checksumOf(get!.body)).toBe(small.checksum);
    // Nothing after the GET's body: the HEAD sent none.
    expect(c.received.length).toBe(c.received.indexOf("\r\n\r\n", c.received.indexOf("HTTP/1.1 200", 1)) + 4 + 4096);
  });

  test("a malformed request after a fast-path one is answered 400 by node:http after the first answer", async () => {
    const c = await RawHttp.connect(server.port);
    c.socket.write(`GET ${path()} HTTP/1.1\r\n\r\nGET ${path()} HTTP/1.1\r\nHost x\r\n\r\n`);
    const [ok, bad] = await c.responses(["GET", "GET"]);
    await c.whenClosed();
    expect([ok!.status, bad!.status]).toEqual([200, 400]);
  });

  test("fast-path requests are counted in the metrics", async () => {
    const before = await (await fetch(`${server.url}/metrics`)).text();
    const count = (text: string) => Number(/cubby_http_requests_total\{method="GET",route="\/:id",status="200"\} (\d+)/.exec(text)?.[1] ?? 0);
    const c = await RawHttp.connect(server.port);
    c.socket.write(`GET ${path()} HTTP/1.1\r\n\r\nGET ${path()} HTTP/1.1\r\nConnection: close\r\n\r\n`);
    await c.responses(["GET", "GET"]);
    await c.whenClosed();
    const after = await (await fetch(`${server.url}/metrics`)).text();
    expect(count(after) - count(before)).toBe(2);
  });
});

describe("large downloads", () => {
  const SIZE = 64 * 1024 * 1024;
  let server: RunningServer;
  let big: FileJson;
  beforeAll(async () => {
    server = await startServer();
    const api = client(server, await server.mintKey("big@example.com"));
    big = await api.upload(crypto.getRandomValues(new Uint8Array(SIZE)).fill(7, 0, SIZE), "?visibility=public");
  }, 30_000);
  afterAll(() => server[Symbol.asyncDispose]());

  test("a client that stops reading a 64 MiB download holds the server to a few buffers; it resumes intact", async () => {
    const before = servingRss(server);
    const c = await RawHttp.connect(server.port);
    c.socket.write(`GET /${big.id} HTTP/1.1\r\nConnection: close\r\n\r\n`);
    await c.until(() => c.length > 0, "the first bytes");
    c.socket.pause(); // the client reads no more: the kernel's buffers fill, then the server's socket
    // Wait until nothing more moves: the server has stopped writing.
    let last = -1;
    await waitFor(() => {
      const usage = servingRss(server);
      const now = usage.rssMiB;
      const still = now === last;
      last = now;
      return still;
    }, "the server's memory to settle");
    await Bun.sleep(500); // and stays so: a server that buffered the file would have read it all by now
    const held = servingRss(server);
    console.log(`client not reading: server RSS ${before.rssMiB} → ${held.rssMiB} MiB`);
    expect(held.rssMiB - before.rssMiB).toBeLessThan(40);
    c.socket.resume();
    await c.whenClosed();
    const [res] = parseResponses(c.received, ["GET"], true)!;
    expect([res!.status, res!.body.length, checksumOf(res!.body)]).toEqual([200, SIZE, big.checksum]);
  });

  // Knows the blob is open from its descriptor (an S3 download reads over pooled connections).
  test.skipIf(BACKEND !== "sqlite-disk")("a client that leaves mid-download releases the blob's descriptor", async () => {
    const c = await RawHttp.connect(server.port);
    c.socket.write(`GET /${big.id} HTTP/1.1\r\n\r\n`);
    await c.until(() => c.length > 1024 * 1024, "a megabyte");
    c.socket.pause();
    await waitFor(() => blobDescriptors(server) === 1, "the blob open");
    c.socket.destroy();
    await waitFor(() => blobDescriptors(server) === 0, "the blob closed", 5000);
  });

  test("requests pipelined in pieces while a download is under way are answered after it, in order", async () => {
    const c = await RawHttp.connect(server.port);
    c.socket.write(`GET /${big.id} HTTP/1.1\r\n\r\n`);
    await c.until(() => c.length > 0, "the first bytes");
    c.socket.pause();
    const write = (s: string) => new Promise<void>((resolve) => c.socket.write(s, () => resolve()));
    await write(`HEAD /${big.id} HTTP/1.1\r\nX-A: 1\r\n`);
    await Bun.sleep(50); // separate segments
    await write(`\r\nHEAD /${big.id}?download=1 HTTP/1.1\r\nConn`);
    await Bun.sleep(50);
    await write("ection: close\r\n\r\n");
    c.socket.resume();
    await c.whenClosed();
    const [download, head, last] = parseResponses(c.received, ["GET", "HEAD", "HEAD"], true)!;
    expect([download!.status, download!.body.length, head!.status, head!.headers["content-length"], last!.status, last!.headers["content-disposition"]]).toEqual([
      200,
      SIZE,
      200,
      String(SIZE),
      200,
      "attachment",
    ]);
  });

  test("a stop during a download lets it finish, then closes the connection and exits", async () => {
    const c = await RawHttp.connect(server.port);
    c.socket.write(`GET /${big.id} HTTP/1.1\r\n\r\n`);
    await c.until(() => c.length > 1024 * 1024, "a megabyte");
    c.socket.pause();
    server.proc.kill("SIGTERM");
    await server.waitForOutput("SIGTERM: stopping");
    c.socket.resume();
    await c.whenClosed();
    const [res] = parseResponses(c.received, ["GET"], true)!;
    expect([res!.status, res!.body.length, checksumOf(res!.body)]).toEqual([200, SIZE, big.checksum]);
    expect(await server.proc.exited).toBe(0);
  });
});

describe("timeouts on fast-path connections", () => {
  let server: RunningServer;
  let file: FileJson;
  let large: FileJson;
  beforeAll(async () => {
    server = await startServer({ env: { HEADER_TIMEOUT_SECONDS: "1", IDLE_TIMEOUT_SECONDS: "2" } });
    const api = client(server, await server.mintKey("slow@example.com"));
    file = await api.upload(new Uint8Array(100), "?visibility=public");
    large = await api.upload(new Uint8Array(16 * 1024 * 1024).fill(3), "?visibility=public");
  });
  afterAll(() => server[Symbol.asyncDispose]());

  test("a request trickling its headers after a fast-path response gets 408 and is closed", async () => {
    const c = await RawHttp.connect(server.port);
    c.socket.write(`GET /${file.id} HTTP/1.1\r\n\r\n`);
    await c.responses(["GET"]);
    const started = Date.now();
    c.socket.write(`GET /${file.id} HTTP/1.1\r\n`);
    const timer = setInterval(() => c.closed || c.socket.write("X-Slow: 1\r\n"), 200);
    await c.whenClosed();
    clearInterval(timer);
    const statuses = c.received.toString("latin1").match(/HTTP\/1\.1 \d{3} [^\r]*/g);
    expect(statuses).toEqual(["HTTP/1.1 200 OK", "HTTP/1.1 408 Request Timeout"]);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test("a request pipelined behind a download that outlasts the header timeout is answered, not refused", async () => {
    const c = await RawHttp.connect(server.port);
    c.socket.write(`GET /${large.id} HTTP/1.1\r\n\r\n`);
    await c.until(() => c.length > 0, "the first bytes");
    // Sent while the download is under way, which then takes longer than the 1 s header timeout.
    c.socket.write(`GET /${file.id} HTTP/1.1\r\nConnection: close\r\n\r\n`);
    c.socket.pause();
    await Bun.sleep(1500);
    c.socket.resume();
    await c.whenClosed();
    const [download, next] = parseResponses(c.received, ["GET", "GET"], true)!;
    expect([download!.status, download!.body.length, next!.status, next!.body.length]).toEqual([200, 16 * 1024 * 1024, 200, 100]);
  });

  test("a silent kept-alive fast-path connection is closed after the idle timeout", async () => {
    const c = await RawHttp.connect(server.port);
    c.socket.write(`GET /${file.id} HTTP/1.1\r\n\r\n`);
    await c.responses(["GET"]);
    const answered = Date.now();
    await c.whenClosed();
    expect(Date.now() - answered).toBeGreaterThan(1500);
  });
});

describe("a stop while an answer given at once waits in the socket's buffer", () => {
  test("the answer goes out whole before the connection closes, and the server exits", async () => {
    await using server = await startServer();
    const api = client(server, await server.mintKey("late@example.com"));
    // In the small-blob cache (up to 64 KiB), so answered at once.
    const SIZE = 60 * 1024;
    const file = await api.upload(new Uint8Array(SIZE).fill(98), "?visibility=public", { "content-type": "text/plain" });
    await (await fetch(file.url)).arrayBuffer();
    const path = `/${file.id}`;
    const before = loggedIds(server, path).length;
    const c = await RawHttp.connect(server.port);
    c.socket.pause(); // the client reads nothing: the kernel's buffers fill, then the socket's
    const sendQueue = () => serverSide(server.port, c.socket.localPort!)?.sendQueue ?? 0;
    // One request at a time until one is held back: the answer before it did not leave at once
    // (the kernel holds unsent bytes) and waits in the socket's buffer.
    let answered = 0;
    for (;;) {
      c.socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      const sent = Date.now();
      const outcome = await waitFor(
        () => (loggedIds(server, path).length - before > answered ? "answered" : Date.now() - sent > 500 && sendQueue() > 0 ? "held" : undefined),
        `request ${answered + 1} to be answered, or held with bytes waiting in the kernel`,
        { timeoutMs: 10_000, pollMs: 10 },
      );
      if (outcome === "held") break;
      answered++;
      if (answered > 2000) throw new Error("every answer left at once: the client's buffers never filled");
    }
    server.proc.kill("SIGTERM");
    await server.waitForOutput("SIGTERM: stopping");
    await Bun.sleep(200); // the stop's sweep of idle connections (every 50 ms) has run a few times
    c.socket.resume();
    await c.whenClosed();
    // The answers given before the stop, the last of them the one that waited, arrive whole;
    // the request held behind it may be answered (Connection: close) or not: a closing
    // connection need not answer a pipelined request (RFC 9112 §9.3.2), its client retries it.
    const responses = parseResponses(c.received, Array<string>(answered).fill("GET"), false);
    expect(responses).toBeDefined();
    expect(responses!.map((r) => [r.status, r.body.length, r.body.every((b) => b === 98)])).toEqual(Array(answered).fill([200, SIZE, true]));
    expect(await server.proc.exited).toBe(0);
  }, 60_000);
});
