// The tests' one raw HTTP/1.1 client: a TCP connection on which a test writes exactly the bytes it
// chooses (pipelined requests, malformed framing, a half-close) and reads the server's responses
// as they are framed on the wire. fetch() cannot do either; tests that only need a response use it.
import net from "node:net";
import { waitFor } from "./wait.ts";

/** One response as it came over the wire. */
export interface RawResponse {
  /** The status code (the second word of the status line). */
  status: number;
  /** The status line, e.g. "HTTP/1.1 200 OK". */
  statusLine: string;
  /** Header fields by lower-cased name; a repeated field keeps its last value. */
  headers: Record<string, string>;
  /** The head as sent: the status line and header lines, without the blank line that ends it. */
  head: string;
  /** The body, de-chunked when the response was chunked. */
  body: Buffer;
  /** False when the connection ended before the body did (only returned by a `partial` parse). */
  complete: boolean;
}

/**
 * Parses the response that starts at `at` in `buf`, framed as RFC 9112 §6.3 says: no body for a
 * response to HEAD and for 1xx, 204 and 304; else a chunked body (`Transfer-Encoding: chunked`;
 * trailers are skipped), else `Content-Length` bytes, else everything until the connection closes.
 * @param closed whether the connection has ended (then a body read until close is complete, and a
 *   cut-short response is returned with `complete: false`)
 * @returns the response and the offset just past it, or undefined while it is incomplete
 */
export function parseResponse(buf: Buffer, at: number, method: string, closed: boolean): { response: RawResponse; end: number } | undefined {
  const headEnd = buf.indexOf("\r\n\r\n", at);
  if (headEnd === -1) return undefined;
  const head = buf.toString("latin1", at, headEnd);
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(statusLine.split(" ")[1]);
  const start = headEnd + 4;
  const make = (body: Buffer, complete: boolean) => ({ status, statusLine, headers, head, body, complete });
  if (method === "HEAD" || (status >= 100 && status < 200) || status === 204 || status === 304) {
    return { response: make(Buffer.alloc(0), true), end: start };
  }
  if (headers["transfer-encoding"]?.toLowerCase() === "chunked") {
    const parts: Buffer[] = [];
    let pos = start;
    for (;;) {
      const lineEnd = buf.indexOf("\r\n", pos);
      if (lineEnd === -1) break;
      const size = Number.parseInt(buf.toString("latin1", pos, lineEnd), 16);
      if (size === 0) {
        const trailerEnd = buf.indexOf("\r\n\r\n", lineEnd);
        const end = buf.toString("latin1", lineEnd, lineEnd + 4) === "\r\n\r\n" ? lineEnd + 4 : trailerEnd === -1 ? -1 : trailerEnd + 4;
        if (end === -1) break;
        return { response: make(Buffer.concat(parts), true), end };
      }
      if (buf.length < lineEnd + 2 + size + 2) {
        parts.push(buf.subarray(lineEnd + 2, Math.min(buf.length, lineEnd + 2 + size)));
        break;
      }
      parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
      pos = lineEnd + 2 + size + 2;
    }
    return closed ? { response: make(Buffer.concat(parts), false), end: buf.length } : undefined;
  }
  if (headers["content-length"] !== undefined) {
    const end = start + Number(headers["content-length"]);
    if (buf.length >= end) return { response: make(buf.subarray(start, end), true), end };
    return closed ? { response: make(buf.subarray(start), false), end: buf.length } : undefined;
  }
  return closed ? { response: make(buf.subarray(start), true), end: buf.length } : undefined;
}

/**
 * Parses the responses to requests of `methods` (in order) from the start of `buf`.
 * @param closed whether the connection has ended: then the responses there are, fewer than
 *   `methods` when it ended early (a cut-short last one with `complete: false`)
 * @returns all of them, or undefined while the connection is open and one is incomplete
 */
export function parseResponses(buf: Buffer, methods: string[], closed: true): RawResponse[];
export function parseResponses(buf: Buffer, methods: string[], closed: boolean): RawResponse[] | undefined;
export function parseResponses(buf: Buffer, methods: string[], closed: boolean): RawResponse[] | undefined {
  const out: RawResponse[] = [];
  let at = 0;
  for (const method of methods) {
    const parsed = parseResponse(buf, at, method, closed);
    if (parsed === undefined) return closed ? out : undefined;
    out.push(parsed.response);
    at = parsed.end;
  }
  return out;
}

/**
 * Every response in the bytes of a connection that has ended, to requests of `method` (GET, say,
 * for any method but HEAD); a cut-short last one comes with `complete: false`.
 */
export function parseAll(buf: Buffer, method = "GET"): RawResponse[] {
  const out: RawResponse[] = [];
  for (let at = 0; at < buf.length; ) {
    const parsed = parseResponse(buf, at, method, true);
    if (parsed === undefined) break;
    out.push(parsed.response);
    at = parsed.end;
  }
  return out;
}

