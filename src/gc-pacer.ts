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

/**
 * Frees a chunk read from a connection at once, once its bytes have been copied and nothing else
 * holds it: its ArrayBuffer is detached (`ArrayBuffer.prototype.transfer(0)`, ES2024), which
 * releases the memory behind it without waiting for a collection. Only a chunk that is its whole
 * buffer is freed (a view into a pooled or shared one is left alone, and counted on `pacer`
 * instead). After this the chunk reads as empty: call it only where the chunk is
 * never read again.
 *
 * Measured (issue 38, 1 GiB WebDAV PUT, WORKERS=1, loopback, 512 KiB chunks): counted as garbage
 * on a pacer of 64 MiB the process sat 50–54 MiB over idle and peaked at 62.6–71.1 MiB; a pacer of
 * 32 MiB peaked 53.9–64.3, of 12 MiB 42–49 at ~40% more CPU.
 */
export function releaseChunk(chunk: Uint8Array, pacer: GcPacer = gcPacer): void {
  const buffer = chunk.buffer;
  if (chunk.byteOffset === 0 && chunk.byteLength === buffer.byteLength && buffer instanceof ArrayBuffer && !buffer.detached && chunk.byteLength > 0) {
    buffer.transfer(0);
  } else pacer.add(chunk.byteLength);
}
