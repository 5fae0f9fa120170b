// test-lists: workers postgres-s3
// Content URLs (CONTRACT §3) through a real server, with fetch and with real curl.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";

let server: RunningServer;
let key: string;
let api: ReturnType<typeof client>;
let text: FileJson;
const TEXT = "0123456789abcdefghij"; // 20 bytes

beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("owner@example.com");
  api = client(server, key);
  text = await api.upload(TEXT, "?visibility=public&slug=notes.txt&name=Notes%20%E2%82%AC.txt", { "content-type": "text/plain; charset=utf-8" });
});
afterAll(() => server[Symbol.asyncDispose]());

const headersOf = (res: Response, names: string[]) => Object.fromEntries(names.map((n) => [n, res.headers.get(n)]));

describe("GET /{id} and /{id}/{slug}", () => {
  test("both forms serve the content with the contract's headers", async () => {
    for (const url of [`${server.url}/${text.id}`, text.url]) {
      const res = await fetch(url);
      const got: Record<string, unknown> = { status: res.status, body: await res.text(), ...headersOf(res, HEADER_NAMES) };
      expect(got).toEqual({
        status: 200,
        body: TEXT,
        "content-type": "text/plain; charset=utf-8",
        "content-length": "20",
        "accept-ranges": "bytes",
        etag: expect.stringMatching(/^"[^"]+"$/),
        "last-modified": new Date(Math.floor(Date.parse(text.updated_at) / 1000) * 1000).toUTCString(),
        "cache-control": "no-cache, public",
        "x-content-type-options": "nosniff",
        "content-disposition": `inline; filename="Notes _.txt"; filename*=UTF-8''Notes%20%E2%82%AC.txt`,
        "content-security-policy": null,
      });
    }
  });

  test("?download=1 makes it an attachment", async () => {
    const res = await fetch(`${text.url}?download=1`);
    expect(res.headers.get("content-disposition")).toStartWith("attachment; ");
  });

  test("a file without a name is inline without filename", async () => {
    const f = await api.upload("x", "?visibility=public");
    expect((await fetch(f.url)).headers.get("content-disposition")).toBe("inline");
  });

  test("a wrong slug, or a slug on a file without one, redirects to the canonical URL", async () => {
    const wrong = await fetch(`${server.url}/${text.id}/other-name?download=1`, { redirect: "manual" });
    expect({ status: wrong.status, location: wrong.headers.get("location") }).toEqual({ status: 302, location: `${text.url}?download=1` });
    const plain = await api.upload("x", "?visibility=public");
    const extra = await fetch(`${plain.url}/made-up`, { redirect: "manual" });
    expect({ status: extra.status, location: extra.headers.get("location") }).toEqual({ status: 302, location: plain.url });
  });

  test("the ID-only form keeps working after a slug is set", async () => {
    const f = await api.upload("still here", "?visibility=public");
    await api.fetch(`/v1/files/${f.id}`, { method: "PATCH", body: '{"slug":"new"}', headers: { "content-type": "application/json" } });
    expect(await (await fetch(`${server.url}/${f.id}`)).text()).toBe("still here");
    expect(await (await fetch(`${server.url}/${f.id}/new`)).text()).toBe("still here");
  });

  test("private to the owner via bearer key; Cache-Control private", async () => {
    const f = await api.upload("mine", "?visibility=private");
    const res = await api.fetch(`/${f.id}`);
    expect({ status: res.status, body: await res.text(), cache: res.headers.get("cache-control") }).toEqual({
      status: 200,
      body: "mine",
      cache: "no-cache, private",
    });
  });

  test("not signed in: 401, but a browser navigation is redirected to sign-in with a return path", async () => {
    const f = await api.upload("x", "?visibility=internal&slug=s");
    const apiClient = await fetch(f.url, { redirect: "manual" });
    expect({ status: apiClient.status, auth: apiClient.headers.get("www-authenticate") }).toEqual({ status: 401, auth: 'Bearer realm="cubby"' });
    const browser = await fetch(`${f.url}?download=1`, { redirect: "manual", headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" } });
    expect({ status: browser.status, location: browser.headers.get("location") }).toEqual({
      status: 302,
      location: `/auth/login?next=${encodeURIComponent(`/${f.id}/s?download=1`)}`,
    });
  });

  // The documented choice (docs/design.md, "Anonymous requests and existence"): an anonymous
  // client learns that a private or internal ID exists (it is asked to sign in), which is what
  // lets a signed-out owner follow their own link; IDs carry 126 random bits, so none is guessed.
  test("anonymous: an existing private or internal file asks for sign-in, a missing one is 404", async () => {
    const statuses: Record<string, number> = {};
    for (const visibility of ["private", "internal"]) {
      const f = await api.upload("x", `?visibility=${visibility}`);
      statuses[visibility] = (await fetch(f.url, { redirect: "manual" })).status;
      statuses[`${visibility} (browser)`] = (await fetch(f.url, { redirect: "manual", headers: { accept: "text/html" } })).status;
    }
    statuses.missing = (await fetch(`${server.url}/AAAAAAAAAAAAAAAAAAAAA`, { redirect: "manual" })).status;
    expect(statuses).toEqual({ private: 401, "private (browser)": 302, internal: 401, "internal (browser)": 302, missing: 404 });
  });

  test("an unknown ID is 404; a path that is not an ID is 404", async () => {
    expect((await fetch(`${server.url}/AAAAAAAAAAAAAAAAAAAAA`)).status).toBe(404);
    expect((await fetch(`${server.url}/not-an-id`)).status).toBe(404);
  });
});

describe("HEAD", () => {
  test("same headers as GET, no body", async () => {
    const get = await fetch(text.url);
    const head = await fetch(text.url, { method: "HEAD" });
    const names = HEADER_NAMES;
    expect({ status: head.status, ...headersOf(head, names), body: await head.text() }).toEqual({
      status: 200,
      ...headersOf(get, names),
      body: "",
    });
  });
});

describe("conditional requests (RFC 9110 §13)", () => {
  test("If-None-Match with the ETag → 304; after a replace the ETag changes → 200", async () => {
    const f = await api.upload("v1", "?visibility=public");
    const first = await fetch(f.url);
    const etag = first.headers.get("etag")!;
    const cached = await fetch(f.url, { headers: { "if-none-match": etag } });
    expect({ status: cached.status, etag: cached.headers.get("etag"), body: await cached.text() }).toEqual({ status: 304, etag, body: "" });
    expect((await fetch(f.url, { headers: { "if-none-match": `"other", W/${etag}` } })).status).toBe(304);
    expect((await fetch(f.url, { headers: { "if-none-match": "*" } })).status).toBe(304);
    await api.fetch(`/v1/files/${f.id}/content`, { method: "PUT", body: "v2" });
    const fresh = await fetch(f.url, { headers: { "if-none-match": etag } });
    expect({ status: fresh.status, body: await fresh.text() }).toEqual({ status: 200, body: "v2" });
    expect(fresh.headers.get("etag")).not.toBe(etag);
  });

  test("If-Modified-Since at or after Last-Modified → 304, before → 200", async () => {
    const res = await fetch(text.url);
    const lastModified = res.headers.get("last-modified")!;
    expect((await fetch(text.url, { headers: { "if-modified-since": lastModified } })).status).toBe(304);
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    expect((await fetch(text.url, { headers: { "if-modified-since": earlier } })).status).toBe(200);
  });
});

describe("ranges (RFC 9110 §14)", () => {
  test.each([
    ["bytes=0-4", 206, "01234", "bytes 0-4/20"],
    ["bytes=15-", 206, "fghij", "bytes 15-19/20"],
    ["bytes=-3", 206, "hij", "bytes 17-19/20"],
    ["bytes=18-100", 206, "ij", "bytes 18-19/20"],
    ["bytes=0-1,3-4", 200, TEXT, null],
    ["bytes=20-", 416, "", "bytes */20"],
    ["bytes=5-2", 416, "", "bytes */20"],
  ])("%s → %d", async (range, status, body, contentRange) => {
    const res = await fetch(text.url, { headers: { range } });
    expect({ status: res.status, body: await res.text(), contentRange: res.headers.get("content-range") }).toEqual({
      status,
      body,
      contentRange,
    });
  });

  test("If-Range with a stale ETag serves the whole content", async () => {
    const res = await fetch(text.url, { headers: { range: "bytes=0-1", "if-range": '"stale"' } });
    expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: TEXT });
    const etag = (await fetch(text.url)).headers.get("etag")!;
    const ok = await fetch(text.url, { headers: { range: "bytes=0-1", "if-range": etag } });
    expect({ status: ok.status, body: await ok.text() }).toEqual({ status: 206, body: "01" });
  });

  test("HEAD with a range reports the range's length", async () => {
    const res = await fetch(text.url, { method: "HEAD", headers: { range: "bytes=2-5" } });
    expect(headersOf(res, ["content-length", "content-range"])).toEqual({ "content-length": "4", "content-range": "bytes 2-5/20" });
  });
});

