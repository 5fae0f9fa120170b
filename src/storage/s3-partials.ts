/**
 * The partial bytes of resumable uploads in an S3-compatible bucket: one object per chunk,
 * `uploads/{upload ID}/{offset, 16 digits}.{random}`. S3 multipart parts must be ≥ 5 MiB
 * (except the last), tus chunks need not be, and a part cannot be replaced once another follows
 * it, so chunks are objects of their own. When the last byte arrives, the chunks are streamed
 * in order through the store's normal write path into one new blob (CRC32C computed on the way).
 *
 * Which chunks make the upload: starting at offset 0, a chunk starting where the previous one
 * ended, up to the length. Writers hold the upload's lock (storage/upload-locks.ts), one at a
 * time, and a writer first deletes every chunk at or past the committed offset it writes at: a
 * chunk a crash left behind (written, its offset never committed) is gone before another takes
 * its place, so the chain is the committed chunks. A chunk whose checksum failed is never
 * completed: its write is aborted before the object exists.
 */
import { AppError } from "../errors.ts";
import { chunkDigest } from "./chunk-digest.ts";
import { writeObject, type ObjectStore } from "./s3-object-writer.ts";
import type { StagedBlob, WriteOptions } from "./ports.ts";
import type { AppendOptions, PartialUploads } from "./upload-ports.ts";

/** Part size of a chunk's own multipart write: S3's minimum. */
const CHUNK_PART_BYTES = 5 * 1024 * 1024;
const UPLOAD_ID = /^[A-Za-z0-9_-]{1,64}$/;

interface Chunk {
  key: string;
  start: number;
  size: number;
}

/** {@link PartialUploads} in a bucket (see the module comment). */
export class S3Partials implements PartialUploads {
  private readonly client: ObjectStore["client"];

  constructor(
    /** The bucket (Bun's client for listing, reading and deleting; s3-object-writer.ts writes). */
    private readonly objects: ObjectStore,
    /** The bucket key of a path below the deployment's prefix. */
    private readonly key: (path: string) => string,
    /** The store's blob write (multipart, CRC32C, size check). */
    private readonly write: (content: AsyncIterable<Uint8Array>, opts: WriteOptions) => Promise<StagedBlob>,
  ) {
    this.client = objects.client;
  }

  private prefix(id: string): string {
    if (!UPLOAD_ID.test(id)) throw new Error(`not an upload ID: ${JSON.stringify(id)}`);
    return this.key(`uploads/${id}/`);
  }

  async append(id: string, offset: number, content: AsyncIterable<Uint8Array> | null, opts: AppendOptions): Promise<{ bytes: number }> {
    // The caller holds the upload's lock and writes at the committed offset: a chunk starting
    // there or later was never committed (its writer crashed, or failed before its commit), and
    // must not be chained in place of this one.
    for (const c of await this.chunks(id)) if (c.start >= offset) await this.client.delete(c.key);
    const key = `${this.prefix(id)}${String(offset).padStart(16, "0")}.${crypto.randomUUID()}`;
    const digest = chunkDigest(opts.checksum);
    let size = 0;
    const bytes = await writeObject(this.objects, key, content, {
      partBytes: CHUNK_PART_BYTES,
      onChunk: (chunk) => {
        size += chunk.byteLength;
        if (size > opts.maxBytes) throw new AppError("payload_too_large", `the chunk is longer than the ${opts.maxBytes} bytes left of the upload`);
        digest?.update(chunk);
      },
      // Checked before the object is completed: a chunk that fails never becomes visible.
      beforeEnd: () => digest?.verify(),
      emptyIsNothing: true,
    });
    return { bytes };
  }

  async stage(id: string, length: number): Promise<StagedBlob> {
    const chain = chainOf(await this.chunks(id), length);
    if (chain === undefined) throw new Error(`upload ${id}: the stored chunks do not cover its ${length} bytes`);
    const client = this.client;
    async function* bytes(): AsyncIterable<Uint8Array> {
      for (const c of chain!) yield* client.file(c.key).stream();
    }
    const staged = await this.write(bytes(), { maxBytes: length });
    if (staged.size !== length) throw new Error(`upload ${id}: staged ${staged.size} bytes, not ${length}`);
    return staged;
  }

  /**
   * The parts' chunk chains, in order, streamed through the store's write (multipart, CRC32C,
   * constant memory), as {@link stage} does for one upload. The chunks stay until {@link remove}.
   */
  async concat(parts: readonly { id: string; length: number }[]): Promise<StagedBlob> {
    const chains: Chunk[][] = [];
    for (const p of parts) {
      const chain = chainOf(await this.chunks(p.id), p.length);
      if (chain === undefined) throw new Error(`upload ${p.id}: the stored chunks do not cover its ${p.length} bytes`);
      chains.push(chain);
    }
    const total = parts.reduce((n, p) => n + p.length, 0);
    const client = this.client;
    async function* bytes(): AsyncIterable<Uint8Array> {
      for (const chain of chains) for (const c of chain) yield* client.file(c.key).stream();
    }
    const staged = await this.write(bytes(), { maxBytes: total });
    if (staged.size !== total) throw new Error(`concatenation staged ${staged.size} bytes, not ${total}`);
    return staged;
  }

  async remove(id: string): Promise<void> {
    for (const c of await this.chunks(id)) await this.client.delete(c.key);
  }

  async *list(): AsyncIterable<{ id: string; writtenAt: number }> {
    const prefix = this.key("uploads/");
    const latest = new Map<string, number>();
    let continuationToken: string | undefined;
    do {
      const page = await this.client.list({ prefix, continuationToken });
      for (const o of page.contents ?? []) {
        const id = o.key.slice(prefix.length).split("/")[0]!;
        const at = o.lastModified === undefined ? Date.now() : Date.parse(o.lastModified);
        latest.set(id, Math.max(latest.get(id) ?? 0, at));
      }
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined;
    } while (continuationToken !== undefined);
    for (const [id, writtenAt] of latest) if (UPLOAD_ID.test(id)) yield { id, writtenAt };
  }

  /** Every chunk object of an upload. */
  private async chunks(id: string): Promise<Chunk[]> {
    const prefix = this.prefix(id);
    const out: Chunk[] = [];
    let continuationToken: string | undefined;
    do {
      const page = await this.client.list({ prefix, continuationToken });
      for (const o of page.contents ?? []) {
        const m = /^(\d{16})\./.exec(o.key.slice(prefix.length));
        if (m !== null && o.size !== undefined) out.push({ key: o.key, start: Number(m[1]), size: o.size });
      }
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined;
    } while (continuationToken !== undefined);
    return out;
  }
}

/**
 * Chunks that follow each other from offset 0 to exactly `length` (depth-first, each offset
 * tried once), or undefined when none do. Exported for tests.
 */
export function chainOf(chunks: readonly Chunk[], length: number): Chunk[] | undefined {
  const byStart = new Map<number, Chunk[]>();
  for (const c of chunks) if (c.size > 0) byStart.set(c.start, [...(byStart.get(c.start) ?? []), c]);
  const dead = new Set<number>();
  const path: Chunk[] = [];
  const walk = (at: number): boolean => {
    if (at === length) return true;
    if (at > length || dead.has(at)) return false;
    // Longest first: fewer objects to read.
    for (const c of [...(byStart.get(at) ?? [])].sort((a, b) => b.size - a.size)) {
      path.push(c);
      if (walk(at + c.size)) return true;
      path.pop();
    }
    dead.add(at);
    return false;
  };
  return walk(0) ? path : undefined;
}
