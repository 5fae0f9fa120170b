/**
 * Consistency check of a store (`cubby fsck`): re-reads every blob, recomputes its size and
 * CRC32C, and compares them with the file rows. With `repair`, files whose content is missing or
 * damaged are moved out of the way: the blob is quarantined by the blob store with a record of
 * the file's metadata beside it, and the file's row deleted, so the store is consistent again and
 * nothing is thrown away silently; blobs no row refers to are removed once an hour old. Works on
 * any pair of stores behind the two ports.
 */
import type { FileRecord } from "../domain/file.ts";
import type { BlobStore, MetadataStore } from "../storage/ports.ts";
import { REPAIR_ORPHAN_MIN_AGE_MS, removeOrphans } from "./orphans.ts";

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
  /** Blobs no row refers to. */
  orphans: string[];
  /** Those of them that `repair` removed: older than an hour (REPAIR_ORPHAN_MIN_AGE_MS). */
  orphansRemoved: string[];
  /** Whether problems were quarantined. */
  repaired: boolean;
}

/** Checks every file's blob against its recorded size and checksum. */
export async function fsck(store: MetadataStore, blobs: BlobStore, opts: { repair: boolean }): Promise<FsckReport> {
  const report: FsckReport = { filesChecked: 0, bytesRead: 0, problems: [], orphans: [], orphansRemoved: [], repaired: false };
  const damaged: { problem: FsckProblem; file: FileRecord }[] = [];
  const referenced = new Set<string>();
  for await (const file of store.files.all()) {
    report.filesChecked++;
    referenced.add(file.blob);
    const problem = await check(blobs, file, report);
    if (problem !== undefined) damaged.push({ problem, file });
  }
  report.problems = damaged.map((d) => d.problem);
  for await (const { name } of blobs.list()) if (!referenced.has(name)) report.orphans.push(name);

  if (opts.repair && damaged.length > 0) {
    for (const { problem, file } of damaged) {
      await blobs.quarantine(file.blob, { problem, file });
      await store.files.delete(file.id, file.blob);
    }
    report.repaired = true;
  }
  // Younger orphans may be an upload about to commit, by this or another process.
  if (opts.repair && report.orphans.length > 0) report.orphansRemoved = await removeOrphans(store, blobs, REPAIR_ORPHAN_MIN_AGE_MS);
  return report;
}

/** One file's blob against its row; counts the bytes read into `report`. */
async function check(blobs: BlobStore, file: FileRecord, report: FsckReport): Promise<FsckProblem | undefined> {
  const found = await blobs.verify(file.blob);
  if (found === undefined) return { fileId: file.id, blob: file.blob, kind: "missing", detail: "the blob does not exist" };
  report.bytesRead += found.size;
  if (found.size !== file.size) {
    return { fileId: file.id, blob: file.blob, kind: "size_mismatch", detail: `${found.size} bytes stored, ${file.size} recorded` };
  }
  if (found.checksum !== file.checksum) {
    return { fileId: file.id, blob: file.blob, kind: "checksum_mismatch", detail: `CRC32C ${found.checksum} stored, ${file.checksum} recorded` };
  }
  return undefined;
}
