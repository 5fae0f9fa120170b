// KeyService.authenticate and AccountStatus.admit (NowOrLater, src/domain/later.ts) on a real
// SQLite store: a rest starts nothing until it is called (the rate limit charges an attempt
// before its check, auth/principal.ts), and once the caches hold the key and its user the
// answer is a value, in the same turn.
import { afterEach, beforeEach, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { isNow, settle } from "../../src/domain/later.ts";
import { systemClock } from "../../src/domain/time.ts";
import { AccountStatus } from "../../src/service/account-status.ts";
import { KeyService } from "../../src/service/keys.ts";
import { openSqliteMetadata, type SqliteMetadataStore } from "../../src/storage/sqlite-metadata.ts";

let dir: string;
let store: SqliteMetadataStore;
let keys: KeyService;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-now-or-later-"));
  store = openSqliteMetadata(dir);
  const clock = systemClock();
  keys = new KeyService({ store, clock, accounts: new AccountStatus({ store, clock }) });
});
afterEach(async () => {
  await store[Symbol.asyncDispose]();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("a key not cached yet: the rest records nothing until it runs; then the key is decided now", async () => {
  await store.users.insert({ id: "u1", email: "u1@example.com", issuer: null, subject: null, createdAt: 1 });
  const minted = await keys.create("u1", "laptop");
  const lastUsed = async () => (await keys.list("u1", 1, undefined)).items[0]!.lastUsedAt;

  const first = keys.authenticate(minted.key);
  expect(isNow(first)).toBe(false);
  expect(await lastUsed()).toBeNull(); // asked, not run: nothing recorded

  const principal = await settle(first);
  expect(principal?.userId).toBe("u1");
  expect(await lastUsed()).not.toBeNull();

  // The writes committed, so the caches load again once (nothing left to record); then a value.
  const reload = keys.authenticate(minted.key);
  expect(isNow(reload)).toBe(false);
  expect(await settle(reload)).toEqual(principal);
  const now = keys.authenticate(minted.key);
  expect(isNow(now) ? now : "a rest").toEqual({ userId: "u1", via: "api_key", scopes: principal!.scopes });
});

test("decided now without a lookup: not key-shaped, or a key the cache knows is unknown", async () => {
  expect(keys.authenticate("not a key")).toBeNull();
  await store.users.insert({ id: "u3", email: "u3@example.com", issuer: null, subject: null, createdAt: 1 });
  const minted = await keys.create("u3", "x");
  await keys.revoke(minted.id);
  const rest = keys.authenticate(minted.key);
  expect(isNow(rest)).toBe(false); // not cached yet
  expect(await settle(rest)).toBeNull();
  expect(keys.authenticate(minted.key)).toBeNull(); // cached as unknown: decided now
});
