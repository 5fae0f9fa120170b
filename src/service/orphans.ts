/**
 * Blobs no file row refers to: left by a crash between a blob's write and its commit, or between
 * a commit and the removal of the blob it replaced (CONTRACT §6, §7).
 */
import type { BlobStore, MetadataStore } from "../storage/ports.ts";

/** `cubby fsck --repair` removes only orphans older than this (CONTRACT §7): ms. */
export const REPAIR_ORPHAN_MIN_AGE_MS = 60 * 60 * 1000;

/**
 * Removes every blob older than `olderThanMs` that no row refers to. The blobs are listed before
 * the rows are read, so an upload that commits meanwhile is in the rows and is kept.
 * @returns the names removed
 */
export async function removeOrphans(store: MetadataStore, blobs: BlobStore, olderThanMs: number): Promise<string[]> {
  const cutoff = Date.now() - olderThanMs;
  const candidates: string[] = [];
  for await (const { name, writtenAt } of blobs.list()) if (writtenAt <= cutoff) candidates.push(name);
  const referenced = await store.files.blobNames();
  const removed: string[] = [];
  for (const name of candidates) {
    if (referenced.has(name)) continue;
    await blobs.remove(name);
    removed.push(name);
  }
  return removed;
}
