// test-lists: workers postgres-s3
// Guest upload links (CONTRACT §8) against the real server on the configured stores: made,
// listed and deleted over REST (deleted ones listed with show_deleted); the guest page states
// the limits left; anyone with the token uploads (raw POST and tus) into the
// owner's account, private by default; max_files and max_bytes hold under 20 concurrent uploads;
// expired and deleted links answer 410; a files.read key cannot make one.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { checksumOf } from "../../src/domain/checksum.ts";
import type { UploadLinkJson } from "../../src/domain/upload-link.ts";
import { runSql } from "../support/backend.ts";
import { client, startServer, tempDir, type FileJson, type RunningServer } from "../support/server.ts";
import { createUpload, patchChunk, randomFile, tusFetch, tusUpload } from "../support/tus.ts";

type LinkJson = UploadLinkJson;

let server: RunningServer;
let key: string;
let work: { path: string } & Disposable;

beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("links@example.com");
  work = tempDir("cubby-links-");
});

afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  work?.[Symbol.dispose]();
});

async function makeLink(body: Record<string, unknown> = {}, as = key): Promise<LinkJson & { token: string }> {
  const res = await client(server, as).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`link: ${res.status} ${await res.text()}`);
  const link = (await res.json()) as LinkJson;
  return { ...link, token: link.url.split("/u/")[1]! };
}

const myFiles = async () => ((await (await client(server, key).fetch("/v1/files?page_size=1000")).json()) as { files: FileJson[] }).files;
const guestPost = (token: string, body: string, name = "") => fetch(`${server.url}/u/${token}${name === "" ? "" : `?name=${encodeURIComponent(name)}`}`, { method: "POST", body, headers: { "content-type": "text/plain" } });

test("a link is made, listed and deleted over REST; its JSON has exactly the contract's fields", async () => {
  const link = await makeLink({ name: "Holiday photos", ttl: "7d", max_files: 10, max_bytes: 1_000_000 });
  expect(Object.keys(link).filter((k) => k !== "token").sort()).toEqual(["bytes_uploaded", "created_at", "delete_time", "expire_time", "files_uploaded", "id", "max_bytes", "max_files", "name", "url"]);
  expect(link).toMatchObject({ delete_time: "", name: "Holiday photos", max_files: 10, max_bytes: 1_000_000, files_uploaded: 0, bytes_uploaded: 0 });
  expect(link.url).toMatch(new RegExp(`^${server.url}/u/[A-Za-z0-9_-]{32}$`));
  expect(Date.parse(link.expire_time) - Date.now()).toBeGreaterThan(6.9 * 86400_000);
  const plain = await makeLink();
  expect(plain).toMatchObject({ name: "", expire_time: "", max_files: null, max_bytes: null });
  const listed = ((await (await client(server, key).fetch("/v1/upload-links")).json()) as { upload_links: LinkJson[] }).upload_links;
  expect(listed.map((l) => l.id).slice(0, 2)).toEqual([plain.id, link.id]);
  // Someone else cannot delete it.
  const other = await server.mintKey("someone-else@example.com");
  expect((await client(server, other).fetch(`/v1/upload-links/${plain.id}`, { method: "DELETE" })).status).toBe(404);
  const deleted = await client(server, key).fetch(`/v1/upload-links/${plain.id}`, { method: "DELETE" });
  expect([deleted.status, await deleted.json()]).toEqual([200, {}]);
  const after = ((await (await client(server, key).fetch("/v1/upload-links")).json()) as { upload_links: LinkJson[] }).upload_links;
  expect(after.map((l) => l.id)).not.toContain(plain.id);
  // With show_deleted (AIP-164) it is listed, with the time it was deleted, so its files stay reachable.
  const all = ((await (await client(server, key).fetch("/v1/upload-links?show_deleted=true")).json()) as { upload_links: LinkJson[] }).upload_links;
  const revoked = all.find((l) => l.id === plain.id);
  expect(Math.abs(Date.parse(revoked?.delete_time ?? "") - Date.now())).toBeLessThan(60_000);
  expect(all.find((l) => l.id === link.id)?.delete_time).toBe("");
  expect((await client(server, key).fetch("/v1/upload-links?show_deleted=yes")).status).toBe(400);
  const gone = await guestPost(plain.token, "late");
  expect({ status: gone.status, code: ((await gone.json()) as { code: number }).code }).toEqual({ status: 410, code: 9 });
  expect((await fetch(plain.url)).status).toBe(410);
});

