// The fast path's response over a real loopback socket: framing (Content-Length, chunked,
// close-delimited, none for HEAD/304), Connection and Keep-Alive, header injection refused,
// events and write callbacks as Node's ServerResponse gives them.
import { afterEach, expect, test } from "bun:test";
import net from "node:net";
import { FastResponse } from "../../src/server/http1-response.ts";
import { waitFor } from "../support/wait.ts";

interface Pair {
  server: net.Socket;
  received: () => string;
  clientClosed: Promise<void>;
  client: net.Socket;
}

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

/** A connected socket pair: `server` is what the response writes to; the client collects. */
async function pair(): Promise<Pair> {
  const listener = net.createServer();
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const accepted = new Promise<net.Socket>((resolve) => listener.once("connection", resolve));
  const client = net.connect((listener.address() as net.AddressInfo).port, "127.0.0.1");
  const server = await accepted;
  listener.close();
  let got = "";
  client.on("data", (d: Buffer) => (got += d.toString("latin1")));
  client.on("error", () => {});
  server.on("error", () => {});
  const clientClosed = new Promise<void>((resolve) => client.on("close", () => resolve()));
  cleanup.push(() => {
    client.destroy();
    server.destroy();
  });
  return { server, client, received: () => got, clientClosed };
}

/** A response on `p.server`, recording what it tells its connection. */
function response(p: Pair, opts: { head?: boolean; http10?: boolean; keepAlive?: boolean } = {}) {
  const done: boolean[] = [];
  const res = new FastResponse(p.server, { responseDone: (keepAlive) => done.push(keepAlive) }, opts.head ?? false, opts.http10 ?? false, opts.keepAlive ?? true, 60);
  const events: string[] = [];
  for (const e of ["finish", "close"]) res.on(e, () => events.push(e));
  const finished = new Promise<void>((resolve) => res.once("close", () => resolve()));
  return { res, done, events, finished };
}

/** Waits until the client has received a text matching `pattern`. */
async function receivedMatching(p: Pair, pattern: RegExp): Promise<string> {
  // A timeout is not thrown here: the caller's comparison shows what did arrive.
  await waitFor(() => pattern.test(p.received()), `a response matching ${pattern}`, 2_500, 5).catch(() => {});
  return p.received();
}

const withoutDate = (s: string) => s.replace(/Date: [^\r]*\r\n/, "");

test("a small answer goes out as one head and body, Date, Connection and Keep-Alive added", async () => {
  const p = await pair();
  const { res, done, events, finished } = response(p);
  res.setHeader("x-request-id", "r1");
  res.writeHead(200, { "content-type": "text/plain", "content-length": 5 });
  expect(res.headersSent).toBe(true);
  res.end("hello");
  await finished;
  expect(withoutDate(await receivedMatching(p, /hello$/))).toBe(
    "HTTP/1.1 200 OK\r\nx-request-id: r1\r\ncontent-type: text/plain\r\ncontent-length: 5\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\nhello",
  );
  expect({ events, done, finished: res.writableFinished, length: res.getHeader("content-length") }).toEqual({ events: ["finish", "close"], done: [true], finished: true, length: 5 });
});

test("end(body) without a Content-Length sets it; shouldKeepAlive=false answers Connection: close", async () => {
  const p = await pair();
  const { res, done, finished } = response(p);
  res.shouldKeepAlive = false;
  res.statusCode = 404;
  res.end("nope");
  await finished;
  expect(withoutDate(await receivedMatching(p, /nope$/))).toBe("HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\nConnection: close\r\n\r\nnope");
  expect(done).toEqual([false]);
});

test("HEAD, 304 and 204 answers carry no body, whatever is written", async () => {
  for (const [status, head] of [
    [200, true],
    [304, false],
    [204, false],
  ] as const) {
    const p = await pair();
    const { res, finished } = response(p, { head });
    res.writeHead(status, { "content-length": "4" });
    res.end("body");
    await finished;
    const got = await receivedMatching(p, /\r\n\r\n/);
    expect(got.endsWith("\r\n\r\n")).toBe(true);
    expect(got).toContain("content-length: 4\r\n");
  }
});

test("a streamed body without a Content-Length is chunked over HTTP/1.1", async () => {
  const p = await pair();
  const { res, finished } = response(p);
  res.writeHead(200, { "content-type": "text/plain" });
  res.write("abc");
  res.write(Buffer.from("defgh"));
  res.end();
  await finished;
  expect(withoutDate(await receivedMatching(p, /0\r\n\r\n$/))).toBe(
    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n3\r\nabc\r\n5\r\ndefgh\r\n0\r\n\r\n",
  );
});

