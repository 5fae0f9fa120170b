// test-lists: workers postgres-s3
// The tus concatenation extension (CONTRACT §8) against the real server on the configured stores
// (SQLite + disk, or PostgreSQL + S3 with WORKERS=2): partial uploads (`Upload-Concat: partial`)
// are never files by themselves; a final upload (`Upload-Concat: final;…`) of finished partials
// becomes the file of their bytes in order, with the final's metadata, its checksum, and the
// owner's quota and a guest link's limits counted once for the total; the partials' bytes are
// removed. Every hostile final (another user's partial, another link's, an unfinished one, one
// used twice, a missing one, a non-partial) is a clear 4xx and changes nothing. tus-js-client's
// parallelUploads, the dashboard's way, uploads through nginx capping bodies at 16 MiB.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { checksumOf } from "../../src/domain/checksum.ts";
import type { UploadLinkJson } from "../../src/domain/upload-link.ts";
import { blobNames, runSql } from "../support/backend.ts";
import { startNginx } from "../support/nginx.ts";
import { client, startServer, tempDir, type FileJson, type RunningServer } from "../support/server.ts";
import { patchChunk, randomFile, tusFetch, tusUpload } from "../support/tus.ts";

const MiB = 1024 * 1024;
/** Each user's quota (bytes). */
const QUOTA = 64 * MiB;

let server: RunningServer;
let work: { path: string } & Disposable;
let users = 0;

beforeAll(async () => {
  server = await startServer({ env: { QUOTA_BYTES: String(QUOTA) } });
  work = tempDir("cubby-tus-concat-");
});

afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  work?.[Symbol.dispose]();
});

const newUser = () => server.mintKey(`concat-${++users}@example.com`);
const idOf = (url: string) => url.split("/").pop()!;
const b64 = (s: string) => Buffer.from(s).toString("base64");
type ErrorJson = { code: number; message: string };

/** Creates a partial upload of `length` bytes. @returns its URL */
async function createPartial(token: string, length: number): Promise<string> {
  const res = await tusFetch(`${server.url}/v1/uploads`, "POST", token, { "upload-length": String(length), "upload-concat": "partial" });
  if (res.status !== 201) throw new Error(`partial: ${res.status} ${await res.text()}`);
  expect(res.headers.get("upload-concat")).toBe("partial");
  return res.headers.get("location")!;
}

/** A finished partial upload holding `bytes`. @returns its URL */
async function partialOf(token: string, bytes: Uint8Array | string): Promise<string> {
  const body = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  const url = await createPartial(token, body.byteLength);
  const res = await patchChunk(url, token, 0, body);
  if (res.status !== 204) throw new Error(`patch: ${res.status} ${await res.text()}`);
  return url;
}

/** POSTs a final upload naming `urls`; its status, headers and error body. */
async function createFinal(token: string, urls: string[], headers: Record<string, string> = {}, body?: string) {
  const res = await tusFetch(`${server.url}/v1/uploads`, "POST", token, { "upload-concat": `final;${urls.join(" ")}`, ...headers }, body);
  return { status: res.status, headers: res.headers, error: res.status === 201 ? undefined : ((await res.json()) as ErrorJson) };
}

/** What a refused final must leave as it was: the partials' rows and every stored blob. */
async function snapshot(urls: string[]) {
  const rows = [];
  for (const url of urls) rows.push(...(await runSql(server.dataDir, "SELECT id, \"offset\", file_id, concat FROM uploads WHERE id = ?", idOf(url))));
  return { rows, blobs: await blobNames(server.dataDir), files: await runSql(server.dataDir, "SELECT count(*) AS n FROM files") };
}

const usage = async (key: string) => (await (await client(server, key).fetch("/v1/usage")).json()) as { reserved_bytes: number; used_bytes: number };

test("OPTIONS lists concatenation", async () => {
  const res = await fetch(`${server.url}/v1/uploads`, { method: "OPTIONS" });
  expect(res.headers.get("tus-extension")!.split(",")).toContain("concatenation");
});

