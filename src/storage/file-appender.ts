/**
 * Sequential writes into one file at the speed of the disk: the bytes of a stream are gathered
 * into a few reused buffers, and a full buffer is written (pwrite(2) at its position) in the
 * background while the next one fills, so receiving, checksumming and writing overlap instead of
 * taking turns; and the disk is told to write back as the bytes arrive, not only at the end.
 * Shared by the blob writer (disk-blobs.ts) and resumable uploads' chunks (disk-partials.ts).
 *
 * The CRC32C of what is appended is continued over each chunk, so the caller gets the checksum
 * of exactly the bytes written.
 *
 * Measured (docs/benchmarks.md, issue 28): a 1 GiB upload spent ~2.5 s of its ~4 s checksumming
 * each 1 MiB buffer and then awaiting its write, with nothing read from the connection meanwhile.
 */
import type fsp from "node:fs/promises";
import { crc32cUpdate } from "../domain/checksum.ts";
import { gcPacer } from "../gc-pacer.ts";

/** Bytes per write(2): large writes keep the syscall count low. */
export const APPEND_BUFFER_BYTES = 1024 * 1024;
/**
 * Buffers per appender: one filling while the other is written. Four measured no faster and
 * raised a 1 GiB tus upload's peak over idle from 62.6–67.6 to 74.2–78.1 MiB (docs/benchmarks.md).
 */
const APPEND_BUFFERS = 2;
/**
 * Buffers kept between appenders (4 MiB, two uploads' worth): uploads one after another reuse them instead of
 * leaving 1 MiB of garbage each for a collection (64 KiB uploads at ~400/s would otherwise force
 * a full collection about every 64 of them, gc-pacer.ts).
 */
const SPARE_BUFFERS = 4;
/**
 * Bytes written between two background fdatasync(2) calls ({@link FileAppender.startWriteback}).
 * Measured (docs/benchmarks.md, issue 28): 2–8 MiB beat 16 and 64 MiB for a tus upload in 16 MiB
 * chunks (each PATCH's own fsync then finds at most this much left) and for one large POST.
 */
const WRITEBACK_BYTES = 8 * 1024 * 1024;
const spare: Buffer[] = [];

/**
 * Writes what {@link append} is given, in order, from `start` on, through at most
 * {@link APPEND_BUFFERS} buffers of {@link APPEND_BUFFER_BYTES} (2 MiB per appender at most). The
 * caller owns the handle: it waits for {@link finish} (or {@link settle} after a failure) before
 * it syncs, truncates or closes it.
 */
export class FileAppender {
  private readonly free: Buffer[] = [];
  private allocated = 0;
  private current: Buffer | undefined;
  private filled = 0;
  /** Where the next full buffer goes. */
  private position: number;
  private readonly inFlight = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;
  /** The background fdatasync(2) running, if any, and where the next one is due. */
  private syncing: Promise<void> | undefined;
  private syncDue: number;
  /** The CRC32C of every byte appended so far (unsigned). */
  private checksum = 0;

  /**
   * @param handle an open file, writable
   * @param start the byte offset of the first byte appended
   */
  constructor(
    private readonly handle: fsp.FileHandle,
    start: number,
  ) {
    this.position = start;
    this.syncDue = start + WRITEBACK_BYTES;
  }

  /** The offset just past the last byte handed to {@link append}. */
  get end(): number {
    return this.position + this.filled;
  }

  /**
   * Copies `chunk` into the current buffer; a buffer that fills is written in the background.
   * Waits only while every buffer is being written.
   * @throws the error of an earlier write that failed (ENOSPC, EIO)
   */
  async append(chunk: Uint8Array): Promise<void> {
    // The chunk, not the buffer it is copied into: it was just received, so it is still in the
    // CPU's cache (checksumming the 1 MiB buffers cost ~0.2 s more CPU per GiB, issue 28).
    this.checksum = crc32cUpdate(this.checksum, chunk);
    for (let off = 0; off < chunk.byteLength; ) {
      if (this.current === undefined) this.current = await this.take();
      const n = Math.min(chunk.byteLength - off, APPEND_BUFFER_BYTES - this.filled);
      this.current.set(chunk.subarray(off, off + n), this.filled);
      this.filled += n;
      off += n;
      if (this.filled === APPEND_BUFFER_BYTES) this.writeCurrent();
    }
  }

  /**
   * Writes what is left and waits for every write.
   * @returns the offset just past the last byte written, and the CRC32C (unsigned) of the bytes
   *   appended (from `start` to `end`)
   * @throws the first write's error
   */
  async finish(): Promise<{ end: number; crc32c: number }> {
    if (this.filled > 0) this.writeCurrent();
    await this.settle();
    if (this.failure !== undefined) throw this.failure.error;
    return { end: this.position, crc32c: this.checksum };
  }

  /** Waits for the writes in flight, whatever their outcome (before a failed write's cleanup). */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    if (this.current !== undefined) this.free.push(this.current);
    this.current = undefined;
    this.filled = 0;
    for (const buffer of this.free) {
      if (spare.length < SPARE_BUFFERS) spare.push(buffer);
      else gcPacer.add(APPEND_BUFFER_BYTES);
    }
    // A buffer whose write failed is garbage too.
    gcPacer.add((this.allocated - this.free.length) * APPEND_BUFFER_BYTES);
    this.allocated = 0;
    this.free.length = 0;
  }

  private async take(): Promise<Buffer> {
    for (;;) {
      if (this.failure !== undefined) throw this.failure.error;
      const buffer = this.free.pop();
      if (buffer !== undefined) return buffer;
      if (this.allocated < APPEND_BUFFERS) {
        this.allocated++;
        return spare.pop() ?? Buffer.allocUnsafe(APPEND_BUFFER_BYTES);
      }
      await Promise.race(this.inFlight);
    }
  }

  private writeCurrent(): void {
    const buffer = this.current!;
    const length = this.filled;
    const at = this.position;
    this.current = undefined;
    this.filled = 0;
    this.position += length;
    const write = (async () => {
      try {
        for (let off = 0; off < length; ) off += (await this.handle.write(buffer, off, length - off, at + off)).bytesWritten;
        this.free.push(buffer);
      } catch (error) {
        this.failure ??= { error };
      }
    })();
    this.inFlight.add(write);
    void write.then(() => {
      this.inFlight.delete(write);
      this.startWriteback(at + length);
    });
  }

  /**
   * Starts an fdatasync(2) in the background once {@link WRITEBACK_BYTES} more were written, so
   * the disk writes while the stream still arrives and the caller's final sync finds little left
   * (with a large page cache the kernel would otherwise start only at that sync).
   */
  private startWriteback(written: number): void {
    if (this.syncing !== undefined || written < this.syncDue) return;
    this.syncDue = written + WRITEBACK_BYTES;
    const sync = this.handle.datasync().catch(() => {}); // the caller's own sync reports a failure
    this.syncing = sync;
    this.inFlight.add(sync);
    void sync.then(() => {
      this.inFlight.delete(sync);
      this.syncing = undefined;
    });
  }
}
