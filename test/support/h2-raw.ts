/**
 * A raw HTTP/2 client for tests that must behave as no well-mannered client would: it writes
 * frames (RFC 9113 §4, §6) on a plain TCP socket, so a test can declare one `content-length` and
 * send another, reset streams, open a thousand streams and never read, or drop the connection
 * mid-stream. Header blocks are encoded as HPACK literals without indexing or Huffman coding
 * (RFC 7541 §6.2.2), which every decoder must accept; the server's header blocks are decoded
 * with `hpack.js`.
 */
import fs from "node:fs";
import net from "node:net";
// @ts-expect-error hpack.js ships no types
import hpack from "hpack.js";
import { waitFor } from "./wait.ts";

/** Frame types (RFC 9113 §6). */
export const FrameType = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
/** Error codes (RFC 9113 §7). */
export const H2Error = { NO_ERROR: 0, PROTOCOL_ERROR: 1, CANCEL: 8, REFUSED_STREAM: 7 } as const;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const ACK = 0x1;

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** What the server sent on one stream. */
export interface StreamState {
  headers: Record<string, string>;
  /** Bytes of DATA received (their content is not kept). */
  dataBytes: number;
  /** Set when the server reset the stream: the RST_STREAM error code. */
  resetCode?: number;
  /** Set when the server's last frame on the stream carried END_STREAM. */
  ended: boolean;
}

