// test-lists: workers postgres-s3
// Guest links bound what a guest can hold (CONTRACT §10), against the real server on the
// configured stores (WORKERS 1 or 2, SQLite + disk or PostgreSQL + S3): a tus upload created
// through a link reserves a file and its Upload-Length of the link's max_files and max_bytes at
// creation, so 20 creations through a one-file link (in a row or at once) get one 201 and 413
// for the rest; raw uploads respect the reservations; deleting or expiring the link ends its
// unfinished uploads (bytes removed, the owner's quota reservation released); GET /v1/uploads
// lists the owner's unfinished uploads, their own and their links', and DELETE /v1/uploads/{id}
// ends one, or answers 409 while a PATCH writes it; a link deleted mid-PATCH lets that PATCH
// finish and ends the upload at the guest's next request.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { UploadLinkJson } from "../../src/domain/upload-link.ts";
import type { UnfinishedUploadPageJson } from "../../src/http/uploads-routes.ts";
import { BACKEND, blobNames, runSql } from "../support/backend.ts";
import { client, startServer, type RunningServer } from "../support/server.ts";
import { createUpload, patchChunk, tusFetch } from "../support/tus.ts";
import { waitFor } from "../support/wait.ts";

/** Each user's quota: the reproduction's (20 uploads of 1 000 bytes fill it). */
const QUOTA = 20_000;

let server: RunningServer;
let users = 0;

beforeAll(async () => {
  server = await startServer({ env: { QUOTA_BYTES: String(QUOTA) } });
});
afterAll(() => server?.[Symbol.asyncDispose]());

const newUser = () => server.mintKey(`reserve-${++users}@example.com`);

async function makeLink(key: string, body: Record<string, unknown>, on = server): Promise<UploadLinkJson & { token: string }> {
  const res = await client(on, key).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`link: ${res.status} ${await res.text()}`);
  const link = (await res.json()) as UploadLinkJson;
  return { ...link, token: link.url.split("/u/")[1]! };
}

/** A raw tus creation of `length` bytes: its status, Location and error body. */
async function create(token: string, length: number, filename = "", on = server): Promise<{ status: number; url: string | null; body: ErrorJson | undefined }> {
  const headers: Record<string, string> = { "upload-length": String(length) };
  if (filename !== "") headers["upload-metadata"] = `filename ${Buffer.from(filename).toString("base64")}`;
  const res = await tusFetch(`${on.url}/v1/uploads`, "POST", token, headers);
  return { status: res.status, url: res.headers.get("location"), body: res.status === 201 ? undefined : ((await res.json()) as ErrorJson) };
}

type ErrorJson = { code: number; message: string; details: unknown[] };

