// test-lists: workers postgres-s3
// Content answered at once (src/serving/content.ts deciding now) says exactly what the usual path says.
// Two servers share one data directory (and store); one never answers at once
// (CUBBY_TEST_AT_ONCE=off). The same requests — generated: GET and HEAD, slugs, queries, ranges,
// conditionals, HTTP/1.0 and 1.1, pipelined pairs — go to both over raw TCP, and over h2c, and
// the bytes that come back must be the same but for the Date header. The response tap says which
// answers were given at once, so the comparison cannot pass with the path never taken.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import http2 from "node:http2";
import { BACKEND } from "../support/backend.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { serverSide } from "../support/sockets.ts";
import { waitFor } from "../support/wait.ts";
import { RawHttp } from "../support/raw-http.ts";

/**
 * On PostgreSQL nothing is answered at once: the read caches ask the store before trusting an
 * entry (MetadataStore.sharedVersion), so the comparison holds with both servers on the usual path.
 */
const ANSWERS_AT_ONCE = BACKEND !== "postgres-s3";
let atOnce: RunningServer;
let usual: RunningServer;
const files: FileJson[] = [];
/** Bearer keys the generated requests may carry, by who holds them. */
const keys: Record<"owner" | "other" | "writeOnly", string> = { owner: "", other: "", writeOnly: "" };
/** The ETag and Last-Modified of each file, by ID, for conditional requests that match. */
const validators = new Map<string, { etag: string; lastModified: string }>();

beforeAll(async () => {
  // One public URL for both: redirects name it.
  atOnce = await startServer({ env: { HOSTNAME: "https://files.example" } });
  usual = await startServer({ dataDir: atOnce.dataDir, env: { HOSTNAME: "https://files.example", CUBBY_TEST_AT_ONCE: "off" } });
  const key = await atOnce.mintKey("now@example.com");
  keys.owner = key;
  keys.other = await atOnce.mintKey("other@example.com");
  keys.writeOnly = await atOnce.mintKey("other@example.com", "--scope", "files.write");
  const api = client(atOnce, key);
  const text = new TextEncoder().encode("plain text, a hundred bytes or so, for ranges: 0123456789abcdefghijklmnopqrstuvwxyz!");
  files.push(await api.upload(text, "?visibility=public&slug=notes.txt&name=" + encodeURIComponent("notes ü.txt"), { "content-type": "text/plain; charset=utf-8" }));
  files.push(await api.upload("<p>active</p>", "?visibility=public&slug=page.html&name=page.html", { "content-type": "text/html" }));
  files.push(await api.upload(new Uint8Array(0), "?visibility=public&slug=empty&name=empty.bin"));
  // Over the small-blob cache (64 KiB): streamed from the store, never at once.
  files.push(await api.upload(new Uint8Array(100 * 1024).fill(7), "?visibility=public&slug=large.bin&name=large.bin"));
  // Not public: credentials decide (at once when a key's lookups are cached).
  files.push(await api.upload("internal", "?visibility=internal&slug=internal.txt&name=internal.txt"));
  files.push(await api.upload("private", "?visibility=private&slug=private.txt&name=private.txt"));
  for (const f of files) {
    const res = await fetch(`${atOnce.url}/${f.id}`);
    await res.arrayBuffer();
    validators.set(f.id, { etag: res.headers.get("etag") ?? '"none"', lastModified: res.headers.get("last-modified") ?? "x" });
  }
});

afterAll(async () => {
  await usual?.[Symbol.asyncDispose]();
  await atOnce?.[Symbol.asyncDispose]();
});

/** Sends `bytes` on a new connection and resolves with everything received until the server closes it. */
async function exchange(port: number, bytes: string): Promise<Buffer> {
  using c = await RawHttp.connect(port);
  c.write(bytes);
  await c.whenClosed();
  return c.received;
}

/** What a response says, Date aside (it moves with the clock). */
const withoutDate = (raw: Buffer) => raw.toString("latin1").replace(/\r\nDate: [^\r]*/g, "\r\nDate: -");

