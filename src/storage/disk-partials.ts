/**
 * The partial bytes of resumable uploads on the local disk: one file per upload,
 * DATA_DIR/uploads/{upload ID}. A chunk is written at the row's offset after the file is
 * truncated to it (whatever lay past the offset was never committed), then fsynced; only then
 * does the caller move the offset. When the last byte is there, the file is checksummed and
 * hard-linked into blobs/ under a fresh name (no copy; nothing writes the file any more), and
 * removed from uploads/ once the file's row has committed.
 *
 * Writers of one upload are serialised by the caller (the upload service, under the upload's lock
 * in storage/upload-locks.ts), which reads the upload's row after taking the lock and writes only
 * at its offset. So the hard link is safe: once the row is complete no writer opens the file
 * again, and until then only the lock's holder writes it.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { checksumToBase64, crc32cCombine, crc32cUpdate } from "../domain/checksum.ts";
import { newBlobName } from "../domain/ids.ts";
import { AppError } from "../errors.ts";
import { freeNow } from "../gc-pacer.ts";
import { syncDir } from "./blob-memory.ts";
import { chunkDigest } from "./chunk-digest.ts";
import { APPEND_BUFFER_BYTES, FileAppender } from "./file-appender.ts";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "./permissions.ts";
import type { StagedBlob } from "./ports.ts";
import type { AppendOptions, PartialUploads } from "./upload-ports.ts";

/** Upload IDs as the service makes them; anything else never reaches a path. */
const UPLOAD_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** {@link PartialUploads} in a directory beside the blobs (same file system, for the hard link). */
export class DiskPartials implements PartialUploads {
  constructor(
    private readonly dir: string,
    private readonly blobDir: string,
  ) {
    fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  }

  private path(id: string): string {
    if (!UPLOAD_ID.test(id)) throw new Error(`not an upload ID: ${JSON.stringify(id)}`);
    return path.join(this.dir, id);
  }

  async append(id: string, offset: number, content: AsyncIterable<Uint8Array> | null, opts: AppendOptions): Promise<{ bytes: number; crc32c: number; cutShort?: unknown }> {
    const file = this.path(id);
    let handle: fsp.FileHandle;
    let created = false;
    try {
      handle = await fsp.open(file, "r+");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT" || offset !== 0) throw err;
      handle = await fsp.open(file, "wx", PRIVATE_FILE_MODE);
      created = true;
    }
    try {
      const stored = (await handle.stat()).size;
      if (stored < offset) throw new Error(`upload ${id}: ${stored} bytes on disk, fewer than its offset ${offset}`);
      if (stored > offset) await handle.truncate(offset);
      const digest = chunkDigest(opts.checksum);
      const appender = new FileAppender(handle, offset);
      let received = 0;
      let crc: number;
      let cutShort: unknown;
      try {
        try {
          if (content !== null) {
            for await (const chunk of content) {
              received += chunk.byteLength;
              if (received > opts.maxBytes) throw new AppError("payload_too_large", `the chunk is longer than the ${opts.maxBytes} bytes left of the upload`);
              digest?.update(chunk);
              await appender.append(chunk);
            }
          }
        } catch (err) {
          // A body cut short keeps what arrived (tus: store as much as possible), unless its
          // checksum can no longer be verified or the failure is ours.
          if (err instanceof AppError && err.code !== "invalid_argument") throw err;
          if (digest !== undefined || received === 0) throw err;
          cutShort = err;
        }
        crc = (await appender.finish()).crc32c;
      } finally {
        await appender.settle();
      }
      const written = appender.end - offset;
      digest?.verify();
      await handle.sync();
      if (created) await syncDir(this.dir);
      return cutShort === undefined ? { bytes: written, crc32c: crc } : { bytes: written, crc32c: crc, cutShort };
    } catch (err) {
      // Nothing past the offset is committed; leave the file as the offset says.
      await handle.truncate(offset).catch(() => {});
      throw err;
    } finally {
      await handle.close().catch(() => {});
    }
  }

  async stage(id: string, length: number, crc32c?: number): Promise<StagedBlob> {
    const file = this.path(id);
    const handle = await fsp.open(file, "r+");
    let crc = crc32c ?? 0;
    try {
      const stored = (await handle.stat()).size;
      if (stored < length) throw new Error(`upload ${id}: ${stored} bytes on disk, fewer than its length ${length}`);
      if (stored > length) await handle.truncate(length);
      // Each chunk was fsynced as it was written; only the checksum, when not carried, reads them.
      if (crc32c === undefined) crc = await checksumOfFile(handle, id, length);
      await handle.sync();
    } finally {
      await handle.close();
    }
    const name = newBlobName();
    await fsp.link(file, path.join(this.blobDir, name));
    await syncDir(this.blobDir);
    return { name, size: length, checksum: checksumToBase64(crc) };
  }

