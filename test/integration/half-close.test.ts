// test-lists: workers
// Clients that half-close (CONTRACT §10): a client that shuts down its sending side after its
// request (`shutdown(SHUT_WR)`, as `nc -N`, some scripts and proxies do) still receives the whole
// answer, on every path — the HTTP/1.1 fast path (content streamed from the store), content
// answered at once (serving/content.ts), node:http after the hand-over (a download with a key, JSON
// routes, uploads, errors) and h2c — and the server closes its side once the answer is out.
// A half-closed connection with nothing in flight closes at once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { checksumOf } from "../../src/domain/checksum.ts";
import { FrameType, RawH2 } from "../support/h2-raw.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { parseResponses, RawHttp, type RawResponse } from "../support/raw-http.ts";

/** How long a half-closed exchange may take before the test calls it stuck (ms). */
const EXCHANGE_MS = 20_000;

/**
 * Opens a connection, writes `request`, shuts down the sending side (FIN), and reads until the
 * server closes its side.
 * @returns everything received, and whether the server ended its side with a FIN (not a reset)
 */
async function halfClosed(port: number, request: string | Uint8Array): Promise<{ received: Buffer; fin: boolean; ms: number }> {
  const started = performance.now();
  using c = await RawHttp.connect(port, { allowHalfOpen: true });
  c.write(request);
  c.socket.end();
  await c.whenClosed(EXCHANGE_MS);
  return { received: c.received, fin: c.fin, ms: performance.now() - started };
}

/** What a test compares of one response: status, declared and received length, checksum. */
function summary(r: RawResponse | undefined): { status: number; length: number; received: number; checksum: string } | undefined {
  if (r === undefined) return undefined;
  return { status: r.status, length: Number(r.headers["content-length"] ?? r.body.length), received: r.body.length, checksum: checksumOf(r.body) };
}

let server: RunningServer;
let key: string;
/** Public files by size in bytes: 100 KB, 1 MB and 3 MB are streamed from the store; 40 KB is answered at once. */
const files = new Map<number, { file: FileJson; bytes: Uint8Array }>();
const SIZES = [40_000, 100_000, 1_000_000, 3_000_000];
let secret: { file: FileJson; bytes: Uint8Array };

beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("half@example.com");
  const api = client(server, key);
  for (const size of SIZES) {
    const bytes = crypto.getRandomValues(new Uint8Array(size));
    files.set(size, { file: await api.upload(bytes, "?visibility=public"), bytes });
  }
  const bytes = crypto.getRandomValues(new Uint8Array(1_000_000));
  secret = { file: await api.upload(bytes, "?visibility=private"), bytes };
  // Once, so that the small file's blob and row are cached: later GETs of it are answered at once.
  for (const { file } of files.values()) await (await fetch(file.url)).arrayBuffer();
});
afterAll(() => server?.[Symbol.asyncDispose]());

/** The expected summary of a whole 200 answer with `bytes`. */
const whole = (bytes: Uint8Array) => ({ status: 200, length: bytes.length, received: bytes.length, checksum: checksumOf(bytes) });

