// test-lists: workers postgres-s3
// Header values reach the server trimmed (RFC 9110 §5.5), so a "bad" value is bad once trimmed.
// Hostile input to tus, guest upload links and share links against a real server on the
// configured stores (fast-check): random and mangled tus headers, IDs, link and share bodies and
// tokens, each request invalid in at least one way. Every answer is a contract error (JSON
// google.rpc.Status with a 4xx of the contract or of tus), never a 5xx, and nothing changed: the
// same blobs, upload rows, links, shares and files.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { parseUploadChecksum, parseUploadMetadata } from "../../src/domain/tus.ts";
import { parseTtl } from "../../src/domain/expiry.ts";
import { blobNames, runSql } from "../support/backend.ts";
import { outcome } from "../support/outcome.ts";
import { client, startServer, type RunningServer } from "../support/server.ts";
import { createUpload, patchChunk } from "../support/tus.ts";

let server: RunningServer;
let key: string;
let uploadUrl: string;
let linkToken: string;
let fileId: string;

beforeAll(async () => {
  server = await startServer({ env: { MAX_UPLOAD_BYTES: "1000000" } });
  key = await server.mintKey("tus-hostile@example.com");
  uploadUrl = await createUpload(server.url, key, 100);
  expect((await patchChunk(uploadUrl, key, 0, "12345")).status).toBe(204);
  const link = await client(server, key).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: '{"max_files":1}' });
  linkToken = ((await link.json()) as { url: string }).url.split("/u/")[1]!;
  fileId = (await client(server, key).upload("shared", "?name=shared.txt")).id;
});
afterAll(() => server?.[Symbol.asyncDispose]());

const ERRORS = new Set([400, 401, 403, 404, 409, 410, 412, 413, 415, 460]);

/** What must not change: blobs and partial bytes, upload rows, links and files. */
async function snapshot() {
  return {
    blobs: await blobNames(server.dataDir),
    uploads: await runSql(server.dataDir, 'SELECT id, "offset", file_id FROM uploads ORDER BY id'),
    links: await runSql(server.dataDir, "SELECT id, files_uploaded, bytes_uploaded, deleted_at FROM upload_links ORDER BY id"),
    files: await runSql(server.dataDir, "SELECT id FROM files ORDER BY id"),
    shares: await runSql(server.dataDir, "SELECT id, download_count, deleted_at FROM shares ORDER BY id"),
  };
}

const anyString = fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: "binary-ascii", maxLength: 60 }));
const rejected = (parse: () => unknown) => "error" in outcome(parse);
const badInt = fc.oneof(anyString, fc.constantFrom("-1", "+5", " 5", "5 ", "1e3", "0x10", "99999999999999999999", "", "5,5", "٥")).filter((s) => !/^\d+$/.test(s.trim()));
const badMeta = fc.oneof(anyString, fc.constantFrom("a YQ==,a YQ==", "a YQ", ",", "a  YQ==", "k\u00e9 YQ==", "a AA==", "a /w==")).filter((s) => s.trim() !== "" && rejected(() => parseUploadMetadata(s.trim())));
const badChecksum = fc.oneof(anyString, fc.constantFrom("md5 1B2M2Y8AsgTpgAmY7PhCfg==", "sha1", "crc32c 4waSgw", "SHA1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=")).filter((s) => rejected(() => parseUploadChecksum(s.trim())));
const badVersion = fc.oneof(anyString, fc.constantFrom("1.0.1", "0.2.2", "1.0.0 ", "1")).filter((s) => s.trim() !== "1.0.0");
const body = fc.uint8Array({ minLength: 1, maxLength: 90 });
const wrongDigest = fc.oneof(
  fc.uint8Array({ minLength: 4, maxLength: 4 }).map((d) => `crc32c ${Buffer.from(d).toString("base64")}`),
  fc.uint8Array({ minLength: 20, maxLength: 20 }).map((d) => `sha1 ${Buffer.from(d).toString("base64")}`),
);

/** A body that is not a JSON object (an empty one counts as `{}`). */
function notAnObject(text: string): boolean {
  if (text.trim() === "") return false;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v !== "object" || v === null || Array.isArray(v);
  } catch {
    return true;
  }
}

interface Attempt {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array | string;
}

const T = { "tus-resumable": "1.0.0" };
const CHUNK = { "content-type": "application/offset+octet-stream" };

