/**
 * The HTTP/1.1 reader's exchange (http1-fast.ts): one GET or HEAD read by the reader, answered
 * straight on the socket. A whole answer (`respond`) is one `socket.write` of status line,
 * `X-Request-Id`, the headers, Date, Connection and Keep-Alive, and the body, from a reused
 * buffer when small; a streamed one (`stream`) writes the head, then each chunk with its
 * callback. Bodies carry a Content-Length (a streamed answer without one is delimited by the
 * connection's close, RFC 9112 §6.3); HEAD, 204, 304 and 1xx answers never carry a body.
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { HeaderSource } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import { headerValue, type AnswerHeaders, type Buffering, type Exchange, type Outgoing } from "../serving/exchange.ts";
import type { FastHead } from "./http1-head.ts";

/** What an exchange tells the connection that read it. */
export interface Http1Connection {
  readonly socket: Socket;
  /** Seconds an idle kept-alive connection stays open (the `Keep-Alive: timeout` answered). */
  readonly keepAliveSeconds: number;
  /** Writes an exchange's access-log line (AccessLog.close). */
  logClose(context: RequestContext, status: number, bytes: string | undefined): void;
  /**
   * The answer's bytes have left the socket's buffer (`keepAlive`: the connection may carry
   * another request), or the connection is closing. Called once per exchange.
   */
  answered(exchange: Http1Exchange, keepAlive: boolean): void;
  /** A whole answer written now is still in the socket's buffer: {@link answered} follows {@link onWritten}. */
  draining(exchange: Http1Exchange): void;
  /** The callback of a whole answer's write (one function per connection: nothing allocated per answer). */
  readonly onWritten: (err?: Error | null) => void;
  /** The answer closes the connection: it is half-closed once written, lingering (lingering-close.ts). */
  closing(): void;
}

/**
 * Whole answers (head and body) up to this size are written from a reused buffer, taken back
 * once the socket says the bytes were handed over: no allocation per small GET.
 */
const POOLED_BYTES = 16 * 1024;
/** Buffers kept for reuse at most. */
const POOL_SIZE = 64;
const pool: Buffer[] = [];

/** A download over HTTP/1.1: four buffers of 256 KiB keep the socket full (one download per connection). */
const H1_BUFFERING: Buffering = { chunkBytes: 256 * 1024, buffers: 4 };

let dateSecond = -1;
let dateText = "";
/** The Date header's value (RFC 9110 §6.6.1), computed once a second. */
export function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}

/** `HTTP/1.1 <status> <reason>\r\nx-request-id: ` by status, encoded once. */
const statusPrefixes = new Map<number, Buffer>();