/** Where and how to connect: 127.0.0.1 unless `host`; see net.connect for the others. */
export interface RawConnectOptions {
  host?: string;
  /** Keep our sending side open after the server's FIN (to see what a half-closed server does). */
  allowHalfOpen?: boolean;
  /** The local address to connect from (e.g. another 127.0.0.0/8 address, a second client). */
  localAddress?: string;
}

/**
 * A raw HTTP/1.1 client connection: it keeps every byte received, so a test can read responses
 * one by one (`next`), all from the start (`responses`), or look at the bytes themselves.
 * Disposing it destroys the socket.
 */
export class RawHttp {
  /** Bytes received so far. */
  length = 0;
  /** The connection has closed (either side, or an error). */
  closed = false;
  /** The server ended its side with a FIN (rather than a reset). */
  fin = false;
  /** The socket's error, if one ended the connection (e.g. a reset: ECONNRESET). */
  error: Error | undefined;
  private chunks: Buffer[] = [];
  private readonly waiters = new Set<() => void>();
  /** Offset in `received` of the first byte `next` has not returned. */
  private cursor = 0;

  private constructor(readonly socket: net.Socket) {
    socket.on("data", (d: Buffer) => {
      this.chunks.push(d);
      this.length += d.length;
      this.wake();
    });
    socket.on("end", () => {
      this.fin = true;
      this.wake();
    });
    socket.on("error", (e) => (this.error ??= e));
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
  }

  /** Connects to `port`; resolves once connected, rejects with the connection's error. */
  static connect(port: number, options: RawConnectOptions = {}): Promise<RawHttp> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: options.host ?? "127.0.0.1", port, allowHalfOpen: options.allowHalfOpen, localAddress: options.localAddress });
      socket.once("connect", () => resolve(new RawHttp(socket)));
      socket.once("error", reject);
    });
  }

  /** Writes `bytes` (a string is sent as latin1: one byte per character, as a test spells a head). */
  write(bytes: string | Uint8Array): void {
    this.socket.write(typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes);
  }

  /** Everything received so far. */
  get received(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  private wake(): void {
    for (const w of this.waiters) w();
  }

  /**
   * Resolves once `done` holds, checked now, on every arrival and on close (no polling).
   * @throws after `timeoutMs`, with the first 2000 bytes received in the message
   */
  async until(done: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    await waitFor(done, what, {
      timeoutMs,
      pollMs: Infinity,
      wake: (recheck) => (this.waiters.add(recheck), () => this.waiters.delete(recheck)),
      detail: () => `received ${JSON.stringify(this.received.subarray(0, 2000).toString("latin1"))}`,
    });
  }

  /**
   * The first `methods.length` responses of the connection (to requests of `methods`, in order),
   * once all have arrived whole (see parseResponse for the framing).
   * @throws when the connection closes first, or after `timeoutMs`
   */
  async responses(methods: string[], timeoutMs = 10_000): Promise<RawResponse[]> {
    let parsed: RawResponse[] | undefined;
    await this.until(() => (parsed = parseResponses(this.received, methods, this.closed)) !== undefined, `${methods.length} responses`, timeoutMs);
    if (parsed!.length < methods.length || parsed!.some((r) => !r.complete)) throw new Error(`the connection closed before ${methods.length} responses; received ${JSON.stringify(this.received.subarray(0, 2000).toString("latin1"))}`);
    return parsed!;
  }

  /**
   * The next whole response after the last one `next` returned (the bytes after it stay for the
   * next call, as pipelined responses do), to a request of `method`.
   * @throws when the connection closes before it is whole, or after `timeoutMs`
   */
  async next(method = "GET", timeoutMs = 10_000): Promise<RawResponse> {
    let parsed: ReturnType<typeof parseResponse>;
    await this.until(() => (parsed = parseResponse(this.received, this.cursor, method, this.closed)) !== undefined || this.closed, "the next response", timeoutMs);
    if (parsed === undefined || !parsed.response.complete) {
      throw new Error(`the connection closed before a whole response; received ${JSON.stringify(this.received.subarray(this.cursor, this.cursor + 2000).toString("latin1"))}`);
    }
    this.cursor = parsed.end;
    return parsed.response;
  }

  /** Resolves when the connection has closed; throws after `timeoutMs`. */
  whenClosed(timeoutMs = 10_000): Promise<void> {
    return this.until(() => this.closed, "the server to close the connection", timeoutMs);
  }

  /**
   * Resolves when the server has ended its side (FIN) or the connection has closed (with
   * `allowHalfOpen`, a FIN leaves ours open); throws after `timeoutMs`.
   */
  whenEnded(timeoutMs = 10_000): Promise<void> {
    return this.until(() => this.fin || this.closed, "the server to end the connection", timeoutMs);
  }

  /** Destroys the socket. */
  [Symbol.dispose](): void {
    this.socket.destroy();
  }
}