test("partials then a final: the file of their bytes in order, the final's metadata, HEADs, PATCH refused, partial bytes removed, quota counted once", async () => {
  const key = await newUser();
  const a = await partialOf(key, "hello, ");
  const empty = await partialOf(key, "");
  const b = await partialOf(key, "concatenated world");
  // A finished partial is not a file, and holds its bytes of the quota until the final.
  expect(((await (await client(server, key).fetch("/v1/files")).json()) as { files: unknown[] }).files).toEqual([]);
  expect(await usage(key)).toMatchObject({ reserved_bytes: 25, used_bytes: 25 });
  const head = await tusFetch(a, "HEAD", key);
  expect([head.status, head.headers.get("upload-concat"), head.headers.get("upload-offset"), head.headers.get("cubby-file-id")]).toEqual([200, "partial", "7", null]);

  // Absolute URLs (the creation's Location, as tus-js-client sends them) and paths mix.
  const final = await createFinal(key, [a, new URL(empty).pathname, b], { "upload-metadata": `filename ${b64("greeting.txt")},filetype ${b64("text/plain")}` });
  expect(final.status).toBe(201);
  const fileId = final.headers.get("cubby-file-id")!;
  const finalPaths = [a, empty, b].map((u) => new URL(u).pathname).join(" ");
  expect([final.headers.get("upload-concat"), final.headers.get("upload-offset")]).toEqual([`final;${finalPaths}`, "25"]);
  const file = (await (await client(server, key).fetch(`/v1/files/${fileId}`)).json()) as FileJson;
  expect({ name: file.name, type: file.content_type, size: file.size, checksum: file.checksum }).toEqual({ name: "greeting.txt", type: "text/plain", size: "25", checksum: checksumOf("hello, concatenated world") });
  expect(await (await client(server, key).fetch(`/${fileId}`)).text()).toBe("hello, concatenated world");
  expect(await usage(key)).toMatchObject({ reserved_bytes: 0, used_bytes: 25 });

  const finalUrl = final.headers.get("location")!;
  const finalHead = await tusFetch(finalUrl, "HEAD", key);
  expect({
    status: finalHead.status,
    concat: finalHead.headers.get("upload-concat"),
    offset: finalHead.headers.get("upload-offset"),
    length: finalHead.headers.get("upload-length"),
    file: finalHead.headers.get("cubby-file-id"),
  }).toEqual({ status: 200, concat: `final;${finalPaths}`, offset: "25", length: "25", file: fileId });
  const patch = await patchChunk(finalUrl, key, 25, "more");
  expect(patch.status).toBe(403);
  // The partials are consumed: they name the file, and their bytes are gone.
  const partHead = await tusFetch(b, "HEAD", key);
  expect([partHead.status, partHead.headers.get("cubby-file-id")]).toEqual([200, fileId]);
  const stored = await blobNames(server.dataDir);
  for (const u of [a, empty, b]) expect(stored.filter((n) => n.startsWith(`uploads/${idOf(u)}`))).toEqual([]);
});

// The parts' carried CRC32Cs are combined; a part whose row has none (made before the column)
// makes the final checksum every byte instead.
test("a partial whose row carries no CRC32C: the final's checksum is computed from the bytes", async () => {
  const key = await newUser();
  const a = await partialOf(key, "first part, ");
  const b = await partialOf(key, "second part");
  await runSql(server.dataDir, "UPDATE uploads SET crc32c = NULL WHERE id = ?", idOf(b));
  const final = await createFinal(key, [a, b]);
  expect(final.status).toBe(201);
  const file = (await (await client(server, key).fetch(`/v1/files/${final.headers.get("cubby-file-id")}`)).json()) as FileJson;
  expect({ size: file.size, checksum: file.checksum }).toEqual({ size: "23", checksum: checksumOf("first part, second part") });
});

