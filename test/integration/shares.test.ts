// test-lists: workers postgres-s3
// Share links (CONTRACT §8) through a real server on the run's backend: anonymous access to a
// private file, exact download counting under concurrency, expiry, passwords (Basic, the form,
// rate limiting), deletion, and bad input; every share of the caller's (GET /v1/shares) and
// changing one (PATCH /v1/shares/{id}, CONTRACT §15).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { checksumOf } from "../../src/domain/checksum.ts";
import type { ShareDetailJson, ShareJson } from "../../src/domain/share.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";


let server: RunningServer;
let owner: string;
let file: FileJson;
const content = crypto.getRandomValues(new Uint8Array(200_000));

beforeAll(async () => {
  // Three wrong passwords a minute per address, then 429 (the same limit as bad credentials).
  server = await startServer({ env: { RATE_LIMIT_AUTH_FAILURES: "3" } });
  owner = await server.mintKey("alice@example.com");
  file = await client(server, owner).upload(content, "?visibility=private&name=report.bin");
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
});

async function share(body: unknown = {}, key = owner, fileId = file.id): Promise<{ status: number; json: ShareJson & { code?: number; message?: string } }> {
  const res = await fetch(`${server.url}/v1/files/${fileId}/shares`, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  });
  return { status: res.status, json: (await res.json()) as ShareJson };
}

const path = (s: ShareJson) => new URL(s.url).pathname;
const get = (s: ShareJson, headers: Record<string, string> = {}, method = "GET") => fetch(`${server.url}${path(s)}`, { method, headers });

