/**
 * One ZIP archive streamed from many members: what a folder share link sends for
 * `?download=zip` (CONTRACT §12). The format is PKWARE's APPNOTE.TXT 6.3.10:
 *
 * - every entry STORED (method 0, §4.4.5): the bytes go out as they are, never recompressed;
 * - its CRC-32 (§4.4.7) is computed while the bytes pass (cubby keeps only CRC32C), so each entry
 *   has general purpose bit 3 set and a data descriptor after its data (§4.3.9);
 * - names are UTF-8 with bit 11 set (Appendix D);
 * - ZIP64 (§4.5) where a field would overflow: an entry of 4 GiB or more (8-byte sizes in its data
 *   descriptor and central directory record), an entry past 4 GiB into the archive (its offset),
 *   and the end records once the archive passes 4 GiB or holds 65 535 entries or more (§4.3.14,
 *   §4.3.15). Which one is decided per entry from the bytes that passed, so nothing is buffered.
 *
 * The writing is client-zip's (docs/folders.md says why, with the measurements), as patched by
 * patches/client-zip+2.5.1.patch: its CRC-32 is Bun's native one (Bun.hash.crc32: ~2 000 MB/s
 * where its JavaScript table gives 266), and it writes the ZIP64 end records for 65 535 entries
 * or more, which 2.5.1 forgets when the archive stays under 4 GiB (unzip and 7-Zip refuse it).
 * Around it, this module reads the members one at a time, checks each one's size, and makes
 * sure a consumer that stops (cancels, or `signal` fires) closes what is being read.
 */
import { makeZip, predictLength } from "client-zip";
import { gcPacer } from "../gc-pacer.ts";
import type { BlobChunk } from "../storage/ports.ts";

/** One member of a ZIP being streamed. */
export interface ZipMember {
  /** Path inside the archive, "/"-separated, UTF-8 (general purpose bit 11); see {@link ZipNames}. */
  name: string;
  /** Bytes. The content must have exactly this many, or the archive fails. */
  size: number;
  /** Last modification, Unix microseconds (written as MS-DOS local time, 2-second steps, 1980–2107). */
  modified: number;
  /**
   * The content, called only when the member is reached, and read one chunk at a time as the
   * consumer reads. Its iterator's `return()` is called when the archive stops early (consumer
   * gone, `signal`, an error), so a `finally` in a generator runs.
   */
  content(): AsyncIterable<Uint8Array>;
}

/**
 * Streams a STORED ZIP of `members`, read one at a time, in order, and each member's content
 * only while the consumer reads: a slow reader holds at most a few chunks (no buffering grows).
 *
 * The stream ends when the last member has been written and the central directory after it.
 * It fails (its reader's `read()` rejects) when a member's content throws or has more or fewer
 * bytes than its `size`, or when `members` throws: the archive is then incomplete, and the
 * caller must end its answer as failed (an HTTP/1.1 connection or HTTP/2 stream reset), never
 * as complete. Cancelling the stream, or `signal` firing (then the stream errors with its
 * reason), stops it: the content iterator being read gets `return()`, so does `members`, and
 * nothing more is read. Nothing here sets a timer.
 *
 * @param members the archive's members; names must be unique and not empty ({@link ZipNames})
 * @param signal stops the archive, e.g. the answer's `Outgoing.signal` (client gone)
 * @example A folder's files from the blob store (FileService.openContent's FileContent or
 *   BlobStore.read: the chunks are copied by {@link blobBytes}, whose buffers go back at once):
 *   ```ts
 *   const names = new ZipNames();
 *   const plan = { ...ex.buffering, signal: out.signal };
 *   async function* members(): AsyncIterable<ZipMember> {
 *     for (const f of files) {
 *       const name = names.take(f.name, f.id);
 *       yield { name, size: f.size, modified: f.updatedAt, content: () => blobBytes(blobs.read(f.blob, { start: 0, length: f.size }, plan)) };
 *     }
 *   }
 *   for await (const chunk of zipStream(members(), out.signal)) await write(chunk); // its callback: the chunk has left
 *   ```
 */