function attempts(): fc.Arbitrary<Attempt> {
  const auth = { authorization: `Bearer ${key}` };
  const path = new URL(uploadUrl).pathname;
  const post = (headers: Record<string, string>, b?: Uint8Array): Attempt => ({ method: "POST", path: "/v1/uploads", headers: { ...auth, ...headers }, body: b });
  const patch = (headers: Record<string, string>, b: Uint8Array): Attempt => ({ method: "PATCH", path, headers: { ...auth, ...headers }, body: b });
  return fc.oneof(
    // Creation, one header bad.
    badInt.map((v) => post({ ...T, "upload-length": v })),
    badMeta.map((v) => post({ ...T, "upload-length": "10", "upload-metadata": v })),
    badVersion.map((v) => post({ "tus-resumable": v, "upload-length": "10" })),
    fc.tuple(badChecksum, body).map(([v, b]) => post({ ...T, ...CHUNK, "upload-length": "100", "upload-checksum": v }, b)),
    fc.integer({ min: 1_000_001, max: Number.MAX_SAFE_INTEGER }).map((n) => post({ ...T, "upload-length": String(n) })),
    fc.constant(post({ ...T, "upload-length": "10", "upload-defer-length": "1" })),
    fc.constantFrom("slug x", "visibility c2VjcmV0", "expire_time MjAwMS0wMS0wMVQwMDowMDowMFo=", "filename YS9i").map((m) => post({ ...T, "upload-length": "10", "upload-metadata": m })),
    // Appending, one thing wrong.
    fc.tuple(badInt, body).map(([v, b]) => patch({ ...T, ...CHUNK, "upload-offset": v }, b)),
    fc.tuple(fc.nat(200).filter((n) => n !== 5), body).map(([n, b]) => patch({ ...T, ...CHUNK, "upload-offset": String(n) }, b)),
    fc.tuple(fc.oneof(anyString, fc.constantFrom("application/octet-stream", "text/plain", "")), body).filter(([t]) => t.split(";")[0]!.trim().toLowerCase() !== "application/offset+octet-stream").map(([t, b]) => patch({ ...T, "content-type": t, "upload-offset": "5" }, b)),
    fc.tuple(badChecksum, body).map(([v, b]) => patch({ ...T, ...CHUNK, "upload-offset": "5", "upload-checksum": v }, b)),
    fc.tuple(wrongDigest, body).map(([v, b]) => patch({ ...T, ...CHUNK, "upload-offset": "5", "upload-checksum": v }, b)),
    fc.tuple(badVersion, body).map(([v, b]) => patch({ "tus-resumable": v, ...CHUNK, "upload-offset": "5" }, b)),
    fc.uint8Array({ minLength: 96, maxLength: 300 }).map((b) => patch({ ...T, ...CHUNK, "upload-offset": "5" }, b)),
    // Someone else's credentials, or none, or another ID.
    fc.tuple(fc.constantFrom("HEAD", "PATCH", "DELETE"), fc.oneof(fc.constant(""), anyString.map((s) => `Bearer ${s}`))).map(([method, a]) => ({ method, path, headers: { ...T, ...CHUNK, "upload-offset": "5", ...(a === "" ? {} : { authorization: a }) } })),
    fc.tuple(fc.constantFrom("HEAD", "PATCH", "DELETE"), anyString).map(([method, id]) => ({ method, path: `/v1/uploads/${encodeURIComponent(id)}`, headers: { ...auth, ...T, ...CHUNK, "upload-offset": "0" }, body: method === "PATCH" ? "x" : undefined })),
    // Upload links: invalid bodies, IDs and tokens.
    fc
      .record({
        ttl: fc.oneof(anyString.filter((s) => s !== "" && rejected(() => parseTtl(s))), fc.constant(undefined)),
        max_files: fc.oneof(fc.integer({ max: 0 }), fc.double({ noInteger: true }), fc.string(), fc.constant(undefined)),
        max_bytes: fc.oneof(fc.integer({ max: 0 }), fc.boolean(), fc.constant(undefined)),
        visibility: fc.oneof(anyString.filter((s) => !["", "private", "internal", "public"].includes(s)), fc.constant(undefined)),
        expire_time: fc.oneof(fc.constantFrom("2001-01-01T00:00:00Z", "tomorrow", "2099-02-30T00:00:00Z"), fc.constant(undefined)),
        unknown: fc.oneof(fc.anything(), fc.constant(undefined)),
      })
      .filter((o) => Object.values(o).some((v) => v !== undefined))
      .map((o) => ({ method: "POST", path: "/v1/upload-links", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(o) })),
    anyString.filter(notAnObject).map((s) => ({ method: "POST", path: "/v1/upload-links", headers: { ...auth, "content-type": "application/json" }, body: s })),
    anyString.map((id) => ({ method: "DELETE", path: `/v1/upload-links/${encodeURIComponent(id)}`, headers: auth })),
    fc.tuple(anyString, fc.constantFrom("GET", "POST")).map(([token, method]) => ({ method, path: `/u/${encodeURIComponent(token)}`, headers: {}, body: method === "POST" ? "x" : undefined })),
    // Share links: invalid bodies (each with at least one bad field), IDs and tokens.
    fc
      .record({
        ttl: fc.oneof(anyString.filter((s) => rejected(() => parseTtl(s))), fc.integer(), fc.constant(undefined)),
        expire_time: fc.oneof(fc.constantFrom("2001-01-01T00:00:00Z", "tomorrow", "2099-02-30T00:00:00Z", ""), fc.boolean(), fc.constant(undefined)),
        max_downloads: fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 1_000_000_001 }), fc.double({ noInteger: true }), fc.string(), fc.boolean(), fc.constant(undefined)),
        password: fc.oneof(fc.constant(""), fc.string({ minLength: 1025, maxLength: 1100 }), fc.integer(), fc.object(), fc.constant(undefined)),
        unknown: fc.oneof(fc.anything(), fc.constant(undefined)),
      })
      .filter((o) => Object.values(o).some((v) => v !== undefined))
      .map((o) => ({ method: "POST", path: `/v1/files/${fileId}/shares`, headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(o) })),
    anyString.filter(notAnObject).map((s) => ({ method: "POST", path: `/v1/files/${fileId}/shares`, headers: { ...auth, "content-type": "application/json" }, body: s })),
    anyString.map((id) => ({ method: "POST", path: `/v1/files/${encodeURIComponent(id)}/shares`, headers: { ...auth, "content-type": "application/json" }, body: "{}" })),
    anyString.map((id) => ({ method: "DELETE", path: `/v1/shares/${encodeURIComponent(id)}`, headers: auth })),
    fc.tuple(anyString, fc.constantFrom("GET", "POST")).map(([token, method]): Attempt => ({ method, path: `/s/${encodeURIComponent(token)}`, headers: method === "POST" ? { "content-type": "application/x-www-form-urlencoded" } : {}, body: method === "POST" ? "password=x" : undefined })),
    // A real link's token where it does not belong, or with a bad name.
    fc.constant({ method: "POST", path: `/u/${linkToken}?name=a%2Fb`, headers: {}, body: "x" } as Attempt),
    badVersion.map((v) => ({ method: "POST", path: "/v1/uploads", headers: { authorization: `Bearer ${linkToken}`, "tus-resumable": v, "upload-length": "1" } })),
  );
}