describe("HTTP/1.1 fast path", () => {
  for (const size of SIZES) {
    test(`GET of a ${size}-byte public file, then a half-close: every byte arrives${size < 64 * 1024 ? " (answered at once)" : ""}`, async () => {
      const { file, bytes } = files.get(size)!;
      const { received, fin } = await halfClosed(server.port, `GET /${file.id} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect({ response: summary(parseResponses(received, ["GET"], true)[0]), fin }).toEqual({ response: whole(bytes), fin: true });
    });
  }

  test("a pipelined pair of 1 MB GETs, then a half-close: both answers arrive whole", async () => {
    const { file, bytes } = files.get(1_000_000)!;
    const request = `GET /${file.id} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const { received } = await halfClosed(server.port, request + request);
    expect(parseResponses(received, ["GET", "GET"], true).map(summary)).toEqual([whole(bytes), whole(bytes)]);
  });

  test("a pipelined pair answered at once, then a half-close: both arrive", async () => {
    const { file, bytes } = files.get(40_000)!;
    const request = `GET /${file.id} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const { received } = await halfClosed(server.port, request + request);
    expect(parseResponses(received, ["GET", "GET"], true).map(summary)).toEqual([whole(bytes), whole(bytes)]);
  });

  for (const size of [40_000, 1_000_000]) {
    test(`GET of a ${size}-byte file with Connection: close, then a half-close: every byte arrives (the lingering close after a FIN)`, async () => {
      const { file, bytes } = files.get(size)!;
      const { received, fin, ms } = await halfClosed(server.port, `GET /${file.id} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect({ response: summary(parseResponses(received, ["GET"], true)[0]), fin, quick: ms < 2000 }).toEqual({ response: whole(bytes), fin: true, quick: true });
    });
  }

  test("HEAD of a 3 MB file, then a half-close: the head arrives", async () => {
    const { file, bytes } = files.get(3_000_000)!;
    const { received } = await halfClosed(server.port, `HEAD /${file.id} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const [head] = parseResponses(received, ["HEAD"], true);
    expect({ status: head?.status, length: head?.headers["content-length"], rest: received.length - received.indexOf("\r\n\r\n") - 4 }).toEqual({ status: 200, length: String(bytes.length), rest: 0 });
  });

  test("a GET that gets 404, then a half-close: the answer arrives", async () => {
    const { received } = await halfClosed(server.port, "GET /aaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\nHost: x\r\n\r\n");
    const [answer] = parseResponses(received, ["GET"], true);
    expect({ status: answer?.status, whole: answer?.body.length === Number(answer?.headers["content-length"]) }).toEqual({ status: 404, whole: true });
  });
});

describe("node:http after the hand-over", () => {
  test("a 1 MB GET (fast path) and an upload pipelined behind it, then a half-close: the hand-over after the FIN answers the upload", async () => {
    const { file, bytes } = files.get(1_000_000)!;
    const body = "uploaded after the FIN";
    const { received, fin } = await halfClosed(
      server.port,
      `GET /${file.id} HTTP/1.1\r\nHost: x\r\n\r\n` + `POST /v1/files?visibility=public HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    const [download, upload] = parseResponses(received, ["GET", "POST"], true);
    expect({ download: summary(download), upload: upload?.status, fin }).toEqual({ download: whole(bytes), upload: 200, fin: true });
    expect((JSON.parse(upload!.body.toString()) as FileJson).checksum).toBe(checksumOf(body));
  });

  test("a 1 MB private file read with a bearer key behind a request that is not the fast path's, then a half-close", async () => {
    const { received } = await halfClosed(server.port, `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /${secret.file.id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    const [health, download] = parseResponses(received, ["GET", "GET"], true);
    expect({ health: health?.status, download: summary(download) }).toEqual({ health: 200, download: whole(secret.bytes) });
  });

  test("a 3 MB public file behind a POST, then a half-close", async () => {
    const { file, bytes } = files.get(3_000_000)!;
    const { received } = await halfClosed(server.port, `POST /v1/files HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nGET /${file.id} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const [refused, download] = parseResponses(received, ["POST", "GET"], true);
    expect({ refused: refused?.status, download: summary(download) }).toEqual({ refused: 401, download: whole(bytes) });
  });

  test("a JSON route (the OpenAPI document), then a half-close: the whole document arrives", async () => {
    const expected = Buffer.from(await (await fetch(`${server.url}/openapi.json`)).arrayBuffer());
    const { received } = await halfClosed(server.port, "GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n");
    const [answer] = parseResponses(received, ["GET"], true);
    expect({ status: answer?.status, checksum: checksumOf(answer?.body ?? "") }).toEqual({ status: 200, checksum: checksumOf(expected) });
  });

  test("GET /v1/files with a key, then a half-close: the listing arrives", async () => {
    const { received } = await halfClosed(server.port, `GET /v1/files?page_size=100 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    const [answer] = parseResponses(received, ["GET"], true);
    const ids = (JSON.parse(answer!.body.toString()) as { files: FileJson[] }).files.map((f) => f.id);
    expect({ status: answer?.status, listed: ids.includes(secret.file.id) }).toEqual({ status: 200, listed: true });
  });

  test("an upload of 2 MB, then a half-close: the File answered arrives and the content is stored", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(2_000_000));
    const head = `POST /v1/files?visibility=public HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${bytes.length}\r\n\r\n`;
    const { received } = await halfClosed(server.port, Buffer.concat([Buffer.from(head), bytes]));
    const [answer] = parseResponses(received, ["POST"], true);
    expect(answer?.status).toBe(200);
    const file = JSON.parse(answer!.body.toString()) as FileJson;
    expect(file.checksum).toBe(checksumOf(bytes));
  });

  test("a JSON 404 with a key, then a half-close: the error arrives", async () => {
    const { received } = await halfClosed(server.port, `GET /v1/files/aaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    const [answer] = parseResponses(received, ["GET"], true);
    expect({ status: answer?.status, code: (JSON.parse(answer?.body.toString() || "{}") as { code?: number }).code }).toEqual({ status: 404, code: 5 });
  });
});

describe("closing", () => {
  test("a connection half-closed before any request closes at once", async () => {
    const { received, fin, ms } = await halfClosed(server.port, "");
    expect({ received: received.length, fin, quick: ms < 2000 }).toEqual({ received: 0, fin: true, quick: true });
  });

  test("a request whose head is cut short by the half-close is not waited for: the one before it is answered, then the connection closes", async () => {
    const { file, bytes } = files.get(100_000)!;
    const { received, fin, ms } = await halfClosed(server.port, `GET /${file.id} HTTP/1.1\r\nHost: x\r\n\r\nGET /${file.id} HTTP/1.1\r\nHo`);
    expect({ responses: parseResponses(received, ["GET", "GET"], true).map(summary), fin, quick: ms < 2000 }).toEqual({ responses: [whole(bytes)], fin: true, quick: true });
  });

  test("a half-close after an answered request closes the kept-alive connection at once, on both paths", async () => {
    for (const first of [`GET /${files.get(40_000)!.file.id}`, "GET /healthz"]) {
      using c = await RawHttp.connect(server.port, { allowHalfOpen: true });
      c.write(`${first} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await c.next("GET");
      const ended = performance.now();
      c.socket.end();
      await c.whenClosed();
      expect(performance.now() - ended).toBeLessThan(2000);
    }
  });
});

describe("h2c", () => {
  test("a 3 MB GET on an h2c connection, then a TCP half-close: the stream is answered whole", async () => {
    const { file, bytes } = files.get(3_000_000)!;
    await using c = await RawH2.connect(server.port, [[4, 0x7fffffff]]);
    // The whole answer may be sent without a WINDOW_UPDATE: a half-closed client cannot send one.
    c.windowUpdate(0, 0x7fffffff - 65_535);
    await c.until(() => c.frames.some((f) => f.type === FrameType.SETTINGS && (f.flags & 1) === 0), 10_000, "the server's SETTINGS");
    c.headers(1, [[":method", "GET"], [":scheme", "http"], [":authority", "x"], [":path", `/${file.id}`]], true);
    c.socket.end();
    const answer = await c.response(1);
    expect({ status: answer.headers[":status"], dataBytes: answer.dataBytes, ended: answer.ended }).toEqual({ status: "200", dataBytes: bytes.length, ended: true });
    // Nothing more can come from the client: the server closes the connection.
    await c.until(() => c.closed, 5_000, "the server to close the connection");
  });

  test("an idle h2c connection that half-closes is closed at once", async () => {
    await using c = await RawH2.connect(server.port);
    await c.until(() => c.frames.some((f) => f.type === FrameType.SETTINGS && (f.flags & 1) === 0), 10_000, "the server's SETTINGS");
    const ended = performance.now();
    c.socket.end();
    await c.until(() => c.closed, 5_000, "the server to close the connection");
    expect({ goaway: c.goaway?.code, quick: performance.now() - ended < 2000 }).toEqual({ goaway: 0, quick: true });
  });
});

describe("a half-close that cuts a request short", () => {
  test("a 1 MB GET on node:http with a head cut short behind it: the GET is answered whole, then the connection closes", async () => {
    const { file, bytes } = files.get(1_000_000)!;
    const { received, fin, ms } = await halfClosed(server.port, `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /${file.id} HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHo`);
    const [health, download, more] = parseResponses(received, ["GET", "GET", "GET"], true);
    expect({ health: health?.status, download: summary(download), more, fin, quick: ms < 5000 }).toEqual({ health: 200, download: whole(bytes), more: undefined, fin: true, quick: true });
  });

  test("an upload whose body is cut short by the half-close is not stored, and the connection closes at once (as node:http does)", async () => {
    const head = `POST /v1/files?visibility=public&name=cut-short.bin HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 1000000\r\n\r\n`;
    const { received, ms } = await halfClosed(server.port, Buffer.concat([Buffer.from(head), Buffer.alloc(300_000, 97)]));
    expect({ received: received.length, quick: ms < 5000 }).toEqual({ received: 0, quick: true });
    const listed = (await (await client(server, key).fetch("/v1/files?page_size=100")).json()) as { files: FileJson[] };
    expect(listed.files.filter((f) => f.name === "cut-short.bin")).toEqual([]);
  });
});
