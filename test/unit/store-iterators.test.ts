// The metadata port's whole-table iterators (export reads through them): every row once, in ID
// order, across page boundaries. On SQLite always; on PostgreSQL too when CUBBY_TEST_DATABASE_URL
// names a database the test may fill and empty.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { connectPostgres } from "../../src/storage/pg-driver.ts";
import { openPgMetadata } from "../../src/storage/pg-metadata.ts";
import type { ApiKeyRow, MetadataStore, SessionRow, UserRow } from "../../src/storage/ports.ts";
import { openSqliteMetadata } from "../../src/storage/sqlite-metadata.ts";

type TestStore = { store: MetadataStore; cleanup(): Promise<void> };

const backends: Record<string, () => Promise<TestStore>> = {
  async sqlite() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-iterators-"));
    const store = openSqliteMetadata(dir);
    return {
      store,
      async cleanup() {
        await store[Symbol.asyncDispose]();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};
const pgUrl = process.env.CUBBY_TEST_DATABASE_URL;
if (pgUrl !== undefined) {
  backends.postgres = async () => {
    const driver = connectPostgres(pgUrl);
    const store = await openPgMetadata(driver);
    const empty = () => driver.db.execute(sql`TRUNCATE files, sessions, api_keys, users`);
    await empty();
    return {
      store,
      async cleanup() {
        await empty();
        await store[Symbol.asyncDispose]();
      },
    };
  };
}

async function collect<T>(rows: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const r of rows) all.push(r);
  return all;
}

/** More than two pages of 1000, inserted out of order. */
const ROWS = 2345;
const ids = Array.from({ length: ROWS }, (_, i) => `id-${String((i * 7919) % ROWS).padStart(5, "0")}`);
const inIdOrder = <T extends { id: string }>(rows: T[]) => [...rows].sort((a, b) => (a.id < b.id ? -1 : 1));
/** Hashes as plain arrays: a Buffer and a Uint8Array with the same bytes compare equal then. */
const plain = <T extends { secretHash: Uint8Array }>(rows: T[]) => rows.map((r) => ({ ...r, secretHash: [...r.secretHash] }));

for (const [backend, open] of Object.entries(backends)) {
  describe(backend, () => {
    let t: TestStore;
    beforeEach(async () => {
      t = await open();
    });
    afterEach(() => t.cleanup());

    test("users, keys and sessions: all() yields every row once, in ID order; keys.byId", async () => {
      const users: UserRow[] = ids.map((id, i) => ({
        id,
        email: `${id}@example.com`,
        issuer: i % 2 ? "https://idp.example.com" : null,
        subject: i % 2 ? id : null,
        createdAt: i,
      }));
      const keys: ApiKeyRow[] = ids.map((id, i) => ({
        id,
        userId: id,
        name: `key ${i}`,
        // Unique (the column is): the first two bytes spell i.
        secretHash: new Uint8Array(32).fill(7).map((b, j) => (j < 2 ? (i >> (8 * j)) & 0xff : b)),
        createdAt: i,
        lastUsedAt: i % 3 ? null : i + 1,
        scopes: i % 2 ? "files.read" : "files.read files.write",
        expiresAt: i % 4 ? null : i + 100,
        s3Secret: i % 5 ? null : `secret ${i}`,
      }));
      const sessions: SessionRow[] = ids.map((id, i) => ({ id, userId: id, secretHash: new Uint8Array(32).fill(i % 256), createdAt: i, expiresAt: i + 10 }));
      await t.store.transaction(async (tx) => {
        for (const u of users) await tx.users.insert(u);
        for (const k of keys) await tx.keys.insert(k);
        for (const s of sessions) await tx.sessions.insert(s);
      });

      expect(await collect(t.store.users.all())).toEqual(inIdOrder(users));
      expect(plain(await collect(t.store.keys.all()))).toEqual(plain(inIdOrder(keys)));
      expect(plain(await collect(t.store.sessions.all()))).toEqual(plain(inIdOrder(sessions)));
      expect(plain([(await t.store.keys.byId(keys[5]!.id))!])).toEqual(plain([keys[5]!]));
      expect(await t.store.keys.byId("nope")).toBeUndefined();
    });

    test("all() on empty tables yields nothing", async () => {
      expect([await collect(t.store.users.all()), await collect(t.store.keys.all()), await collect(t.store.sessions.all())]).toEqual([[], [], []]);
    });
  });
}
