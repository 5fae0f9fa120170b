/**
 * Blob storage on the local file system, the first implementation of the {@link BlobStore}
 * port: DATA_DIR/blobs holds one file per content version, DATA_DIR/tmp holds uploads in
 * progress, DATA_DIR/quarantine what `cubby fsck --repair` moved aside. A blob's path never
 * leaves this module. Blobs are immutable: replacing a file's content
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
import type { BlobChunk, BlobStore, ByteRange, ReadPlan, StagedBlob, WriteOptions } from "./ports.ts";
import { BufferPool, DelayedRemovals, REMOVAL_GRACE_MS, SMALL_BLOB_BYTES, SmallBlobCache, syncDir } from "./blob-memory.ts";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./permissions.ts";
import { DiskPartials } from "./disk-partials.ts";
import { FileAppender } from "./file-appender.ts";

/** The {@link BlobStore} port on a local directory (see the module comment for the layout and the write recipe). */
export class DiskBlobStore implements BlobStore {
  private readonly blobDir: string;
  private readonly tmpDir: string;
  private readonly quarantineDir: string;
  private readonly small = new SmallBlobCache();
  /** Blobs whose removal by a stop is cut short are swept at the next start. */
  private readonly removals: DelayedRemovals;
  /** Unfinished resumable uploads, DATA_DIR/uploads/{upload ID} (disk-partials.ts). */
  readonly partials: DiskPartials;

  /**
   * @param dataDir DATA_DIR: blobs/, tmp/ and uploads/ are made in it (0700)
   * @param removalGraceMs how long a replaced or deleted blob stays for readers (ms;
   *   REMOVAL_GRACE_MS, blob-memory.ts, unless a test shortens it)
   */
  constructor(dataDir: string, removalGraceMs = REMOVAL_GRACE_MS) {
    this.removals = new DelayedRemovals((name) => this.remove(name), removalGraceMs);
    this.blobDir = path.join(dataDir, "blobs");
    this.tmpDir = path.join(dataDir, "tmp");
    this.quarantineDir = path.join(dataDir, "quarantine");
    fs.mkdirSync(this.blobDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    fs.mkdirSync(this.tmpDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    this.partials = new DiskPartials(path.join(dataDir, "uploads"), this.blobDir);
  }

  private path(name: string): string {
    return path.join(this.blobDir, name);
  }

  /**
   * Streams `content` into a new durable blob (see the recipe above).
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
      let size = 0;
      let crc: number;
      const appender = new FileAppender(handle, 0);
      try {
        if (content !== null) {
          for await (const chunk of content) {
            size += chunk.byteLength;
            if (size > opts.maxBytes) {
              throw new AppError("payload_too_large", `content is larger than the limit of ${opts.maxBytes} bytes`);
            }
            // The appender keeps the body reader's chunk and frees it once written (it copies any other).
            await appender.append(chunk);
          }
        }
        crc = (await appender.finish()).crc32c;
      } finally {
        await appender.settle();
      }
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
   *   (the caller then reads it as usual)
   */
  cached(name: string, size: number): Uint8Array | undefined {
    if (size > SMALL_BLOB_BYTES) return undefined;
    const hit = this.small.get(name, size);
    if (hit !== undefined) return hit;
    let bytes: Uint8Array;
    try {
      bytes = fs.readFileSync(this.path(name));
    } catch {
      return undefined;
    }
    if (bytes.byteLength !== size) return undefined;
    this.small.put(name, bytes);
    return bytes;
  }

  /**
   * Positional reads of `range` into at most `plan.buffers` reused buffers of `plan.chunkBytes`:
   * a buffer is filled again only once its chunk was released, so memory stays bounded whatever
   * the size, and a long read makes no garbage. The file is opened on the first `next()`.
   */
  async *read(name: string, range: ByteRange, plan: ReadPlan): AsyncIterable<BlobChunk> {
    const file = await fsp.open(this.path(name), "r");
    using pool = new BufferPool(plan);
    try {
      const end = range.start + range.length;
      for (let position = range.start; position < end; ) {
        const buffer = await pool.take();
        if (buffer === undefined) break;
        const { bytesRead } = await file.read(buffer, 0, Math.min(plan.chunkBytes, end - position), position);
        if (bytesRead === 0) throw new Error(`blob ${name} ended at byte ${position}, before ${end}`);
        position += bytesRead;
        if (plan.signal?.aborted) break;
        yield { bytes: buffer.subarray(0, bytesRead), release: () => pool.release(buffer) };
      }
    } finally {
      gcPacer.add(pool.allocatedBytes);
      await file.close();
    }
  }

  async verify(name: string): Promise<{ size: number; checksum: string } | undefined> {
    let size: number;
    try {
      size = (await fsp.stat(this.path(name))).size;
    } catch {
      return undefined;
    }
    let crc = 0;
    for await (const chunk of this.read(name, { start: 0, length: size }, { chunkBytes: VERIFY_CHUNK_BYTES, buffers: 1 })) {
      crc = crc32cUpdate(crc, chunk.bytes);
      chunk.release();
    }
    return { size, checksum: checksumToBase64(crc) };
  }

  /** The data directory belongs to one server process, which sweeps only at start. */
  readonly orphanGraceMs = 0;

  async *list(): AsyncIterable<{ name: string; writtenAt: number }> {
    for (const name of await fsp.readdir(this.blobDir)) {
      const stat = await fsp.stat(this.path(name)).catch(() => undefined);
      if (stat !== undefined) yield { name, writtenAt: stat.mtimeMs };
    }
  }

  async sweepUnfinished(): Promise<number> {
    let removed = 0;
    for (const entry of await fsp.readdir(this.tmpDir)) {
      await fsp.rm(path.join(this.tmpDir, entry), { force: true, recursive: true });
      removed++;
    }
    return removed;
  }

  /** Moves the blob to DATA_DIR/quarantine/NAME with NAME.json holding `note`. */
  async quarantine(name: string, note: unknown): Promise<void> {
    fs.mkdirSync(this.quarantineDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    fs.writeFileSync(path.join(this.quarantineDir, `${name}.json`), `${JSON.stringify(note, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
    this.small.forget(name);
    await fsp.rename(this.path(name), path.join(this.quarantineDir, name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err;
    });
  }

  /** Removes a blob now (one no row ever referred to). Missing is fine. */
  async remove(name: string): Promise<void> {
    this.small.forget(name);
    await fsp.rm(this.path(name), { force: true });
  }

  /** Removes a blob after the readers' grace (REMOVAL_GRACE_MS, blob-memory.ts), so readers that just looked it up can open it. */
  removeLater(name: string): void {
    this.removals.schedule(name);
  }

  /** A new empty directory beside the uploads in progress (same file system as the blobs), 0700. */
  stagingDir(prefix: string): string {
    const dir = path.join(this.tmpDir, `${prefix}-${newBlobName()}`);
    fs.mkdirSync(dir, { mode: PRIVATE_DIR_MODE });
    return dir;
  }

  /**
   * Hard-links a blob into `dir` under its own name: a copy that costs nothing, since blobs are
   * immutable. @returns false when the blob is gone
   */
  linkInto(name: string, dir: string): boolean {
    try {
      fs.linkSync(this.path(name), path.join(dir, name));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw err;
    }
  }

  /** Runs every pending delayed removal now (at shutdown, and in tests). */
  async flushRemovals(): Promise<void> {
    await Promise.all(this.removals.cancel().map((n) => this.remove(n)));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.flushRemovals();
  }
}

/** Bytes per read when checksumming a whole blob. */
const VERIFY_CHUNK_BYTES = 1024 * 1024;