test("hostile finals are clear 4xx and change nothing", async () => {
  const key = await newUser();
  const other = await newUser();
  const a = await partialOf(key, "aaaa");
  const b = await partialOf(key, "bbbb");
  const unfinished = await createPartial(key, 10);
  const plainRes = await tusFetch(`${server.url}/v1/uploads`, "POST", key, { "upload-length": "10" });
  const plain = plainRes.headers.get("location")!;
  const theirs = await partialOf(other, "theirs");
  const missing = `${server.url}/v1/uploads/${"x".repeat(26)}`;
  const before = await snapshot([a, b, unfinished, plain, theirs]);

  const cases: [string, Awaited<ReturnType<typeof createFinal>>, number, RegExp][] = [
    ["another user's partial", await createFinal(key, [a, theirs]), 404, /upload not found/],
    ["a missing partial", await createFinal(key, [a, missing]), 404, /upload not found/],
    ["an unfinished partial", await createFinal(key, [a, unfinished]), 400, /unfinished/],
    ["a plain upload", await createFinal(key, [a, plain]), 400, /not a partial upload/],
    ["one partial twice", await createFinal(key, [a, b, a]), 400, /named twice/],
    ["no partial", await createFinal(key, []), 400, /at least one/],
    ["not an upload URL", await createFinal(key, [a, `${server.url}/v1/files/abc`]), 400, /not an upload URL/],
    ["an Upload-Length", await createFinal(key, [a, b], { "upload-length": "8" }), 400, /Upload-Length/],
    ["bytes", await createFinal(key, [a, b], { "content-type": "application/offset+octet-stream" }, "xx"), 400, /takes no bytes/],
    ["a bad Upload-Concat", { ...(await tusFetch(`${server.url}/v1/uploads`, "POST", key, { "upload-concat": "final", "upload-length": "1" }).then(async (r) => ({ status: r.status, headers: r.headers, error: (await r.json()) as ErrorJson }))) }, 400, /Upload-Concat/],
  ];
  for (const [what, got, status, message] of cases) {
    expect({ what, status: got.status, ok: message.test(got.error?.message ?? "") }).toEqual({ what, status, ok: true });
  }
  expect(await snapshot([a, b, unfinished, plain, theirs])).toEqual(before);

  // The same partials still make the file; another final naming one of them is refused.
  const final = await createFinal(key, [a, b]);
  expect(final.status).toBe(201);
  const again = await createFinal(key, [b]);
  expect([again.status, again.error?.message]).toEqual([400, `partial upload ${idOf(b)} is part of a final upload already`]);
  const reordered = await createFinal(key, [b, a]);
  expect([reordered.status, reordered.error?.message]).toEqual([400, `partial upload ${idOf(b)} is part of a final upload already`]);
  // The same final again (a client that lost the answer and resumed) gets the same answer.
  const repeated = await createFinal(key, [a, b]);
  expect([repeated.status, repeated.headers.get("location"), repeated.headers.get("cubby-file-id")]).toEqual([201, final.headers.get("location"), final.headers.get("cubby-file-id")]);
  // Another user repeating it learns nothing.
  expect((await createFinal(other, [a, b])).status).toBe(404);
});

test("a final upload's file is counted once against the quota: partials that fit make a file that fits", async () => {
  const key = await newUser();
  // Three partials of a third of the quota each fit; one byte more does not.
  const third = Math.floor(QUOTA / 3);
  const urls = [await createPartial(key, third), await createPartial(key, third), await createPartial(key, QUOTA - 2 * third)];
  const over = await tusFetch(`${server.url}/v1/uploads`, "POST", key, { "upload-length": "1", "upload-concat": "partial" });
  expect(over.status).toBe(413);
  let i = 0;
  for (const url of urls) {
    const size = i++ < 2 ? third : QUOTA - 2 * third;
    expect((await patchChunk(url, key, 0, new Uint8Array(size).fill(i))).status).toBe(204);
  }
  const final = await createFinal(key, urls, { "upload-metadata": `filename ${b64("full.bin")}` });
  expect(final.status).toBe(201);
  expect(await usage(key)).toMatchObject({ reserved_bytes: 0, used_bytes: QUOTA });
});

