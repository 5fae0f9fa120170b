// The HTTP/1.1 reader's exchange over a real loopback socket, served by the reader itself
// (serveHttp1Fast) with a dispatch of the test's: a whole answer's framing (one head with
// X-Request-Id, Date, Connection and Keep-Alive; Content-Length added when absent; no body for
// HEAD, 304 and 204), header injection refused before anything is written, a streamed answer, and
// a connection that closes mid-body (signal aborted, pending write callbacks told); the Date line
// follows the clock and each connection answers its own Keep-Alive timeout (the head's last lines
// are encoded once a second).
import { afterEach, expect, test } from "bun:test";
import net from "node:net";
import type { RequestContext } from "../../src/context/request-context.ts";
import type { Exchange } from "../../src/serving/exchange.ts";
import { serveHttp1Fast } from "../../src/server/http1-fast.ts";
import { waitFor } from "../support/wait.ts";

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const fn of cleanup.splice(0)) fn();
});

/** What the reader told the test: access-log lines (status and bytes) and answers written. */
interface Seen {
  logged: string[];
  written: number;
}

/**
 * A connected socket pair whose server side is read by the reader; every request is handed to
 * `answer` as an exchange opened with request ID `r1`. `received` is what the client got.
 */
async function serve(answer: (ex: Exchange) => void, opts: { stopping?: boolean; keepAliveSeconds?: number } = {}) {
  const listener = net.createServer({ allowHalfOpen: true });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const accepted = new Promise<net.Socket>((resolve) => listener.once("connection", resolve));
  const client = net.connect((listener.address() as net.AddressInfo).port, "127.0.0.1");
  const server = await accepted;
  listener.close();
  let got = "";
  client.on("data", (d: Buffer) => (got += d.toString("latin1")));
  client.on("error", () => {});
  server.on("error", () => {});
  const seen: Seen = { logged: [], written: 0 };
  serveHttp1Fast(server, {
    maxHeadBytes: 64 * 1024,
    keepAliveSeconds: opts.keepAliveSeconds ?? 60,
    route: (_method, target) => target,
    dispatch: (ex) => {
      ex.open({ requestId: "r1", clientAddress: "127.0.0.1", method: ex.method, path: ex.target, startedAt: performance.now() } as RequestContext);
      answer(ex);
    },
    logClose: (_context, status, bytes) => seen.logged.push(`${status} ${bytes ?? "-"}`),
    requestRead: () => opts.stopping !== true,
    answerWritten: () => seen.written++,
    onHandOver: (s) => s.destroy(),
    onPipelinedHead: () => {},
  });
  cleanup.push(() => {
    client.destroy();
    server.destroy();
  });
  return { client, server, seen, received: () => got };
}

/** Waits until the client has received a text matching `pattern`; returns what it received. */
async function receivedMatching(p: { received: () => string }, pattern: RegExp): Promise<string> {
  // A timeout is not thrown here: the caller's comparison shows what did arrive.
  await waitFor(() => pattern.test(p.received()), `a response matching ${pattern}`, 2_500, 5).catch(() => {});
  return p.received();
}

const withoutDate = (s: string) => s.replace(/Date: [^\r]*\r\n/g, "");

test("a whole answer: one head with X-Request-Id, Date, Connection and Keep-Alive, then the body; logged and written once", async () => {
  const p = await serve((ex) => ex.respond(200, { "content-type": "text/plain", "content-length": "5" }, "hello"));
  p.client.write("GET /a HTTP/1.1\r\nhost: x\r\n\r\n");
  expect(withoutDate(await receivedMatching(p, /hello$/))).toBe(
    "HTTP/1.1 200 OK\r\nx-request-id: r1\r\ncontent-type: text/plain\r\ncontent-length: 5\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\nhello",
  );
  await waitFor(() => p.seen.written === 1, "the answer written");
  expect(p.seen.logged).toEqual(["200 5"]);
});

test("the Date line is the current second's, also once the second has changed; each connection answers its own Keep-Alive timeout", async () => {
  const ok = (ex: Exchange) => ex.respond(200, { "content-length": "2" }, "ok");
  const a = await serve(ok, { keepAliveSeconds: 60 });
  const b = await serve(ok, { keepAliveSeconds: 7 });
  const dateOf = (text: string) => /Date: ([^\r]*)\r\n/.exec(text)?.[1];
  const before = Math.floor(Date.now() / 1000);
  a.client.write("GET /a HTTP/1.1\r\nhost: x\r\n\r\n");
  b.client.write("GET /b HTTP/1.1\r\nhost: x\r\n\r\n");
  const first = await receivedMatching(a, /ok$/);
  expect(await receivedMatching(b, /ok$/)).toContain("Connection: keep-alive\r\nKeep-Alive: timeout=7\r\n\r\nok");
  expect(first).toContain("Connection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\nok");
  const firstSecond = Date.parse(dateOf(first)!) / 1000;
  expect(firstSecond).toBeGreaterThanOrEqual(before);
  expect(firstSecond).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  // The next request once the clock is past the first answer's second.
  await waitFor(() => Math.floor(Date.now() / 1000) > firstSecond, "the next second", 2_500, 20);
  a.client.write("GET /a HTTP/1.1\r\nhost: x\r\n\r\n");
  const both = await receivedMatching(a, /ok[\s\S]*ok$/);
  const second = both.slice(first.length);
  expect(Date.parse(dateOf(second)!) / 1000).toBeGreaterThan(firstSecond);
  expect(second).toContain("Connection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\nok");
});

