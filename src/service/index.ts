/**
 * Opens the stores and builds the services over them: what `serve` and the CLI commands share.
 * Today the stores are SQLite and the local disk in DATA_DIR (the two ports are in
 * storage/ports.ts).
 */
import fs from "node:fs";
import { systemClock, type Clock } from "../domain/time.ts";
import { DiskBlobStore } from "../storage/disk-blobs.ts";
import { describeTightened, PRIVATE_DIR_MODE, tightenDataDir } from "../storage/permissions.ts";
import { openSqliteMetadata, type SqliteMetadataStore } from "../storage/sqlite-metadata.ts";
import { FileService } from "./files.ts";
import { KeyService } from "./keys.ts";
import { SessionService } from "./sessions.ts";
import { UserService } from "./users.ts";

/** The services and the stores under them; disposing flushes delayed blob removals and closes the stores. */
export interface Services extends AsyncDisposable {
  store: SqliteMetadataStore;
  blobs: DiskBlobStore;
  clock: Clock;
  files: FileService;
  keys: KeyService;
  users: UserService;
  sessions: SessionService;
}

/**
 * Creates DATA_DIR if needed (0700), takes group and other access away from what an earlier
 * version left there (one line on stderr when it changed anything: stdout may be a key), opens
 * the database, applies pending migrations (idempotent) and wires the services. Use with
 * `await using`.
 */
export function openServices(opts: { dataDir: string; maxUploadBytes: number; clock?: Clock }): Services {
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  // Before the database opens: SQLite gives a new -wal / -shm the database file's mode.
  const tightened = tightenDataDir(opts.dataDir);
  if (tightened.length > 0) console.error(`tightened to owner-only access in ${opts.dataDir}: ${describeTightened(tightened)}`);
  const store = openSqliteMetadata(opts.dataDir);
  const blobs = new DiskBlobStore(opts.dataDir);
  const clock = opts.clock ?? systemClock();
  return {
    store,
    blobs,
    clock,
    files: new FileService({ store, blobs, clock, maxUploadBytes: opts.maxUploadBytes }),
    keys: new KeyService({ store, clock }),
    users: new UserService({ store, clock }),
    sessions: new SessionService({ store, clock }),
    async [Symbol.asyncDispose]() {
      await blobs[Symbol.asyncDispose]();
      await store[Symbol.asyncDispose]();
    },
  };
}
