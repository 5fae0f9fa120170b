/**
 * Sequential writes into one file at the speed of the disk: the chunks of a stream are gathered
 * (kept, not copied) until 1 MiB is there, written with one writev(2) at their position in the
 * background while the next ones gather, so receiving, checksumming and writing overlap instead
 * of taking turns; and the disk is told to write back as the bytes arrive, not only at the end.
 * Shared by the blob writer (disk-blobs.ts) and resumable uploads' chunks (disk-partials.ts).
 *
 * The CRC32C of what is appended is continued over each chunk, so the caller gets the checksum
 * of exactly the bytes written.
 *
 * Measured (docs/benchmarks.md, issue 28): a 1 GiB upload spent ~2.5 s of its ~4 s checksumming
 * each 1 MiB buffer and then awaiting its write, with nothing read from the connection meanwhile.
 */
import type fsp from "node:fs/promises";
import { bodyBudget, type BudgetShare, type ByteBudget } from "../body-budget.ts";
import { crc32cUpdate } from "../domain/checksum.ts";
import { freeNow, isReleasable, releaseChunk } from "../gc-pacer.ts";

/** Bytes per write: large writes keep the syscall count low. */
export const APPEND_BUFFER_BYTES = 1024 * 1024;
/**
 * Writes in flight per appender: one written while the next gathers. Four buffers measured no
 * faster and raised a 1 GiB tus upload's peak over idle from 62.6–67.6 to 74.2–78.1 MiB
 * (docs/benchmarks.md, issue 28).
 */
const WRITES_IN_FLIGHT = 2;
/** The most an appender holds, in bytes (past its first chunk): what its writes in flight may hold. */
const APPEND_CEILING_BYTES = WRITES_IN_FLIGHT * APPEND_BUFFER_BYTES;
/** Chunks per write at most (writev(2) takes up to IOV_MAX, 1 024 on Linux). */
const MAX_CHUNKS_PER_WRITE = 512;
/**
 * Bytes written between two background fdatasync(2) calls ({@link FileAppender.startWriteback}).
 * Measured (docs/benchmarks.md, issue 28): 2–8 MiB beat 16 and 64 MiB for a tus upload in 16 MiB
 * chunks (each PATCH's own fsync then finds at most this much left) and for one large POST.
 */
const WRITEBACK_BYTES = 8 * 1024 * 1024;

/**
 * Writes what {@link append} is given, in order, from `start` on: chunks are gathered as they are
 * (not copied) until {@link APPEND_BUFFER_BYTES} are there, then written with one writev(2) at
 * their position in the background while the next ones gather; each chunk is freed once written.
 * What it holds (gathered and being written, at most {@link APPEND_CEILING_BYTES} past one chunk)
 * counts on the process's body budget (body-budget.ts): when the budget is full it writes what it
 * has and waits for its writes. The caller owns the handle: it waits for {@link finish} (or
 * {@link settle} after a failure) before it syncs, truncates or closes it.
 *
 * Before issue 42 each appender copied into two 1 MiB buffers of its own: ten parts of an S3
 * multipart upload at once held 20 MiB of them, and each part's left 2 MiB of garbage.
 */
export class FileAppender {
  /** Chunks gathered for the next write, and their bytes. */
  private gathered: Uint8Array[] = [];
  private gatheredBytes = 0;
  /** Where the next write goes (the first gathered byte's offset). */
  private position: number;
  private readonly inFlight = new Set<Promise<void>>();
  private writes = 0;
  private failure: { error: unknown } | undefined;
  /** The background fdatasync(2) running, if any, and where the next one is due. */
  private syncing: Promise<void> | undefined;
  private syncDue: number;
  /** The CRC32C of every byte appended so far (unsigned). */
  private checksum = 0;
  private readonly share: BudgetShare;
  /** Resolves the wait for room in the budget ({@link room}). */
  private roomFreed: (() => void) | undefined;

  /**
   * @param handle an open file, writable
   * @param start the byte offset of the first byte appended
   * @param budget where what it holds is counted (the process's, unless a test gives its own)
   */
  constructor(
    private readonly handle: fsp.FileHandle,
    start: number,
    budget: ByteBudget = bodyBudget,
  ) {
    this.position = start;
    this.syncDue = start + WRITEBACK_BYTES;
    this.share = budget.join(APPEND_CEILING_BYTES, () => this.roomFreed?.());
  }

  /** The offset just past the last byte handed to {@link append}. */
  get end(): number {
    return this.position + this.gatheredBytes;
  }