test("Content-Length is added when absent; a connection that may not carry another request answers Connection: close and closes", async () => {
  const p = await serve((ex) => ex.respond(404, { "content-type": "application/json" }, "{}"), { stopping: true });
  const closed = new Promise<void>((resolve) => p.client.on("end", () => resolve()));
  p.client.write("GET /a HTTP/1.1\r\nhost: x\r\n\r\n");
  await closed;
  expect(withoutDate(p.received())).toBe("HTTP/1.1 404 Not Found\r\nx-request-id: r1\r\ncontent-type: application/json\r\ncontent-length: 2\r\nConnection: close\r\n\r\n{}");
});

test("HEAD, 304 and 204 answers carry no body, whatever is given", async () => {
  for (const [method, status] of [
    ["HEAD", 200],
    ["GET", 304],
    ["GET", 204],
  ] as const) {
    const p = await serve((ex) => ex.respond(status, { "content-length": "4" }, "body"));
    p.client.write(`${method} /a HTTP/1.1\r\nhost: x\r\n\r\n`);
    const got = await receivedMatching(p, /\r\n\r\n/);
    await waitFor(() => p.seen.written === 1, "the answer written");
    expect({ status, ends: got.endsWith("\r\n\r\n"), length: got.includes("content-length: 4\r\n") }).toEqual({ status, ends: true, length: true });
  }
});

test("a header value with CR, LF or NUL is refused before anything is written; an error answer can follow", async () => {
  const refused: unknown[] = [];
  const p = await serve((ex) => {
    for (const value of ["/x\r\nSet-Cookie: evil=1", "a\nb", "a\u0000b", "\u2028"]) {
      try {
        ex.respond(302, { location: value, "content-length": "0" });
      } catch (err) {
        refused.push((err as { code?: string }).code);
      }
    }
    ex.respond(500, { "content-length": "0" });
  });
  p.client.write("GET /a HTTP/1.1\r\nhost: x\r\n\r\n");
  expect(withoutDate(await receivedMatching(p, /\r\n\r\n$/))).toBe(
    "HTTP/1.1 500 Internal Server Error\r\nx-request-id: r1\r\ncontent-length: 0\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n",
  );
  expect(refused).toEqual(["ERR_INVALID_CHAR", "ERR_INVALID_CHAR", "ERR_INVALID_CHAR", "ERR_INVALID_CHAR"]);
});

test("a streamed answer: the head, the chunks, and the next request read once its end has left", async () => {
  let n = 0;
  const p = await serve((ex) => {
    n++;
    const out = ex.stream(200, { "content-length": "6" });
    out.write(Buffer.from("abc"), () => {});
    setTimeout(() => {
      out.write(Buffer.from(`de${n}`), () => {});
      out.end();
    }, 10);
  });
  p.client.write("GET /a HTTP/1.1\r\nhost: x\r\n\r\nGET /b HTTP/1.1\r\nhost: x\r\n\r\n");
  const got = withoutDate(await receivedMatching(p, /de2$/));
  const head = "HTTP/1.1 200 OK\r\nx-request-id: r1\r\ncontent-length: 6\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n";
  expect(got).toBe(`${head}abcde1${head}abcde2`);
  expect(p.seen.logged).toEqual(["200 6", "200 6"]);
});

test("a streamed answer without a Content-Length is delimited by the connection's close", async () => {
  const p = await serve((ex) => {
    const out = ex.stream(200, { "content-type": "text/plain" });
    out.write(Buffer.from("abc"), () => out.end());
  });
  const closed = new Promise<void>((resolve) => p.client.on("end", () => resolve()));
  p.client.write("GET /a HTTP/1.1\r\nhost: x\r\n\r\n");
  await closed;
  expect(withoutDate(p.received())).toBe("HTTP/1.1 200 OK\r\nx-request-id: r1\r\ncontent-type: text/plain\r\nConnection: close\r\n\r\nabc");
});

test("when the connection closes mid-body, the signal aborts, pending write callbacks get an error, and the line is logged", async () => {
  let exchange: Exchange | undefined;
  const errors: (Error | null | undefined)[] = [];
  let writes = 0;
  const p = await serve((ex) => {
    exchange = ex;
    const out = ex.stream(200, { "content-length": String(64 * 1024 * 1024) });
    const chunk = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < 64; i++, writes++) out.write(chunk, (err) => errors.push(err));
  });
  p.client.pause(); // nothing is read: the socket fills
  p.client.write("GET /a HTTP/1.1\r\nhost: x\r\n\r\n");
  await waitFor(() => exchange !== undefined, "the request to be read");
  const signal = (exchange as unknown as { signal: AbortSignal }).signal;
  p.client.destroy();
  await waitFor(() => signal.aborted && errors.length === writes, "the abort and every write's callback");
  expect({ gone: exchange!.gone, someFailed: errors.some((e) => e instanceof Error), logged: p.seen.logged }).toEqual({ gone: true, someFailed: true, logged: ["200 67108864"] });
});
