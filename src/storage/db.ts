/**
 * The SQLite database (bun:sqlite through drizzle-orm): one file, DATA_DIR/cubby.db, in WAL mode
 * with synchronous=FULL so that a committed transaction survives power loss.
 */
import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import fs from "node:fs";
import path from "node:path";
import { PRIVATE_FILE_MODE } from "./permissions.ts";
import * as schema from "./schema.ts";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

/**
 * Runs a write on the write connection: queued behind the open transaction by the store's own
 * tables, at once by the tables a transaction hands in (sqlite-metadata.ts).
 */
export type WriteRunner = <T>(write: (db: Db) => T) => Promise<T>;

/** Milliseconds a statement waits for another connection's write lock before SQLITE_BUSY (→ 503). */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * Opens (creating if needed, mode 0600) the SQLite database `file` in WAL mode, waiting up to
 * {@link BUSY_TIMEOUT_MS} for other connections' locks: what every database of cubby's needs
 * (cubby.db here, rate-limits.db in storage/rate-limits.ts).
 * @param synchronous `FULL` where a commit must survive power loss, `NORMAL` where losing the
 *   last commits costs nothing (SQLite's `PRAGMA synchronous`)
 */
export function openSqliteFile(file: string, synchronous: "FULL" | "NORMAL"): Database {
  // SQLite would create it 0644 less the umask; it then creates -wal and -shm with this file's
  // mode, so creating it 0600 here makes all three owner-only whatever the umask.
  fs.closeSync(fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_CREAT, PRIVATE_FILE_MODE));
  const client = new Database(file, { create: true, strict: true });
  client.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  client.exec("PRAGMA journal_mode = WAL");
  client.exec(`PRAGMA synchronous = ${synchronous}`);
  return client;
}

/**
 * `PRAGMA synchronous` of cubby.db's connections: every commit survives a power cut. The webhook
 * deliverer's own commits lower it for themselves and put this back (sqlite-webhooks.ts).
 */
export const METADATA_SYNCHRONOUS = "FULL";

/**
 * Opens (creating if needed, mode 0600) the database in `dataDir` and sets the pragmas every
 * connection needs. Does not migrate: see {@link migrate}.
 */
export function openDb(dataDir: string): Db {
  const client = openSqliteFile(path.join(dataDir, "cubby.db"), METADATA_SYNCHRONOUS);
  client.exec("PRAGMA foreign_keys = ON");
  return drizzle({ client, schema }) as Db;
}