  /**
   * Takes `chunk` to be written: a chunk the body reader marked as its consumer's alone
   * (gc-pacer.ts markReleasable) is kept as it is and freed once written; any other (a caller's
   * buffer, a part of a larger one) is copied first, since its owner may reuse it. Waits while
   * the appender holds all the budget allows it (writes in flight).
   * @throws the error of an earlier write that failed (ENOSPC, EIO)
   */
  async append(chunk: Uint8Array): Promise<void> {
    if (chunk.byteLength === 0) return;
    if (this.failure !== undefined) throw this.failure.error;
    // The chunk as it came: it was just received, so it is still in the CPU's cache
    // (checksumming 1 MiB buffers later cost ~0.2 s more CPU per GiB, issue 28).
    this.checksum = crc32cUpdate(this.checksum, chunk);
    const own = isReleasable(chunk) ? chunk : copied(chunk);
    while (!this.share.mayHold(own.byteLength) || this.writes >= WRITES_IN_FLIGHT) {
      if (this.writes < WRITES_IN_FLIGHT && this.gatheredBytes > 0) {
        this.writeGathered();
        continue;
      }
      this.share.whenRoom();
      await this.room();
      const failure = this.failure as { error: unknown } | undefined;
      if (failure !== undefined) {
        freeNow(own);
        throw failure.error;
      }
    }
    this.gathered.push(own);
    this.gatheredBytes += own.byteLength;
    this.share.hold(own.byteLength);
    // A whole batch, or at once while other bodies wait for room (what it holds goes sooner).
    if (this.gatheredBytes >= APPEND_BUFFER_BYTES || this.gathered.length >= MAX_CHUNKS_PER_WRITE || (this.share.contended && this.writes < WRITES_IN_FLIGHT)) this.writeGathered();
  }

  /**
   * Writes what is left and waits for every write.
   * @returns the offset just past the last byte written, and the CRC32C (unsigned) of the bytes
   *   appended (from `start` to `end`)
   * @throws the first write's error
   */
  async finish(): Promise<{ end: number; crc32c: number }> {
    while (this.gatheredBytes > 0 && this.failure === undefined) {
      if (this.writes < WRITES_IN_FLIGHT) this.writeGathered();
      else await Promise.race(this.inFlight);
    }
    await this.settle();
    if (this.failure !== undefined) throw this.failure.error;
    return { end: this.position, crc32c: this.checksum };
  }

  /**
   * Waits for the writes in flight, whatever their outcome (before a failed write's cleanup),
   * frees what was gathered and not written, and leaves the budget.
   */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    for (const chunk of this.gathered) freeNow(chunk);
    this.gathered = [];
    this.gatheredBytes = 0;
    this.share.leave();
  }

  /** Waits until a write ends or the budget has room (whichever comes first). */
  private room(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.roomFreed = undefined;
        resolve();
      };
      this.roomFreed = done;
      void Promise.race(this.inFlight).then(done, done);
    });
  }

  private writeGathered(): void {
    const chunks = this.gathered;
    const length = this.gatheredBytes;
    const at = this.position;
    this.gathered = [];
    this.gatheredBytes = 0;
    this.position += length;
    this.writes++;
    const write = (async () => {
      try {
        await writeChunks(this.handle, chunks, at);
      } catch (error) {
        this.failure ??= { error };
      } finally {
        for (const chunk of chunks) freeNow(chunk);
        this.share.release(length);
      }
    })();
    this.inFlight.add(write);
    void write.then(() => {
      this.writes--;
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
    if (this.syncing !== undefined || written < this.syncDue || this.failure !== undefined) return;
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

/**
 * A copy of `chunk`, the appender's own; the chunk itself is counted as garbage on the process's
 * pacer (gc-pacer.ts releaseChunk: a part of a body reader's chunk, an aws-chunked body's data,
 * leaves the whole chunk to a collection).
 */
function copied(chunk: Uint8Array): Uint8Array {
  const copy = chunk.slice();
  releaseChunk(chunk);
  return copy;
}

/** Writes all of `chunks`, in order, at `position`: one writev(2), again for what a short write left. */
async function writeChunks(handle: fsp.FileHandle, chunks: Uint8Array[], position: number): Promise<void> {
  let left = chunks;
  for (let at = position; left.length > 0; ) {
    let written = left.length === 1 ? (await handle.write(left[0]!, 0, left[0]!.byteLength, at)).bytesWritten : (await handle.writev(left, at)).bytesWritten;
    at += written;
    // Drop what was written; a chunk written in part continues from where it stopped.
    let i = 0;
    while (i < left.length && written >= left[i]!.byteLength) written -= left[i++]!.byteLength;
    left = left.slice(i);
    if (written > 0) left[0] = left[0]!.subarray(written);
  }
}
