/**
 * One writer at a time per resumable upload, across every process and instance (CONTRACT §10:
 * "a tus upload has one writer at a time, and a PATCH answered 204 is stored with exactly its
 * bytes"). A lock that can be taken over while its writer still runs is no lock: issue 25 found
 * two PATCHes on two workers both writing one upload, because the old lock file was created
 * empty and its owner written after, so a second worker took it for stale and removed it.
 *
 * Both implementations hold a lock that only the holder's release or the holder's death ends,
 * never a timeout or another process's judgement:
 * - {@link FileLocks} (one machine: SQLite, with WORKERS > 1): `flock(2)` on
 *   DATA_DIR/uploads/{id}.lock. The kernel drops the lock when the holder's descriptor closes,
 *   also when the process is killed, so there is nothing stale to take over.
 * - {@link PgAdvisoryLocks} (PostgreSQL, several instances): a session-level advisory lock
 *   (`pg_try_advisory_lock`) on one connection of its own per process. PostgreSQL drops it when
 *   that session ends; a writer learns that it lost it with {@link UploadLock.held} (its session
 *   is gone or is another one), which the upload service asks right before it commits.
 */
import { dlopen, FFIType } from "bun:ffi";
import fs from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./permissions.ts";

/** A held upload lock. */
export interface UploadLock {
  /** Whether the lock is still this process's: false once it was lost (PostgreSQL session gone). */
  held(): Promise<boolean>;
  /** Gives it up. Never throws. */
  release(): Promise<void>;
}

/** Upload locks: taken without waiting. */
export interface UploadLocks {
  /** The lock of upload `id`, or undefined when another holder has it. */
  tryLock(id: string): Promise<UploadLock | undefined>;
  /** Closes what the locks opened (held locks are released). */
  close(): Promise<void>;
}

/** Upload IDs as the service makes them; anything else never reaches a path or a lock. */
const UPLOAD_ID = /^[A-Za-z0-9_-]{1,64}$/;

function checkId(id: string): void {
  if (!UPLOAD_ID.test(id)) throw new Error(`not an upload ID: ${JSON.stringify(id)}`);
}

// --- flock(2) ---

const LOCK_EX = 2;
const LOCK_NB = 4;

/** libc's flock, loaded on first use (bun:ffi; no file is written for it). */
let flockFn: ((fd: number, operation: number) => number) | undefined;

function flock(fd: number, operation: number): number {
  if (flockFn === undefined) {
    const names = process.platform === "darwin" ? ["libSystem.B.dylib"] : ["libc.so.6", `libc.musl-${process.arch === "arm64" ? "aarch64" : "x86_64"}.so.1`];
    let lastError: unknown;
    for (const name of names) {
      try {
        flockFn = dlopen(name, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } }).symbols.flock;
        break;
      } catch (err) {
        lastError = err;
      }
    }
    if (flockFn === undefined) throw new Error(`cannot lock uploads across processes: no flock in ${names.join(", ")}: ${lastError}`);
  }
  return flockFn(fd, operation);
}

/**
 * {@link UploadLocks} as `flock(2)` on DATA_DIR/uploads/{id}.lock (see the module comment). The
 * file is removed by the holder before it lets go; a taker that locked a file removed meanwhile
 * (its inode is no longer the path's) tries again, so two holders never hold two files of one
 * path. The holder's PID is written into the file for people looking at the directory.
 */
export class FileLocks implements UploadLocks {
  constructor(private readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  }

  async tryLock(id: string): Promise<UploadLock | undefined> {
    checkId(id);
    const file = path.join(this.dir, `${id}.lock`);
    for (;;) {
      const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, PRIVATE_FILE_MODE);
      if (flock(fd, LOCK_EX | LOCK_NB) !== 0) {
        fs.closeSync(fd);
        return undefined;
      }
      const current = fs.statSync(file, { throwIfNoEntry: false });
      if (current === undefined || current.ino !== fs.fstatSync(fd).ino) {
        // Its holder removed it between our open and our lock: lock the path's file instead.
        fs.closeSync(fd);
        continue;
      }
      fs.ftruncateSync(fd, 0);
      fs.writeSync(fd, String(process.pid), 0);
      let released = false;
      return {
        held: async () => !released,
        release: async () => {
          if (released) return;
          released = true;
          try {
            fs.rmSync(file, { force: true });
          } catch {
            // The lock ends with the descriptor all the same; the file is only a name.
          }
          fs.closeSync(fd);
        },
      };
    }
  }

  async close(): Promise<void> {}
}

// --- PostgreSQL advisory locks ---

/** The first key of every upload lock (`pg_try_advisory_lock(int, int)`): "cubu". */
const LOCK_CLASS = 0x63756275;

/** An upload ID's second key: FNV-1a, 32 bits, signed (an int4). Two IDs that share one only wait for each other. */
function lockKey(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** {@link UploadLocks} as PostgreSQL session-level advisory locks on one connection of this process's own. */
export class PgAdvisoryLocks implements UploadLocks {
  private readonly sql: postgres.Sql;
  /** Keys this process holds (two IDs may share a key; PostgreSQL would grant it to this session twice). */
  private readonly held = new Set<number>();

  constructor(url: string) {
    // One connection: the session that holds the locks. Not the metadata store's pool, whose
    // connections any query may take.
    this.sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  }

  async tryLock(id: string): Promise<UploadLock | undefined> {
    checkId(id);
    const key = lockKey(id);
    if (this.held.has(key)) return undefined;
    this.held.add(key);
    let session: number;
    try {
      const [row] = await this.sql<{ locked: boolean; pid: number }[]>`SELECT pg_try_advisory_lock(${LOCK_CLASS}::int, ${key}::int) AS locked, pg_backend_pid() AS pid`;
      if (row?.locked !== true) {
        this.held.delete(key);
        return undefined;
      }
      session = row.pid;
    } catch (err) {
      this.held.delete(key);
      throw err;
    }
    let released = false;
    return {
      held: async () => {
        if (released) return false;
        const [row] = await this.sql<{ held: boolean }[]>`
          SELECT pg_backend_pid() = ${session}::int AND EXISTS (
            SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = ${session}::int
              AND classid = ${LOCK_CLASS >>> 0}::bigint::oid AND objid = ${key >>> 0}::bigint::oid AND objsubid = 2 AND granted
          ) AS held`;
        return row?.held === true;
      },
      release: async () => {
        if (released) return;
        released = true;
        this.held.delete(key);
        // A session that ended has let go already; a new one holds nothing to unlock.
        await this.sql`SELECT pg_advisory_unlock(${LOCK_CLASS}::int, ${key}::int) WHERE pg_backend_pid() = ${session}::int`.catch(() => {});
      },
    };
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 5 });
  }
}