// Before "share links": its last test leaves this address rate limited for wrong passwords.
describe("every share of the caller's, and changing one (CONTRACT §15)", () => {
  let carol: string;
  let photo: FileJson;
  const call = async (method: string, target: string, body?: unknown, key = carol) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${server.url}${target}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> & ShareDetailJson & { shares: ShareDetailJson[]; next_page_token: string; message?: string } };
  };

  beforeAll(async () => {
    carol = await server.mintKey("carol@example.com");
    photo = await client(server, carol).upload("a photo", "?name=photo.jpg");
  });

  test("GET /v1/shares: files' and folders' shares, newest first, paged, with items and the last download; deleted ones not listed; only the caller's", async () => {
    const fileShare = (await call("POST", `/v1/files/${photo.id}/shares`, {})).json;
    const folder = (await call("POST", "/v1/folders", { name: "Trip" })).json as unknown as { id: string };
    const folderShare = (await call("POST", `/v1/folders/${folder.id}/shares`, { max_downloads: 2 })).json;
    const gone = (await call("POST", `/v1/files/${photo.id}/shares`, {})).json;
    expect((await call("DELETE", `/v1/shares/${gone.id}`)).status).toBe(200);

    const listed = await call("GET", "/v1/shares");
    expect(listed.status).toBe(200);
    expect(listed.json.shares).toEqual([
      { ...folderShare, last_download_time: "", items: [{ folder_id: folder.id }] },
      { ...fileShare, last_download_time: "", items: [{ file_id: photo.id }] },
    ]);
    expect(listed.json.next_page_token).toBe("");

    // A download is counted and dated.
    const before = Date.now();
    expect((await fetch(fileShare.url)).status).toBe(200);
    const after = (await call("GET", "/v1/shares?page_size=1&page_token=" + (await call("GET", "/v1/shares?page_size=1")).json.next_page_token)).json;
    expect(after.shares.map((s) => s.id)).toEqual([fileShare.id]);
    expect(after.shares[0]!.download_count).toBe(1);
    expect(Date.parse(after.shares[0]!.last_download_time)).toBeGreaterThanOrEqual(before - 1000);
    expect(after.next_page_token).toBe("");

    // Another user sees none of them.
    expect((await call("GET", "/v1/shares", undefined, await server.mintKey("dave@example.com"))).json.shares).toEqual([]);
  });

  test("PATCH /v1/shares/{id} sets and clears the expiry, the limit and the password; the link follows at once", async () => {
    const s = (await call("POST", `/v1/files/${photo.id}/shares`, {})).json;
    const changed = await call("PATCH", `/v1/shares/${s.id}`, { ttl: "1h", max_downloads: 5, password: "new secret" });
    expect(changed.status).toBe(200);
    expect(changed.json).toMatchObject({ id: s.id, url: s.url, max_downloads: 5, has_password: true, download_count: 0, items: [{ file_id: photo.id }] });
    expect(Date.parse(changed.json.expire_time) - Date.now()).toBeGreaterThan(3500_000);
    expect((await fetch(s.url)).status).toBe(401);
    const basic = { authorization: `Basic ${Buffer.from("any:new secret").toString("base64")}` };
    expect((await fetch(s.url, { headers: basic })).status).toBe(200);

    const cleared = await call("PATCH", `/v1/shares/${s.id}`, { expire_time: "", max_downloads: null, password: null });
    expect(cleared.json).toMatchObject({ expire_time: "", max_downloads: null, has_password: false, download_count: 1 });
    expect((await fetch(s.url)).status).toBe(200);

    // A limit at or below the downloads counted leaves the link used up; raising it opens it again.
    expect((await call("PATCH", `/v1/shares/${s.id}`, { max_downloads: 2 })).json.max_downloads).toBe(2);
    expect((await fetch(s.url)).status).toBe(410);
    await call("PATCH", `/v1/shares/${s.id}`, { max_downloads: 3 });
    expect((await fetch(s.url)).status).toBe(200);

    // An empty body changes nothing.
    expect((await call("PATCH", `/v1/shares/${s.id}`, {})).json).toMatchObject({ max_downloads: 3, download_count: 3 });
  });

  test("GET /v1/shares/{id}/downloads: each counted download once its answer ended, newest first, with what, bytes, completion and the network; only the owner's", async () => {
    const big = await client(server, carol).upload(new Uint8Array(64 * 1024 * 1024).fill(1), "?name=big.bin");
    const s = (await call("POST", `/v1/files/${big.id}/shares`, {})).json;
    type Log = { downloads: { time: string; item: string; bytes: number; completed: boolean; client_address: string }[]; next_page_token: string };
    const log = async () => (await call("GET", `/v1/shares/${s.id}/downloads`)).json as unknown as Log;
    expect(await log()).toEqual({ downloads: [], next_page_token: "" });

    // A whole download, then one the client gives up on after its first bytes, then a HEAD and a later range (not counted).
    expect((await (await fetch(s.url)).arrayBuffer()).byteLength).toBe(64 * 1024 * 1024);
    const controller = new AbortController();
    const partial = await fetch(s.url, { signal: controller.signal });
    const reader = partial.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.read().catch(() => {});
    expect((await fetch(s.url, { method: "HEAD" })).status).toBe(200);
    expect((await fetch(s.url, { headers: { range: "bytes=10-19" } })).status).toBe(206);

    const entries = (await waitFor(async () => ((await log()).downloads.length === 2 ? (await log()).downloads : undefined), "two downloads logged"))!;
    // localhost is 127.0.0.1 or ::1, as the resolver says: its /24 or its /48.
    const network = expect.stringMatching(/^(127\.0\.0\.0\/24|::\/48)$/);
    expect(entries[1]).toEqual({ time: expect.stringMatching(/Z$/), item: "big.bin", bytes: 64 * 1024 * 1024, completed: true, client_address: network });
    expect(entries[0]).toMatchObject({ item: "big.bin", completed: false, client_address: network });
    expect(entries[0]!.bytes).toBeLessThan(64 * 1024 * 1024);
    expect((await call("GET", "/v1/shares")).json.shares.find((x) => x.id === s.id)!.download_count).toBe(2);

    // Paged like every list; another user's share is not found.
    const first = (await call("GET", `/v1/shares/${s.id}/downloads?page_size=1`)).json as unknown as Log;
    expect(first.downloads).toEqual([entries[0]!]);
    const second = (await call("GET", `/v1/shares/${s.id}/downloads?page_token=${first.next_page_token}`)).json as unknown as Log;
    expect(second).toEqual({ downloads: [entries[1]!], next_page_token: "" });
    expect((await call("GET", `/v1/shares/${s.id}/downloads`, undefined, await server.mintKey("frank@example.com"))).status).toBe(404);

    // A folder's ZIP is logged under the folder's name.
    const folder = (await call("POST", "/v1/folders", { name: "Logged" })).json as unknown as { id: string };
    await client(server, carol).upload("in the zip", `?name=a.txt&folder_id=${folder.id}`);
    const fs = (await call("POST", `/v1/folders/${folder.id}/shares`, {})).json;
    const zip = await (await fetch(`${fs.url}?download=zip`)).arrayBuffer();
    const zipLog = await waitFor(async () => ((await call("GET", `/v1/shares/${fs.id}/downloads`)).json as unknown as Log).downloads[0], "the ZIP logged");
    expect(zipLog).toMatchObject({ item: "Logged.zip", bytes: zip.byteLength, completed: true });
  }, 60_000);

  test("PATCH refuses bad changes (400, nothing changed), another's or a deleted share (404), a read-only key (403)", async () => {
    const s = (await call("POST", `/v1/files/${photo.id}/shares`, { max_downloads: 4 })).json;
    for (const bad of [{ max_downloads: 0 }, { max_downloads: 1.5 }, { password: "" }, { expire_time: "2001-01-01T00:00:00Z" }, { ttl: "3w" }, { items: [] }, { ttl: "1h", expire_time: "2031-01-01T00:00:00Z" }]) {
      const r = await call("PATCH", `/v1/shares/${s.id}`, bad);
      expect({ bad, status: r.status }).toEqual({ bad, status: 400 });
    }
    expect((await call("GET", "/v1/shares")).json.shares.find((x) => x.id === s.id)).toMatchObject({ max_downloads: 4, expire_time: "", has_password: false });
    expect((await call("PATCH", `/v1/shares/${s.id}`, { max_downloads: 9 }, await server.mintKey("erin@example.com"))).status).toBe(404);
    expect((await call("PATCH", `/v1/shares/${s.id}`, { max_downloads: 9 }, await server.mintKey("carol@example.com", "--scope", "files.read"))).status).toBe(403);
    expect((await call("PATCH", "/v1/shares/nosuchshare", { max_downloads: 9 })).status).toBe(404);
    expect((await call("DELETE", `/v1/shares/${s.id}`)).status).toBe(200);
    expect((await call("PATCH", `/v1/shares/${s.id}`, { max_downloads: 9 })).status).toBe(404);
  });
});

