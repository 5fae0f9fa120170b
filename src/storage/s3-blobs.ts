/**
 * Blob storage in a bucket of any S3-compatible store (CONTRACT §7), through Bun's S3 client:
 * the second implementation of the {@link BlobStore} port, for several instances sharing one
 * bucket. Objects live at `S3_PREFIX + "blobs/" + name` and `… "quarantine/" …`.
 *
 * - An upload streams as a multipart upload under a fresh name, several parts in flight in a
 *   fixed set of part buffers (s3-object-writer.ts); reading from the client waits while all are
 *   in flight. CRC32C and size are computed on the way; the object's size is checked with a HEAD
 *   after it completes, and only then does the caller commit the row. No `x-amz-checksum-*`
 *   header is sent (Backblaze B2 refuses them; Swift ignores them).
 * - A download passes its range to the store (`Range`) and streams it.
 * - An object that no row refers to may be another instance's upload about to commit: sweeps
 *   leave those younger than an hour ({@link S3BlobStore.orphanGraceMs}). A multipart upload
 *   left by a crash is invisible and never completes; the store discards it by its own rules
 *   (on AWS, a lifecycle rule `AbortIncompleteMultipartUpload`, see docs/scale-out.md).
 */
import { S3Client } from "bun";
import { AppError } from "../errors.ts";
import { checksumToBase64, crc32cUpdate } from "../domain/checksum.ts";
import { newBlobName } from "../domain/ids.ts";
import { BufferPool, DelayedRemovals, REMOVAL_GRACE_MS, SMALL_BLOB_BYTES, SmallBlobCache } from "./blob-memory.ts";
import type { BlobChunk, BlobStore, ByteRange, ReadPlan, StagedBlob, WriteOptions } from "./ports.ts";
import { writeObject, type ObjectStore } from "./s3-object-writer.ts";
import { S3Partials } from "./s3-partials.ts";
import { S3Signer } from "./s3-signer.ts";

/** Where and how to reach the bucket (CONTRACT §7 variables). */
export interface S3Settings {
  bucket: string;
  /** e.g. `http://127.0.0.1:9000`; undefined: AWS for `region`. */
  endpoint: string | undefined;
  region: string;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  /** Key prefix inside the bucket ("" or ending in "/"). */
  prefix: string;
  virtualHostedStyle: boolean;
}

/**
 * Bytes per multipart part: S3's minimum (except the last part), which keeps what an upload holds
 * smallest ({@link PARTS_IN_FLIGHT} + 1 part buffers), unless the upload limit needs larger parts
 * to stay within S3's 10 000 parts.
 */
function partBytes(maxBytes: number): number {
  const MiB = 1024 * 1024;
  if (!Number.isFinite(maxBytes)) return 5 * MiB;
  return Math.max(5 * MiB, Math.ceil(maxBytes / 10_000 / MiB) * MiB);
}

/**
 * Multipart parts sent at once by one upload (s3-object-writer.ts): an upload holds one more part
 * buffer than this. Measured for a 1 GiB upload with 5 MiB parts against the Swift store (peak RSS
 * over idle): 1 in flight 41 MiB, 2: 44, 3: 49, 4: 55, 6: 66 (docs/benchmarks.md, issue 28).
 */
const PARTS_IN_FLIGHT = 4;

/** The {@link BlobStore} port on an S3-compatible bucket (see the module comment). */
export class S3BlobStore implements BlobStore {
  /** Other instances write this bucket: an unreferenced object younger than this may be theirs. */
  readonly orphanGraceMs = 60 * 60 * 1000;
  private readonly client: S3Client;
  /** The bucket as s3-object-writer.ts writes to it. */
  private readonly objects: ObjectStore;
  /** Blobs up to 64 KiB read whole are kept in memory, as on disk. */
  private readonly small = new SmallBlobCache();
  private readonly removals: DelayedRemovals;
  /** Unfinished resumable uploads, one object per chunk under `uploads/` (s3-partials.ts). */
  readonly partials: S3Partials;

  /**
   * @param settings the bucket and its credentials (S3_*, CONTRACT §7)
   * @param removalGraceMs how long a replaced or deleted object stays for readers (ms;
   *   REMOVAL_GRACE_MS, blob-memory.ts, unless a test shortens it)
   */
  constructor(
    private readonly settings: S3Settings,
    removalGraceMs = REMOVAL_GRACE_MS,
  ) {
    this.removals = new DelayedRemovals((name) => this.remove(name), removalGraceMs);
    this.client = new S3Client({
      bucket: settings.bucket,
      endpoint: settings.endpoint,
      region: settings.region,
      accessKeyId: settings.accessKeyId,
      secretAccessKey: settings.secretAccessKey,
      virtualHostedStyle: settings.virtualHostedStyle,
    });
    this.objects = { client: this.client, signer: new S3Signer(this.client, settings), partsInFlight: PARTS_IN_FLIGHT };
    this.partials = new S3Partials(this.objects, (p) => this.key(p), (content, opts) => this.write(content, opts));
  }

