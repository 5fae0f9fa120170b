/**
 * Slices of synchronous work (CONTRACT §14): a serving process runs SQLite queries synchronously,
 * so a loop of many small queries holds its event loop for every client. A long job (a tree
 * walk, a recursive delete, an export, a batch of WebDAV properties) calls
 * {@link Slicer.breathe} between steps; once {@link SLICE_MS} of work has passed since the last
 * yield, it yields to the event loop (`setImmediate`: after pending I/O callbacks, so a waiting
 * `/healthz` is answered), else it returns at once without allocating.
 */

/** The longest stretch of work between two yields, in milliseconds. */
export const SLICE_MS = 8;

/** Yields to the event loop: resolves after the I/O callbacks already due have run. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Measures one job's stretch of work since its last yield. */
export class Slicer {
  private since = performance.now();

  constructor(private readonly sliceMs = SLICE_MS) {}

  /**
   * Yields when the current stretch has run {@link SLICE_MS} or more; `undefined` (nothing to
   * await) otherwise, so a hot loop can write `await slicer.breathe()` at no cost.
   */
  breathe(): Promise<void> | undefined {
    if (performance.now() - this.since < this.sliceMs) return undefined;
    return yieldToLoop().then(() => {
      this.since = performance.now();
    });
  }
}