export function zipStream(members: AsyncIterable<ZipMember> | Iterable<ZipMember>, signal?: AbortSignal): ReadableStream<Uint8Array> {
  const source = Symbol.asyncIterator in members ? members[Symbol.asyncIterator]() : toAsync(members[Symbol.iterator]());
  /** The content iterator being read, if any. */
  let reading: AsyncIterator<Uint8Array> | undefined;
  let stopped = false;
  let output: ReadableStreamDefaultController<Uint8Array>;

  /** Closes what is open, once: the member being read, then the members. */
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    signal?.removeEventListener("abort", onAbort);
    const open = reading;
    reading = undefined;
    await Promise.allSettled([open?.return?.(), source.return?.()]);
  };

  /** A member's content as client-zip reads it: counted against its size, closable by {@link stop}. */
  const contentOf = (member: ZipMember): AsyncIterable<Uint8Array> => ({
    [Symbol.asyncIterator]() {
      const it = member.content()[Symbol.asyncIterator]();
      reading = it;
      let read = 0;
      const short = (why: string) => new Error(`ZIP member "${member.name}": ${why} (its size is ${member.size} bytes)`);
      return {
        async next() {
          if (stopped) return { done: true, value: undefined };
          const next = await it.next();
          if (next.done) {
            if (reading === it) reading = undefined;
            if (read !== member.size) throw short(`its content ended after ${read} bytes`);
            return next;
          }
          read += next.value.byteLength;
          if (read > member.size) {
            await it.return?.();
            throw short(`its content has more than ${member.size} bytes`);
          }
          return next;
        },
      };
    },
  });

  async function* inputs() {
    for (;;) {
      const next = await source.next();
      if (next.done || stopped) return;
      const member = next.value;
      checkMember(member);
      yield { name: member.name, size: member.size, lastModified: dosRange(member.modified), input: contentOf(member) };
    }
  }

  const zip = makeZip(inputs(), { buffersAreUTF8: true }).getReader();

  function onAbort(): void {
    const reason: unknown = signal?.reason;
    output.error(reason);
    void zip.cancel(reason).catch(() => {});
    void stop();
  }

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        output = controller;
        if (signal?.aborted) onAbort();
        else signal?.addEventListener("abort", onAbort, { once: true });
      },
      async pull(controller) {
        if (stopped) return;
        try {
          const { done, value } = await zip.read();
          if (stopped) return;
          if (done) {
            await stop();
            controller.close();
          } else {
            controller.enqueue(value);
          }
        } catch (err) {
          await stop();
          throw err;
        }
      },
      async cancel(reason) {
        await stop();
        await zip.cancel(reason).catch(() => {});
      },
    },
    // Nothing is read ahead of the consumer: one chunk is asked for per read.
    { highWaterMark: 0 },
  );
}

/**
 * The exact byte length of the archive {@link zipStream} writes for these names and sizes, in
 * the same order (client-zip's `predictLength`): a download's Content-Length.
 */
export function zipLength(members: Iterable<Pick<ZipMember, "name" | "size">>): number {
  return Number(predictLength(Array.from(members, (m) => ({ name: m.name, size: m.size }))));
}

/**
 * A blob read ({@link BlobChunk}s, e.g. `BlobStore.read` or `FileContent.read`) as the plain
 * bytes a {@link ZipMember}'s content yields; with a {@link CopyPool}, into its buffers. A blob chunk lives in a buffer the reader reuses
 * once released, and the ZIP writer may still hold a chunk when it asks for the next (and the
 * consumer until its write has left), so each chunk is copied and released at once: the read
 * keeps its few buffers, and the copies are garbage the GC pacer counts. (The other way, holding
 * each chunk until the consumer's write has left, would spare the copy but needs the writer to
 * pass chunks through untouched, which client-zip does but does not promise.)
 */
export async function* blobBytes(chunks: AsyncIterable<BlobChunk>, pool?: CopyPool): AsyncGenerator<Uint8Array, void, undefined> {
  for await (const chunk of chunks) {
    const bytes = pool === undefined ? new Uint8Array(chunk.bytes) : pool.copy(chunk.bytes);
    chunk.release();
    // A pooled copy is no garbage: nothing to count.
    if (pool === undefined) gcPacer.add(bytes.byteLength);
    yield bytes;
  }
}

/**
 * Buffers for {@link blobBytes}' copies that come back once their bytes have been written, so
 * that an archive streamed at disk speed makes no garbage: without it, every byte of the
 * archive is a copy the collector must free (a forced collection every 64 MiB, gc-pacer.ts,
 * which cost a 1 GiB archive more than half its time). The consumer hands back each chunk it
 * wrote ({@link giveBack}); a chunk that is not one of the pool's is ignored. When every buffer
 * is out (the writer held more than expected, or passed on a chunk of its own making), a copy
 * is made as garbage instead, counted by the GC pacer: never a wait, so never a deadlock.
 */
