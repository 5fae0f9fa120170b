// The two storage ports' first implementations on real files: SQLite transactions are isolated
// from reads and from each other, and the disk blob reader keeps to its buffer plan and stops
// when told to.
import { afterEach, beforeEach, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { DiskBlobStore } from "../../src/storage/disk-blobs.ts";
import { openSqliteMetadata, type SqliteMetadataStore } from "../../src/storage/sqlite-metadata.ts";
import type { UserRow } from "../../src/storage/ports.ts";

let dir: string;
let store: SqliteMetadataStore;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-stores-"));
  store = openSqliteMetadata(dir);
});
afterEach(async () => {
  await store[Symbol.asyncDispose]();
  fs.rmSync(dir, { recursive: true, force: true });
});

const user = (id: string): UserRow => ({ id, email: `${id}@example.com`, issuer: null, subject: null, createdAt: 1 });

test("a transaction that throws leaves nothing", async () => {
  await expect(
    store.transaction(async (tx) => {
      await tx.users.insert(user("u1"));
      expect(await tx.users.byId("u1")).toBeDefined(); // it sees its own write
      throw new Error("changed my mind");
    }),
  ).rejects.toThrow("changed my mind");
  expect(await store.users.byId("u1")).toBeUndefined();
});

test("reads do not see a transaction paused at an await; writes wait for it", async () => {
  let resume!: () => void;
  const paused = new Promise<void>((r) => (resume = r));
  const tx = store.transaction(async (t) => {
    await t.users.insert(user("u1"));
    await paused;
  });
  await Bun.sleep(10);
  expect(await store.users.byId("u1")).toBeUndefined();
  const order: string[] = [];
  const write = store.users.insert(user("u2")).then(() => order.push("outside write"));
  await Bun.sleep(10);
  order.push("before commit");
  resume();
  await Promise.all([tx, write]);
  expect(order).toEqual(["before commit", "outside write"]);
  expect((await store.users.byId("u1"))?.email).toBe("u1@example.com");
  expect((await store.users.byId("u2"))?.email).toBe("u2@example.com");
});

test("version() moves on every commit and only then", async () => {
  const v0 = store.version();
  expect(store.version()).toBe(v0);
  await store.users.insert(user("u1"));
  const v1 = store.version();
  expect(v1).not.toBe(v0);
  await store.transaction(async (t) => {
    await t.users.insert(user("u2"));
    throw new Error("rolled back");
  }).catch(() => {});
  expect(store.version()).toBe(v1);
});

async function* once(bytes: Uint8Array) {
  yield bytes;
}

test("a blob read keeps to its plan: exact bytes, at most `buffers` chunks unreleased", async () => {
  const blobs = new DiskBlobStore(dir);
  const bytes = crypto.getRandomValues(new Uint8Array(10_000));
  const staged = await blobs.write(once(bytes), { maxBytes: 1 << 20 });
  const held: { release(): void }[] = [];
  const got: Uint8Array[] = [];
  const it = blobs.read(staged.name, { start: 123, length: 5000 }, { chunkBytes: 1024, buffers: 2 })[Symbol.asyncIterator]();
  for (let i = 0; i < 2; i++) {
    const r = await it.next();
    got.push(Buffer.from(r.value!.bytes));
    held.push(r.value!);
  }
  // Both buffers are out: the third chunk waits until one is released.
  let third = false;
  const next = it.next().then((r) => ((third = true), r));
  await Bun.sleep(20);
  expect(third).toBe(false);
  held.shift()!.release();
  const r3 = await next;
  got.push(Buffer.from(r3.value!.bytes));
  r3.value!.release();
  held.shift()!.release();
  for (let r = await it.next(); !r.done; r = await it.next()) {
    got.push(Buffer.from(r.value.bytes));
    r.value.release();
  }
  expect(Buffer.compare(Buffer.concat(got), Buffer.from(bytes.subarray(123, 5123)))).toBe(0);
});

test("an aborted read stops while waiting for a buffer and closes the blob", async () => {
  const blobs = new DiskBlobStore(dir);
  const staged = await blobs.write(once(new Uint8Array(8192)), { maxBytes: 1 << 20 });
  const fds = () => fs.readdirSync("/proc/self/fd").length;
  const before = fds();
  const abort = new AbortController();
  const it = blobs.read(staged.name, { start: 0, length: 8192 }, { chunkBytes: 1024, buffers: 1, signal: abort.signal })[Symbol.asyncIterator]();
  await it.next(); // never released, as when a write callback never comes
  expect(fds()).toBe(before + 1);
  const waiting = it.next();
  abort.abort();
  expect((await waiting).done).toBe(true);
  expect(fds()).toBe(before);
});

test("verify reports size and CRC32C, or undefined for a missing blob", async () => {
  const blobs = new DiskBlobStore(dir);
  const staged = await blobs.write(once(new TextEncoder().encode("hello")), { maxBytes: 1 << 20 });
  expect(await blobs.verify(staged.name)).toEqual({ size: 5, checksum: staged.checksum });
  expect(await blobs.verify("missing")).toBeUndefined();
});
