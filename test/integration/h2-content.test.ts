// test-lists: default
// Content URLs over h2c, answered on the HTTP/2 stream itself (server/h2-exchange.ts): the same
// answers as over HTTP/1.1, with request IDs, access-log lines, ranges, conditionals, HEAD,
// errors, share links, large downloads, and the dispatch still taking everything else.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import http2 from "node:http2";
import { h2On, type H2Answer } from "../support/h2.ts";
import { RawH2 } from "../support/h2-raw.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";

let server: RunningServer;
let key: string;
let session: http2.ClientHttp2Session;
let text: FileJson;
let large: FileJson;
let secret: FileJson;
/** Served from memory (up to 64 KiB), but more than a client's default flow-control window. */
let mid: FileJson;
const TEXT = "0123456789abcdefghij"; // 20 bytes
/** Larger than the blob store's in-memory limit (64 KiB): read from disk in chunks. */
const LARGE = crypto.getRandomValues(new Uint8Array(3 * 1024 * 1024 + 17));

beforeAll(async () => {
  server = await startServer({ env: { METRICS: "on" } });
  key = await server.mintKey("owner@example.com");
  const api = client(server, key);
  text = await api.upload(TEXT, "?visibility=public&slug=notes.txt&name=notes.txt", { "content-type": "text/plain; charset=utf-8" });
  large = await api.upload(LARGE, "?visibility=public");
  secret = await api.upload("private bytes", "?visibility=private");
  mid = await api.upload(new Uint8Array(60 * 1024), "?visibility=public");
  session = http2.connect(server.url);
}, 60_000);
afterAll(async () => {
  session?.close();
  await server?.[Symbol.asyncDispose]();
});

/** One request over the shared h2c session; the answer's headers without `date`. */
async function h2(path: string, headers: Record<string, string> = {}, method = "GET", on = session): Promise<H2Answer> {
  const answer = await h2On(on, path, { ":method": method, ...headers });
  delete answer.headers.date;
  return answer;
}

/** The same request over HTTP/1.1, in the same shape (hop-by-hop headers left out). */
async function h1(path: string, headers: Record<string, string> = {}, method = "GET"): Promise<H2Answer> {
  const res = await fetch(server.url + path, { method, headers, redirect: "manual" });
  const out: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!["date", "connection", "keep-alive"].includes(name)) out[name] = value;
  });
  return { status: res.status, headers: out, body: Buffer.from(await res.arrayBuffer()) };
}

/** An answer with its request ID checked and left out, to compare answers to different requests. */
const comparable = (a: H2Answer) => ({
  status: a.status,
  headers: { ...a.headers, "x-request-id": /^[A-Za-z0-9_-]{8,}$/.test(a.headers["x-request-id"] ?? "") },
  body: a.body.toString("base64"),
});

describe("content URLs over h2c answer what HTTP/1.1 answers", () => {
  const cases: [string, () => string, Record<string, string>, string?][] = [
    ["GET by ID", () => `/${text.id}`, {}],
    ["GET by canonical URL", () => new URL(text.url).pathname, {}],
    ["HEAD", () => `/${text.id}`, {}, "HEAD"],
    ["a range", () => `/${text.id}`, { range: "bytes=2-5" }],
    ["an unsatisfiable range", () => `/${text.id}`, { range: "bytes=50-60" }],
    ["a wrong slug (redirect)", () => `/${text.id}/other.txt?download=1`, {}],
    ["an unknown ID (404 JSON)", () => "/AAAAAAAAAAAAAAAAAAAAA", {}],
    ["an unknown ID by HEAD", () => "/AAAAAAAAAAAAAAAAAAAAA", {}, "HEAD"],
    ["a private file without credentials (401 JSON)", () => `/${secret.id}`, {}],
    ["a private file with the owner's key", () => `/${secret.id}`, { authorization: `Bearer ${key}` }],
    ["an unknown share link", () => "/s/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", {}],
  ];
  for (const [name, path, headers, method] of cases) {
    test(name, async () => {
      const [over2, over1] = await Promise.all([h2(path(), headers, method), h1(path(), headers, method)]);
      expect(comparable(over2)).toEqual(comparable(over1));
    });
  }

  test("If-None-Match with the ETag → 304 with no body", async () => {
    const etag = (await h2(`/${text.id}`)).headers.etag!;
    const answer = await h2(`/${text.id}`, { "if-none-match": etag });
    expect({ status: answer.status, body: answer.body.length, etag: answer.headers.etag }).toEqual({ status: 304, body: 0, etag });
  });
});