  /**
   * The first part's file becomes the blob, as {@link stage} does for one upload: the other
   * parts are appended to it (each byte read and written once, 1 MiB at a time; ext4 has no
   * reflink to share their extents instead), then the file is fsynced and hard-linked into
   * blobs/ under a fresh name. The CRC32C combines the parts' carried checksums (no byte read
   * for it); only when one is missing are the first part's bytes read, and every byte checksummed. The caller
   * holds every part's lock, and a consumed part is never written again (the upload service),
   * so the shared inode stays the blob's. Bytes past the first part's length are never its
   * own (the offset rule): a failed or crashed concatenation's are truncated away, here and by
   * the next one.
   */
  async concat(parts: readonly { id: string; length: number; crc32c?: number | undefined }[]): Promise<StagedBlob> {
    const [first, ...rest] = parts;
    if (first === undefined) throw new Error("concatenation of no parts");
    const file = this.path(first.id);
    const handle = await fsp.open(file, "r+");
    // Carried checksums are combined; a part without one is checksummed as its bytes pass.
    const carried = parts.every((p) => p.crc32c !== undefined);
    const buffer = Buffer.allocUnsafe(APPEND_BUFFER_BYTES);
    // Two buffers: one is written while the next is read (and checksummed).
    const spare = Buffer.allocUnsafe(APPEND_BUFFER_BYTES);
    let crc = 0;
    let position = first.length;
    try {
      const stored = (await handle.stat()).size;
      if (stored < first.length) throw new Error(`upload ${first.id}: ${stored} bytes on disk, fewer than its length ${first.length}`);
      if (stored > first.length) await handle.truncate(first.length);
      crc = carried ? first.crc32c! : await checksumOfFile(handle, first.id, first.length, buffer);
      let writing: Promise<void> = Promise.resolve();
      let next = spare;
      for (const part of rest) {
        const source = await fsp.open(this.path(part.id), "r");
        try {
          for (let at = 0; at < part.length; ) {
            const into = next;
            const { bytesRead } = await source.read(into, 0, Math.min(into.byteLength, part.length - at), at);
            if (bytesRead === 0) throw new Error(`upload ${part.id} ended at byte ${at}, before ${part.length}`);
            const view = into.subarray(0, bytesRead);
            if (!carried) crc = crc32cUpdate(crc, view);
            await writing;
            writing = writeAll(handle, view, position);
            // Handled here so a failure while the next read runs is not an unhandled rejection; awaited above.
            writing.catch(() => {});
            position += bytesRead;
            at += bytesRead;
            next = into === buffer ? spare : buffer;
          }
        } finally {
          await writing.catch(() => {}); // its failure is thrown by the next `await writing`
          await source.close();
        }
        if (carried) crc = crc32cCombine(crc, part.crc32c!, part.length);
      }
      await writing;
      await handle.sync();
    } catch (err) {
      await handle.truncate(first.length).catch(() => {});
      throw err;
    } finally {
      await handle.close();
      // Freed now rather than left for a collection (gc-pacer.ts).
      freeNow(buffer);
      freeNow(spare);
    }
    const name = newBlobName();
    await fsp.link(file, path.join(this.blobDir, name));
    await syncDir(this.blobDir);
    return { name, size: position, checksum: checksumToBase64(crc) };
  }

  async remove(id: string): Promise<void> {
    await fsp.rm(this.path(id), { force: true });
  }

  async *list(): AsyncIterable<{ id: string; writtenAt: number }> {
    for (const id of await fsp.readdir(this.dir)) {
      const stat = await fsp.stat(path.join(this.dir, id)).catch(() => undefined);
      if (stat !== undefined && UPLOAD_ID.test(id)) yield { id, writtenAt: stat.mtimeMs };
    }
  }
}

/** Writes all of `bytes` at `position` (pwrite until done). */
async function writeAll(handle: fsp.FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  for (let off = 0; off < bytes.byteLength; ) {
    const { bytesWritten } = await handle.write(bytes, off, bytes.byteLength - off, position + off);
    off += bytesWritten;
  }
}

/**
 * CRC32C of the first `length` bytes of an open file, read 1 MiB at a time into `buffer`.
 * @throws when the file ends before `length`
 */
async function checksumOfFile(handle: fsp.FileHandle, id: string, length: number, buffer?: Buffer): Promise<number> {
  const into = buffer ?? Buffer.allocUnsafe(APPEND_BUFFER_BYTES);
  let crc = 0;
  try {
    for (let position = 0; position < length; ) {
      const { bytesRead } = await handle.read(into, 0, Math.min(into.byteLength, length - position), position);
      if (bytesRead === 0) throw new Error(`upload ${id} ended at byte ${position}, before ${length}`);
      crc = crc32cUpdate(crc, into.subarray(0, bytesRead));
      position += bytesRead;
    }
  } finally {
    if (buffer === undefined) freeNow(into);
  }
  return crc;
}