function statusPrefix(status: number): Buffer {
  let prefix = statusPrefixes.get(status);
  if (prefix === undefined) {
    prefix = Buffer.from(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "unknown"}\r\nx-request-id: `, "latin1");
    statusPrefixes.set(status, prefix);
  }
  return prefix;
}

/** The second and keep-alive timeout {@link headTail}'s buffers were encoded for. */
let tailSecond = -1;
let tailSeconds = -1;
let tailKeepAlive = Buffer.alloc(0);
let tailClose = Buffer.alloc(0);

/**
 * The head's last lines, `Date`, `Connection` (and `Keep-Alive`) and the blank line, encoded once
 * a second: a whole answer copies these bytes instead of building and encoding the text each time.
 * @param keepAliveSeconds the `Keep-Alive: timeout` answered on a kept-alive connection
 */
function headTail(keepAlive: boolean, keepAliveSeconds: number): Buffer {
  const date = httpDate();
  if (dateSecond !== tailSecond || keepAliveSeconds !== tailSeconds) {
    tailSecond = dateSecond;
    tailSeconds = keepAliveSeconds;
    tailKeepAlive = Buffer.from(`Date: ${date}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=${keepAliveSeconds}\r\n\r\n`, "latin1");
    tailClose = Buffer.from(`Date: ${date}\r\nConnection: close\r\n\r\n`, "latin1");
  }
  return keepAlive ? tailKeepAlive : tailClose;
}

/** The encoded header lines of shared, frozen header objects (a file version's plain answer, serving/content-reply.ts). */
const encodedBlocks = new WeakMap<object, Buffer>();

/** What Node refuses in a header value (ERR_INVALID_CHAR): controls other than HTAB, DEL, beyond Latin-1. */
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * `name: value\r\n` for each of `headers`: kept by identity when the object is frozen (never
 * changes), so a file version's plain answer is encoded and checked once.
 * @throws TypeError (ERR_INVALID_CHAR) for a value Node would refuse (CR, LF, NUL…): no header
 *   can be injected, and nothing is written
 */
function headerBlock(headers: AnswerHeaders): Buffer | string {
  const known = encodedBlocks.get(headers);
  if (known !== undefined) return known;
  let text = "";
  for (const name in headers) {
    const value = headers[name]!;
    for (const one of typeof value === "string" ? [value] : value) {
      if (INVALID_VALUE.test(one)) throw Object.assign(new TypeError(`Invalid character in header content ["${name}"]`), { code: "ERR_INVALID_CHAR" });
      text += `${name}: ${one}\r\n`;
    }
  }
  if (!Object.isFrozen(headers)) return text;
  const block = Buffer.from(text, "latin1");
  encodedBlocks.set(headers, block);
  return block;
}

const EMPTY = Buffer.alloc(0);

/** One request of an HTTP/1.1 connection read by the reader, and its answer. */
export class Http1Exchange implements Exchange, HeaderSource, Outgoing {
  readonly httpVersionMajor = 1;
  readonly method: "GET" | "HEAD";
  readonly target: string;
  pathname = "";
  search = "";
  readonly headers: HeaderSource = this;
  readonly headerRecord: Record<string, string | string[]>;
  readonly rawHeaders = undefined;
  clientAddress = "";
  context!: RequestContext;
  readonly buffering = H1_BUFFERING;
  /** Whether the connection may carry another request after this one. */
  private keepAlive: boolean;
  /** 0: not answered; 1: head sent, body streaming; 2: answered (or the connection closed). */
  private state: 0 | 1 | 2 = 0;
  private closed = false;
  private status = 200;
  private length: string | undefined;
  /** A pooled buffer being written, reused once the write's callback comes. */
  private pooled: Buffer | undefined;
  /** Write callbacks not yet called: called with an error if the connection closes first. */
  private pending: ((err?: Error | null) => void)[] | undefined;
  private controller: AbortController | undefined;

  constructor(
    private readonly conn: Http1Connection,
    head: FastHead,
    keepAlive: boolean,
  ) {
    this.method = head.method;
    this.target = head.target;
    this.headerRecord = head.headers;
    this.keepAlive = keepAlive && head.keepAlive;
  }

  get peer(): string | undefined {
    return this.conn.socket.remoteAddress;
  }

  get gone(): boolean {
    return this.closed;
  }

  /** @see HeaderSource */
  get(name: string): string | null {
    return headerValue(this.headerRecord, name);
  }

  open(context: RequestContext): void {
    this.context = context;
  }

  async *body(): AsyncIterable<Uint8Array> {}

  /** @see Exchange.settleBody: this wire carries GET and HEAD only. */
  async settleBody(): Promise<void> {}

  /**
   * Writes the whole answer in one `write` (see the module comment). The next request is read
   * once the bytes have left the socket's buffer: at once, or when the write's callback says so.
   * Not on `drain`: a stream emits that only after a write that reached its high-water mark, and
   * a smaller answer the kernel took in part would leave the connection waiting for good.
   */
  respond(status: number, headers: AnswerHeaders, body?: Uint8Array | string): void {
    if (this.state !== 0 || this.closed) return;
    const block = headerBlock(headers);
    this.state = 2;
    const socket = this.conn.socket;
    const bodiless = this.method === "HEAD" || status === 204 || status === 304 || status < 200;
    const bytes = bodiless || body === undefined ? undefined : typeof body === "string" ? Buffer.from(body) : body;
    let length = headers["content-length"] as string | undefined;
    const prefix = statusPrefix(status);
    const requestId = this.context.requestId;
    // The request ID is ours (request-id.ts: printable ASCII), so its length is its byte count.
    let lengthLine: string | undefined;
    if (length === undefined && !bodiless) {
      length = String(bytes === undefined ? 0 : bytes.byteLength);
      lengthLine = `content-length: ${length}\r\n`;
    }
    const tail = headTail(this.keepAlive, this.conn.keepAliveSeconds);
    const size = prefix.length + requestId.length + 2 + block.length + (lengthLine?.length ?? 0) + tail.length + (bytes === undefined ? 0 : bytes.byteLength);
    const pooled = size <= POOLED_BYTES ? (pool.pop() ?? Buffer.allocUnsafeSlow(POOLED_BYTES)) : undefined;
    const out = pooled ?? Buffer.allocUnsafe(size);
    let at = prefix.copy(out, 0);
    at += out.write(requestId, at, "latin1");
    out[at++] = 13;
    out[at++] = 10;
    at += typeof block === "string" ? out.write(block, at, "latin1") : block.copy(out, at);
    if (lengthLine !== undefined) at += out.write(lengthLine, at, "latin1");
    at += tail.copy(out, at);
    if (bytes !== undefined) out.set(bytes, at);
    this.status = status;
    this.length = length;
    socket.write(pooled === undefined ? out : out.subarray(0, size), this.conn.onWritten);
    this.conn.logClose(this.context, status, length);
    // Bun's socket has written it all to the kernel by now, unless the client reads slowly.
    if (socket.writableLength === 0) {
      if (pooled !== undefined && pool.length < POOL_SIZE) pool.push(pooled);
      if (!this.keepAlive) this.conn.closing();
      this.conn.answered(this, this.keepAlive);
    } else {
      this.conn.draining(this);
      if (!this.keepAlive) this.conn.closing();
    }
  }

  stream(status: number, headers: AnswerHeaders): Outgoing {
    if (this.state !== 0) throw new Error("the exchange was answered already");
    const block = headerBlock(headers);
    this.state = 1;
    this.status = status;
    this.length = headers["content-length"] as string | undefined;
    // No length: the body ends with the connection (HTTP/1.0's way; only a shared folder's ZIP,
    // whose length is not known ahead, streams without one).
    if (this.length === undefined) this.keepAlive = false;
    this.conn.socket.write(`${this.statusLine(status)}${typeof block === "string" ? block : block.toString("latin1")}Date: ${httpDate()}\r\n${this.keepAlive ? `Connection: keep-alive\r\nKeep-Alive: timeout=${this.conn.keepAliveSeconds}\r\n\r\n` : "Connection: close\r\n\r\n"}`, "latin1");
    return this;
  }

  private statusLine(status: number): string {
    return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "unknown"}\r\nx-request-id: ${this.context.requestId}\r\n`;
  }

  /** @see Outgoing */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.closed) this.controller.abort();
    return this.controller.signal;
  }

  /** @see Outgoing */
  write(chunk: Uint8Array, callback: (err?: Error | null) => void): void {
    if (this.closed || this.state !== 1) {
      process.nextTick(callback, new Error("the connection closed"));
      return;
    }
    if (this.method === "HEAD") return void process.nextTick(callback);
    const pending = (this.pending ??= []);
    let called = false;
    const once = (err?: Error | null) => {
      if (called) return;
      called = true;
      const i = pending.indexOf(once);
      if (i !== -1) pending.splice(i, 1);
      if (err) this.controller?.abort();
      callback(err);
    };
    pending.push(once);
    this.conn.socket.write(chunk, once);
  }

  /** @see Outgoing */
  end(): void {
    if (this.closed || this.state !== 1) return;
    // The socket runs writes in order: an empty one's callback says the body has left.
    this.conn.socket.write(EMPTY, (err?: Error | null) => {
      if (err || this.state !== 1) return;
      this.state = 2;
      this.conn.logClose(this.context, this.status, this.length);
      if (!this.keepAlive) this.conn.closing();
      this.conn.answered(this, this.keepAlive);
    });
  }

  /** @see Outgoing */
  fail(): void {
    this.conn.socket.destroy();
  }

  /** The connection closed: the client is gone, pending write callbacks fail, the log line is written if it was not. */
  connectionClosed(): void {
    this.closed = true;
    this.controller?.abort();
    const pending = this.pending;
    this.pending = undefined;
    if (pending !== undefined) {
      const err = new Error("the connection closed");
      for (const cb of pending) cb(err);
    }
    if (this.state !== 2) {
      this.state = 2;
      if (this.context !== undefined) this.conn.logClose(this.context, this.status, this.length);
    }
  }
}
