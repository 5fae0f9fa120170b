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
    Bun.gc(true);
  }
}

/** The process's one pacer: uploads and downloads share it. */
export const gcPacer = new GcPacer(64 * 1024 * 1024);
