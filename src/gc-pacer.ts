import { fullGC } from "bun:jsc";

/**
 * A full garbage collection, synchronous, through `bun:jsc`'s `fullGC` rather than
 * `Bun.gc(true)`: both free about the same (a 1 GiB tus upload peaked 70–76 MiB over idle with
 * either; 4 GiB up and down at once 132–141 MiB, within the runs' spread), but
 * a 1 GiB upload paced by `Bun.gc(true)` took 2.43 s of server CPU against 2.02 s, and 1.95 s
 * against 1.57 s of wall time (medians of 5 alternating rounds, 2026-11-26, issue 28), far more
 * than the collections themselves (15.8 vs 13.5 ms each): `Bun.gc(true)` leaves the process more
 * to redo after it than the collection.
 */
export function collectGarbage(): void {
  fullGC();
}

/**
 * Paces full garbage collections by the bytes of buffers turned into garbage. Bun frees a
 * large buffer only when a collection runs, and on its own pace the collector lets hundreds of
 * MiB of dead upload chunks or download buffers pile up (a 4 GiB upload added ~50 MiB to the
 * peak; 1000 abandoned downloads held 1.1 GiB for as long as no collection ran). One full
 * collection per {@link GcPacer.everyBytes} costs a few milliseconds (docs/benchmarks.md).
 */
export class GcPacer {
  private pending = 0;

  /** @param everyBytes garbage, in bytes, that triggers one full collection */
  constructor(readonly everyBytes: number) {}

  /** Counts `bytes` of buffers that are now garbage; collects once enough has gathered. */
  add(bytes: number): void {
    this.pending += bytes;
    if (this.pending < this.everyBytes) return;
    this.pending = 0;
    collectGarbage();
  }
}

/** The process's pacer for downloads, ZIPs and the appenders' buffers. */
export const gcPacer = new GcPacer(64 * 1024 * 1024);

/** The buffers of chunks the body reader has handed out and no one else holds (markReleasable). */
const releasable = new WeakSet<ArrayBufferLike>();

/**
 * Marks `chunk`, just read from a connection by the one body reader (node-exchange.ts) or copied
 * for one writer (FileService.copyOf), as its consumer's alone, so that the file appender may keep
 * it until written and {@link releaseChunk} may free it. Only a chunk that is its whole buffer is
 * marked. Any other chunk (a caller's own array, a pooled read buffer) is never freed, only
 * counted.
 */
export function markReleasable(chunk: Uint8Array): void {
  if (chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength && chunk.byteLength > 0) releasable.add(chunk.buffer);
}

/** Whether `chunk` is a whole buffer the body reader marked ({@link markReleasable}): its holder may keep it, or free it. */
export function isReleasable(chunk: Uint8Array): boolean {
  return releasable.has(chunk.buffer) && chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength;
}

/**
 * Frees `chunk`'s memory at once when the chunk is its whole ArrayBuffer: the buffer is detached
 * (`ArrayBuffer.prototype.transfer(0)`, ES2024), which releases the memory behind it without
 * waiting for a collection, and the chunk reads as empty after. For a chunk no one else holds
 * (a socket's read once parsed, the caller's own copy once written).
 * @returns whether it was freed (false: a part of a larger buffer, a shared or detached one)
 */
export function freeNow(chunk: Uint8Array): boolean {
  const buffer = chunk.buffer;
  if (!(buffer instanceof ArrayBuffer) || buffer.detached || chunk.byteOffset !== 0 || chunk.byteLength !== buffer.byteLength || chunk.byteLength === 0) return false;
  releasable.delete(buffer);
  buffer.transfer(0);
  return true;
}

/**
 * Frees a chunk the body reader marked ({@link markReleasable}), when it is that whole buffer,
 * at once, once its bytes have been copied or written ({@link freeNow}). Any other chunk is
 * counted on `pacer` as garbage instead. After this a marked chunk reads as empty: call it only
 * where the chunk is never read again.
 *
 * Measured (issue 38, 1 GiB WebDAV PUT, WORKERS=1, loopback, 512 KiB chunks): counted as garbage
 * on a pacer of 64 MiB the process sat 50–54 MiB over idle and peaked at 62.6–71.1 MiB, and took
 * 3.1–3.7 s of CPU; freed at once, 37–38 and 48–53 MiB in 2.8–3.2 s (71.5 MiB seen once in a full
 * run). Pacers of 32 and 12 MiB peaked 53.9–64.3 and 42–49 MiB, the latter at ~40% more CPU.
 */
export function releaseChunk(chunk: Uint8Array, pacer: GcPacer = gcPacer): void {
  // Only the whole buffer: a part of one (an aws-chunked body's data, s3/chunked.ts) shares it
  // with bytes its decoder has yet to read.
  if (!(isReleasable(chunk) && freeNow(chunk))) pacer.add(chunk.byteLength);
}