describe("safety of uploaded content", () => {
  test.each([
    ["text/html", true],
    ["image/svg+xml", true],
    ["application/xhtml+xml", true],
    ["text/xml", true],
    ["application/javascript", true],
    ["TEXT/HTML; charset=utf-8", true],
    ["image/png", false],
    ["application/pdf", false],
    ["video/mp4", false],
    ["audio/mpeg", false],
    ["text/plain", false],
  ])("%s sandboxed: %p", async (type, sandboxed) => {
    const f = await api.upload("<script>parent.pwned=1</script>", "?visibility=public", { "content-type": type });
    const res = await fetch(f.url);
    const csp = res.headers.get("content-security-policy");
    expect({ type: res.headers.get("content-type"), sandboxed: csp !== null && /(^|;\s*)sandbox(;|$)/.test(csp), nosniff: res.headers.get("x-content-type-options") }).toEqual({
      type,
      sandboxed,
      nosniff: "nosniff",
    });
  });
});

describe("real curl", () => {
  async function curl(args: string[]) {
    const proc = Bun.spawn(["curl", "-sS", ...args], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`curl failed (${code}): ${err}`);
    return out;
  }

  test("upload with -T, download with -o, range with -r", async () => {
    const dir = (await import("node:fs")).mkdtempSync("/tmp/cubby-curl-");
    const src = `${dir}/in.bin`;
    await Bun.write(src, crypto.getRandomValues(new Uint8Array(2_000_000)));
    const created = JSON.parse(
      await curl(["-T", src, "-X", "POST", "-H", `Authorization: Bearer ${key}`, "-H", "Content-Type: application/octet-stream", `${server.url}/v1/files?visibility=public&name=in.bin`]),
    ) as FileJson;
    expect(created.size).toBe("2000000");
    await curl(["-o", `${dir}/out.bin`, created.url]);
    expect(Buffer.compare(await Bun.file(`${dir}/out.bin`).bytes(), await Bun.file(src).bytes())).toBe(0);
    const part = await curl(["-r", "10-19", "-o", `${dir}/part.bin`, "-w", "%{http_code}", created.url]);
    expect(part).toBe("206");
    expect(Buffer.compare(await Bun.file(`${dir}/part.bin`).bytes(), (await Bun.file(src).bytes()).subarray(10, 20))).toBe(0);
    (await import("node:fs")).rmSync(dir, { recursive: true });
  });

  test("headers as curl sees them", async () => {
    const out = await curl(["-sI", text.url]);
    expect(out).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(out.toLowerCase()).toContain("content-length: 20\r\n");
    expect(out.toLowerCase()).toContain("accept-ranges: bytes\r\n");
  });
});