test("mangled tus headers, IDs, link and share bodies and tokens: a contract error every time, never a 5xx, and nothing changed", async () => {
  const before = await snapshot();
  let sent = 0;
  await fc.assert(
    fc.asyncProperty(attempts(), async (a) => {
      // Control characters in a header are the HTTP parser's to refuse (http1-hostile.test.ts).
      if (Object.values(a.headers).some((v) => /[\x00-\x08\x0A-\x1F\x7F]/.test(v))) return;
      let res: Response;
      try {
        res = await fetch(server.url + a.path, { method: a.method, headers: a.headers, body: a.body });
      } catch (err) {
        // fetch refuses some header values (CR, LF, non-Latin-1) before sending: nothing to test.
        if (err instanceof TypeError) return;
        throw err;
      }
      sent++;
      const text = await res.text();
      const where = `${a.method} ${a.path} ${JSON.stringify(a.headers)} → ${res.status} ${text}`;
      expect([where, ERRORS.has(res.status)]).toEqual([where, true]);
      // HEAD has no body; the guest and share pages answer HTML to browsers.
      if (a.method === "HEAD" || (a.path.startsWith("/u/") && a.method === "GET") || a.path.startsWith("/s/")) return;
      const error = JSON.parse(text) as { code: unknown; message: unknown; details: unknown };
      expect([where, typeof error.code, typeof error.message, error.details]).toEqual([where, "number", "string", []]);
    }),
    { numRuns: 400 },
  );
  expect(sent).toBeGreaterThan(200);
  expect(await snapshot()).toEqual(before);
  expect(server.errors()).not.toContain("error=internal");
}, 120_000);