/** HPACK integer with an N-bit prefix (RFC 7541 §5.1). */
function hpackInt(value: number, prefixBits: number, firstByte: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [firstByte | value];
  const out = [firstByte | max];
  value -= max;
  while (value >= 128) {
    out.push((value % 128) + 128);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

/** A header block of literals without indexing (RFC 7541 §6.2.2), no Huffman coding. */
export function encodeHeaders(headers: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of headers) {
    const n = Buffer.from(name, "latin1");
    const v = Buffer.from(value, "latin1");
    parts.push(Buffer.from([0x00]), Buffer.from(hpackInt(n.length, 7, 0)), n, Buffer.from(hpackInt(v.length, 7, 0)), v);
  }
  return Buffer.concat(parts);
}

/** One frame's bytes: 9-byte header (RFC 9113 §4.1) and payload. */
export function frame(type: number, flags: number, streamId: number, payload: Uint8Array = new Uint8Array(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.byteLength, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

export class RawH2 implements AsyncDisposable {
  readonly streams = new Map<number, StreamState>();
  /** Every frame the server sent, in order. */
  readonly frames: Frame[] = [];
  goaway: { lastStreamId: number; code: number } | undefined;
  private buffered: Buffer = Buffer.alloc(0);
  private readonly decompressor = hpack.decompressor.create({ table: { size: 4096 } });
  private headerBlock: { streamId: number; flags: number; parts: Buffer[] } | undefined;
  private readonly waiters = new Set<() => void>();
  closed = false;

  private constructor(readonly socket: net.Socket) {
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", () => {});
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
  }

  /**
   * Opens a connection and sends the preface and our SETTINGS.
   * @param settings SETTINGS parameters as [id, value] pairs, e.g. [[4, 0]] for a zero initial window
   */
  static async connect(port: number, settings: [number, number][] = []): Promise<RawH2> {
    const socket = net.connect({ host: "127.0.0.1", port });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    const c = new RawH2(socket);
    const body = Buffer.alloc(6 * settings.length);
    settings.forEach(([id, value], i) => {
      body.writeUInt16BE(id, i * 6);
      body.writeUInt32BE(value, i * 6 + 2);
    });
    socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(FrameType.SETTINGS, 0, 0, body)]));
    return c;
  }

  /** Sends HEADERS for a new stream (pseudo-headers first, as given). */
  headers(streamId: number, headers: [string, string][], endStream: boolean): void {
    this.streams.set(streamId, { headers: {}, dataBytes: 0, ended: false });
    this.socket.write(frame(FrameType.HEADERS, END_HEADERS | (endStream ? END_STREAM : 0), streamId, encodeHeaders(headers)));
  }

  /** Sends a DATA frame. */
  data(streamId: number, bytes: Uint8Array, endStream: boolean): void {
    this.socket.write(frame(FrameType.DATA, endStream ? END_STREAM : 0, streamId, bytes));
  }

  /** Sends RST_STREAM with `code`. */
  reset(streamId: number, code: number = H2Error.CANCEL): void {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(code);
    this.socket.write(frame(FrameType.RST_STREAM, 0, streamId, p));
  }

  /** Sends WINDOW_UPDATE (stream 0 for the connection). */
  windowUpdate(streamId: number, increment: number): void {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(increment);
    this.socket.write(frame(FrameType.WINDOW_UPDATE, 0, streamId, p));
  }

  /** Sends GOAWAY. */
  goAway(lastStreamId = 0, code: number = H2Error.NO_ERROR): void {
    const p = Buffer.alloc(8);
    p.writeUInt32BE(lastStreamId);
    p.writeUInt32BE(code, 4);
    this.socket.write(frame(FrameType.GOAWAY, 0, 0, p));
  }

  /** Waits until `done()` holds, the connection closes, or `timeoutMs` passes (then throws). */
  async until(done: () => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
    const check = () => {
      if (done()) return true;
      if (this.closed) throw new Error(`connection closed before ${what}`);
      return false;
    };
    // Checked on every frame that arrives and on close (wake), not polled.
    await waitFor(check, what, { timeoutMs, pollMs: Infinity, wake: (recheck) => (this.waiters.add(recheck), () => this.waiters.delete(recheck)) });
  }

  /** Waits until the server ended or reset stream `id`, and returns what it sent. */
  async response(id: number, timeoutMs = 10_000): Promise<StreamState> {
    await this.until(() => {
      const s = this.streams.get(id);
      return s !== undefined && (s.ended || s.resetCode !== undefined);
    }, timeoutMs, `the end of stream ${id}`);
    return this.streams.get(id)!;
  }

  close(): void {
    this.socket.destroy();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.socket.destroy();
  }

  private wake(): void {
    for (const w of this.waiters) w();
  }

  private onData(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    while (this.buffered.length >= 9) {
      const length = this.buffered.readUIntBE(0, 3);
      if (this.buffered.length < 9 + length) break;
      const f: Frame = {
        type: this.buffered[3]!,
        flags: this.buffered[4]!,
        streamId: this.buffered.readUInt32BE(5) & 0x7fffffff,
        payload: Buffer.from(this.buffered.subarray(9, 9 + length)),
      };
      this.buffered = this.buffered.subarray(9 + length);
      this.onFrame(f);
    }
    this.wake();
  }

  private onFrame(f: Frame): void {
    this.frames.push(f);
    const stream = this.streams.get(f.streamId);
    switch (f.type) {
      case FrameType.SETTINGS:
        if ((f.flags & ACK) === 0) this.socket.write(frame(FrameType.SETTINGS, ACK, 0));
        break;
      case FrameType.PING:
        if ((f.flags & ACK) === 0) this.socket.write(frame(FrameType.PING, ACK, 0, f.payload));
        break;
      case FrameType.GOAWAY:
        this.goaway = { lastStreamId: f.payload.readUInt32BE(0) & 0x7fffffff, code: f.payload.readUInt32BE(4) };
        break;
      case FrameType.RST_STREAM:
        if (stream !== undefined) stream.resetCode = f.payload.readUInt32BE(0);
        break;
      case FrameType.DATA:
        if (stream !== undefined) {
          stream.dataBytes += f.payload.length;
          if (f.flags & END_STREAM) stream.ended = true;
        }
        break;
      case FrameType.HEADERS:
      case FrameType.CONTINUATION: {
        let block = f.payload;
        if (f.type === FrameType.HEADERS) {
          let start = 0;
          let end = block.length;
          if (f.flags & 0x8) end -= block[start++]!; // PADDED
          if (f.flags & 0x20) start += 5; // PRIORITY
          block = block.subarray(start, end);
          this.headerBlock = { streamId: f.streamId, flags: f.flags, parts: [] };
        }
        this.headerBlock?.parts.push(block);
        if (f.flags & END_HEADERS && this.headerBlock !== undefined) this.finishHeaderBlock(this.headerBlock);
        break;
      }
    }
  }

  private finishHeaderBlock(block: { streamId: number; flags: number; parts: Buffer[] }): void {
    this.headerBlock = undefined;
    this.decompressor.write(Buffer.concat(block.parts));
    this.decompressor.execute();
    const stream = this.streams.get(block.streamId);
    for (let h = this.decompressor.read(); h !== null; h = this.decompressor.read()) {
      if (stream !== undefined) stream.headers[h.name as string] = h.value as string;
    }
    if (stream !== undefined && block.flags & END_STREAM) stream.ended = true;
  }
}

/** Open descriptors and resident memory (MiB) of a process, from /proc. */
export function processUsage(pid: number): { fds: number; rssMiB: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return { fds: fs.readdirSync(`/proc/${pid}/fd`).length, rssMiB: Math.round(rssKiB / 1024) };
}

/**
 * Descriptors a server's serving processes hold open on blob files (disk backend: their link
 * ends in `DATA_DIR/blobs/NAME`): what a download holds, whatever else the process has open.
 */
export function blobDescriptors(server: { servingPids(): number[] }): number {
  let n = 0;
  for (const pid of server.servingPids()) {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`).includes("/blobs/")) n++;
      } catch {
        // closed while listed
      }
    }
  }
  return n;
}