test("anyone with the link uploads, by raw POST and by tus, into the owner's account, private by default", async () => {
  const link = await makeLink({ name: "inbox" });
  const page = await fetch(link.url);
  expect([page.status, page.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"]);
  expect(await page.text()).toContain("Upload files: inbox");
  const posted = await guestPost(link.token, "from a script", "note.txt");
  expect(posted.status).toBe(200);
  const file = (await posted.json()) as FileJson;
  expect(file).toMatchObject({ name: "note.txt", visibility: "private", content_type: "text/plain", checksum: checksumOf("from a script") });
  const source = randomFile(work.path, "guest.bin", 3 * 1024 * 1024 + 17);
  const done = await tusUpload(source.path, { endpoint: `${server.url}/v1/uploads`, token: link.token, chunkSize: 1024 * 1024, metadata: { filename: "guest.bin", filetype: "application/x-guest", visibility: "public", slug: "ignored" } });
  const mine = await myFiles();
  const viaTus = mine.find((f) => f.id === done.fileId)!;
  expect(viaTus).toMatchObject({ name: "guest.bin", visibility: "private", slug: "", checksum: source.checksum, content_type: "application/x-guest" });
  expect(mine.map((f) => f.id)).toContain(file.id);
  // Anonymous callers see nothing of it; the owner does.
  expect((await fetch(`${server.url}/${file.id}`)).status).toBe(401);
  expect(await (await client(server, key).fetch(`/${file.id}`)).text()).toBe("from a script");
  const listed = ((await (await client(server, key).fetch("/v1/upload-links")).json()) as { upload_links: LinkJson[] }).upload_links.find((l) => l.id === link.id)!;
  expect([listed.files_uploaded, listed.bytes_uploaded]).toEqual([2, 13 + 3 * 1024 * 1024 + 17]);
  // A link's visibility is the files'.
  const pub = await makeLink({ visibility: "public" });
  const shared = (await (await guestPost(pub.token, "for all")).json()) as FileJson;
  expect(await (await fetch(`${server.url}/${shared.id}`)).text()).toBe("for all");
});

test("the guest page states what the link still takes: files left, the largest file, until when", async () => {
  const limited = await makeLink({ name: "limited", max_files: 3, max_bytes: 1000, ttl: "7d" });
  expect((await guestPost(limited.token, "x".repeat(400))).status).toBe(200);
  const html = await (await fetch(limited.url)).text();
  const limits = /<ul class="limits"[^>]*>(.*?)<\/ul>/.exec(html)?.[1];
  expect(limits).toBe(
    `<li>Files left: <strong id="files-left" data-left="2">2</strong> of 3</li>` +
      `<li>Largest file: <strong id="largest" data-bytes="600" data-shared="true">600 B</strong> (of 1000 B in all)</li>` +
      `<li>Open until <time datetime="${limited.expire_time}">${limited.expire_time.slice(0, 16).replace("T", " ")} UTC</time></li>`,
  );
  const open = await makeLink();
  const plain = /<ul class="limits"[^>]*>(.*?)<\/ul>/.exec(await (await fetch(open.url)).text())?.[1];
  expect(plain).toBe(`<li>Largest file: <strong id="largest" data-bytes="${10 * 1024 ** 3}">10 GiB</strong></li><li>No expiry date</li>`);
});

test("max_files and max_bytes are never exceeded by 20 concurrent uploads", async () => {
  const byFiles = await makeLink({ max_files: 5 });
  const raw = await Promise.all(Array.from({ length: 20 }, (_, i) => guestPost(byFiles.token, `file ${String(i).padStart(2, "0")}`).then((r) => r.status)));
  expect(raw.filter((s) => s === 200).length).toBe(5);
  expect(new Set(raw.filter((s) => s !== 200))).toEqual(new Set([410]));
  // tus uploads of 1 000 bytes each against 7 500 bytes: 7 fit. Each creation reserves its
  // Upload-Length (CONTRACT §10), so the 8th and later are refused at creation (413), and
  // every upload that was created finishes.
  const byBytes = await makeLink({ max_bytes: 7_500 });
  const created = await Promise.all(Array.from({ length: 20 }, () => tusFetch(`${server.url}/v1/uploads`, "POST", byBytes.token, { "upload-length": "1000" })));
  expect(created.filter((r) => r.status === 201).length).toBe(7);
  expect(new Set(created.filter((r) => r.status !== 201).map((r) => r.status))).toEqual(new Set([413]));
  const urls = created.filter((r) => r.status === 201).map((r) => r.headers.get("location")!);
  const finals = await Promise.all(urls.map((u) => patchChunk(u, byBytes.token, 0, "b".repeat(1_000)).then((r) => r.status)));
  expect(finals).toEqual(Array(7).fill(204));
  const rows = await runSql<{ files_uploaded: number; bytes_uploaded: number }>(server.dataDir, "SELECT files_uploaded, bytes_uploaded FROM upload_links WHERE id IN (?, ?) ORDER BY max_files", byFiles.id, byBytes.id);
  expect(rows.map((r) => [Number(r.files_uploaded), Number(r.bytes_uploaded)]).sort()).toEqual([[5, 5 * 7], [7, 7_000]].sort());
  // An Upload-Length over what is left is refused at creation.
  const big = await tusFetch(`${server.url}/v1/uploads`, "POST", byBytes.token, { "upload-length": "501" });
  expect(big.status).toBe(413);
  // And the link is exhausted now: its page and uploads answer 410.
  expect((await fetch(byFiles.url)).status).toBe(410);
}, 60_000);

test("an expired link answers 410 everywhere", async () => {
  const link = await makeLink({ ttl: "1s" });
  const url = await createUpload(server.url, link.token, 4);
  await runSql(server.dataDir, "UPDATE upload_links SET expires_at = ? WHERE id = ?", Date.now() * 1000 - 1_000_000, link.id);
  expect((await fetch(link.url)).status).toBe(410);
  expect((await guestPost(link.token, "x")).status).toBe(410);
  expect((await tusFetch(`${server.url}/v1/uploads`, "POST", link.token, { "upload-length": "4" })).status).toBe(410);
  expect((await patchChunk(url, link.token, 0, "late")).status).toBe(410);
});

test("links are refused to a files.read key (403) and bad bodies (400); unknown tokens are 404", async () => {
  const reader = await server.mintKey("link-reader@example.com", "--scope", "files.read");
  const refused = await client(server, reader).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  expect({ status: refused.status, body: await refused.json() }).toEqual({ status: 403, body: { code: 7, message: "this key lacks files.write", details: [] } });
  for (const body of [{ ttl: "5x" }, { ttl: "1h", expire_time: "2099-01-01T00:00:00Z" }, { expire_time: "2001-01-01T00:00:00Z" }, { max_files: 0 }, { max_bytes: -1 }, { max_files: 1.5 }, { visibility: "secret" }, { nope: 1 }, { name: 7 }]) {
    const res = await client(server, key).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect([JSON.stringify(body), res.status, ((await res.json()) as { code: number }).code]).toEqual([JSON.stringify(body), 400, 3]);
  }
  const unknown = await fetch(`${server.url}/u/${"A".repeat(32)}`);
  expect(unknown.status).toBe(404);
  // A page for the guest (CONTRACT §15): a sentence a person understands and their way back, no raw message.
  const text = await unknown.text();
  expect(text).toContain("<h1>This upload link does not work</h1>");
  expect(text).toContain("ask whoever sent you the link for a new one");
  expect(text).not.toContain("upload link not found");
  expect((await guestPost("A".repeat(32), "x")).status).toBe(404);
  // Unauthenticated REST is 401.
  expect((await fetch(`${server.url}/v1/upload-links`)).status).toBe(401);
});
