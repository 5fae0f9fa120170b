// test-lists: workers postgres-s3
// Every REST endpoint of CONTRACT §2 through a real server, with fetch.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { BACKEND, blobNames } from "../support/backend.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";

let server: RunningServer;
let key: string;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  server = await startServer({ env: { MAX_UPLOAD_BYTES: "1048576" } });
  key = await server.mintKey("owner@example.com");
  api = client(server, key);
});
afterAll(() => server[Symbol.asyncDispose]());

const FILE_KEYS = ["id", "slug", "url", "name", "content_type", "size", "checksum", "visibility", "created_at", "updated_at"];
const RFC3339_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z$/;

/** Status and body of a response, for whole-object comparisons. */
async function result(res: Response) {
  const text = await res.text();
  return { status: res.status, body: text === "" ? null : JSON.parse(text) };
}

describe("POST /v1/files", () => {
  test("creates a file and returns exactly the spec's File object", async () => {
    const res = await api.fetch("/v1/files?slug=hello.txt&name=Hello%20World.txt&visibility=private", {
      method: "POST",
      body: "123456789",
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const file = (await res.json()) as FileJson;
    expect(Object.keys(file)).toEqual(FILE_KEYS);
    expect(file).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{21}$/),
      slug: "hello.txt",
      url: `${server.url}/${file.id}/hello.txt`,
      name: "Hello World.txt",
      content_type: "text/plain; charset=utf-8",
      size: "9",
      checksum: "4waSgw==",
      visibility: "private",
      created_at: expect.stringMatching(RFC3339_UTC),
      updated_at: file.created_at,
    });
  });

  test("defaults: internal, no slug, no name, octet-stream, empty body allowed", async () => {
    const res = await api.fetch("/v1/files", { method: "POST" });
    const file = (await res.json()) as FileJson;
    expect({ status: res.status, ...file }).toMatchObject({
      status: 200,
      slug: "",
      url: `${server.url}/${file.id}`,
      name: "",
      content_type: "application/octet-stream",
      size: "0",
      checksum: "AAAAAA==",
      visibility: "internal",
    });
  });

  test("binary content round-trips byte for byte", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(300_000));
    const file = await api.upload(bytes, "?visibility=public", { "content-type": "application/x-thing" });
    const back = new Uint8Array(await (await fetch(file.url)).arrayBuffer());
    expect(Buffer.compare(back, bytes)).toBe(0);
    expect(file.size).toBe("300000");
  });

  test.each([
    ["bad slug", "?slug=a/b", {}],
    ["slug too long", `?slug=${"a".repeat(129)}`, {}],
    ["bad name", "?name=a%2Fb", {}],
    ["name with control character", "?name=a%0Ab", {}],
    ["name too long", `?name=${"n".repeat(256)}`, {}],
    ["bad visibility", "?visibility=secret", {}],
    ["bad content type", "", { "content-type": "not a media type" }],
    ["malformed checksum header", "", { "x-amz-checksum-crc32c": "zzz" }],
    ["checksum mismatch", "", { "x-goog-hash": "crc32c=AAAAAA==" }],
    ["checksum mismatch (S3 header)", "", { "x-amz-checksum-crc32c": "AAAAAA==" }],
  ])("400 and nothing stored: %s", async (_, query, headers) => {
    const before = await listAll();
    const blobsBefore = await blobNames(server.dataDir);
    const res = await api.fetch(`/v1/files${query}`, { method: "POST", body: "123456789", headers });
    expect(await result(res)).toEqual({ status: 400, body: { code: 3, message: expect.any(String), details: [] } });
    expect(await listAll()).toEqual(before);
    expect(await blobNames(server.dataDir)).toEqual(blobsBefore);
  });

  test("a matching declared checksum is accepted", async () => {
    const file = await api.upload("123456789", "", { "x-goog-hash": "crc32c=4waSgw==", "x-amz-checksum-crc32c": "4waSgw==" });
    expect(file.checksum).toBe("4waSgw==");
  });

  test("413 over MAX_UPLOAD_BYTES, by Content-Length and while streaming; nothing stored", async () => {
    const before = await listAll();
    const blobsBefore = await blobNames(server.dataDir);
    const big = new Uint8Array(1048577);
    const declared = await api.fetch("/v1/files", { method: "POST", body: big });
    expect(await result(declared)).toEqual({ status: 413, body: { code: 8, message: expect.any(String), details: [] } });
    // A chunked body has no Content-Length: the limit is enforced while streaming.
    let chunks = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(new Uint8Array(64 * 1024));
        if (++chunks >= 17) c.close();
      },
    });
    const streamed = await api.fetch("/v1/files", { method: "POST", body: stream, duplex: "half" } as RequestInit);
    expect((await result(streamed)).status).toBe(413);
    expect(await listAll()).toEqual(before);
    expect(await blobNames(server.dataDir)).toEqual(blobsBefore);
  });

  test("exactly MAX_UPLOAD_BYTES is accepted", async () => {
    const file = await api.upload(new Uint8Array(1048576));
    expect(file.size).toBe("1048576");
  });
});