export class CopyPool {
  private readonly free: ArrayBuffer[] = [];
  /** The buffer under each copy handed out and not yet given back. */
  private readonly out = new WeakMap<Uint8Array, ArrayBuffer>();
  private made = 0;

  /**
   * @param bufferBytes each buffer's size (the largest chunk copied; a larger one is garbage)
   * @param most buffers at most
   */
  constructor(
    private readonly bufferBytes: number,
    private readonly most: number,
  ) {}

  /** `bytes` copied into a buffer of the pool (or, when none is free, into a new one as garbage). */
  copy(bytes: Uint8Array): Uint8Array {
    let buffer = bytes.byteLength <= this.bufferBytes ? this.free.pop() : undefined;
    if (buffer === undefined && bytes.byteLength <= this.bufferBytes && this.made < this.most) {
      buffer = new ArrayBuffer(this.bufferBytes);
      this.made++;
    }
    if (buffer === undefined) {
      gcPacer.add(bytes.byteLength);
      return new Uint8Array(bytes);
    }
    const view = new Uint8Array(buffer, 0, bytes.byteLength);
    view.set(bytes);
    this.out.set(view, buffer);
    return view;
  }

  /** Takes back the buffer under `chunk` once it has been written, if it is one of the pool's. */
  giveBack(chunk: Uint8Array): void {
    const buffer = this.out.get(chunk);
    if (buffer === undefined) return;
    this.out.delete(chunk);
    this.free.push(buffer);
  }
}

/**
 * Entry names for one directory of an archive: each {@link take} returns a name no earlier one
 * in this directory has, compared as unzipping onto a case-insensitive file system would (NFC,
 * lower case), by adding " (2)", " (3)", … before the extension: `a.txt`, `a (2).txt`. A name
 * that is empty, `.` or `..` becomes the fallback (the file's ID); `/` and `\` become `_`, so
 * that a name is always one path segment, never a directory or a way out of one (a "zip slip"),
 * whichever tool unpacks it. For sub-directories, keep one ZipNames per directory and join the
 * segments with `/`.
 */
export class ZipNames {
  private readonly taken = new Set<string>();

  /**
   * @param name a file's name as stored (may be "")
   * @param fallback what to call it when the name is empty, `.` or `..` (the file's ID)
   * @returns the entry name to use, unique in this directory
   */
  take(name: string, fallback: string): string {
    let base = name.replace(/[/\\]/g, "_");
    if (base === "" || base === "." || base === "..") base = fallback.replace(/[/\\]/g, "_") || "file";
    const dot = base.lastIndexOf(".");
    const [stem, extension] = dot > 0 ? [base.slice(0, dot), base.slice(dot)] : [base, ""];
    let candidate = base;
    for (let n = 2; this.taken.has(comparable(candidate)); n++) candidate = `${stem} (${n})${extension}`;
    this.taken.add(comparable(candidate));
    return candidate;
  }
}

/** How two names compare on a case-insensitive, normalising file system (near enough). */
const comparable = (name: string) => name.normalize("NFC").toLowerCase();

/** The MS-DOS date and time range of a ZIP header (APPNOTE §4.4.6), in local time as client-zip writes it. */
const DOS_FIRST = () => new Date(1980, 0, 1, 0, 0, 0);
const DOS_LAST = () => new Date(2107, 11, 31, 23, 59, 58);

/** `modified` (Unix µs) as a Date inside the MS-DOS range, clamped to its ends. */
function dosRange(modified: number): Date {
  const date = new Date(Math.floor(modified / 1000));
  if (date < DOS_FIRST()) return DOS_FIRST();
  if (date > DOS_LAST()) return DOS_LAST();
  return date;
}

/** @throws Error when a member cannot be written as given (a caller's mistake, not a client's) */
function checkMember(member: ZipMember): void {
  if (member.name === "" || member.name.endsWith("/")) throw new Error(`ZIP member name "${member.name}": empty or a directory`);
  if (!Number.isSafeInteger(member.size) || member.size < 0) throw new Error(`ZIP member "${member.name}": size ${member.size} is not a byte count`);
  if (!Number.isFinite(member.modified)) throw new Error(`ZIP member "${member.name}": modified ${member.modified} is not a time`);
}

/** A synchronous iterator as an asynchronous one (members given as an array). */
function toAsync<T>(it: Iterator<T>): AsyncIterator<T> {
  return {
    next: async () => it.next(),
    return: async () => it.return?.() ?? { done: true, value: undefined },
  };
}