describe("share links", () => {
  test("a share of a private file serves it to anyone, with the content headers; listed; deleted → 410", async () => {
    const { status, json: s } = await share();
    expect(status).toBe(200);
    expect(s).toEqual({
      id: expect.any(String),
      file_id: file.id,
      folder_id: "",
      url: expect.stringMatching(new RegExp(`^${server.url}/s/[A-Za-z0-9_-]{32}$`)),
      expire_time: "",
      max_downloads: null,
      download_count: 0,
      has_password: false,
      created_at: expect.stringMatching(/Z$/),
    });
    expect((await fetch(`${server.url}/${file.id}`)).status).toBe(401);
    const res = await get(s);
    const body = new Uint8Array(await res.arrayBuffer());
    expect({ status: res.status, checksum: checksumOf(body), type: res.headers.get("content-type"), ranges: res.headers.get("accept-ranges") }).toEqual({
      status: 200,
      checksum: file.checksum,
      type: "application/octet-stream",
      ranges: "bytes",
    });
    expect(res.headers.get("etag")).toMatch(/^".+"$/);
    expect(res.headers.get("cache-control")).toBe("no-cache, private");
    const part = await get(s, { range: "bytes=10-19" });
    expect({ status: part.status, bytes: [...new Uint8Array(await part.arrayBuffer())] }).toEqual({ status: 206, bytes: [...content.subarray(10, 20)] });
    expect((await get(s, { "if-none-match": res.headers.get("etag")! })).status).toBe(304);

    const listed = (await (await fetch(`${server.url}/v1/files/${file.id}/shares`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { shares: ShareJson[] };
    expect(listed.shares.find((x) => x.id === s.id)).toEqual({ ...s, download_count: 1 });

    const del = await fetch(`${server.url}/v1/shares/${s.id}`, { method: "DELETE", headers: { authorization: `Bearer ${owner}` } });
    expect({ status: del.status, body: await del.json() }).toEqual({ status: 200, body: {} });
    const after = await get(s);
    expect({ status: after.status, code: ((await after.json()) as { code: number }).code }).toEqual({ status: 410, code: 9 });
    expect((await fetch(`${server.url}/v1/shares/${s.id}`, { method: "DELETE", headers: { authorization: `Bearer ${owner}` } })).status).toBe(404);
    const relisted = (await (await fetch(`${server.url}/v1/files/${file.id}/shares`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { shares: ShareJson[] };
    expect(relisted.shares.map((x) => x.id)).not.toContain(s.id);
  });

  test("max_downloads 3 under 20 concurrent GETs: exactly 3 full downloads, the rest 410; HEAD and later ranges do not count", async () => {
    const { json: s } = await share({ max_downloads: 3 });
    expect((await get(s, {}, "HEAD")).status).toBe(200);
    expect((await get(s, { range: "bytes=100-199" })).status).toBe(206);
    const results = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const res = await get(s);
        const bytes = new Uint8Array(await res.arrayBuffer());
        return res.status === 200 ? (checksumOf(bytes) === file.checksum ? "full" : "partial") : String(res.status);
      }),
    );
    expect(results.filter((r) => r === "full").length).toBe(3);
    expect(results.filter((r) => r === "410").length).toBe(17);
    const listed = (await (await fetch(`${server.url}/v1/files/${file.id}/shares`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { shares: ShareJson[] };
    expect(listed.shares.find((x) => x.id === s.id)?.download_count).toBe(3);
    expect((await get(s, { range: "bytes=0-9" })).status).toBe(410);
  });

  test("a share past its expiry answers 410", async () => {
    const { json: s } = await share({ ttl: "2s" });
    expect(Date.parse(s.expire_time) - Date.now()).toBeLessThanOrEqual(2000);
    expect((await get(s)).status).toBe(200);
    await waitFor(async () => (await get(s)).status === 410, "the share to expire", 10_000, 100);
  });

  test("a share of a deleted file answers 410; an unknown token 404", async () => {
    const doomed = await client(server, owner).upload(new Uint8Array([1, 2, 3]), "?visibility=private");
    const { json: s } = await share({}, owner, doomed.id);
    expect((await get(s)).status).toBe(200);
    await fetch(`${server.url}/v1/files/${doomed.id}`, { method: "DELETE", headers: { authorization: `Bearer ${owner}` } });
    expect((await get(s)).status).toBe(410);
    expect((await fetch(`${server.url}/s/${"x".repeat(32)}`)).status).toBe(404);
    expect((await fetch(`${server.url}/s/short`)).status).toBe(404);
  });

  test("only the owner shares, with files.write; bad settings are 400 and create nothing", async () => {
    const bob = await server.mintKey("bob@example.com");
    const reader = await server.mintKey("alice@example.com", "--scope", "files.read");
    expect((await share({}, bob)).status).toBe(404);
    expect(await share({}, reader)).toMatchObject({ status: 403, json: { code: 7, message: "this key lacks files.write" } });
    const before = ((await (await fetch(`${server.url}/v1/files/${file.id}/shares`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { shares: unknown[] }).shares.length;
    for (const bad of [{ max_downloads: 0 }, { max_downloads: -1 }, { max_downloads: 1.5 }, { max_downloads: "3" }, { password: "" }, { ttl: "3w" }, { expire_time: "2001-01-01T00:00:00Z" }, { owner: "me" }, { ttl: "1h", expire_time: "2031-01-01T00:00:00Z" }]) {
      const r = await share(bad);
      expect({ bad, status: r.status, code: r.json.code }).toEqual({ bad, status: 400, code: 3 });
    }
    const r = await fetch(`${server.url}/v1/files/${file.id}/shares`, { method: "POST", body: "[]", headers: { authorization: `Bearer ${owner}`, "content-type": "application/json" } });
    expect(r.status).toBe(400);
    expect(((await (await fetch(`${server.url}/v1/files/${file.id}/shares`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { shares: unknown[] }).shares.length).toBe(before);
  });

  // Last: its wrong passwords leave this address rate limited.
  test("password: none → 401 (Basic challenge, or the form for a browser), wrong → 401 then 429, right → 200; the form's cookie opens it", async () => {
    const { json: s } = await share({ password: "correct horse" });
    expect(s.has_password).toBe(true);
    const basic = (password: string) => ({ authorization: `Basic ${Buffer.from(`any:${password}`).toString("base64")}` });
    const bare = await get(s);
    expect({ status: bare.status, challenge: bare.headers.get("www-authenticate"), code: ((await bare.json()) as { code: number }).code }).toEqual({
      status: 401,
      challenge: 'Basic realm="cubby share", charset="UTF-8"',
      code: 16,
    });
    const page = await get(s, { accept: "text/html" });
    expect({ status: page.status, form: (await page.text()).includes('<form method="post">') }).toEqual({ status: 401, form: true });
    expect((await get(s, basic("correct horse"))).status).toBe(200);

    // The form: a wrong password shows it again, the right one redirects with a cookie for this share's path.
    const post = (password: string) =>
      fetch(`${server.url}${path(s)}`, { method: "POST", body: new URLSearchParams({ password }), redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded" } });
    const wrongForm = await post("nope");
    expect(wrongForm.status).toBe(401);
    const rightForm = await post("correct horse");
    const cookie = rightForm.headers.get("set-cookie")!;
    expect({ status: rightForm.status, location: rightForm.headers.get("location"), cookie }).toEqual({
      status: 303,
      location: path(s),
      cookie: expect.stringMatching(new RegExp(`^cubby_share_unlock=[A-Za-z0-9_-]+; Max-Age=86400; Path=${path(s)}; HttpOnly; SameSite=Lax$`)),
    });
    const viaCookie = await get(s, { cookie: cookie.split(";")[0]! });
    expect(checksumOf(new Uint8Array(await viaCookie.arrayBuffer()))).toBe(file.checksum);

    // Wrong passwords count with the failed authentications of this address: 3 a minute here.
    expect((await get(s, basic("wrong 1"))).status).toBe(401);
    expect((await get(s, basic("wrong 2"))).status).toBe(401);
    const limited = await get(s, basic("correct horse"));
    expect({ status: limited.status, retry: Number(limited.headers.get("retry-after")) > 0 }).toEqual({ status: 429, retry: true });
  });
});
