// The WAL-index header as a change signal: a real SQLite file in WAL mode, commits from this
// connection and from another process.
import { Database } from "bun:sqlite";
import { afterEach, beforeEach, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ReadCache } from "../../src/service/read-cache.ts";
import { ChangeWatch } from "../../src/storage/change-watch.ts";

let dir: string;
let db: Database;
let watch: ChangeWatch;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-watch-"));
  db = new Database(path.join(dir, "t.db"), { create: true });
  db.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)");
  db.exec("INSERT INTO t VALUES ('a', 'one')");
  watch = new ChangeWatch(path.join(dir, "t.db-shm"));
});
afterEach(() => {
  watch.close();
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs `sql` on the database from a separate process, as the CLI would. */
function commitFromAnotherProcess(sql: string): void {
  const script = `const { Database } = require("bun:sqlite"); const d = new Database(${JSON.stringify(path.join(dir, "t.db"))}); d.exec(${JSON.stringify(sql)}); d.close();`;
  const r = Bun.spawnSync([process.execPath, "-e", script]);
  expect(r.exitCode).toBe(0);
}

/** Resolves in a later task of the event loop (the header is read at most once per task). */
const nextTask = () => new Promise((resolve) => setImmediate(resolve));

test("the version holds while nothing commits, and moves on every commit, here or elsewhere", async () => {
  const v0 = watch.version();
  db.query("SELECT * FROM t").all();
  await nextTask();
  expect(watch.version()).toBe(v0);
  db.exec("UPDATE t SET v = 'two'");
  await nextTask();
  const v1 = watch.version();
  expect(v1).toBeGreaterThan(v0);
  await nextTask();
  expect(watch.version()).toBe(v1);
  commitFromAnotherProcess("UPDATE t SET v = 'three'");
  await nextTask();
  const v2 = watch.version();
  expect(v2).toBeGreaterThan(v1);
  // A transaction that is rolled back commits nothing.
  db.exec("BEGIN IMMEDIATE; UPDATE t SET v = 'never'; ROLLBACK");
  await nextTask();
  expect(watch.version()).toBe(v2);
});

test("the header is read once per task (until its microtasks run): a commit during it is seen in the next, or at once after a write of this process's", async () => {
  const v0 = watch.version();
  db.exec("UPDATE t SET v = 'elsewhere'"); // another connection's commit (spawnSync would run the microtasks)
  // Requests served in this task arrived before the commit finished: the version they saw holds.
  expect(watch.version()).toBe(v0);
  await nextTask();
  const v1 = watch.version();
  expect(v1).toBeGreaterThan(v0);
  db.exec("UPDATE t SET v = 'here'");
  expect(watch.version()).toBe(v1);
  watch.wrote(); // as the store does after each of its writes
  expect(watch.version()).toBeGreaterThan(v1);
});

test("ReadCache serves a value until a commit, then reads it again", async () => {
  const cache = new ReadCache<string | null>(watch, 10);
  let loads = 0;
  // Each read is a request of its own task.
  const read = async () => {
    await nextTask();
    return cache.get("a", async () => (loads++, (db.query("SELECT v FROM t WHERE k = 'a'").get() as { v: string } | null)?.v ?? null));
  };
  expect([await read(), await read(), loads]).toEqual(["one", "one", 1]);
  commitFromAnotherProcess("DELETE FROM t WHERE k = 'a'");
  expect([await read(), loads]).toEqual([null, 2]);
  expect([await read(), loads]).toEqual([null, 2]);
  db.exec("INSERT INTO t VALUES ('a', 'back')");
  expect([await read(), loads]).toEqual(["back", 3]);
});

test("ReadCache keeps at most its capacity, dropping the oldest", async () => {
  const cache = new ReadCache<string>(watch, 2);
  const loaded: string[] = [];
  const read = (k: string) => cache.get(k, async () => (loaded.push(k), k.toUpperCase()));
  await read("x");
  await read("y");
  await read("z");
  await read("y");
  await read("x");
  expect(loaded).toEqual(["x", "y", "z", "x"]);
});

test("without a -shm file (not WAL mode) nothing is ever reused", async () => {
  const none = new ChangeWatch(path.join(dir, "missing-shm"));
  const cache = new ReadCache<number>(none, 10);
  let loads = 0;
  await cache.get("k", async () => ++loads);
  await cache.get("k", async () => ++loads);
  expect(loads).toBe(2);
});