test("through a guest link: partials hold bytes but no file; the final counts one file of the total; another link's token cannot take them", async () => {
  const owner = await newUser();
  const makeLink = async (body: Record<string, unknown>) => {
    const res = await client(server, owner).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const link = (await res.json()) as UploadLinkJson;
    return { ...link, token: link.url.split("/u/")[1]! };
  };
  const link = await makeLink({ max_files: 1, max_bytes: 12 });
  const otherLink = await makeLink({});
  const a = await partialOf(link.token, "guest ");
  const b = await partialOf(link.token, "upload");
  // max_bytes is held by the partials: nothing more fits.
  const more = await tusFetch(`${server.url}/v1/uploads`, "POST", link.token, { "upload-length": "1", "upload-concat": "partial" });
  expect(more.status).toBe(413);
  // Neither another link's guest nor the owner may make the final.
  const before = await snapshot([a, b]);
  expect((await createFinal(otherLink.token, [a, b])).status).toBe(404);
  const byOwner = await createFinal(owner, [a, b]);
  expect([byOwner.status, byOwner.error?.message]).toEqual([400, `partial upload ${idOf(a)} came through a guest upload link: only that link's final upload takes it`]);
  expect(await snapshot([a, b])).toEqual(before);

  const final = await createFinal(link.token, [a, b], { "upload-metadata": `filename ${b64("guest.txt")}` });
  expect(final.status).toBe(201);
  const links = (await (await client(server, owner).fetch("/v1/upload-links")).json()) as { upload_links: UploadLinkJson[] };
  expect(links.upload_links.find((l) => l.id === link.id)).toMatchObject({ files_uploaded: 1, bytes_uploaded: 12 });
  const file = (await (await client(server, owner).fetch(`/v1/files/${final.headers.get("cubby-file-id")}`)).json()) as FileJson;
  expect([file.name, file.size]).toEqual(["guest.txt", "12"]);
  // The link is full now.
  expect((await tusFetch(`${server.url}/v1/uploads`, "POST", link.token, { "upload-length": "1", "upload-concat": "partial" })).status).toBe(410);
});

test("through a guest link, a concatenation that says its file's size (Upload-Metadata group, total) is refused at its first part when the file does not fit; the parts of one that fits pass; guests' parts live an hour (CONTRACT §15)", async () => {
  const owner = await newUser();
  const res = await client(server, owner).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ max_bytes: 1000 }) });
  const token = ((await res.json()) as UploadLinkJson).url.split("/u/")[1]!;
  const part = (length: number, group: string, total: number) =>
    tusFetch(`${server.url}/v1/uploads`, "POST", token, { "upload-length": String(length), "upload-concat": "partial", "upload-metadata": `filename ${b64("f.bin")},group ${b64(group)},total ${b64(String(total))}` });

  // A 1 200-byte file on a 1 000-byte link: its first part is refused, saying why; nothing is held.
  const tooBig = await part(100, "big", 1200);
  expect({ status: tooBig.status, message: ((await tooBig.json()) as ErrorJson).message }).toEqual({ status: 413, message: "this upload link takes at most 1000 more bytes; this file is 1200" });
  // An 800-byte file in two parts: both pass (the second is not counted against its sibling).
  const first = await part(400, "fits", 800);
  const startedAt = Date.now();
  expect(first.status).toBe(201);
  expect((await part(400, "fits", 800)).status).toBe(201);
  // A guest's part lives an hour, not the uploads' 24 hours.
  const expires = Date.parse(first.headers.get("upload-expires")!);
  expect(expires - startedAt).toBeLessThanOrEqual(3600_000 + 2000);
  expect(expires - startedAt).toBeGreaterThan(3600_000 - 60_000);
  // Another file of 300 bytes does not fit beside the 800 held: refused at its first part.
  const third = await part(100, "third", 300);
  expect({ status: third.status, message: ((await third.json()) as ErrorJson).message }).toEqual({ status: 413, message: "this upload link takes at most 200 more bytes now; this file is 300" });
  // Bad metadata: a total below the part, or one without the other.
  for (const metadata of [`group ${b64("g")},total ${b64("5")}`, `group ${b64("g")}`, `total ${b64("50")}`, `group ${b64("bad group!")},total ${b64("50")}`]) {
    const bad = await tusFetch(`${server.url}/v1/uploads`, "POST", token, { "upload-length": "10", "upload-concat": "partial", "upload-metadata": metadata });
    expect({ metadata, status: bad.status }).toEqual({ metadata, status: 400 });
  }
});