/** One generated request: its parts, written as an HTTP/1.x request with {@link requestText}. */
const request = fc.record({
  method: fc.constantFrom("GET", "HEAD"),
  file: fc.nat({ max: 5 }),
  path: fc.constantFrom("id", "slug", "wrong-slug", "encoded-slug"),
  query: fc.constantFrom("", "?download=1", "?download=0", "?download=1&download=1", "?download=%ZZ", "?x=1"),
  range: fc.option(fc.constantFrom("bytes=0-9", "bytes=-5", "bytes=5-", "bytes=1000000-", "bytes=0-1,3-4", "bytes=x", "bytes=0-0"), { nil: undefined }),
  ifNoneMatch: fc.option(fc.constantFrom("etag", "weak", "*", '"nope"', "list"), { nil: undefined }),
  ifModifiedSince: fc.option(fc.constantFrom("same", "Thu, 01 Jan 1970 00:00:00 GMT", "Fri, 01 Jan 2100 00:00:00 GMT", "garbage"), { nil: undefined }),
  ifRange: fc.option(fc.constantFrom("etag", "date", '"other"'), { nil: undefined }),
  accept: fc.option(fc.constantFrom("text/html", "*/*"), { nil: undefined }),
  auth: fc.option(fc.constantFrom("owner", "other", "writeOnly", "invalid", "basic"), { nil: undefined }),
  http10: fc.boolean(),
});
type Request = typeof request extends fc.Arbitrary<infer T> ? T : never;

function targetOf(r: Request): string {
  const f = files[r.file]!;
  const path = { id: `/${f.id}`, slug: `/${f.id}/${f.slug}`, "wrong-slug": `/${f.id}/other`, "encoded-slug": `/${f.id}/${encodeURIComponent(f.slug).replace(/\./g, "%2E")}` }[r.path];
  return path + r.query;
}

function headersOf(r: Request): [string, string][] {
  const { etag, lastModified } = validators.get(files[r.file]!.id)!;
  const h: [string, string][] = [["x-request-id", "cmp-1"]];
  if (r.range !== undefined) h.push(["range", r.range]);
  if (r.ifNoneMatch !== undefined) h.push(["if-none-match", { etag, weak: `W/${etag}`, "*": "*", '"nope"': '"nope"', list: `"nope", ${etag}` }[r.ifNoneMatch]]);
  if (r.ifModifiedSince !== undefined) h.push(["if-modified-since", r.ifModifiedSince === "same" ? lastModified : r.ifModifiedSince]);
  if (r.ifRange !== undefined) h.push(["if-range", { etag, date: lastModified, '"other"': '"other"' }[r.ifRange]]);
  if (r.accept !== undefined) h.push(["accept", r.accept]);
  if (r.auth === "invalid") h.push(["authorization", "Bearer cubby_not-a-live-key-not-a-live-key-not-a-live-k"]);
  else if (r.auth === "basic") h.push(["authorization", "Basic dXNlcjpwYXNz"]);
  else if (r.auth !== undefined) h.push(["authorization", `Bearer ${keys[r.auth]}`]);
  return h;
}

