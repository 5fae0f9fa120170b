/**
 * Blob storage on the local file system: DATA_DIR/blobs holds one file per content version,
 * DATA_DIR/tmp holds uploads in progress. Blobs are immutable: replacing a file's content
 * writes a new blob, and the old one is removed only after the metadata commit.
 *
 * Durable write recipe (CONTRACT §6, as in garage's block manager): stream to a temporary
 * file while computing CRC32C and size → fsync the file → rename to a fresh name → fsync the
 * directory. Only then may the caller commit metadata pointing at the blob.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { AppError } from "../errors.ts";
import { checksumToBase64, crc32cUpdate } from "../domain/checksum.ts";
import { newBlobName } from "../domain/ids.ts";
import { gcPacer } from "../gc-pacer.ts";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./permissions.ts";

/** A blob written durably under its final name, not yet referenced by any metadata. */
export interface StagedBlob {
  name: string;
  size: number;
  /** CRC32C, base64 of the 4-byte big-endian value. */
  checksum: string;
}

export interface WriteOptions {
  /** Uploads larger than this are refused with payload_too_large (413) and leave nothing. */
  maxBytes: number;
  /** Checksum the client declared; a mismatch is invalid_argument (400) and leaves nothing. */
  expectedChecksum?: string | undefined;
}

/** Bytes gathered before one write(2): large writes keep the syscall count low. */
const WRITE_BUFFER_BYTES = 1024 * 1024;
/**
 * How long a blob that is no longer referenced stays on disk. A reader that looked up the old
 * blob name just before a replace or delete committed still finds the file when it opens it
 * (opening happens right after the lookup; once open, removal no longer affects the reader).
 * Blobs whose removal is cut short by a stop are swept at the next start.
 */
export const REMOVAL_GRACE_MS = 30_000;

/** Blobs up to this size are served from memory once read: they are immutable, never stale. */
export const SMALL_BLOB_BYTES = 64 * 1024;
/** Memory the small-blob cache may hold; the least recently used blobs leave first. */
const SMALL_BLOB_CACHE_BYTES = 32 * 1024 * 1024;

export class BlobStore {
  readonly blobDir: string;
  readonly tmpDir: string;
  private readonly pendingRemovals = new Map<string, ReturnType<typeof setTimeout>>();
  /** Small blobs by name, least recently used first (Map keeps insertion order). */
  private readonly small = new Map<string, Uint8Array>();
  private smallBytes = 0;

