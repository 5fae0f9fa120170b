/**
 * Knowing, without a query, whether the database may have changed: the WAL-index header.
 *
 * In WAL mode every connection, in any process, that commits rewrites the header at the start of
 * the `-shm` file (SQLite's WAL-index format, https://www.sqlite.org/walformat.html §2.1: a change
 * counter incremented with each transaction, the last valid frame, the cumulative frame checksum,
 * the salts renewed on every WAL restart, and a checksum of the header). A header that reads the
 * same bytes as before means no transaction has committed in between. Reading 48 bytes with one
 * `pread` costs about 0.5 µs; a lookup through SQLite costs several times that under load (read
 * lock, statement, row), which is what this lets read paths skip (docs/benchmarks.md).
 *
 * `PRAGMA data_version` answers the same question but is itself a statement with the same read
 * lock, so it saves little over the lookup it would guard.
 *
 * Not mapped into memory, though SQLite itself maps `-shm` and a mapped header would cost no
 * system call: `Bun.mmap` opens the file and closes it again, and closing any descriptor of a
 * file drops every POSIX lock the process holds on it (fcntl(2)). SQLite's lock on `-shm` went
 * with it; the next process to close the database, believing itself the last user, deleted
 * `-shm` and `-wal` under the server, whose mapping then watched a deleted file and never saw
 * a commit again (issue 16; test/integration/authz.test.ts caught it). The descriptor opened
 * here stays open until {@link ChangeWatch.close}, once the database's connections have closed.
 *
 * The header is read at most once in the synchronous part of a task of the event loop (a
 * socket's read, a timer, an I/O completion; the microtasks that follow it read afresh): every
 * request served in a task arrived before the task began, so a header read during it shows every
 * commit that had finished before any of those requests was sent. Bun runs the microtasks after
 * every callback, also between the reads of several sockets ready at once. An h2c read carrying
 * 16 requests costs one `pread` instead of 16. A write of this process's own also makes the next
 * call read the header ({@link ChangeWatch.wrote}).
 */
import fs from "node:fs";

/** Bytes of the first copy of the WAL-index header. */
const HEADER_BYTES = 48;

/** Watches one database's WAL-index header; see {@link ChangeWatch.version}. */
export class ChangeWatch {
  private fd: number | undefined;
  private readonly seen = Buffer.alloc(HEADER_BYTES);
  private readonly scratch = Buffer.alloc(HEADER_BYTES);
  private current = 0;
  /** The version read in the synchronous part of this task of the event loop, or -1 (see the module comment). */
  private thisTask = -1;
  private readonly endTask = () => {
    this.thisTask = -1;
  };

  /** @param shmPath the database's `-shm` file (`cubby.db-shm`) */
  constructor(private readonly shmPath: string) {}

  /**
   * A number that stays the same for as long as no transaction commits, and changes (never back
   * to an earlier value) once one has. A value read before a lookup can be kept with the lookup's
   * result: the result stays true while `version()` returns that value. When the header cannot be
   * read (no `-shm`: not in WAL mode) every call returns a new value, so nothing is ever reused.
   */
  version(): number {
    if (this.thisTask >= 0) return this.thisTask;
    if (this.fd === undefined) {
      try {
        this.fd = fs.openSync(this.shmPath, "r");
      } catch {
        return ++this.current;
      }
    }
    let read = 0;
    try {
      read = fs.readSync(this.fd, this.scratch, 0, HEADER_BYTES, 0);
    } catch {
      read = 0;
    }
    if (read !== HEADER_BYTES) return ++this.current;
    if (!this.scratch.equals(this.seen)) {
      this.scratch.copy(this.seen);
      this.current++;
    }
    this.thisTask = this.current;
    queueMicrotask(this.endTask);
    return this.current;
  }

  /** This process wrote to the database (committed or not): the next {@link version} reads the header again. */
  wrote(): void {
    this.thisTask = -1;
  }

  /** Closes the `-shm` descriptor, after the database's connections (see the module comment). */
  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }
}
