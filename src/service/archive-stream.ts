/**
 * The byte level of a cubby archive (docs/archive.md), both ways: a writer that batches records
 * and content into one bounded buffer, and a reader that hands out bounded lines and exact runs
 * of bytes. Both keep the CRC32C of every byte that passed, which the trailer carries. Neither
 * holds more than a buffer, a source chunk and one record line, whatever the size of a file.
 */
import { checksumToBase64, crc32cUpdate } from "../domain/checksum.ts";
import { damaged } from "./archive-format.ts";

/** Where an archive goes. `write` resolves once `bytes` is no longer needed (written or copied). */
export interface ArchiveSink {
  write(bytes: Uint8Array): Promise<void>;
}

/** Bytes gathered before one write to the sink. */
const WRITE_BUFFER_BYTES = 1024 * 1024;

/** Writes an archive to a sink: small pieces are gathered, large ones passed straight through. */
export class ArchiveWriter {
  private readonly buffer = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  private filled = 0;
  private crc = 0;
  private written = 0;

  constructor(private readonly sink: ArchiveSink) {}

  /** Bytes written so far. */
  get offset(): number {
    return this.written;
  }

  /** CRC32C (base64) of every byte written so far. */
  checksum(): string {
    return checksumToBase64(this.crc);
  }

  text(s: string): Promise<void> {
    return this.bytes(Buffer.from(s));
  }

  /** Writes `bytes`; the caller may reuse them once this resolves. */
  async bytes(bytes: Uint8Array): Promise<void> {
    this.crc = crc32cUpdate(this.crc, bytes);
    this.written += bytes.byteLength;
    if (bytes.byteLength >= WRITE_BUFFER_BYTES / 2) {
      await this.flush();
      await this.sink.write(bytes);
      return;
    }
    if (this.filled + bytes.byteLength > WRITE_BUFFER_BYTES) await this.flush();
    this.buffer.set(bytes, this.filled);
    this.filled += bytes.byteLength;
  }

  async flush(): Promise<void> {
    if (this.filled === 0) return;
    const full = this.buffer.subarray(0, this.filled);
    this.filled = 0;
    await this.sink.write(full);
  }
}

const NEWLINE = 0x0a;

/**
 * Reads an archive from a stream of chunks that are not reused once handed out (a file read
 * into fresh buffers, stdin). {@link bytes} yields pieces of those chunks without copying.
 */
export class ArchiveReader {
  private readonly source: AsyncIterator<Uint8Array>;
  private chunk: Uint8Array = new Uint8Array(0);
  private at = 0;
  private ended = false;
  private crc = 0;
  private consumed = 0;
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });

  /** @param signal stops the reading: its reason is thrown at once, even while waiting for a chunk */
  constructor(
    source: AsyncIterable<Uint8Array>,
    private readonly signal?: AbortSignal,
  ) {
    this.source = source[Symbol.asyncIterator]();
  }

  /** Bytes consumed so far: where the next read starts. */
  get offset(): number {
    return this.consumed;
  }

  /** CRC32C (base64) of every byte consumed so far. */
  checksum(): string {
    return checksumToBase64(this.crc);
  }

  /**
   * The next line, without its "\n".
   * @returns undefined when the source ends right here
   * @throws AppError invalid_argument when the line is longer than `max` bytes, is not UTF-8,
   *   or the source ends inside it
   */
  async line(max: number): Promise<string | undefined> {
    const start = this.consumed;
    const parts: Uint8Array[] = [];
    let length = 0;
    for (;;) {
      if (!(await this.fill())) {
        if (length === 0) return undefined;
        throw damaged(this.consumed, "the archive ends inside a record (truncated?)");
      }
      const newline = this.chunk.indexOf(NEWLINE, this.at);
      const end = newline < 0 ? this.chunk.byteLength : newline;
      length += end - this.at;
      if (length > max) throw damaged(start, `a record is longer than ${max} bytes`);
      parts.push(this.take(end - this.at));
      if (newline >= 0) {
        this.take(1);
        try {
          return this.decoder.decode(parts.length === 1 ? parts[0] : Buffer.concat(parts));
        } catch {
          throw damaged(start, "a record is not UTF-8");
        }
      }
    }
  }

  /**
   * Exactly `length` bytes, in pieces that stay valid after the next one is asked for.
   * @param what names the bytes in the message when the source ends first
   * @throws AppError invalid_argument (while iterating) when the source ends first
   */
  async *bytes(length: number, what: string): AsyncIterable<Uint8Array> {
    for (let left = length; left > 0; ) {
      if (!(await this.fill())) throw damaged(this.consumed, `the archive ends inside ${what} (truncated?)`);
      const piece = this.take(Math.min(left, this.chunk.byteLength - this.at));
      left -= piece.byteLength;
      yield piece;
    }
  }

  /**
   * Consumes the "\n" that must come next.
   * @param what names what came before it, for messages
   * @throws AppError invalid_argument when the source ends or another byte comes
   */
  async newline(what: string): Promise<void> {
    if (!(await this.fill())) throw damaged(this.consumed, `the archive ends after ${what} (truncated?)`);
    if (this.chunk[this.at] !== NEWLINE) throw damaged(this.consumed, `${what} is not followed by a line break`);
    this.take(1);
  }

  /** Whether the source has no more bytes. */
  async atEnd(): Promise<boolean> {
    return !(await this.fill());
  }

  /** Makes unread bytes available. @returns false at the end of the source */
  private async fill(): Promise<boolean> {
    while (this.at >= this.chunk.byteLength) {
      if (this.ended) return false;
      const next = await this.nextChunk();
      if (next.done === true) {
        this.ended = true;
        return false;
      }
      this.chunk = next.value;
      this.at = 0;
    }
    return true;
  }

  /** The source's next chunk, unless the signal fires first (a pipe may stay silent). */
  private nextChunk(): Promise<IteratorResult<Uint8Array>> {
    const signal = this.signal;
    if (signal === undefined) return this.source.next();
    signal.throwIfAborted();
    let onAbort!: () => void;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
    });
    return Promise.race([this.source.next(), aborted]).finally(() => signal.removeEventListener("abort", onAbort));
  }

  private take(n: number): Uint8Array {
    const piece = this.chunk.subarray(this.at, this.at + n);
    this.at += n;
    this.consumed += n;
    this.crc = crc32cUpdate(this.crc, piece);
    return piece;
  }
}
