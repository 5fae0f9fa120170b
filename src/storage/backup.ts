/**
 * Online backup and restore (`cubby backup DEST`, `cubby restore SRC`).
 *
 * Backup takes a consistent snapshot while the server runs: `VACUUM INTO` writes a transactionally
 * consistent copy of the database, then every blob that snapshot refers to is hard-linked into a
 * staging directory on the same file system (blobs are immutable, so a link is a copy). A blob
 * removed between the snapshot and its link (replaced or deleted more than the removal grace
 * period ago) makes the attempt start over. The staging directory is then copied to DEST.
 *
 * A backup is as private as the store: its files are 0600 and its directories 0700, DEST
 * included, and so is what restore writes.
 */
import { Database } from "bun:sqlite";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { AppError } from "../errors.ts";
import type { DiskBlobStore } from "./disk-blobs.ts";
import type { SqliteMetadataStore } from "./sqlite-metadata.ts";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./permissions.ts";

export interface BackupResult {
  files: number;
  bytes: number;
  attempts: number;
}

const MAX_ATTEMPTS = 5;

/** A directory that does not exist or is empty; anything else would be overwritten. */
function requireEmptyDir(dir: string, what: string): void {
  if (fs.existsSync(dir) && (!fs.statSync(dir).isDirectory() || fs.readdirSync(dir).length > 0)) {
    throw new AppError("invalid_argument", `${what} ${dir} must not exist or be an empty directory`);
  }
}

/**
 * Writes a consistent copy of the store to `dest` (which must not exist or be empty; it is
 * created, or an empty one narrowed, to 0700).
 */
export async function backup(store: SqliteMetadataStore, blobs: DiskBlobStore, dest: string): Promise<BackupResult> {
  requireEmptyDir(dest, "backup destination");
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const staging = blobs.stagingDir("backup");
    fs.mkdirSync(path.join(staging, "blobs"), { mode: PRIVATE_DIR_MODE });
    try {
      const snapshot = path.join(staging, "cubby.db");
      store.snapshotTo(snapshot);
      const copy = new Database(snapshot, { readonly: true });
      const rows = copy.query<{ blob: string; size: number }, []>("SELECT blob, size FROM files").all();
      copy.close();
      if (!rows.every(({ blob }) => blobs.linkInto(blob, path.join(staging, "blobs")))) continue;
      fs.mkdirSync(dest, { recursive: true, mode: PRIVATE_DIR_MODE });
      // An empty directory the caller made keeps its mode through mkdir; it is about to hold a
      // copy of every file.
      fs.chmodSync(dest, PRIVATE_DIR_MODE);
      await copyTree(staging, dest);
      return { files: rows.length, bytes: rows.reduce((n, r) => n + r.size, 0), attempts: attempt };
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }
  throw new AppError("unavailable", `the store changed too fast to snapshot in ${MAX_ATTEMPTS} attempts; try again`);
}

/**
 * Restores a backup made by {@link backup} into an empty data directory: copies the database and
 * the blobs, then checks the database's integrity. The caller verifies the blobs (fsck).
 */
export async function restore(src: string, dataDir: string): Promise<void> {
  if (!fs.existsSync(path.join(src, "cubby.db")) || !fs.existsSync(path.join(src, "blobs"))) {
    throw new AppError("invalid_argument", `${src} is not a cubby backup (no cubby.db and blobs/)`);
  }
  requireEmptyDir(dataDir, "data directory");
  fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  await copyTree(src, dataDir);
  const db = new Database(path.join(dataDir, "cubby.db"));
  const check = db.query<{ integrity_check: string }, []>("PRAGMA integrity_check").get();
  db.close();
  if (check?.integrity_check !== "ok") throw new AppError("internal", `restored database failed its integrity check: ${check?.integrity_check}`);
}

/** Copies `cubby.db` and `blobs/` from one directory to another, each file fsynced and 0600. */
async function copyTree(from: string, to: string): Promise<void> {
  fs.mkdirSync(path.join(to, "blobs"), { recursive: true, mode: PRIVATE_DIR_MODE });
  await copyDurably(path.join(from, "cubby.db"), path.join(to, "cubby.db"));
  for (const name of fs.readdirSync(path.join(from, "blobs"))) {
    await copyDurably(path.join(from, "blobs", name), path.join(to, "blobs", name));
  }
  for (const dir of [path.join(to, "blobs"), to]) {
    const h = await fsp.open(dir, "r");
    await h.sync();
    await h.close();
  }
}

async function copyDurably(from: string, to: string): Promise<void> {
  await fsp.copyFile(from, to, fs.constants.COPYFILE_EXCL);
  const h = await fsp.open(to, "r+");
  // copyFile keeps the source's mode, and VACUUM INTO writes 0644 less the umask.
  await h.chmod(PRIVATE_FILE_MODE);
  await h.sync();
  await h.close();
}