  constructor(dataDir: string) {
    this.blobDir = path.join(dataDir, "blobs");
    this.tmpDir = path.join(dataDir, "tmp");
    fs.mkdirSync(this.blobDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    fs.mkdirSync(this.tmpDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  }

  /** Absolute path of a blob. */
  path(name: string): string {
    return path.join(this.blobDir, name);
  }

  /**
   * Streams `content` into a new durable blob.
   * @throws AppError payload_too_large past `maxBytes`; invalid_argument on checksum mismatch;
   *   anything the stream or the file system throws (ENOSPC becomes unavailable upstream).
   *   On every failure the temporary file is removed.
   */
  async write(content: AsyncIterable<Uint8Array> | null, opts: WriteOptions): Promise<StagedBlob> {
    const name = newBlobName();
    const tmpPath = path.join(this.tmpDir, `${name}.tmp`);
    const handle = await fsp.open(tmpPath, "wx", PRIVATE_FILE_MODE);
    let closed = false;
    try {
      let crc = 0;
      let size = 0;
      const buffer = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
      let filled = 0;
      // Positional writes (pwrite): the file offset is ours, not the descriptor's.
      let position = 0;
      const flush = async () => {
        if (filled === 0) return;
        const view = buffer.subarray(0, filled);
        crc = crc32cUpdate(crc, view);
        let off = 0;
        while (off < filled) {
          const { bytesWritten } = await handle.write(view, off, filled - off, position);
          off += bytesWritten;
          position += bytesWritten;
        }
        filled = 0;
        // Every chunk read from the connection is a fresh buffer, garbage once copied here.
        gcPacer.add(view.byteLength);
      };
      if (content !== null) {
        for await (const chunk of content) {
          size += chunk.byteLength;
          if (size > opts.maxBytes) {
            throw new AppError("payload_too_large", `content is larger than the limit of ${opts.maxBytes} bytes`);
          }
          let off = 0;
          while (off < chunk.byteLength) {
            const n = Math.min(chunk.byteLength - off, WRITE_BUFFER_BYTES - filled);
            buffer.set(chunk.subarray(off, off + n), filled);
            filled += n;
            off += n;
            if (filled === WRITE_BUFFER_BYTES) await flush();
          }
        }
      }
      await flush();
      const checksum = checksumToBase64(crc);
      if (opts.expectedChecksum !== undefined && opts.expectedChecksum !== checksum) {
        throw new AppError(
          "invalid_argument",
          `checksum mismatch: the client declared CRC32C ${opts.expectedChecksum}, the content has ${checksum}`,
        );
      }
      await handle.sync();
      await handle.close();
      closed = true;
      await fsp.rename(tmpPath, this.path(name));
      await syncDir(this.blobDir);
      return { name, size, checksum };
    } catch (err) {
      if (!closed) await handle.close().catch(() => {});
      await fsp.rm(tmpPath, { force: true }).catch(() => {});
      throw err;
    }
  }

  /**
   * The bytes of a small blob (≤ {@link SMALL_BLOB_BYTES}) from memory, read from disk on first
   * use. Saves the open, stat, read and close of serving a small file from disk per request.
   * @param size the size the metadata records
   * @returns undefined for larger blobs, or when the file is missing or not `size` bytes long
   *   (the caller then serves from disk as usual)
   */
  readSmall(name: string, size: number): Uint8Array | undefined {
    if (size > SMALL_BLOB_BYTES) return undefined;
    let bytes = this.small.get(name);
    if (bytes !== undefined) {
      if (bytes.byteLength !== size) return undefined;
      this.small.delete(name);
      this.small.set(name, bytes);
      return bytes;
    }
    try {
      bytes = fs.readFileSync(this.path(name));
    } catch {
      return undefined;
    }
    if (bytes.byteLength !== size) return undefined;
    this.small.set(name, bytes);
    this.smallBytes += bytes.byteLength;
    for (const [oldest, b] of this.small) {
      if (this.smallBytes <= SMALL_BLOB_CACHE_BYTES) break;
      this.small.delete(oldest);
      this.smallBytes -= b.byteLength;
    }
    return bytes;
  }

  private forget(name: string): void {
    const bytes = this.small.get(name);
    if (bytes === undefined) return;
    this.small.delete(name);
    this.smallBytes -= bytes.byteLength;
  }

  /** Removes a blob now (for one that no metadata ever referenced). Missing is fine. */
  async remove(name: string): Promise<void> {
    this.forget(name);
    await fsp.rm(this.path(name), { force: true });
  }

  /** Removes a blob after {@link REMOVAL_GRACE_MS}, so readers that just looked it up can open it. */
  removeLater(name: string): void {
    if (this.pendingRemovals.has(name)) return;
    const timer = setTimeout(() => {
      this.pendingRemovals.delete(name);
      this.forget(name);
      fsp.rm(this.path(name), { force: true }).catch((err) => {
        console.error(`blob ${name}: removal failed (it will be swept at the next start): ${err}`);
      });
    }, REMOVAL_GRACE_MS);
    timer.unref();
    this.pendingRemovals.set(name, timer);
  }

  /** Runs every pending delayed removal now (at shutdown, and in tests). */
  async flushRemovals(): Promise<void> {
    const names = [...this.pendingRemovals.keys()];
    for (const [, t] of this.pendingRemovals) clearTimeout(t);
    this.pendingRemovals.clear();
    await Promise.all(names.map((n) => this.remove(n)));
  }

  /**
   * Start-up sweep: removes every temporary file and every blob that `isReferenced` rejects
   * (left by a crash between rename and commit, or between commit and removal).
   * @returns counts of what was removed
   */
  async sweep(isReferenced: (name: string) => boolean): Promise<{ temporaries: number; orphans: number }> {
    let temporaries = 0;
    let orphans = 0;
    for (const entry of await fsp.readdir(this.tmpDir)) {
      await fsp.rm(path.join(this.tmpDir, entry), { force: true, recursive: true });
      temporaries++;
    }
    for (const entry of await fsp.readdir(this.blobDir)) {
      if (!isReferenced(entry)) {
        await fsp.rm(this.path(entry), { force: true, recursive: true });
        orphans++;
      }
    }
    if (orphans > 0) await syncDir(this.blobDir);
    return { temporaries, orphans };
  }
}

/** fsync(2) on a directory, making renames and removals in it durable. */
async function syncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