describe("GET /v1/files/{id}", () => {
  test("returns the same File object as create", async () => {
    const created = await api.upload("abc", "?name=a.txt");
    expect(await result(await api.fetch(`/v1/files/${created.id}`))).toEqual({ status: 200, body: created });
  });
  test("404 for an unknown ID, 400 for a malformed one", async () => {
    expect(await result(await api.fetch("/v1/files/AAAAAAAAAAAAAAAAAAAAA"))).toEqual({
      status: 404,
      body: { code: 5, message: "file not found", details: [] },
    });
    expect((await result(await api.fetch("/v1/files/short"))).body.code).toBe(3);
  });
});

describe("GET /v1/files", () => {
  test("lists the caller's files newest first, paging with next_page_token", async () => {
    const other = client(server, await server.mintKey("lister@example.com"));
    const made: FileJson[] = [];
    for (let i = 0; i < 5; i++) made.push(await other.upload(`file ${i}`, `?name=f${i}`));
    type Page = { files: FileJson[]; next_page_token: string };
    const page1 = (await (await other.fetch("/v1/files?page_size=2")).json()) as Page;
    const page2 = (await (await other.fetch(`/v1/files?page_size=2&page_token=${page1.next_page_token}`)).json()) as Page;
    const page3 = (await (await other.fetch(`/v1/files?page_size=2&page_token=${page2.next_page_token}`)).json()) as Page;
    const got: unknown = [page1, page2, page3];
    expect(got).toEqual([
      { files: [made[4], made[3]], next_page_token: expect.stringMatching(/.+/) },
      { files: [made[2], made[1]], next_page_token: expect.stringMatching(/.+/) },
      { files: [made[0]], next_page_token: "" },
    ]);
    expect(await (await other.fetch("/v1/files")).json()).toEqual({ files: made.toReversed(), next_page_token: "" });
  });
  test.each(["0", "1001", "x", "-1"])("page_size=%p is 400", async (size) => {
    expect((await result(await api.fetch(`/v1/files?page_size=${size}`))).status).toBe(400);
  });
  test("a forged page_token is 400", async () => {
    expect((await result(await api.fetch("/v1/files?page_token=bm9wZQ"))).status).toBe(400);
  });
});