test("a streamed body without a Content-Length over HTTP/1.0 is delimited by the close", async () => {
  const p = await pair();
  const { res, done, finished } = response(p, { http10: true, keepAlive: true });
  res.writeHead(200);
  res.write("abc");
  res.end("def");
  await finished;
  expect(withoutDate(await receivedMatching(p, /abcdef$/))).toBe("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabcdef");
  expect(done).toEqual([false]);
});

test("a header value with CR, LF or NUL is refused (ERR_INVALID_CHAR) by writeHead, as Node does; an error answer can follow", async () => {
  const p = await pair();
  const { res, finished } = response(p);
  for (const value of ["/x\r\nSet-Cookie: evil=1", "a\nb", "a\u0000b", "\u2028"]) {
    expect(() => res.writeHead(302, { location: value })).toThrow(expect.objectContaining({ code: "ERR_INVALID_CHAR" }));
  }
  expect(() => res.setHeader("bad name", "x")).toThrow(expect.objectContaining({ code: "ERR_INVALID_HTTP_TOKEN" }));
  expect(res.headersSent).toBe(false);
  res.removeHeader("location");
  res.writeHead(500, { "content-length": "0" });
  res.end();
  await finished;
  expect(withoutDate(await receivedMatching(p, /\r\n\r\n$/))).toBe("HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n");
});

test("when the connection closes mid-body, pending write callbacks get an error and close is emitted", async () => {
  const p = await pair();
  const { res, events, finished } = response(p);
  res.writeHead(200, { "content-length": String(64 * 1024 * 1024) });
  p.client.pause(); // nothing is read: the socket fills
  const errors: (Error | null | undefined)[] = [];
  const chunk = Buffer.alloc(1024 * 1024);
  let full = false;
  let writes = 0;
  for (let i = 0; i < 64 && !full; i++, writes++) full = !res.write(chunk, (err) => errors.push(err));
  expect(full).toBe(true);
  p.server.on("close", () => res.connectionClosed());
  p.client.destroy();
  await finished;
  expect(events).toEqual(["close"]);
  expect(res.destroyed).toBe(true);
  // Every write's callback has run, the unsent ones with an error.
  await waitFor(() => errors.length >= writes, "every write's callback", 2_500, 5).catch(() => {});
  expect(errors.length).toBe(writes);
  expect(errors.some((e) => e instanceof Error)).toBe(true);
  expect(res.write("late")).toBe(false);
});

test("write returns false when the socket is full, and drain follows once it empties", async () => {
  const p = await pair();
  const { res } = response(p);
  res.writeHead(200, { "content-length": String(256 * 1024 * 1024) });
  p.client.pause();
  const chunk = Buffer.alloc(1024 * 1024);
  let ok = true;
  while (ok) ok = res.write(chunk);
  const drained = new Promise<void>((resolve) => res.once("drain", () => resolve()));
  p.client.resume();
  await drained;
});

test("writeHead takes headers as an object, as [name, value] pairs or as Node's flat list, over setHeader's", async () => {
  for (const given of [{ "x-a": "1", "X-B": "2" }, [["x-a", "1"], ["X-B", "2"]], ["x-a", "1", "X-B", "2"]]) {
    const p = await pair();
    const { res, finished } = response(p);
    res.setHeader("x-a", "0");
    res.writeHead(200, "Fine", given as Record<string, string>);
    res.end();
    await finished;
    expect(withoutDate(await receivedMatching(p, /\r\n\r\n$/))).toBe("HTTP/1.1 200 Fine\r\nx-a: 1\r\nx-b: 2\r\ncontent-length: 0\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n");
  }
});

test("end() after streamed writes finishes only once they have reached the kernel (a stop may then close the connection)", async () => {
  const p = await pair();
  const { res, events, finished } = response(p);
  res.writeHead(200, { "content-length": String(8 * 1024 * 1024) });
  p.client.pause();
  res.write(Buffer.alloc(8 * 1024 * 1024, 1));
  res.end();
  // Negative check: nothing may say "finished" while 8 MiB wait on a client that reads nothing.
  await new Promise((r) => setTimeout(r, 200));
  expect(events).toEqual([]);
  p.client.resume();
  await finished;
  expect(events).toEqual(["finish", "close"]);
});