  /**
   * Checks that the bucket can be listed with these credentials (at start: a wrong endpoint,
   * bucket or key is one clear error instead of a 503 on the first upload).
   * @throws Error naming the bucket and what the store said
   */
  async check(): Promise<void> {
    try {
      await this.client.list({ prefix: this.key("blobs/"), maxKeys: 1 });
    } catch (err) {
      throw new Error(`S3 bucket ${this.settings.bucket} at ${this.settings.endpoint ?? "AWS"}: ${(err as Error).message}`);
    }
  }

  async write(content: AsyncIterable<Uint8Array> | null, opts: WriteOptions): Promise<StagedBlob> {
    const name = newBlobName();
    let crc = 0;
    let size = 0;
    let checksum = "";
    await writeObject(this.objects, this.blobKey(name), content, {
      partBytes: partBytes(opts.maxBytes),
      onChunk: (chunk) => {
        size += chunk.byteLength;
        if (size > opts.maxBytes) throw new AppError("payload_too_large", `content is larger than the limit of ${opts.maxBytes} bytes`);
        crc = crc32cUpdate(crc, chunk);
      },
      beforeEnd: () => {
        checksum = checksumToBase64(crc);
        if (opts.expectedChecksum !== undefined && opts.expectedChecksum !== checksum) {
          throw new AppError("invalid_argument", `checksum mismatch: the client declared CRC32C ${opts.expectedChecksum}, the content has ${checksum}`);
        }
      },
    });
    return { name, size, checksum };
  }

  cached(name: string, size: number): Uint8Array | undefined {
    return this.small.get(name, size);
  }

  /**
   * Streams `range` from the store (a ranged GET) into at most `plan.buffers` reused buffers of
   * `plan.chunkBytes`, yielded full (the last may be shorter), each refilled once released, as
   * the disk store does; a small blob read whole is kept in memory for {@link cached}.
   */
  async *read(name: string, range: ByteRange, plan: ReadPlan): AsyncIterable<BlobChunk> {
    if (range.length === 0) return;
    const reader = this.client.file(this.blobKey(name)).slice(range.start, range.start + range.length).stream().getReader();
    using pool = new BufferPool(plan);
    const small = range.start === 0 && range.length <= SMALL_BLOB_BYTES ? Buffer.allocUnsafe(range.length) : undefined;
    let received = 0;
    let pending: Uint8Array | undefined;
    try {
      while (received < range.length) {
        const buffer = await pool.take();
        if (buffer === undefined) break;
        const want = Math.min(plan.chunkBytes, range.length - received);
        let filled = 0;
        while (filled < want) {
          if (pending === undefined || pending.byteLength === 0) {
            const next = await reader.read();
            if (next.done) throw new Error(`blob ${name} ended at byte ${range.start + received + filled}, before ${range.start + range.length}`);
            pending = next.value;
          }
          const n = Math.min(pending.byteLength, want - filled);
          buffer.set(pending.subarray(0, n), filled);
          pending = pending.subarray(n);
          filled += n;
        }
        small?.set(buffer.subarray(0, filled), received);
        received += filled;
        if (plan.signal?.aborted) break;
        yield { bytes: buffer.subarray(0, filled), release: () => pool.release(buffer) };
      }
      if (small !== undefined && received === range.length) this.small.put(name, small);
    } finally {
      await reader.cancel().catch(() => {});
    }
  }

  async verify(name: string): Promise<{ size: number; checksum: string } | undefined> {
    const file = this.client.file(this.blobKey(name));
    if (!(await file.exists())) return undefined;
    let crc = 0;
    let size = 0;
    for await (const chunk of file.stream()) {
      crc = crc32cUpdate(crc, chunk);
      size += chunk.byteLength;
    }
    return { size, checksum: checksumToBase64(crc) };
  }

  async remove(name: string): Promise<void> {
    this.small.forget(name);
    await this.client.delete(this.blobKey(name));
  }

  removeLater(name: string): void {
    this.removals.schedule(name);
  }

  async *list(): AsyncIterable<{ name: string; writtenAt: number }> {
    const prefix = this.blobKey("");
    let continuationToken: string | undefined;
    do {
      const page = await this.client.list({ prefix, continuationToken });
      for (const o of page.contents ?? []) {
        yield { name: o.key.slice(prefix.length), writtenAt: o.lastModified === undefined ? Date.now() : Date.parse(o.lastModified) };
      }
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined;
    } while (continuationToken !== undefined);
  }

  /** Unfinished multipart uploads are the store's to discard (see the module comment). */
  async sweepUnfinished(): Promise<number> {
    return 0;
  }

  /** Copies the object to `quarantine/NAME` with `quarantine/NAME.json` beside it, then deletes it. */
  async quarantine(name: string, note: unknown): Promise<void> {
    await this.client.write(this.key(`quarantine/${name}.json`), `${JSON.stringify(note, null, 2)}\n`);
    const source = this.client.file(this.blobKey(name));
    if (!(await source.exists())) return;
    await this.client.write(this.key(`quarantine/${name}`), source);
    await this.remove(name);
  }

  /**
   * Drops pending removals without running them: other instances' readers may still be inside
   * the grace period, and the objects are unreferenced, so the sweep removes them after an hour.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    this.removals.cancel();
  }

  private key(path: string): string {
    return this.settings.prefix + path;
  }

  private blobKey(name: string): string {
    return this.key(`blobs/${name}`);
  }
}