describe("PUT /v1/files/{id}/content", () => {
  test("replaces content; ID, URL and created_at stay; updated_at moves", async () => {
    const created = await api.upload("old", "?slug=doc&visibility=public", { "content-type": "text/plain" });
    const res = await api.fetch(`/v1/files/${created.id}/content`, {
      method: "PUT",
      body: "123456789",
      headers: { "content-type": "text/markdown" },
    });
    const replaced = (await res.json()) as FileJson;
    expect(replaced).toEqual({
      ...created,
      content_type: "text/markdown",
      size: "9",
      checksum: "4waSgw==",
      updated_at: expect.stringMatching(RFC3339_UTC),
    });
    expect(Date.parse(replaced.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    expect(replaced.updated_at).not.toBe(created.updated_at);
    expect(await (await fetch(created.url)).text()).toBe("123456789");
  });
  test("a checksum mismatch keeps the old content", async () => {
    const created = await api.upload("keep me", "?visibility=public");
    const res = await api.fetch(`/v1/files/${created.id}/content`, {
      method: "PUT",
      body: "new",
      headers: { "x-amz-checksum-crc32c": "AAAAAA==" },
    });
    expect(res.status).toBe(400);
    expect(await (await fetch(created.url)).text()).toBe("keep me");
    expect(await (await api.fetch(`/v1/files/${created.id}`)).json()).toEqual(created);
  });
  test("404 for an unknown file", async () => {
    const res = await api.fetch("/v1/files/AAAAAAAAAAAAAAAAAAAAA/content", { method: "PUT", body: "x" });
    expect((await result(res)).status).toBe(404);
  });
});

describe("PATCH /v1/files/{id}", () => {
  const patch = (id: string, body: string, contentType = "application/json") =>
    api.fetch(`/v1/files/${id}`, { method: "PATCH", body, headers: { "content-type": contentType } });

  test("sets and clears slug, name and visibility; url follows the slug", async () => {
    const created = await api.upload("x", "?name=a.txt");
    const set = (await (await patch(created.id, JSON.stringify({ slug: "my-slug", name: "b.txt", visibility: "public" }))).json()) as FileJson;
    expect(set).toEqual({
      ...created,
      slug: "my-slug",
      url: `${server.url}/${created.id}/my-slug`,
      name: "b.txt",
      visibility: "public",
      updated_at: expect.any(String),
    });
    const cleared = (await (await patch(created.id, JSON.stringify({ slug: "", name: "" }))).json()) as FileJson;
    expect(cleared).toMatchObject({ slug: "", url: `${server.url}/${created.id}`, name: "", visibility: "public" });
    expect(await (await api.fetch(`/v1/files/${created.id}`)).json()).toEqual(cleared);
  });

  test("an empty object changes nothing", async () => {
    const created = await api.upload("x");
    expect(await result(await patch(created.id, "{}"))).toEqual({ status: 200, body: created });
  });

  test.each([
    ["unknown field", '{"slug":"a","color":"red"}', "application/json", 400],
    ["wrong type", '{"slug":5}', "application/json", 400],
    ["null value", '{"name":null}', "application/json", 400],
    ["array body", '["slug"]', "application/json", 400],
    ["not JSON", "{slug:", "application/json", 400],
    ["bad slug", '{"slug":"a b"}', "application/json", 400],
    ["bad visibility", '{"visibility":"everyone"}', "application/json", 400],
    ["form body", "slug=a", "application/x-www-form-urlencoded", 415],
    ["no content type", '{"slug":"a"}', "", 415],
  ])("%s → %d and nothing changes", async (_, body, contentType, status) => {
    const created = await api.upload("x", "?slug=orig");
    const res = await api.fetch(`/v1/files/${created.id}`, {
      method: "PATCH",
      body,
      headers: contentType === "" ? {} : { "content-type": contentType },
    });
    const r = await result(res);
    expect(r).toEqual({ status, body: { code: 3, message: expect.any(String), details: [] } });
    expect(await (await api.fetch(`/v1/files/${created.id}`)).json()).toEqual(created);
  });

  test("application/json with a charset parameter is accepted", async () => {
    const created = await api.upload("x");
    const res = await patch(created.id, '{"slug":"ok"}', "application/json; charset=utf-8");
    expect(((await res.json()) as FileJson).slug).toBe("ok");
  });
});

describe("publish, unpublish, delete", () => {
  test("publish makes a file public; unpublish makes it internal", async () => {
    const created = await api.upload("x", "?visibility=private");
    expect(await result(await api.fetch(`/v1/files/${created.id}/publish`, { method: "POST" }))).toEqual({ status: 200, body: {} });
    expect(((await (await api.fetch(`/v1/files/${created.id}`)).json()) as FileJson).visibility).toBe("public");
    expect((await fetch(created.url)).status).toBe(200);
    expect(await result(await api.fetch(`/v1/files/${created.id}/unpublish`, { method: "POST" }))).toEqual({ status: 200, body: {} });
    expect(((await (await api.fetch(`/v1/files/${created.id}`)).json()) as FileJson).visibility).toBe("internal");
    expect((await fetch(created.url)).status).toBe(401);
  });

  test("delete removes metadata and content", async () => {
    const created = await api.upload("bye", "?visibility=public");
    expect(await result(await api.fetch(`/v1/files/${created.id}`, { method: "DELETE" }))).toEqual({ status: 200, body: {} });
    expect((await api.fetch(`/v1/files/${created.id}`)).status).toBe(404);
    expect((await fetch(created.url)).status).toBe(404);
    expect((await api.fetch(`/v1/files/${created.id}`, { method: "DELETE" })).status).toBe(404);
  });
});

describe("authentication on /v1", () => {
  test.each([
    ["no header", {}],
    ["unknown key", { authorization: "Bearer cubby_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }],
    ["not a key at all", { authorization: "Bearer hello" }],
    ["Basic scheme", { authorization: "Basic dXNlcjpwYXNz" }],
  ])("401 with WWW-Authenticate: Bearer — %s", async (_, headers) => {
    const res = await fetch(`${server.url}/v1/files`, { headers });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
    expect(((await res.json()) as { code: number }).code).toBe(16);
  });

  test("a key in the query string is not accepted", async () => {
    const res = await fetch(`${server.url}/v1/files?access_token=${key}&key=${key}`);
    expect(res.status).toBe(401);
  });

  test("unknown /v1 paths are 404 Status JSON", async () => {
    expect(await result(await api.fetch("/v1/nothing"))).toEqual({ status: 404, body: { code: 5, message: "not found", details: [] } });
  });
});

test("GET /healthz", async () => {
  expect(await result(await fetch(`${server.url}/healthz`))).toEqual({ status: 200, body: { status: "ok" } });
});

test("one log line per request with method, path, status, bytes, duration and request id", async () => {
  const res = await fetch(`${server.url}/healthz`, { headers: { "x-request-id": "trace-me-123" } });
  expect(res.headers.get("x-request-id")).toBe("trace-me-123");
  await server.waitForOutput("request_id=trace-me-123");
  const line = server.output().split("\n").find((l) => l.includes("request_id=trace-me-123"));
  expect(line).toMatch(/^method=GET path="\/healthz" status=200 bytes=15 duration_ms=\d+\.\d request_id=trace-me-123$/);
});

async function listAll(): Promise<FileJson[]> {
  const res = await api.fetch("/v1/files?page_size=1000");
  return ((await res.json()) as { files: FileJson[] }).files;
}

// The fault is made on the disk: the blob store's upload directory becomes a file.
test.skipIf(BACKEND !== "sqlite-disk")("an internal error answers 500 'internal error' and logs its cause with the request id", async () => {
  await using broken = await startServer();
  const brokenKey = await broken.mintKey("broken@example.com");
  // Make the upload directory unusable: opening a temporary file fails with ENOTDIR.
  const tmp = path.join(broken.dataDir, "tmp");
  fs.rmSync(tmp, { recursive: true });
  fs.writeFileSync(tmp, "not a directory");
  const res = await fetch(`${broken.url}/v1/files`, {
    method: "POST",
    body: "x",
    headers: { authorization: `Bearer ${brokenKey}`, "x-request-id": "req-internal-1" },
  });
  expect(await result(res)).toEqual({ status: 500, body: { code: 13, message: "internal error", details: [] } });
  await broken.waitForErrors("request_id=req-internal-1");
  expect(broken.errors()).toMatch(/request_id=req-internal-1 error=internal cause=.*ENOTDIR/);
});
