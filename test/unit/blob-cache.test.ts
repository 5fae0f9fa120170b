// The small-blob cache of the disk blob store: bounded, exact, and never serving a removed blob.
import { expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SMALL_BLOB_BYTES } from "../../src/storage/blob-memory.ts";
import { DiskBlobStore } from "../../src/storage/disk-blobs.ts";

function store(): { blobs: DiskBlobStore; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-cache-"));
  return { blobs: new DiskBlobStore(dir), dir };
}

async function put(blobs: DiskBlobStore, bytes: Uint8Array) {
  return await blobs.write(
    (async function* () {
      yield bytes;
    })(),
    { maxBytes: 1 << 30 },
  );
}

test("small blobs read back exactly; larger ones and wrong sizes are not cached", async () => {
  const { blobs, dir } = store();
  const bytes = crypto.getRandomValues(new Uint8Array(1000));
  const staged = await put(blobs, bytes);
  expect(Buffer.compare(Buffer.from(blobs.cached(staged.name, 1000)!), Buffer.from(bytes))).toBe(0);
  // Served from memory now: the bytes stay the same object.
  expect(blobs.cached(staged.name, 1000)).toBe(blobs.cached(staged.name, 1000)!);
  expect(blobs.cached(staged.name, 999)).toBeUndefined(); // metadata and file disagree: serve from disk
  const big = await put(blobs, new Uint8Array(SMALL_BLOB_BYTES + 1));
  expect(blobs.cached(big.name, SMALL_BLOB_BYTES + 1)).toBeUndefined();
  const other = await put(blobs, new Uint8Array(10));
  expect(blobs.cached(other.name, 11)).toBeUndefined(); // metadata and file disagree: serve from disk
  expect(blobs.cached("missing", 10)).toBeUndefined();
  fs.rmSync(dir, { recursive: true });
});

test("a removed blob leaves the cache", async () => {
  const { blobs, dir } = store();
  const staged = await put(blobs, new Uint8Array([1, 2, 3]));
  expect(blobs.cached(staged.name, 3)).toBeDefined();
  await blobs.remove(staged.name);
  expect(blobs.cached(staged.name, 3)).toBeUndefined();
  fs.rmSync(dir, { recursive: true });
});

test("the cache holds at most 32 MiB, dropping the least recently used", async () => {
  const { blobs, dir } = store();
  const names: string[] = [];
  for (let i = 0; i < 600; i++) names.push((await put(blobs, new Uint8Array(SMALL_BLOB_BYTES).fill(i % 251))).name);
  const first = blobs.cached(names[0]!, SMALL_BLOB_BYTES);
  for (const n of names.slice(1)) blobs.cached(n, SMALL_BLOB_BYTES);
  // 600 × 64 KiB = 37.5 MiB was read: the first (least recently used) is gone, re-read from disk.
  expect(blobs.cached(names[0]!, SMALL_BLOB_BYTES)).not.toBe(first);
  expect(blobs.cached(names.at(-1)!, SMALL_BLOB_BYTES)).toBe(blobs.cached(names.at(-1)!, SMALL_BLOB_BYTES));
  expect((blobs as unknown as { small: { bytes: number } }).small.bytes).toBeLessThanOrEqual(32 * 1024 * 1024);
  fs.rmSync(dir, { recursive: true });
});
