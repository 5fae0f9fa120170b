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
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./permissions.ts";

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

/** The {@link BlobStore} port on a local directory (see the module comment for the layout and the write recipe). */
export class DiskBlobStore implements BlobStore {
  private readonly blobDir: string;
  private readonly tmpDir: string;
  private readonly quarantineDir: string;
  private readonly pendingRemovals = new Map<string, ReturnType<typeof setTimeout>>();
  /** Small blobs by name, least recently used first (Map keeps insertion order). */
  private readonly small = new Map<string, Uint8Array>();
  private smallBytes = 0;

  constructor(dataDir: string) {
    this.blobDir = path.join(dataDir, "blobs");
    this.tmpDir = path.join(dataDir, "tmp");
    this.quarantineDir = path.join(dataDir, "quarantine");
    fs.mkdirSync(this.blobDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    fs.mkdirSync(this.tmpDir, { recursive: true, mode: PRIVATE_DIR_MODE });
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
   *   (the caller then reads it as usual)
   */
  cached(name: string, size: number): Uint8Array | undefined {
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

  /**
   * Positional reads of `range` into at most `plan.buffers` reused buffers of `plan.chunkBytes`:
   * a buffer is filled again only once its chunk was released, so memory stays bounded whatever
   * the size, and a long read makes no garbage. The file is opened on the first `next()`.
   */
  async *read(name: string, range: ByteRange, plan: ReadPlan): AsyncIterable<BlobChunk> {
    const file = await fsp.open(this.path(name), "r");
    const free: Buffer[] = [];
    let allocated = 0;
    let wake: (() => void) | undefined;
    const stop = () => wake?.();
    plan.signal?.addEventListener("abort", stop);
    try {
      const end = range.start + range.length;
      for (let position = range.start; position < end && !plan.signal?.aborted; ) {
        if (free.length === 0 && allocated === plan.buffers) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        const buffer = free.pop() ?? (allocated++, Buffer.allocUnsafe(plan.chunkBytes));
        const { bytesRead } = await file.read(buffer, 0, Math.min(plan.chunkBytes, end - position), position);
        if (bytesRead === 0) throw new Error(`blob ${name} ended at byte ${position}, before ${end}`);
        position += bytesRead;
        if (plan.signal?.aborted) break;
        yield {
          bytes: buffer.subarray(0, bytesRead),
          release: () => {
            free.push(buffer);
            wake?.();
          },
        };
      }
    } finally {
      plan.signal?.removeEventListener("abort", stop);
      gcPacer.add(allocated * plan.chunkBytes);
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
    this.forget(name);
    await fsp.rename(this.path(name), path.join(this.quarantineDir, name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err;
    });
  }

  private forget(name: string): void {
    const bytes = this.small.get(name);
    if (bytes === undefined) return;
    this.small.delete(name);
    this.smallBytes -= bytes.byteLength;
  }

  /** Removes a blob now (one no row ever referred to). Missing is fine. */
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
    const names = [...this.pendingRemovals.keys()];
    for (const [, t] of this.pendingRemovals) clearTimeout(t);
    this.pendingRemovals.clear();
    await Promise.all(names.map((n) => this.remove(n)));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.flushRemovals();
  }
}

/** Bytes per read when checksumming a whole blob. */
const VERIFY_CHUNK_BYTES = 1024 * 1024;

/** fsync(2) on a directory, making renames and removals in it durable. */
async function syncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
