/**
 * SQLite's WAL checkpoints on a thread of their own, for the serving processes (CONTRACT §14).
 *
 * In WAL mode a commit appends pages to `cubby.db-wal`; a checkpoint copies them back into
 * `cubby.db` and fsyncs it (https://www.sqlite.org/wal.html#ckpt). By default the connection
 * whose commit takes the WAL past 1 000 pages runs that checkpoint itself, inside its COMMIT:
 * in a serving process, on the event loop. After a recursive delete of 10 000 entries that
 * COMMIT took 94–120 ms, of which 80–100 were the checkpoint (16–36 ms without it), and every
 * request of the process waited. So a serving process turns the automatic checkpoint off on its
 * connections (`PRAGMA wal_autocheckpoint = 0`) and this thread, with its own connection, runs
 * `PRAGMA wal_checkpoint(PASSIVE)` every {@link CHECKPOINT_EVERY_MS}: PASSIVE waits for no
 * reader or writer (a checkpoint another process runs makes this one a no-op), so the WAL stays
 * as short as the automatic checkpoint kept it, and its copying and fsync happen off the event
 * loop. On close, one last checkpoint.
 *
 * The thread runs from a Blob URL, so the compiled binary (one file) carries it as it carries
 * the rest of the code; it shares the process's SQLite (its locks and open-file bookkeeping).
 */

/** How often the thread checkpoints, ms. */
export const CHECKPOINT_EVERY_MS = 1000;

/** The thread's code: a connection to the database it is told of, checkpointing on a timer. */
const THREAD_SOURCE = `
import { Database } from "bun:sqlite";
let db;
let timer;
const checkpoint = () => {
  try {
    db.query("PRAGMA wal_checkpoint(PASSIVE)").get();
  } catch {
    // Busy, or the database is being closed: the next turn (or the last connection's close) does it.
  }
};
self.onmessage = (event) => {
  const message = event.data;
  if (message.type === "start") {
    db = new Database(message.file);
    db.exec("PRAGMA busy_timeout = 0");
    timer = setInterval(checkpoint, message.everyMs);
    postMessage({ type: "started" });
  } else if (message.type === "stop") {
    clearInterval(timer);
    if (db !== undefined) {
      checkpoint();
      db.close();
    }
    postMessage({ type: "stopped" });
  }
};
`;

/** A checkpointing thread for one SQLite database file; {@link stop} it before the process's connections close. */
export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly stopped: Promise<void>;

  private constructor(worker: Worker, stopped: Promise<void>) {
    this.worker = worker;
    this.stopped = stopped;
  }

  /**
   * Starts the thread on `file` (the database, `cubby.db`) and resolves once its connection is
   * open. The caller turns the automatic checkpoint off on its own connections.
   * @throws when the thread cannot open the database
   */
  static async start(file: string, everyMs = CHECKPOINT_EVERY_MS): Promise<WalCheckpointer> {
    const url = URL.createObjectURL(new Blob([THREAD_SOURCE], { type: "application/javascript" }));
    const worker = new Worker(url);
    let onStopped: () => void = () => {};
    const stopped = new Promise<void>((resolve) => (onStopped = resolve));
    await new Promise<void>((resolve, reject) => {
      worker.onerror = (e) => reject(new Error(`the WAL checkpoint thread failed: ${e.message}`));
      worker.onmessage = (e: MessageEvent<{ type: string }>) => {
        if (e.data.type === "started") resolve();
        if (e.data.type === "stopped") onStopped();
      };
      worker.postMessage({ type: "start", file, everyMs });
    });
    URL.revokeObjectURL(url);
    // The thread alone must not keep the process running.
    worker.unref();
    return new WalCheckpointer(worker, stopped);
  }

  /** Runs a last checkpoint, closes the thread's connection and ends the thread. */
  async stop(): Promise<void> {
    this.worker.postMessage({ type: "stop" });
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.stopped, new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
    this.worker.terminate();
  }
}