const HEADER_NAMES = [
  "content-type",
  "content-length",
  "accept-ranges",
  "etag",
  "last-modified",
  "cache-control",
  "x-content-type-options",
  "content-disposition",
  "content-security-policy",
];

test("routing does not depend on the length of the Host header (http://nas/ behind a proxy)", async () => {
  for (const host of ["a", "nas", "nas:80", "files.example.com"]) {
    const proc = Bun.spawn(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", `Host: ${host}`, text.url], { stdout: "pipe" });
    expect({ host, status: await new Response(proc.stdout).text() }).toEqual({ host, status: "200" });
  }
});

test("small files served from memory follow every replace and delete", async () => {
  const file = await api.upload("version 0", "?visibility=public");
  for (let i = 1; i <= 5; i++) {
    expect(await (await fetch(file.url)).text()).toBe(`version ${i - 1}`);
    const res = await api.fetch(`/v1/files/${file.id}/content`, { method: "PUT", body: `version ${i}!` });
    expect(res.status).toBe(200);
    expect(await (await fetch(file.url)).text()).toBe(`version ${i}!`);
    expect(await (await fetch(file.url, { headers: { range: "bytes=8-9" } })).text()).toBe(`${i}!`);
    await api.fetch(`/v1/files/${file.id}/content`, { method: "PUT", body: `version ${i}` });
  }
  expect((await api.fetch(`/v1/files/${file.id}`, { method: "DELETE" })).status).toBe(200);
  expect((await fetch(file.url)).status).toBe(404);
});

test("content URLs of every shape are answered by the one content path", async () => {
  // Issue 12 removed the HTTP app's second set of content routes (which a test compared with
  // the listener's): an escaped slug, a wrong one, or no slug all reach the same code.
  const res = await fetch(`${server.url}/${text.id}/notes%2Etxt`, { redirect: "manual" });
  expect({ status: res.status, type: res.headers.get("content-type") }).toEqual({ status: 200, type: text.content_type });
  const wrong = await fetch(`${server.url}/${text.id}/old%20name?download=1`, { redirect: "manual" });
  expect({ status: wrong.status, location: wrong.headers.get("location") }).toEqual({ status: 302, location: `${text.url}?download=1` });
  const bad = await fetch(`${server.url}/${text.id}/%E0%A4`, { redirect: "manual" });
  expect({ status: bad.status, location: bad.headers.get("location") }).toEqual({ status: 302, location: text.url });
  expect((await fetch(`${server.url}/${text.id}/a/b`)).status).toBe(404);
  expect((await fetch(`${server.url}/${"x".repeat(21)}`)).status).toBe(404);
});