/** The request as HTTP/1.x text; `last` asks the server to close the connection after it. */
function requestText(r: Request, last: boolean): string {
  const lines = [`${r.method} ${targetOf(r)} HTTP/1.${r.http10 ? 0 : 1}`, "Host: localhost", ...headersOf(r).map(([n, v]) => `${n}: ${v}`)];
  // HTTP/1.0 persists only when asked to, HTTP/1.1 unless told not to (RFC 9112 §9.3).
  if (!last) lines.push("Connection: keep-alive");
  else if (!r.http10) lines.push("Connection: close");
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** Content responses the server recorded as answered at once, and all of its content responses. */
function contentAnswers(server: RunningServer): { atOnce: number; all: number } {
  const ids = new Set(files.map((f) => f.id));
  const content = server.responses().filter((r) => ids.has(r.path.split("/")[1] ?? ""));
  return { atOnce: content.filter((r) => r.atOnce === true).length, all: content.length };
}

describe("HTTP/1.1", () => {
  test("every answer given at once is the one the usual path gives, byte for byte", async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const text = requestText(r, true);
        // Twice on the first server: the row is in its read cache for the second time at the latest.
        await exchange(atOnce.port, text);
        const [now, then] = await Promise.all([exchange(atOnce.port, text), exchange(usual.port, text)]);
        expect(withoutDate(now)).toBe(withoutDate(then));
      }),
      { numRuns: 150 },
    );
    const counted = contentAnswers(atOnce);
    expect(contentAnswers(usual).atOnce).toBe(0);
    if (!ANSWERS_AT_ONCE) return expect(counted.atOnce).toBe(0);
    // About half the generated requests can be answered at once (small, public or opened by a live key, no error).
    expect(counted.atOnce).toBeGreaterThan(counted.all / 4);
    // Files that are not public too, opened by a key whose lookups are cached.
    const notPublic = new Set(files.filter((f) => f.visibility !== "public").map((f) => `/${f.id}`));
    expect(atOnce.responses().filter((t) => t.atOnce === true && notPublic.has(t.path.replace(/^(\/[^/]+).*/, "$1"))).length).toBeGreaterThan(0);
  }, 120_000);

  test("pipelined: two requests in one write, the first kept alive, answered in order", async () => {
    await fc.assert(
      fc.asyncProperty(request, request, async (a, b) => {
        const text = requestText({ ...a, http10: false }, false) + requestText({ ...b, http10: false }, true);
        await exchange(atOnce.port, text);
        const [now, then] = await Promise.all([exchange(atOnce.port, text), exchange(usual.port, text)]);
        expect(withoutDate(now)).toBe(withoutDate(then));
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});

describe("HTTP/1.1, a client that reads late", () => {
  test("answers at once pipelined past what the socket's buffers hold all arrive once it reads (writes the kernel takes in part)", async () => {
    // Under the socket's high-water mark (16 KiB), so a write it cannot finish still returns true.
    const api = client(atOnce, keys.owner);
    const f = await api.upload(new Uint8Array(8 * 1024).fill(97), "?visibility=public&name=late.txt", { "content-type": "text/plain" });
    const get = `GET /${f.id} HTTP/1.1\r\nHost: localhost\r\n\r\n`;
    const size = (await exchange(atOnce.port, get + `GET /${f.id} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)).toString("latin1").indexOf("HTTP/1.1", 1);
    expect(size).toBeGreaterThan(8 * 1024);
    const COUNT = 2000; // ~17 MB of answers: more than the kernel buffers of a connection that is not read
    using c = await RawHttp.connect(atOnce.port);
    c.socket.pause();
    c.write(get.repeat(COUNT));
    // The server's kernel holds bytes it cannot send: its next write is taken in part, or not at
    // all. (Kernel state: polled, there is no event for it.)
    await waitFor(() => (serverSide(atOnce.port, c.socket.localPort!)?.sendQueue ?? 0) > 0, "the server's send queue to fill");
    c.socket.resume();
    await c.until(() => c.length >= COUNT * size, `${COUNT * size} bytes of answers (the server stopped answering)`);
    expect(c.length).toBe(COUNT * size);
  }, 30_000);
});

/** A response over h2c: its headers (`:status` among them, Date aside) and body. */
async function h2Get(session: http2.ClientHttp2Session, r: Request): Promise<{ headers: http2.IncomingHttpHeaders; body: string }> {
  const stream = session.request({ ":method": r.method, ":path": targetOf(r), ...Object.fromEntries(headersOf(r)) });
  const chunks: Buffer[] = [];
  const headers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
    stream.once("response", resolve);
    stream.once("error", reject);
  });
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  const { date: _date, ...rest } = headers;
  return { headers: rest, body: Buffer.concat(chunks).toString("latin1") };
}

describe("h2c", () => {
  test("every answer given at once is the one the usual path gives", async () => {
    const sessions = [http2.connect(`http://127.0.0.1:${atOnce.port}`), http2.connect(`http://127.0.0.1:${usual.port}`)];
    try {
      const before = contentAnswers(atOnce).atOnce;
      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          await h2Get(sessions[0]!, r);
          const [now, then] = await Promise.all([h2Get(sessions[0]!, r), h2Get(sessions[1]!, r)]);
          expect(now).toEqual(then);
        }),
        { numRuns: 150 },
      );
      if (ANSWERS_AT_ONCE) expect(contentAnswers(atOnce).atOnce - before).toBeGreaterThan(150 / 4);
      else expect(contentAnswers(atOnce).atOnce).toBe(0);
    } finally {
      for (const s of sessions) s.close();
    }
  }, 120_000);
});
