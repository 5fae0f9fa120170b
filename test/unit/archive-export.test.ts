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
  expect(report).toEqual({ users: 3, keys: 0, sessions: 0, files: 3, bytes: first.size + 3000 + 2, skippedFiles: 1 });
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