test("finals naming the same partials at once: one file; the others refused, or answered with that file", async () => {
  const key = await newUser();
  const a = await partialOf(key, new Uint8Array(3 * MiB).fill(1));
  const b = await partialOf(key, new Uint8Array(2 * MiB).fill(2));
  const results = await Promise.all([createFinal(key, [a, b]), createFinal(key, [a, b]), createFinal(key, [b])]);
  const made = results.filter((r) => r.status === 201).map((r) => r.headers.get("cubby-file-id"));
  expect(made.length).toBeGreaterThan(0);
  expect(new Set(made).size).toBe(1);
  expect(results.filter((r) => r.status !== 201).every((r) => r.status === 400 || r.status === 409)).toBe(true);
  const files = await runSql<{ n: number }>(server.dataDir, "SELECT count(*) AS n FROM files WHERE owner_id = (SELECT owner_id FROM uploads WHERE id = ?)", idOf(a));
  expect(Number(files[0]!.n)).toBe(1);
  if (results[2]!.status === 201) {
    // [b] alone came first (whichever request takes b's lock first wins): then neither [a, b]
    // did, and a is still a partial upload waiting, its bytes reserved.
    expect(results.slice(0, 2).map((r) => r.status === 201)).toEqual([false, false]);
    expect(await usage(key)).toMatchObject({ reserved_bytes: 3 * MiB, used_bytes: 5 * MiB });
  } else expect(await usage(key)).toMatchObject({ reserved_bytes: 0, used_bytes: 5 * MiB });
});

test("a final refused through a link that filled meanwhile changes nothing: the partials stay whole", async () => {
  const owner = await newUser();
  const res = await client(server, owner).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ max_files: 1 }) });
  const token = ((await res.json()) as UploadLinkJson).url.split("/u/")[1]!;
  const a = await partialOf(token, new Uint8Array(2 * MiB).fill(7));
  const b = await partialOf(token, "tail");
  // Partials hold no file: a plain upload through the link takes its one file first.
  const plain = await tusFetch(`${server.url}/v1/uploads`, "POST", token, { "upload-length": "3", "content-type": "application/offset+octet-stream" }, "abc");
  expect(plain.status).toBe(201);
  const before = await snapshot([a, b]);
  const final = await createFinal(token, [a, b]);
  expect([final.status, final.error?.message]).toEqual([410, "this upload link took its 1 file(s)"]);
  expect(await snapshot([a, b])).toEqual(before);
  // The link is full, so its guests get 410; the owner sees the partials whole.
  for (const u of [a, b]) expect((await tusFetch(u, "HEAD", owner)).headers.get("upload-offset")).toBe(u === a ? String(2 * MiB) : "4");
});

test("tus-js-client with parallelUploads (the dashboard's way) uploads 40 MiB through nginx capping bodies at 16 MiB; the bytes match", async () => {
  const key = await newUser();
  const source = randomFile(work.path, "parallel.bin", 40 * MiB + 123);
  await using nginx = await startNginx([server.port], "client_max_body_size 16m;");
  const done = await tusUpload(source.path, { endpoint: `${nginx.url}/v1/uploads`, token: key, chunkSize: 8 * MiB, parallelUploads: 4, metadata: { filename: "parallel.bin" } });
  expect(done.fileId).not.toBeNull();
  const file = (await (await client(server, key).fetch(`/v1/files/${done.fileId}`)).json()) as FileJson;
  expect({ name: file.name, size: file.size, checksum: file.checksum }).toEqual({ name: "parallel.bin", size: String(40 * MiB + 123), checksum: source.checksum });
  const parts = await runSql<{ n: number }>(server.dataDir, "SELECT count(*) AS n FROM uploads WHERE file_id = ? AND concat = 'partial'", done.fileId!);
  expect(Number(parts[0]!.n)).toBe(4);
}, 120_000);
