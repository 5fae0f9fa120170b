/**
 * Consistency check of a data directory (`cubby fsck`): re-reads every blob, recomputes its size
 * and CRC32C, and compares them with the database. With `repair`, files whose content is missing
 * or damaged are moved out of the way: the blob into DATA_DIR/quarantine with a JSON record of
 * the file's metadata beside it, and the file's row deleted, so the store is consistent again
 * and nothing is thrown away silently.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { checksumToBase64, crc32cUpdate } from "../domain/checksum.ts";
import type { FileRecord } from "../domain/file.ts";
import { FILE_COLUMNS } from "../service/files.ts";
import type { Db } from "./db.ts";
import type { BlobStore } from "./blobs.ts";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./permissions.ts";

export interface FsckProblem {
  fileId: string;
  blob: string;
  kind: "missing" | "size_mismatch" | "checksum_mismatch";
  detail: string;
}

export interface FsckReport {
  filesChecked: number;
  bytesRead: number;
  problems: FsckProblem[];
  /** Blob files no row refers to (removed by the server at its next start). */
  orphans: string[];
  /** Whether problems were quarantined. */
  repaired: boolean;
}

const READ_CHUNK = 1024 * 1024;

/** Checks every file's blob against its recorded size and checksum. */
export async function fsck(db: Db, blobs: BlobStore, opts: { repair: boolean; quarantineDir: string }): Promise<FsckReport> {
  const rows = db.$client
    .query<FileRecord, []>(`SELECT ${FILE_COLUMNS} FROM files ORDER BY id`)
    .all();
  const report: FsckReport = { filesChecked: 0, bytesRead: 0, problems: [], orphans: [], repaired: false };
  const buffer = Buffer.allocUnsafe(READ_CHUNK);
  for (const file of rows) {
    report.filesChecked++;
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(blobs.path(file.blob), "r");
    } catch {
      report.problems.push({ fileId: file.id, blob: file.blob, kind: "missing", detail: "the blob file does not exist" });
      continue;
    }
    let crc = 0;
    let size = 0;
    try {
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, null);
        if (bytesRead === 0) break;
        crc = crc32cUpdate(crc, buffer.subarray(0, bytesRead));
        size += bytesRead;
      }
    } finally {
      await handle.close();
    }
    report.bytesRead += size;
    const checksum = checksumToBase64(crc);
    if (size !== file.size) {
      report.problems.push({ fileId: file.id, blob: file.blob, kind: "size_mismatch", detail: `${size} bytes on disk, ${file.size} recorded` });
    } else if (checksum !== file.checksum) {
      report.problems.push({ fileId: file.id, blob: file.blob, kind: "checksum_mismatch", detail: `CRC32C ${checksum} on disk, ${file.checksum} recorded` });
    }
  }
  const referenced = new Set(rows.map((r) => r.blob));
  report.orphans = fs.readdirSync(blobs.blobDir).filter((name) => !referenced.has(name));

  if (opts.repair && report.problems.length > 0) {
    fs.mkdirSync(opts.quarantineDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const p of report.problems) {
      const file = byId.get(p.fileId)!;
      fs.writeFileSync(path.join(opts.quarantineDir, `${p.blob}.json`), `${JSON.stringify({ problem: p, file }, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
      if (p.kind !== "missing") await fsp.rename(blobs.path(p.blob), path.join(opts.quarantineDir, p.blob));
      db.$client.prepare("DELETE FROM files WHERE id = ? AND blob = ?").run(p.fileId, p.blob);
    }
    report.repaired = true;
  }
  return report;
}
