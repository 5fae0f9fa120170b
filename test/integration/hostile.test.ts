// test-lists: postgres-s3
// Hostile input against a real server (fast-check): every request gets 2xx or a contract error,
// never a 500, and a rejected request changes nothing.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";

let server: RunningServer;
let api: ReturnType<typeof client>;
let file: FileJson;

beforeAll(async () => {
  server = await startServer();
  api = client(server, await server.mintKey("hostile@example.com"));
  file = await api.upload("original", "?visibility=private&slug=orig&name=orig.txt");
});
afterAll(() => server[Symbol.asyncDispose]());

const CONTRACT_ERRORS = new Set([400, 401, 403, 404, 413, 415]);
const RUNS = { numRuns: 150 };

test("PATCH with arbitrary JSON bodies: 200, or 400 and nothing changed", async () => {
  const body = fc.oneof(
    fc.json({ maxDepth: 6 }),
    fc.record({ slug: fc.anything(), name: fc.anything(), visibility: fc.anything() }, { requiredKeys: [] }).map((o) => JSON.stringify(o)),
    fc.string({ maxLength: 200 }),
    fc.constant(`${"[".repeat(5000)}${"]".repeat(5000)}`),
    fc.constant(JSON.stringify({ slug: "x".repeat(100_000) })),
  );
  await fc.assert(
    fc.asyncProperty(body, async (text) => {
      const before = (await (await api.fetch(`/v1/files/${file.id}`)).json()) as FileJson;
      const res = await api.fetch(`/v1/files/${file.id}`, { method: "PATCH", body: text, headers: { "content-type": "application/json" } });
      expect(res.status === 200 || CONTRACT_ERRORS.has(res.status)).toBe(true);
      const after = (await (await api.fetch(`/v1/files/${file.id}`)).json()) as FileJson;
      if (res.status !== 200) expect(after).toEqual(before);
      else file = after;
    }),
    RUNS,
  );
});

test("POST /v1/files with arbitrary query strings and headers: 200 or 400, never a partial file", async () => {
  const value = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "grapheme", maxLength: 300 }));
  await fc.assert(
    fc.asyncProperty(value, value, value, value, async (slug, name, visibility, contentType) => {
      const count = async () => ((await (await api.fetch("/v1/files?page_size=1000")).json()) as { files: unknown[] }).files.length;
      const before = await count();
      const q = new URLSearchParams({ slug, name, visibility });
      let headers: Record<string, string> = {};
      try {
        new Headers({ "content-type": contentType });
        headers = { "content-type": contentType };
      } catch {
        // not a value fetch can send
      }
      const res = await api.fetch(`/v1/files?${q}`, { method: "POST", body: "x", headers });
      expect(res.status === 200 || res.status === 400).toBe(true);
      expect(await count()).toBe(res.status === 200 ? before + 1 : before);
    }),
    { numRuns: 100 },
  );
});

test("arbitrary paths (.., %2f, %00, unicode) never give a 500", async () => {
  const segment = fc.oneof(
    fc.constantFrom("..", ".", "%2f", "%2F..%2F", "%00", "%", "v1", "files", "auth", "keys", file.id, `${file.id}%00`, "~", "%E2%82%AC"),
    fc.string({ maxLength: 30 }).map(encodeURIComponent),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 5 }), fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"), async (segments, method) => {
      const res = await api.fetch(`/${segments.join("/")}`, { method, body: method === "GET" || method === "HEAD" ? undefined : "x" });
      expect({ path: segments.join("/"), status: res.status < 500 }).toEqual({ path: segments.join("/"), status: true });
      await res.arrayBuffer();
    }),
    RUNS,
  );
});

test("a trailing slash is another path, which the document does not list: 404, as every unlisted path", async () => {
  for (const path of ["/v1/files/", "/v1/usage/", "/auth/session/", "/v1/upload-links/", "/healthz/"]) {
    const res = await api.fetch(path);
    expect({ path, status: res.status, code: ((await res.json()) as { code: number }).code }).toEqual({ path, status: 404, code: 5 });
  }
});
