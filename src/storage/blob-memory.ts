/**
 * What both blob stores (disk-blobs.ts, s3-blobs.ts) keep in memory, written once: the cache of
 * small blobs, the reused buffers of a read, and the removals delayed for readers' grace; and
 * fsync(2) of a directory.
 */
import fsp from "node:fs/promises";
import type { ReadPlan } from "./ports.ts";
import { logError } from "../log.ts";

/** Blobs up to this size are served from memory once read: they are immutable, never stale. */
export const SMALL_BLOB_BYTES = 64 * 1024;
/** Memory the small-blob cache may hold; the least recently used blobs leave first. */
const SMALL_BLOB_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * How long a blob that is no longer referenced stays in the store. A reader that looked up the
 * old blob name just before a replace or delete committed still finds it when it opens it
 * (opening happens right after the lookup; once open, removal no longer affects the reader).
 */
export const REMOVAL_GRACE_MS = 30_000;

/** Small blobs by name, whole, least recently used first (a Map keeps insertion order). */
export class SmallBlobCache {
  private readonly blobs = new Map<string, Uint8Array>();
  /** Bytes held now. */
  bytes = 0;

  /** The blob's bytes if cached and exactly `size` long (the metadata's size); undefined otherwise. */
  get(name: string, size: number): Uint8Array | undefined {
    const bytes = size <= SMALL_BLOB_BYTES ? this.blobs.get(name) : undefined;
    if (bytes === undefined || bytes.byteLength !== size) return undefined;
    this.blobs.delete(name);
    this.blobs.set(name, bytes);
    return bytes;
  }

  /** Keeps `bytes` (at most {@link SMALL_BLOB_BYTES}) under `name`, dropping the oldest past 32 MiB. */
  put(name: string, bytes: Uint8Array): void {
    if (bytes.byteLength > SMALL_BLOB_BYTES || this.blobs.has(name)) return;
    this.blobs.set(name, bytes);
    this.bytes += bytes.byteLength;
    for (const [oldest, b] of this.blobs) {
      if (this.bytes <= SMALL_BLOB_CACHE_BYTES) break;
      this.blobs.delete(oldest);
      this.bytes -= b.byteLength;
    }
  }

  /** Drops a blob (it is being removed). */
  forget(name: string): void {
    const bytes = this.blobs.get(name);
    if (bytes === undefined) return;
    this.blobs.delete(name);
    this.bytes -= bytes.byteLength;
  }
}

/**
 * The buffers of one read: at most `plan.buffers` of `plan.chunkBytes`, a buffer handed out again
 * only after it was released. `take()` waits for a release, and gives up (undefined) once
 * `plan.signal` fires, so a reader whose consumer is gone never waits forever.
 */
export class BufferPool implements Disposable {
  private readonly free: Buffer[] = [];
  private allocated = 0;
  private wake: (() => void) | undefined;
  private readonly stop = () => this.wake?.();

  constructor(private readonly plan: ReadPlan) {
    plan.signal?.addEventListener("abort", this.stop);
  }

  /** A free buffer, or undefined when the read was aborted. */
  async take(): Promise<Buffer | undefined> {
    while (this.free.length === 0 && this.allocated === this.plan.buffers) {
      if (this.plan.signal?.aborted) return undefined;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
    if (this.plan.signal?.aborted) return undefined;
    return this.free.pop() ?? (this.allocated++, Buffer.allocUnsafe(this.plan.chunkBytes));
  }

  /** Gives a buffer back (its chunk was written). */
  release(buffer: Buffer): void {
    this.free.push(buffer);
    this.wake?.();
  }

  /** Bytes this read allocated (for the GC pacer). */
  get allocatedBytes(): number {
    return this.allocated * this.plan.chunkBytes;
  }

  [Symbol.dispose](): void {
    this.plan.signal?.removeEventListener("abort", this.stop);
  }
}

/** Removals started at once when their time comes, at most; the next batch waits for these to end. */
const REMOVAL_BATCH = 64;

/**
 * Removals run `graceMs` after they are asked for ({@link REMOVAL_GRACE_MS} unless a test
 * shortens it: CUBBY_TEST_REMOVAL_GRACE_MS, config.ts), at most once per name.
 *
 * One queue and one timer, not a timer per name: a recursive delete of 7 000 files asks for
 * 7 000 removals in one turn of the event loop, and 7 000 timers were tens of ms to set, then
 * fired together 30 s later as 7 000 unlinks started in one turn (CONTRACT §14). The grace is the
 * same for every name, so the queue is in order of when each is due; due removals run
 * {@link REMOVAL_BATCH} at a time, each batch after the last has ended.
 */
export class DelayedRemovals {
  /** Names in the order asked for, with when each is due (performance.now() ms); [head] is next. */
  private queue: { name: string; due: number }[] = [];
  private head = 0;
  /** Names asked for whose removal has not started. */
  private readonly pending = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private draining = false;

  /**
   * @param remove removes one blob now
   * @param graceMs how long a removal waits (ms)
   */
  constructor(
    private readonly remove: (name: string) => Promise<void>,
    private readonly graceMs = REMOVAL_GRACE_MS,
  ) {}

  /** Removes `name` after the grace period; a failure is logged (the sweep removes it later). */
  schedule(name: string): void {
    if (this.pending.has(name)) return;
    this.pending.add(name);
    this.queue.push({ name, due: performance.now() + this.graceMs });
    this.arm();
  }

  /** Stops the removals that have not started. @returns their names */
  cancel(): string[] {
    clearTimeout(this.timer);
    this.timer = undefined;
    const names = [...this.pending];
    this.pending.clear();
    this.queue = [];
    this.head = 0;
    return names;
  }

  /** Sets the timer for the next due removal, unless one is set or a drain is running. */
  private arm(): void {
    if (this.timer !== undefined || this.draining) return;
    const next = this.queue[this.head];
    if (next === undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.drain();
    }, Math.max(0, next.due - performance.now()));
    this.timer.unref();
  }

  /** Runs the removals that are due, a batch at a time. */
  private async drain(): Promise<void> {
    this.draining = true;
    try {
      for (;;) {
        const now = performance.now();
        const batch: string[] = [];
        while (batch.length < REMOVAL_BATCH && this.head < this.queue.length && this.queue[this.head]!.due <= now) {
          const { name } = this.queue[this.head++]!;
          if (this.pending.delete(name)) batch.push(name);
        }
        if (this.head > 1024 && this.head * 2 > this.queue.length) {
          this.queue = this.queue.slice(this.head);
          this.head = 0;
        }
        if (batch.length === 0) break;
        await Promise.all(batch.map((name) => this.remove(name).catch((err) => logError(`blob ${name}: removal failed (the sweep will remove it): ${err}`))));
      }
    } finally {
      this.draining = false;
      this.arm();
    }
  }
}

/** fsync(2) on a directory, making renames and removals in it durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