const usage = async (key: string) => (await (await client(server, key).fetch("/v1/usage")).json()) as { reserved_bytes: number; used_bytes: number };
const listUploads = async (key: string, query = "", on = server) => {
  const res = await client(on, key).fetch(`/v1/uploads${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as UnfinishedUploadPageJson;
};
const idOf = (url: string) => url.split("/").pop()!;
/** Whether the blob store still holds partial bytes of upload `id` (disk: uploads/ID; S3: uploads/ID/…). */
const hasPartial = async (id: string, on = server) => (await blobNames(on.dataDir)).some((n) => n === `uploads/${id}` || n.startsWith(`uploads/${id}/`));

test("the reproduction: 20 creations through a max_files 1 link get one 201 and 413 for the rest; deleting the link ends the upload and releases the owner's quota", async () => {
  const owner = await newUser();
  const link = await makeLink(owner, { max_files: 1, max_bytes: 1000 });
  const created = [];
  for (let i = 0; i < 20; i++) created.push(await create(link.token, 1000));
  expect(created.map((c) => c.status)).toEqual([201, ...Array(19).fill(413)]);
  expect(created[1]!.body).toEqual({ code: 8, message: "this upload link takes 1 file(s): 0 received and 1 unfinished upload(s) hold them", details: [] });
  const url = created[0]!.url!;
  expect((await patchChunk(url, link.token, 0, "p".repeat(999))).status).toBe(204);
  expect(await hasPartial(idOf(url))).toBe(true);
  // The owner fills the rest of their quota: 19 000 stored + 1 000 reserved by the guest.
  await client(server, owner).upload("f".repeat(19_000), "?name=big.bin");
  expect(await usage(owner)).toMatchObject({ reserved_bytes: 1000, used_bytes: QUOTA });
  expect((await tusFetch(`${server.url}/v1/uploads`, "POST", owner, { "upload-length": "10" })).status).toBe(413);

  const deleted = await client(server, owner).fetch(`/v1/upload-links/${link.id}`, { method: "DELETE" });
  expect(deleted.status).toBe(200);
  // Ended at once: gone for the guest (their link is gone) and the owner, bytes removed, quota released.
  expect((await tusFetch(url, "HEAD", owner)).status).toBe(404);
  expect((await tusFetch(url, "HEAD", link.token)).status).toBe(410);
  expect(await hasPartial(idOf(url))).toBe(false);
  expect(await usage(owner)).toMatchObject({ reserved_bytes: 0, used_bytes: 19_000 });
  const own = await tusFetch(`${server.url}/v1/uploads`, "POST", owner, { "upload-length": "10", "content-type": "application/offset+octet-stream" }, "0123456789");
  expect([own.status, own.headers.get("cubby-file-id")?.length]).toEqual([201, 21]);
});

test("max_bytes holds at creation: Upload-Lengths of unfinished uploads count against it, and raw uploads respect them", async () => {
  const owner = await newUser();
  const link = await makeLink(owner, { max_bytes: 2500 });
  const a = await create(link.token, 1000);
  const b = await create(link.token, 1000);
  const c = await create(link.token, 1000);
  expect([a.status, b.status, c.status]).toEqual([201, 201, 413]);
  expect(c.body?.message).toBe("this upload link takes at most 500 more bytes now (2000 are held by its unfinished uploads); this upload needs 1000");
  expect((await create(link.token, 500)).status).toBe(201);
  // 2 500 of 2 500 held: a raw upload of one byte is refused while they are unfinished.
  const raw = await fetch(`${server.url}/u/${link.token}?name=x.txt`, { method: "POST", body: "x" });
  expect([raw.status, ((await raw.json()) as { code: number }).code]).toEqual([413, 8]);
  // Finishing the reserved ones passes, and the link's counters are exactly theirs.
  expect((await patchChunk(a.url!, link.token, 0, "a".repeat(1000))).status).toBe(204);
  expect((await patchChunk(b.url!, link.token, 0, "b".repeat(1000))).status).toBe(204);
  const [row] = await runSql<{ files_uploaded: number; bytes_uploaded: number }>(server.dataDir, "SELECT files_uploaded, bytes_uploaded FROM upload_links WHERE id = ?", link.id);
  expect([Number(row!.files_uploaded), Number(row!.bytes_uploaded)]).toEqual([2, 2000]);
});

test("20 concurrent creations never pass max_files or max_bytes (on PostgreSQL, spread over two instances)", async () => {
  // A second instance on the same PostgreSQL and S3 store (its data directory names them).
  await using twin = BACKEND === "postgres-s3" ? await startServer({ dataDir: server.dataDir, env: { QUOTA_BYTES: String(QUOTA) } }) : undefined;
  const on = (i: number) => (twin !== undefined && i % 2 === 1 ? twin : server);
  const owner = await newUser();
  const byFiles = await makeLink(owner, { max_files: 3 });
  const byBytes = await makeLink(owner, { max_bytes: 2500 });
  const [files, bytes] = await Promise.all([
    Promise.all(Array.from({ length: 20 }, (_, i) => create(byFiles.token, 100, "", on(i)).then((c) => c.status))),
    Promise.all(Array.from({ length: 20 }, (_, i) => create(byBytes.token, 1000, "", on(i)).then((c) => c.status))),
  ]);
  expect({ files: count(files), bytes: count(bytes) }).toEqual({ files: { 201: 3, 413: 17 }, bytes: { 201: 2, 413: 18 } });
  const held = await runSql<{ upload_link_id: string; n: number }>(server.dataDir, "SELECT upload_link_id, count(*) AS n FROM uploads WHERE upload_link_id IN (?, ?) GROUP BY upload_link_id", byFiles.id, byBytes.id);
  expect(Object.fromEntries(held.map((r) => [r.upload_link_id, Number(r.n)]))).toEqual({ [byFiles.id]: 3, [byBytes.id]: 2 });
}, 60_000);

function count(statuses: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

test("GET /v1/uploads lists the owner's unfinished uploads, their own and their links', paged; DELETE /v1/uploads/{id} ends one", async () => {
  const owner = await newUser();
  const other = await newUser();
  const link = await makeLink(owner, { max_files: 1 });
  const own = await create(owner, 300, "mine.txt");
  const guest = await create(link.token, 200, "from-guest.pdf");
  expect((await patchChunk(guest.url!, link.token, 0, "g".repeat(120))).status).toBe(204);
  const finished = await create(owner, 2, "done.txt");
  expect((await patchChunk(finished.url!, owner, 0, "ok")).status).toBe(204);

  const listed = await listUploads(owner);
  expect(listed.next_page_token).toBe("");
  expect(listed.uploads.map((u) => ({ ...u, expire_time: typeof u.expire_time, created_at: typeof u.created_at }))).toEqual([
    { id: idOf(guest.url!), url: guest.url!, name: "from-guest.pdf", offset: 120, length: 200, upload_link_id: link.id, expire_time: "string", created_at: "string" },
    { id: idOf(own.url!), url: own.url!, name: "mine.txt", offset: 0, length: 300, upload_link_id: null, expire_time: "string", created_at: "string" },
  ]);
  const expiresIn = Date.parse(listed.uploads[0]!.expire_time) - Date.now();
  expect(expiresIn > 23 * 3600_000 && expiresIn <= 24 * 3600_000).toBe(true);
  // Paged like files; another user sees none of them.
  const first = await listUploads(owner, "?page_size=1");
  const second = await listUploads(owner, `?page_size=1&page_token=${first.next_page_token}`);
  expect([first.uploads.map((u) => u.id), second.uploads.map((u) => u.id), second.next_page_token]).toEqual([[idOf(guest.url!)], [idOf(own.url!)], ""]);
  expect((await listUploads(other)).uploads).toEqual([]);
  expect((await client(server, owner).fetch("/v1/uploads?page_size=0")).status).toBe(400);
  expect((await fetch(`${server.url}/v1/uploads`)).status).toBe(401);

  // Another user cannot end it: 404, and it stays.
  const refused = await client(server, other).fetch(`/v1/uploads/${idOf(guest.url!)}`, { method: "DELETE" });
  expect([refused.status, ((await refused.json()) as { code: number }).code]).toEqual([404, 5]);
  // The owner ends the guest's upload with a plain REST DELETE (no Tus-Resumable).
  const ended = await client(server, owner).fetch(`/v1/uploads/${idOf(guest.url!)}`, { method: "DELETE" });
  expect(ended.status).toBe(204);
  expect((await listUploads(owner)).uploads.map((u) => u.id)).toEqual([idOf(own.url!)]);
  expect((await tusFetch(guest.url!, "HEAD", link.token)).status).toBe(404);
  expect(await hasPartial(idOf(guest.url!))).toBe(false);
  // Its place under the link's max_files is free again.
  expect((await create(link.token, 10)).status).toBe(201);
  // A files.read key lists; a write-only key does not.
  const writer = await server.mintKey(`reserve-${users}@example.com`, "--scope", "files.write");
  expect((await client(server, writer).fetch("/v1/uploads")).status).toBe(403);
});

test("an expired link's unfinished uploads end: at the next request through it, or by the sweep", async () => {
  // A server of its own, restarted below on the same data (the sweep runs at start).
  await using first = await startServer({ env: { QUOTA_BYTES: String(QUOTA) } });
  const owner = await first.mintKey("reserve-expiry@example.com");
  const link = await makeLink(owner, { ttl: "1h" }, first);
  const patched = await create(link.token, 100, "", first);
  const idle = await create(link.token, 100, "", first);
  for (const u of [patched, idle]) expect((await patchChunk(u.url!, link.token, 0, "e".repeat(50))).status).toBe(204);
  await runSql(first.dataDir, "UPDATE upload_links SET expires_at = ? WHERE id = ?", Date.now() * 1000 - 1_000_000, link.id);
  // A PATCH through the expired link: 410, and the upload is gone with its bytes.
  expect((await patchChunk(patched.url!, link.token, 50, "late")).status).toBe(410);
  expect((await tusFetch(patched.url!, "HEAD", owner)).status).toBe(404);
  expect(await hasPartial(idOf(patched.url!), first)).toBe(false);
  expect(await hasPartial(idOf(idle.url!), first)).toBe(true);
  await first.stop();
  await using second = await startServer({ dataDir: first.dataDir, env: { QUOTA_BYTES: String(QUOTA) } });
  expect((await tusFetch(`${second.url}/v1/uploads/${idOf(idle.url!)}`, "HEAD", owner)).status).toBe(404);
  expect(await hasPartial(idOf(idle.url!), second)).toBe(false);
  expect((await listUploads(owner, "", second)).uploads).toEqual([]);
  expect(await (await client(second, owner).fetch("/v1/usage")).json()).toMatchObject({ reserved_bytes: 0 });
}, 60_000);

/** A PATCH at offset 0 whose body sends `first`, then waits for `release()` to send `rest`. */
function stalledPatch(url: string, token: string, first: string, rest: string): { response: Promise<Response>; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode(first));
      await gate;
      controller.enqueue(new TextEncoder().encode(rest));
      controller.close();
    },
  });
  const headers = { "tus-resumable": "1.0.0", authorization: `Bearer ${token}`, "content-type": "application/offset+octet-stream", "upload-offset": "0" };
  return { response: fetch(url, { method: "PATCH", headers, body, duplex: "half" } as RequestInit), release };
}

/** Waits until the server counts an upload being written (`cubby_uploads_in_flight`, every worker's summed). */
async function untilWriting(): Promise<void> {
  await waitFor(async () => /^cubby_uploads_in_flight 1$/m.test(await (await fetch(`${server.url}/metrics`)).text()), "the PATCH to start writing");
}

/**
 * Whether a request can end an upload another process is writing: where several processes share
 * an S3 store, which has no cross-process write lock (storage/upload-ports.ts `lock`). The
 * ending then wins, and the PATCH is refused with 410 and leaves nothing behind.
 */
const endingMayWin = BACKEND === "postgres-s3" && Number(process.env.WORKERS ?? "1") > 1;

test("ending an upload while a PATCH writes it answers 409 and the PATCH is stored whole; it ends once that is done", async () => {
  const owner = await newUser();
  const { url } = await create(owner, 100);
  const patch = stalledPatch(url!, owner, "first half", " and more");
  try {
    await untilWriting();
    const ending = await client(server, owner).fetch(`/v1/uploads/${idOf(url!)}`, { method: "DELETE" });
    patch.release();
    const patched = await patch.response;
    if (ending.status === 204 && endingMayWin) {
      expect([patched.status, ((await patched.json()) as ErrorJson).message]).toEqual([410, "the upload was ended while this request was writing it"]);
    } else {
      expect([ending.status, ((await ending.json()) as ErrorJson).code]).toEqual([409, 10]);
      expect([patched.status, patched.headers.get("upload-offset")]).toEqual([204, "19"]);
      expect((await client(server, owner).fetch(`/v1/uploads/${idOf(url!)}`, { method: "DELETE" })).status).toBe(204);
    }
  } finally {
    patch.release();
  }
  expect((await tusFetch(url!, "HEAD", owner)).status).toBe(404);
  expect(await hasPartial(idOf(url!))).toBe(false);
});

test("deleting a link while a guest's PATCH writes: that PATCH is stored, and the upload ends at the guest's next request", async () => {
  const owner = await newUser();
  const link = await makeLink(owner, {});
  const { url } = await create(link.token, 100);
  const patch = stalledPatch(url!, link.token, "first half", " and more");
  try {
    await untilWriting();
    expect((await client(server, owner).fetch(`/v1/upload-links/${link.id}`, { method: "DELETE" })).status).toBe(200);
    patch.release();
    const patched = await patch.response;
    if (patched.status === 410 && endingMayWin) {
      expect(((await patched.json()) as ErrorJson).message).toBe("the upload was ended while this request was writing it");
    } else {
      expect(patched.status).toBe(204);
      const next = await patchChunk(url!, link.token, 19, "late");
      expect([next.status, ((await next.json()) as ErrorJson).message]).toEqual([410, "this upload link was deleted"]);
    }
  } finally {
    patch.release();
  }
  expect((await tusFetch(url!, "HEAD", owner)).status).toBe(404);
  expect(await hasPartial(idOf(url!))).toBe(false);
  expect(await usage(owner)).toMatchObject({ reserved_bytes: 0 });
});
