// Export while the store changes under it, and over damage (docs/archive.md, "Export: consistent
// row by row"), on real SQLite + disk stores: a file deleted mid-export is left out and counted,
// one replaced is exported with its new content, a user created mid-export comes before the
// first record that needs them, and the result imports; a blob missing under a live row or
// holding other bytes than its row records stops the export.
import { ALL_SCOPES } from "../../src/domain/principal.ts";
import { afterEach, beforeEach, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { checksumOf } from "../../src/domain/checksum.ts";
import type { FileRecord } from "../../src/domain/file.ts";
import { exportArchive } from "../../src/service/archive-export.ts";
import { importArchive } from "../../src/service/archive-import.ts";
import { openServices, type Services } from "../../src/service/index.ts";
import type { BlobStore, MetadataStore } from "../../src/storage/ports.ts";
import { DiskBlobStore } from "../../src/storage/disk-blobs.ts";

let dir: string;
let services: Services;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-export-"));
  services = await openServices({ dataDir: path.join(dir, "source"), maxUploadBytes: 1 << 30 });
});
afterEach(async () => {
  await services[Symbol.asyncDispose]();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function* once(bytes: Uint8Array) {
  yield bytes;
}

async function upload(email: string, bytes: Uint8Array, name: string): Promise<FileRecord> {
  const user = await services.users.findOrCreateByEmail(email);
  return services.files.create({ userId: user.id, via: "api_key", scopes: ALL_SCOPES }, { slug: "", name, visibility: "private", contentType: "application/octet-stream", content: once(bytes) });
}

/** Exports through `deps` into memory. */
async function exportToMemory(deps: { store: MetadataStore; blobs: BlobStore }) {
  const parts: Uint8Array[] = [];
  const report = await exportArchive({ ...deps, clock: services.clock }, { write: async (b) => void parts.push(new Uint8Array(b)) }, { sessions: false });
  return { report, archive: Buffer.concat(parts) };
}

/** Imports `archive` into a fresh data directory. @returns the file rows there, by name */
async function importedFiles(archive: Uint8Array) {
  await using dest = await openServices({ dataDir: path.join(dir, "dest"), maxUploadBytes: 1 << 30 });
  await importArchive(dest, once(archive));
  const files: Record<string, { size: number; checksum: string; owner: string | undefined }> = {};
  for await (const f of dest.store.files.all()) files[f.name] = { size: f.size, checksum: f.checksum, owner: await dest.users.emailOf(f.ownerId) };
  return files;
}

/** `target` with `method` replaced: the real object underneath, one behaviour changed. */
function overriding<T extends object, K extends keyof T>(target: T, method: K, replacement: T[K]): T {
  return Object.create(target, { [method]: { value: replacement } }) as T;
}

test("changes during the export: a deleted file is left out, a replaced one follows, a late user comes first", async () => {
  const uploaded = [
    await upload("a@example.com", new Uint8Array([1, 2, 3]), "x"),
    await upload("a@example.com", new Uint8Array([4, 5]), "y"),
    await upload("b@example.com", new Uint8Array([6]), "z"),
  ];
  // Files are exported in ID order.
  const [first, deleted, replaced] = uploaded.sort((a, b) => (a.id < b.id ? -1 : 1)) as [FileRecord, FileRecord, FileRecord];
  const newContent = crypto.getRandomValues(new Uint8Array(3000));
  const late = new Uint8Array([9, 9]);

  // By the time the first blob is read every file row has been read; then one file is deleted and
  // another replaced, and the delayed blob removals (30 s of grace for readers) run at once.
  let raced = false;
  const blobs = overriding(services.blobs, "read", (name, range, plan) => {
    if (raced) return services.blobs.read(name, range, plan);
    raced = true;
    return (async function* () {
      await services.files.delete({ userId: deleted.ownerId, via: "api_key", scopes: ALL_SCOPES }, deleted.id);
      await services.files.replaceContent({ userId: replaced.ownerId, via: "api_key", scopes: ALL_SCOPES }, replaced.id, { contentType: "text/plain", content: once(newContent) });
      await (services.blobs as DiskBlobStore).flushRemovals();
      yield* services.blobs.read(name, range, plan);
    })();
  });
  // A user who appears after the users were read, with a file, before the files are read.
  const keys = overriding(services.store.keys, "all", async function* () {
    await upload("late@example.com", late, "late");
    yield* services.store.keys.all();
  });
  const store = overriding(services.store, "keys", keys);

  const { report, archive } = await exportToMemory({ store, blobs });
  expect(report).toEqual({ users: 3, keys: 0, sessions: 0, uploadLinks: 0, files: 3, shares: 0, bytes: first.size + 3000 + 2, folders: 0, davProperties: 0, skippedFiles: 1 });
  const email = (f: FileRecord) => services.users.emailOf(f.ownerId);
  expect(await importedFiles(archive)).toEqual({
    [first.name]: { size: first.size, checksum: first.checksum, owner: await email(first) },
    [replaced.name]: { size: 3000, checksum: checksumOf(newContent), owner: await email(replaced) },
    late: { size: 2, checksum: checksumOf(late), owner: "late@example.com" },
  });
  const text = archive.toString("latin1");
  // After the users read at the start, just before the record that needs it.
  const at = (s: string) => text.indexOf(s);
  expect(at('"email":"late@example.com"')).toBeGreaterThan(Math.max(at('"email":"a@example.com"'), at('"email":"b@example.com"')));
  expect(at('"email":"late@example.com"')).toBeLessThan(at('"name":"late"'));
});

test("a blob missing under a live row stops the export", async () => {
  const file = await upload("a@example.com", new Uint8Array([1, 2, 3]), "gone");
  fs.rmSync(path.join(dir, "source", "blobs", file.blob));
  await expect(exportToMemory(services)).rejects.toThrow(new RegExp(`^file ${file.id}: cannot read its blob ${file.blob} \\(.*\\); run cubby fsck$`));
});

test("a blob whose bytes differ from its row stops the export", async () => {
  const file = await upload("a@example.com", new Uint8Array(100_000).fill(7), "rotten");
  const blob = path.join(dir, "source", "blobs", file.blob);
  const bytes = fs.readFileSync(blob);
  bytes[50_000]! ^= 1;
  fs.writeFileSync(blob, bytes);
  await expect(exportToMemory(services)).rejects.toThrow(
    `file ${file.id}: its blob ${file.blob} holds 100000 bytes with CRC32C ${checksumOf(bytes)}, its row records 100000 bytes with ${file.checksum}; run cubby fsck`,
  );
});

const owner = (userId: string) => ({ userId, via: "api_key" as const, scopes: ALL_SCOPES });

test("a guest upload link made after the links were read comes just before the first file through it, and the file keeps its link", async () => {
  const user = await services.users.findOrCreateByEmail("a@example.com");
  const early = await services.uploadLinks.create(owner(user.id), { name: "early", expiresAt: null, maxFiles: null, maxBytes: null, visibility: "private" });
  await services.uploadLinks.upload(early.token, { name: "via-early", contentType: "text/plain", content: once(new Uint8Array([1])) });
  let late: { id: string } | undefined;
  const uploadLinks = overriding(services.store.uploadLinks, "all", async function* () {
    yield* services.store.uploadLinks.all();
    const link = await services.uploadLinks.create(owner(user.id), { name: "late", expiresAt: null, maxFiles: 5, maxBytes: null, visibility: "public" });
    await services.uploadLinks.upload(link.token, { name: "via-late", contentType: "text/plain", content: once(new Uint8Array([2, 3])) });
    late = link;
  });
  const { report, archive } = await exportToMemory({ store: overriding(services.store, "uploadLinks", uploadLinks), blobs: services.blobs });
  expect(report).toMatchObject({ uploadLinks: 2, files: 2, skippedFiles: 0 });
  const text = archive.toString("latin1");
  const at = (s: string) => text.indexOf(s);
  // The early link in the links' pass; the late one in the files' pass, just before its file.
  const lateAt = at(`"type":"upload_link","id":"${late!.id}"`);
  expect(lateAt).toBeGreaterThan(at(`"type":"upload_link","id":"${early.id}"`));
  const next = text.slice(text.indexOf("\n", lateAt) + 1);
  expect(next).toStartWith('{"type":"file"');
  expect(next.slice(0, next.indexOf("\n"))).toContain('"name":"via-late"');

  await using dest = await openServices({ dataDir: path.join(dir, "dest"), maxUploadBytes: 1 << 30 });
  await importArchive(dest, once(archive));
  const links: Record<string, string[]> = {};
  for await (const l of dest.store.uploadLinks.all()) links[l.name] = (await dest.store.files.listByUploadLink(l.id, 10, undefined)).map((f) => f.name);
  expect(links).toEqual({ early: ["via-early"], late: ["via-late"] });
});

/** `archive` with `from` replaced by `to` once (the same length, so offsets hold). */
function replaced(archive: Buffer, from: string, to: string): Buffer {
  expect(to.length).toBe(from.length);
  const text = archive.toString("latin1");
  expect(text.includes(from)).toBe(true);
  return Buffer.from(text.replace(from, to), "latin1");
}

test("import refuses a share link that would serve a file of the destination the archive does not hold, and changes nothing", async () => {
  const shared = await upload("a@example.com", new Uint8Array([1, 2, 3]), "shared");
  const user = await services.users.findOrCreateByEmail("a@example.com");
  await services.shares.create(owner(user.id), shared.id, {});
  const { archive } = await exportToMemory(services);

  await using dest = await openServices({ dataDir: path.join(dir, "dest"), maxUploadBytes: 1 << 30 });
  const theirs = await dest.files.create(owner((await dest.users.findOrCreateByEmail("z@example.com")).id), {
    slug: "",
    name: "not shared",
    visibility: "private",
    contentType: "text/plain",
    content: once(new Uint8Array([9])),
  });
  // Only the share's file_id points at the destination's file: the refusal comes before the trailer's CRC32C is checked.
  const shareAt = archive.indexOf('"type":"share"');
  const pointed = Buffer.concat([archive.subarray(0, shareAt), replaced(archive.subarray(shareAt), `"file_id":"${shared.id}"`, `"file_id":"${theirs.id}"`)]);
  await expect(importArchive(dest, once(pointed))).rejects.toThrow(
    `refusing to import: file ${theirs.id}, which archived share link `,
  );
  const users: string[] = [];
  for await (const u of dest.store.users.all()) users.push(u.email);
  const shares: unknown[] = [];
  for await (const s of dest.store.shares.all()) shares.push(s);
  expect({ users, shares }).toEqual({ users: ["z@example.com"], shares: [] });
});

test("an archive of version 2 (before users' state, links and shares) imports, what it lacks at the defaults", async () => {
  const content = Buffer.from("hello");
  const lines = [
    "cubby-archive 2\n",
    '{"type":"user","id":"u1","email":"old@example.com","issuer":null,"subject":null,"created_at":1795435224342012}\n',
    '{"type":"key","id":"k1","user_id":"u1","name":"laptop","secret_hash":"b7U8POqzzNR+3kSvlIHxhfxQXnXgHDC9WsAkJ444Nq4=","created_at":1795435224345469,"last_used_at":null,"scopes":"files.read","expires_at":null}\n',
    `{"type":"file","id":"RF679M44sfS9U7UzN8EbB","owner_id":"u1","slug":"","name":"hello.txt","content_type":"text/plain","visibility":"private","size":5,"checksum":"${checksumOf(content)}","created_at":1795435225962009,"updated_at":1795435225962009,"expires_at":1895435225962009}\n`,
  ];
  const body = Buffer.concat([...lines.map((l) => Buffer.from(l)), content, Buffer.from("\n")]);
  const archive = Buffer.concat([body, Buffer.from(`{"type":"end","users":1,"keys":1,"sessions":0,"files":1,"bytes":5,"crc32c":"${checksumOf(body)}"}\n`)]);

  await using dest = await openServices({ dataDir: path.join(dir, "dest"), maxUploadBytes: 1 << 30 });
  expect(await importArchive(dest, once(archive))).toEqual({ users: 1, keys: 1, sessions: 0, uploadLinks: 0, files: 1, shares: 0, bytes: 5, folders: 0, davProperties: 0 });
  const { blob: _, ...file } = (await dest.store.files.get("RF679M44sfS9U7UzN8EbB"))!;
  expect({ account: await dest.store.users.account("u1"), key: (await dest.store.keys.byId("k1"))?.scopes, file }).toEqual({
    account: { id: "u1", email: "old@example.com", issuer: null, subject: null, createdAt: 1795435224342012, quotaBytes: null, disabledAt: null, lastSeenAt: null, displayName: null, showEmailOnShares: false, admin: false },
    key: "files.read",
    file: {
      id: "RF679M44sfS9U7UzN8EbB",
      ownerId: "u1",
      slug: "",
      name: "hello.txt",
      contentType: "text/plain",
      visibility: "private",
      size: 5,
      checksum: checksumOf(content),
      createdAt: 1795435225962009,
      updatedAt: 1795435225962009,
      expiresAt: 1895435225962009,
      uploadLinkId: null,
    },
  });
});

test("folders: a parent is written before its child whatever their ID order, a file after its folder; import restores the tree and which folder each file is in", async () => {
  const a = await upload("f@example.com", new Uint8Array([1]), "in-child.txt");
  const b = await upload("f@example.com", new Uint8Array([2, 3]), "in-parent.txt");
  const c = await upload("f@example.com", new Uint8Array([4]), "at-top.txt");
  const owner = a.ownerId;
  // The child's ID sorts before its parent's: the store lists it first.
  const parent = { id: "ZZZZZZZZZZZZZZZZZZZZZ", ownerId: owner, parentId: null, name: "Parent", createdAt: 1, updatedAt: 2 };
  const child = { id: "AAAAAAAAAAAAAAAAAAAAA", ownerId: owner, parentId: parent.id, name: "Child", createdAt: 3, updatedAt: 4 };
  await services.store.transaction(async (tx) => {
    await tx.folders.insert(parent);
    await tx.folders.insert(child);
    await tx.folders.setFolder(a.id, child.id);
    await tx.folders.setFolder(b.id, parent.id);
  });
  const { report, archive } = await exportToMemory(services);
  expect(report).toMatchObject({ files: 3, folders: 2 });
  const types = archive
    .toString("latin1")
    .split("\n")
    .filter((l) => l.startsWith('{"type":"folder"') || l.startsWith('{"type":"file"'))
    .map((l) => JSON.parse(l) as { type: string; id: string; folder_id?: string | null });
  expect(types.findIndex((r) => r.id === parent.id)).toBeLessThan(types.findIndex((r) => r.id === child.id));
  expect(types.filter((r) => r.type === "file").map((r) => [r.id, r.folder_id])).toEqual(
    expect.arrayContaining([
      [a.id, child.id],
      [b.id, parent.id],
      [c.id, null],
    ]),
  );

  await using dest = await openServices({ dataDir: path.join(dir, "dest"), maxUploadBytes: 1 << 30 });
  expect(await importArchive(dest, once(archive))).toMatchObject({ files: 3, folders: 2 });
  const folders: unknown[] = [];
  for await (const f of dest.store.folders.all()) folders.push(f);
  expect(folders).toEqual([child, parent]);
  expect({ a: await dest.store.folders.folderOf(a.id), b: await dest.store.folders.folderOf(b.id), c: await dest.store.folders.folderOf(c.id) }).toEqual({
    a: child.id,
    b: parent.id,
    c: undefined,
  });
});

/** A version 4 archive of one user and `records` (JSON lines; a file's content is "x"), with its trailer. */
function v4Archive(records: Record<string, unknown>[]): Buffer {
  const parts: Buffer[] = [Buffer.from('cubby-archive 4\n{"type":"user","id":"u1","email":"a@example.com","issuer":null,"subject":null,"created_at":1,"quota_bytes":null,"disabled_at":null,"last_seen_at":null}\n')];
  parts.push(Buffer.from('{"type":"user","id":"u2","email":"b@example.com","issuer":null,"subject":null,"created_at":1,"quota_bytes":null,"disabled_at":null,"last_seen_at":null}\n'));
  let files = 0;
  let folders = 0;
  for (const r of records) {
    parts.push(Buffer.from(`${JSON.stringify(r)}\n`));
    if (r.type === "file") {
      parts.push(Buffer.from("x\n"));
      files++;
    } else folders++;
  }
  const body = Buffer.concat(parts);
  const trailer = { type: "end", users: 2, keys: 0, sessions: 0, upload_links: 0, files, shares: 0, bytes: files, folders, crc32c: checksumOf(body) };
  return Buffer.concat([body, Buffer.from(`${JSON.stringify(trailer)}\n`)]);
}

const folderRecord = (id: string, name: string, parentId: string | null = null, ownerId = "u1") => ({ type: "folder", id, owner_id: ownerId, parent_id: parentId, name, created_at: 1, updated_at: 1 });
const fileRecord = (id: string, name: string, folderId: string | null) => ({
  type: "file",
  id,
  owner_id: "u1",
  slug: "",
  name,
  content_type: "text/plain",
  visibility: "private",
  size: 1,
  checksum: checksumOf("x"),
  created_at: 1,
  updated_at: 1,
  expires_at: null,
  upload_link_id: null,
  folder_id: folderId,
});

test.each([
  ["a file in a folder no earlier record defines", [fileRecord("f".repeat(21), "a.txt", "F".repeat(21))], /file f+ is in folder F+, which no earlier record defines/],
  ["a folder before its parent", [folderRecord("C".repeat(21), "child", "P".repeat(21)), folderRecord("P".repeat(21), "parent")], /folder C+ is in folder P+, which no earlier record defines/],
  ["a folder in another user's folder", [folderRecord("P".repeat(21), "p", null, "u2"), folderRecord("C".repeat(21), "c", "P".repeat(21))], /folder C+ is in folder P+ of another user/],
  ["two top folders of one name", [folderRecord("P".repeat(21), "same"), folderRecord("Q".repeat(21), "same")], /folder Q+: its folder holds its name already/],
  ["a file and a sub-folder of one name in one folder", [folderRecord("P".repeat(21), "p"), folderRecord("C".repeat(21), "n.txt", "P".repeat(21)), fileRecord("f".repeat(21), "n.txt", "P".repeat(21))], /file f+: its folder holds its name already/],
] as const)("import refuses %s, and changes nothing", async (_, records, message) => {
  await using dest = await openServices({ dataDir: path.join(dir, "dest"), maxUploadBytes: 1 << 30 });
  await expect(importArchive(dest, once(v4Archive([...records])))).rejects.toThrow(message);
  const users: unknown[] = [];
  for await (const u of dest.store.users.all()) users.push(u);
  const blobs: unknown[] = [];
  for await (const b of dest.blobs.list()) blobs.push(b);
  expect({ users, blobs }).toEqual({ users: [], blobs: [] });
});

test("a version 4 archive whose top files share a name, and whose unnamed files share a folder, imports", async () => {
  const archive = v4Archive([
    folderRecord("P".repeat(21), "p"),
    fileRecord("a".repeat(21), "same.txt", null),
    fileRecord("b".repeat(21), "same.txt", null),
    fileRecord("c".repeat(21), "", "P".repeat(21)),
    fileRecord("d".repeat(21), "", "P".repeat(21)),
  ]);
  await using dest = await openServices({ dataDir: path.join(dir, "dest"), maxUploadBytes: 1 << 30 });
  expect(await importArchive(dest, once(archive))).toMatchObject({ files: 4, folders: 1 });
  expect(await dest.store.folders.folderOf("d".repeat(21))).toBe("P".repeat(21));
});
