/**
 * Writing one object to an S3-compatible store as a stream, the way both S3 writers need it
 * (s3-blobs.ts for blobs, s3-partials.ts for resumable uploads' chunks): one multipart part in
 * memory at a time, and the object completed only after the caller's last check, so a write that
 * fails is never visible.
 */
import type { S3File } from "bun";
import { gcPacer } from "../gc-pacer.ts";

/** How {@link writeObject} writes: its part size and the caller's checks. */
export interface ObjectWrite {
  /** Multipart part size, bytes (S3: at least 5 MiB but for the last part). */
  partBytes: number;
  /** Sees every chunk before it is written (size limits, checksums); throwing aborts the write. */
  onChunk(chunk: Uint8Array): void;
  /** Runs after the last chunk, before the object is completed; throwing aborts the write. */
  beforeEnd?(size: number): void;
  /** Whether a body of no bytes makes no object (a tus chunk) rather than an empty one (a blob). */
  emptyIsNothing?: boolean;
}

/**
 * Streams `content` into `file` and completes it, then checks the stored size.
 * Bun's `writer().write()` returns no promise and buffers whatever it is given, so the writer is
 * flushed once per part; and each chunk counts twice towards the GC pacer, as the connection's
 * chunk and then the writer's part buffer both become garbage (a 1 GiB upload peaked 64 MiB over
 * idle counted once, 56 counted twice).
 * @returns the bytes written (0 and no object for an empty body with `emptyIsNothing`)
 * @throws what `onChunk` / `beforeEnd` throw, or the store's error; the multipart upload is then
 *   aborted and any completed object deleted
 */
export async function writeObject(file: S3File, content: AsyncIterable<Uint8Array> | null, opts: ObjectWrite): Promise<number> {
  const writer = file.writer({ partSize: opts.partBytes, queueSize: 1, retry: 3 });
  let size = 0;
  let pending = 0;
  try {
    if (content !== null) {
      for await (const chunk of content) {
        opts.onChunk(chunk);
        size += chunk.byteLength;
        writer.write(chunk);
        pending += chunk.byteLength;
        gcPacer.add(chunk.byteLength * 2);
        if (pending >= opts.partBytes) {
          await writer.flush();
          pending = 0;
        }
      }
    }
    opts.beforeEnd?.(size);
    if (size === 0 && opts.emptyIsNothing) {
      await Promise.resolve(writer.end(new Error("empty body"))).catch(() => {});
      return 0;
    }
    await writer.end();
    const stored = await file.stat();
    if (stored.size !== size) throw new Error(`S3 object ${file.name} holds ${stored.size} bytes, ${size} were sent`);
    return size;
  } catch (err) {
    // An unfinished multipart upload is aborted by end(err); a completed object is deleted.
    await Promise.resolve(writer.end(err instanceof Error ? err : undefined)).catch(() => {});
    await file.delete().catch(() => {});
    throw err;
  }
}
