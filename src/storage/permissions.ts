/**
 * Owner-only access to everything cubby stores (issue 11): the database holds key hashes and
 * session tokens, the blobs hold users' files, so no other local user may read either.
 *
 * Three layers: the CLI sets the umask to {@link PRIVATE_UMASK} before anything is created (it
 * also governs what SQLite creates: `VACUUM INTO` output, and `-wal` / `-shm`, which SQLite gives
 * the database file's own mode); the code that creates files and directories passes
 * {@link PRIVATE_FILE_MODE} / {@link PRIVATE_DIR_MODE} explicitly, so it does not depend on the
 * umask when used in-process; and {@link tightenDataDir} fixes a data directory an earlier
 * version left with its 0644 / 0755 defaults.
 */
import fs from "node:fs";
import path from "node:path";

/** Mode of every file cubby creates: read and write for the owner only. */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of every directory cubby creates: the owner only may list or enter it. */
export const PRIVATE_DIR_MODE = 0o700;
/** The process umask that makes default-mode creations owner-only (0666 → 0600, 0777 → 0700). */
export const PRIVATE_UMASK = 0o077;

/** Directories of the data directory, relative to it ("." is the data directory itself). */
const DIRS = [".", "blobs", "tmp", "uploads", "quarantine"];
/** The database and the files SQLite keeps beside it. */
const DB_FILES = ["cubby.db", "cubby.db-wal", "cubby.db-shm", "cubby.db-journal"];

/** One path whose mode {@link tightenDataDir} changed. */
export interface Tightened {
  /** Relative to the data directory; "." is the directory itself. */
  path: string;
  /** Permission bits before and after (`mode & 0o777`). */
  from: number;
  to: number;
}

/**
 * Removes group and other access from the data directory's directories (data dir, blobs/, tmp/,
 * quarantine/), the database and its -wal / -shm / -journal, and quarantine/'s files. Call before
 * opening the database: SQLite creates new -wal / -shm files with the database file's mode.
 *
 * Blobs are not walked (that would be a stat per blob at every start): cubby has always written
 * them 0600, and blobs/ at 0700 keeps other users out whatever their mode. tmp/ is emptied by the
 * start-up sweep. Paths that do not exist are skipped; only the permission bits are compared, so
 * a second call changes nothing.
 * @returns what was changed, in the order above (empty when everything was already owner-only)
 * @throws the file system's error (e.g. EPERM when the data directory belongs to another user)
 */
export function tightenDataDir(dataDir: string): Tightened[] {
  const changed: Tightened[] = [];
  const tighten = (rel: string, to: number) => {
    let mode: number;
    try {
      mode = fs.statSync(path.join(dataDir, rel)).mode & 0o777;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    // Only take bits away: an owner-only mode narrower than ours (say 0400) is left as it is.
    const tightened = mode & to;
    if (tightened === mode) return;
    fs.chmodSync(path.join(dataDir, rel), tightened);
    changed.push({ path: rel, from: mode, to: tightened });
  };
  for (const dir of DIRS) tighten(dir, PRIVATE_DIR_MODE);
  for (const file of DB_FILES) tighten(file, PRIVATE_FILE_MODE);
  const quarantine = path.join(dataDir, "quarantine");
  if (fs.existsSync(quarantine)) {
    for (const entry of fs.readdirSync(quarantine, { withFileTypes: true })) {
      tighten(path.join("quarantine", entry.name), entry.isDirectory() ? PRIVATE_DIR_MODE : PRIVATE_FILE_MODE);
    }
  }
  return changed;
}

/** "cubby.db 644→600, blobs 755→700": a {@link tightenDataDir} result for a log line. */
export function describeTightened(changed: Tightened[]): string {
  return changed.map((c) => `${c.path} ${c.from.toString(8)}→${c.to.toString(8)}`).join(", ");
}