describe("what the dispatch does for every request is done on the stream too", () => {
  test("each answer carries its request ID, echoed when the client sent one, and one access-log line", async () => {
    const mine = await h2(`/${text.id}`, { "x-request-id": "h2-content-test-1" });
    expect(mine.headers["x-request-id"]).toBe("h2-content-test-1");
    await server.waitForOutput(`method=GET path="/${text.id}" status=200 bytes=20 `);
    await server.waitForOutput(/status=200 bytes=20 duration_ms=[\d.]+ request_id=h2-content-test-1\n/);

    const missing = await h2("/BBBBBBBBBBBBBBBBBBBBB");
    const id = missing.headers["x-request-id"]!;
    expect({ status: missing.status, body: JSON.parse(missing.body.toString()) }).toEqual({ status: 404, body: { code: 5, message: "file not found", details: [] } });
    await server.waitForOutput(new RegExp(`method=GET path="/BBBBBBBBBBBBBBBBBBBBB" status=404 bytes=\\d+ duration_ms=[\\d.]+ request_id=${id}\\n`));
  });

  test("a share link is served on the stream", async () => {
    const res = await fetch(`${server.url}/v1/files/${secret.id}/shares`, {
      method: "POST",
      body: "{}",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    });
    const share = (await res.json()) as { url: string };
    const answer = await h2(new URL(share.url).pathname);
    expect({ status: answer.status, body: answer.body.toString() }).toEqual({ status: 200, body: "private bytes" });
    await server.waitForOutput(`method=GET path="${new URL(share.url).pathname}" status=200 bytes=13 `);
  });

  test("the metrics count the route, the status and the body bytes of answers on the stream", async () => {
    const scrape = async () => (await fetch(`${server.url}/metrics`)).text();
    const sample = (text: string, name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
    const counter = 'cubby_http_requests_total{method="GET",route="/:id",status="200"}';
    const before = await scrape();
    for (let i = 0; i < 10; i++) await h2(`/${text.id}`);
    const after = await scrape();
    expect(sample(after, counter) - sample(before, counter)).toBe(10);
    // 10 × 20 body bytes, plus the first scrape's answer over HTTP/1.1 (counted by its socket).
    expect(sample(after, "cubby_sent_bytes_total") - sample(before, "cubby_sent_bytes_total")).toBeGreaterThanOrEqual(200);
  });

  test("a large download over h2c arrives whole, read from disk in chunks", async () => {
    const answer = await h2(`/${large.id}`);
    expect({ status: answer.status, length: answer.body.length, same: answer.body.equals(LARGE) }).toEqual({ status: 200, length: LARGE.length, same: true });
    const ranged = await h2(`/${large.id}`, { range: "bytes=1000000-2999999" });
    expect({ status: ranged.status, same: ranged.body.equals(Buffer.from(LARGE.subarray(1_000_000, 3_000_000))) }).toEqual({ status: 206, same: true });
  });

  test("a download reset mid-way leaves the session serving", async () => {
    await new Promise<void>((resolve, reject) => {
      const stream = session.request({ ":path": `/${large.id}` });
      stream.once("data", () => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        resolve();
      });
      stream.on("error", reject);
    });
    // Its line is written when the reset stream closes: the second whole download of the file.
    await server.waitForOutput(new RegExp(`(method=GET path="/${large.id}" status=200 bytes=${LARGE.length} [^\\n]*\\n[^]*){2}`));
    expect((await h2(`/${text.id}`)).body.toString()).toBe(TEXT);
  });

  test("connections reset by their clients while answers are being written leave the server serving", async () => {
    // Each client asks for 99 answers at once and resets its connection (RST) as the first
    // arrives: the server then writes into a connection the kernel has reset (EPIPE, ECONNRESET).
    // Answers from memory, held back by flow control (the client's windows are 64 KiB);
    // abandoned large downloads from S3 are another matter (issue 16).
    for (let round = 0; round < 30; round++) {
      const c = await RawH2.connect(server.port);
      for (let i = 0; i < 99; i++) {
        c.headers(1 + 2 * i, [[":method", "GET"], [":scheme", "http"], [":authority", "localhost"], [":path", `/${mid.id}`]], true);
      }
      await c.until(() => c.frames.some((f) => f.type === 0 /* DATA */), 10_000, "a first answer");
      c.socket.resetAndDestroy();
    }
    expect((await h2(`/${text.id}`)).body.toString()).toBe(TEXT);
    expect({ alive: server.proc.exitCode === null, errors: server.errors().match(/^error: .*$/gm) ?? [] }).toEqual({ alive: true, errors: [] });
  });

  test("everything else still goes through the dispatch: REST, a bad :authority, an upload", async () => {
    const list = await h2("/v1/files", { authorization: `Bearer ${key}` });
    expect(list.status).toBe(200);
    const bad = await h2(`/${text.id}`, { ":authority": "example.com:99999" });
    expect({ status: bad.status, message: JSON.parse(bad.body.toString()).message }).toEqual({ status: 400, message: 'malformed Host: "example.com:99999"' });
    const upload = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ":path": "/v1/files?visibility=public", ":method": "POST", authorization: `Bearer ${key}` });
      stream.on("response", (h) => resolve(Number(h[":status"])));
      stream.on("error", reject);
      stream.end("uploaded over h2c");
    });
    expect(upload).toBe(200);
  });
});

test("a graceful stop sends GOAWAY over h2c and lets a download in flight finish", async () => {
  await using own = await startServer();
  const owner = await own.mintKey("owner@example.com");
  const big = crypto.getRandomValues(new Uint8Array(16 * 1024 * 1024));
  const file = await client(own, owner).upload(big, "?visibility=public");
  const h2c = http2.connect(own.url);
  try {
    const goaway = new Promise<number>((resolve) => h2c.once("goaway", (code) => resolve(code)));
    const chunks: Buffer[] = [];
    const stream = h2c.request({ ":path": `/${file.id}` });
    const done = new Promise<void>((resolve, reject) => {
      stream.on("end", resolve);
      stream.on("error", reject);
    });
    // The client reads one chunk and stops: the server is held by flow control mid-download.
    await new Promise<void>((resolve) =>
      stream.once("data", (c: Buffer) => {
        chunks.push(c);
        stream.pause();
        resolve();
      }),
    );
    const exited = own.stop();
    expect(await goaway).toBe(http2.constants.NGHTTP2_NO_ERROR);
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.resume();
    await done;
    expect({ length: Buffer.concat(chunks).length, same: Buffer.concat(chunks).equals(big) }).toEqual({ length: big.length, same: true });
    expect(await exited).toBe(0);
    await own.waitForOutput(`method=GET path="/${file.id}" status=200 bytes=${big.length} `);
  } finally {
    h2c.destroy();
  }
}, 30_000);
