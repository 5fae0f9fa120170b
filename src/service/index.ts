/**
 * Opens the store (database + blobs) and builds the services over it: what `serve` and the
 * CLI commands share.
 */
import fs from "node:fs";
import path from "node:path";
import { ChangeWatch } from "../storage/change-watch.ts";
import { systemClock, type Clock } from "../domain/time.ts";
import { BlobStore } from "../storage/blobs.ts";
import { openDb, type Db } from "../storage/db.ts";
import { migrate } from "../storage/migrate.ts";
import { describeTightened, PRIVATE_DIR_MODE, tightenDataDir } from "../storage/permissions.ts";
import { FileService } from "./files.ts";
import { KeyService } from "./keys.ts";
import { SessionService } from "./sessions.ts";
import { UserService } from "./users.ts";

export interface Services {
  db: Db;
  blobs: BlobStore;
  clock: Clock;
  files: FileService;
  keys: KeyService;
  users: UserService;
  sessions: SessionService;
  /** Flushes delayed blob removals and closes the database. */
  close(): Promise<void>;
}

/**
 * Creates DATA_DIR if needed (0700), takes group and other access away from what an earlier
 * version left there (one line on stderr when it changed anything: stdout may be a key), opens
 * the database, applies pending migrations (idempotent) and wires the services.
 */
export function openServices(opts: { dataDir: string; maxUploadBytes: number; clock?: Clock }): Services {
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  // Before openDb: SQLite gives a new -wal / -shm the database file's mode.
  const tightened = tightenDataDir(opts.dataDir);
  if (tightened.length > 0) console.error(`tightened to owner-only access in ${opts.dataDir}: ${describeTightened(tightened)}`);
  const db = openDb(opts.dataDir);
  migrate(db);
  const blobs = new BlobStore(opts.dataDir);
  const clock = opts.clock ?? systemClock();
  const changes = new ChangeWatch(path.join(opts.dataDir, "cubby.db-shm"));
  return {
    db,
    blobs,
    clock,
    files: new FileService({ db, blobs, clock, maxUploadBytes: opts.maxUploadBytes, changes }),
    keys: new KeyService({ db, clock, changes }),
    users: new UserService({ db, clock }),
    sessions: new SessionService({ db, clock }),
    async close() {
      await blobs.flushRemovals();
      changes.close();
      db.$client.close();
    },
  };
}
