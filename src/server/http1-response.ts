/**
 * The HTTP/1.1 fast path's response (http1-fast.ts): the part of Node's `ServerResponse` that
 * the dispatch and what it calls use (content.ts, node-bridge.ts's writeResponse / failed /
 * refuse, access-log.ts, connections.ts, metrics.ts, response-tap.ts), written straight to the
 * socket. The status line, the headers and a small body go out in one `socket.write`.
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";

/** What the response tells its connection. */
export interface ResponseOwner {
  /** The response has been written whole (`keepAlive`: the connection may carry another) or the connection closed. */
  responseDone(keepAlive: boolean): void;
}

type HeaderValue = string | number | readonly string[];

/** A body chunk up to this size is copied into the head's buffer: one write instead of two. */
const COALESCE_BYTES = 64 * 1024;
/**
 * Whole responses (head and body) up to this size are written from a reused buffer, taken back
 * once the socket's write callback says the bytes were handed over: no allocation per small GET.
 */
export const POOLED_BYTES = 16 * 1024;
/** Buffers kept for reuse at most (one per response being written at once). */
const POOL_SIZE = 64;
const pool: Buffer[] = [];

/** A buffer of {@link POOLED_BYTES} for a whole small response; give it back with {@link reusePooled} once written. */
export function pooledBuffer(): Buffer {
  return pool.pop() ?? Buffer.allocUnsafeSlow(POOLED_BYTES);
}

/** Takes back a buffer of {@link pooledBuffer} whose bytes the socket no longer needs. */
export function reusePooled(buffer: Buffer): void {
  if (pool.length < POOL_SIZE) pool.push(buffer);
}
/** RFC 9110 §5.1 token: a valid header name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Header names seen valid, with their lower-case form; at most {@link CHECKED_NAMES}. */
const checkedNames = new Map<string, string>();
const CHECKED_NAMES = 256;
/** What Node refuses in a header value (ERR_INVALID_CHAR): controls other than HTAB, DEL, beyond Latin-1. */
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

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

function invalidHeader(kind: "name" | "value", name: string): never {
  const err = new TypeError(`Invalid header ${kind} for "${name}"`) as TypeError & { code: string };
  err.code = kind === "name" ? "ERR_INVALID_HTTP_TOKEN" : "ERR_INVALID_CHAR";
  throw err;
}

/**
 * One response on a fast-path connection. Like Node's: `headersSent` is true from `writeHead`
 * on; `write` returns false when the socket is full and `drain` follows; `finish` then `close`
 * are emitted once the last byte is handed to the kernel, `close` alone (with `destroyed`) when
 * the connection closes first. Bodies with a Content-Length are sent as they are, others
 * chunked (HTTP/1.1) or delimited by the connection's close (HTTP/1.0); HEAD, 204, 304 and 1xx
 * answers never carry one (RFC 9112 §6.3).
 */
export class FastResponse {
  statusCode = 200;
  statusMessage: string | undefined;
  /** Whether the connection may carry another request after this one (Node's ServerResponse field). */
  shouldKeepAlive: boolean;
  sendDate = true;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  private readonly headers: Record<string, HeaderValue> = Object.create(null) as Record<string, HeaderValue>;
  /** Set once the head is serialised: whether the body is chunked, and whether a body is sent at all. */
  private chunked = false;
  private bodiless = false;
  private closeEmitted = false;
  private waitingForDrain = false;
  /** Write callbacks not yet called: called with an error if the connection closes first. */
  private pending: ((err?: Error | null) => void)[] | undefined;
  /** Event listeners (`close`, `finish`, `drain`): [listener, once]. */
  private listeners: Record<string, [(...args: unknown[]) => void, boolean][]> | undefined;

  constructor(
    readonly socket: Socket,
    private readonly owner: ResponseOwner,
    private readonly isHead: boolean,
    private readonly http10: boolean,
    keepAlive: boolean,
    private readonly keepAliveSeconds: number,
  ) {
    this.shouldKeepAlive = keepAlive;
  }

  // The EventEmitter methods the server's code calls, without EventEmitter's cost per response.
  on(event: string, listener: (...args: unknown[]) => void): this {
    ((this.listeners ??= {})[event] ??= []).push([listener, false]);
    return this;
  }

  addListener(event: string, listener: (...args: unknown[]) => void): this {
    return this.on(event, listener);
  }

  once(event: string, listener: (...args: unknown[]) => void): this {
    ((this.listeners ??= {})[event] ??= []).push([listener, true]);
    return this;
  }

  off(event: string, listener: (...args: unknown[]) => void): this {
    const list = this.listeners?.[event];
    const i = list === undefined ? -1 : list.findIndex((l) => l[0] === listener);
    if (i !== -1) list!.splice(i, 1);
    return this;
  }

  removeListener(event: string, listener: (...args: unknown[]) => void): this {
    return this.off(event, listener);
  }

  listenerCount(event: string): number {
    return this.listeners?.[event]?.length ?? 0;
  }

  emit(event: string, ...args: unknown[]): boolean {
    const list = this.listeners?.[event];
    if (list === undefined || list.length === 0) return false;
    for (const entry of list.slice()) {
      if (entry[1]) {
        const i = list.indexOf(entry);
        if (i === -1) continue; // removed by an earlier listener
        list.splice(i, 1);
      }
      entry[0].apply(this, args);
    }
    return true;
  }

  get connection(): Socket {
    return this.socket;
  }

  get finished(): boolean {
    return this.writableEnded;
  }

  setHeader(name: string, value: HeaderValue): this {
    if (this.headersSent) throw Object.assign(new Error("Cannot set headers after they are sent to the client"), { code: "ERR_HTTP_HEADERS_SENT" });
    if (value === undefined) throw Object.assign(new TypeError(`Invalid value "undefined" for header "${name}"`), { code: "ERR_HTTP_INVALID_HEADER_VALUE" });
    // Names come from the server's code, a handful of them: each is checked and lower-cased once.
    let lower = checkedNames.get(name);
    if (lower === undefined) {
      if (!TOKEN.test(name)) invalidHeader("name", name);
      lower = name.toLowerCase();
      if (checkedNames.size < CHECKED_NAMES) checkedNames.set(name, lower);
    }
    // Checked here, as Node does, so a bad value throws before anything counts as sent.
    if (typeof value === "string") {
      if (INVALID_VALUE.test(value)) invalidHeader("value", name);
    } else if (typeof value === "object") {
      for (const v of value) if (INVALID_VALUE.test(v)) invalidHeader("value", name);
    }
    this.headers[lower] = value;
    return this;
  }

  getHeader(name: string): HeaderValue | undefined {
    return this.headers[name.toLowerCase()];
  }

  getHeaderNames(): string[] {
    return Object.keys(this.headers);
  }

  getHeaders(): Record<string, HeaderValue> {
    return { ...this.headers };
  }

  hasHeader(name: string): boolean {
    return this.headers[name.toLowerCase()] !== undefined;
  }

  removeHeader(name: string): void {
    if (this.headersSent) throw Object.assign(new Error("Cannot remove headers after they are sent to the client"), { code: "ERR_HTTP_HEADERS_SENT" });
    delete this.headers[name.toLowerCase()];
  }

  /** `writeHead(status[, reason][, headers])`; headers as an object or `[name, value]` pairs, merged over setHeader's. */
  writeHead(status: number, reasonOrHeaders?: string | Record<string, HeaderValue> | [string, HeaderValue][] | string[], maybeHeaders?: Record<string, HeaderValue> | [string, HeaderValue][] | string[]): this {
    if (this.headersSent) throw Object.assign(new Error("Cannot write headers after they are sent to the client"), { code: "ERR_HTTP_HEADERS_SENT" });
    if (!Number.isInteger(status) || status < 100 || status > 999) throw Object.assign(new RangeError(`Invalid status code: ${status}`), { code: "ERR_HTTP_INVALID_STATUS_CODE" });
    let given = maybeHeaders;
    if (typeof reasonOrHeaders === "string") this.statusMessage = reasonOrHeaders;
    else given = reasonOrHeaders;
    this.statusCode = status;
    if (Array.isArray(given)) {
      // [[name, value], …] or Node's flat [name, value, name, value, …]
      if (typeof given[0] === "string") for (let i = 0; i < given.length; i += 2) this.setHeader(given[i] as unknown as string, given[i + 1] as unknown as HeaderValue);
      else for (const [name, value] of given as [string, HeaderValue][]) this.setHeader(name, value);
    } else if (given !== undefined) for (const name in given) this.setHeader(name, given[name]!);
    this.headersSent = true;
    return this;
  }

  /**
   * Writes a body chunk (the head first, if not yet sent). `callback` runs once the chunk is
   * handed to the kernel, or with an error if the connection closes first.
   * @returns false when the socket's buffer is full: wait for `drain`
   */
  write(chunk: string | Uint8Array, encodingOrCallback?: BufferEncoding | ((err?: Error | null) => void), callback?: (err?: Error | null) => void): boolean {
    if (typeof encodingOrCallback === "function") callback = encodingOrCallback;
    const encoding = typeof encodingOrCallback === "string" ? encodingOrCallback : "utf8";
    if (this.writableEnded || this.destroyed) {
      const err = Object.assign(new Error(this.destroyed ? "Cannot call write after a stream was destroyed" : "write after end"), { code: this.destroyed ? "ERR_STREAM_DESTROYED" : "ERR_STREAM_WRITE_AFTER_END" });
      if (callback !== undefined) process.nextTick(callback, err);
      return false;
    }
    const ok = this.send(typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk, false, callback);
    if (!ok && !this.waitingForDrain) {
      this.waitingForDrain = true;
      this.socket.once("drain", () => {
        this.waitingForDrain = false;
        if (!this.destroyed) this.emit("drain");
      });
    }
    return ok;
  }

  /** Ends the response, with a last chunk if given; `finish` and `close` follow once it is written. */
  end(chunk?: string | Uint8Array | (() => void), encodingOrCallback?: BufferEncoding | (() => void), callback?: () => void): this {
    if (typeof chunk === "function") {
      callback = chunk;
      chunk = undefined;
    } else if (typeof encodingOrCallback === "function") callback = encodingOrCallback;
    if (this.writableEnded || this.destroyed) {
      if (callback !== undefined) process.nextTick(callback);
      return this;
    }
    this.writableEnded = true;
    if (callback !== undefined) this.once("finish", callback);
    const encoding = typeof encodingOrCallback === "string" ? encodingOrCallback : "utf8";
    const body = chunk === undefined ? undefined : typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk;
    this.send(body, true, (err) => {
      if (err !== undefined && err !== null) return;
      this.writableFinished = true;
      this.emit("finish");
      this.emitClose();
      this.owner.responseDone(this.shouldKeepAlive);
    });
    return this;
  }

  /** Destroys the connection (Node's `res.destroy()`); `close` follows. */
  destroy(): this {
    this.socket.destroy();
    return this;
  }

  /** The connection closed: pending write callbacks fail, `close` is emitted if it was not. */
  connectionClosed(): void {
    this.destroyed = true;
    const pending = this.pending;
    this.pending = undefined;
    if (pending !== undefined) {
      const err = Object.assign(new Error("the connection closed"), { code: "ERR_STREAM_DESTROYED" });
      for (const cb of pending) cb(err);
    }
    this.emitClose();
  }

  private emitClose(): void {
    if (this.closeEmitted) return;
    this.closeEmitted = true;
    this.emit("close");
  }

  /**
   * Writes `body` (or nothing), preceded by the head if it has not gone out yet. `callback`
   * runs once the bytes are handed to the kernel; for a `write` (not `last`) it is also called,
   * with an error, if the connection closes first (`end`'s is not needed then: `close` says it).
   */
  private send(body: Uint8Array | undefined, last: boolean, callback: ((err?: Error | null) => void) | undefined): boolean {
    const head = this.serializeHead(last ? body : undefined, !last);
    let data: Uint8Array | string | undefined = body !== undefined && body.byteLength > 0 && !this.bodiless ? body : undefined;
    if (data !== undefined && this.chunked) data = Buffer.concat([Buffer.from(`${data.byteLength.toString(16)}\r\n`, "latin1"), data, CRLF]);
    if (last && this.chunked) data = data === undefined ? LAST_CHUNK : Buffer.concat([data, LAST_CHUNK]);
    let pooled: Buffer | undefined;
    if (head !== undefined) {
      if (data === undefined) data = head;
      else if (head.length + data.byteLength <= COALESCE_BYTES) {
        // One write for head and body; a whole small response from a reused buffer.
        const size = head.length + data.byteLength;
        const out = last && size <= POOLED_BYTES ? (pooled = pooledBuffer()) : Buffer.allocUnsafe(size);
        const headBytes = out.write(head, 0, "latin1");
        out.set(data as Uint8Array, headBytes);
        data = pooled === undefined ? out : out.subarray(0, size);
      } else this.socket.write(head, "latin1");
    }
    if (data === undefined) {
      if (callback === undefined) return true;
      // Nothing to send, but the callback (for `end`: finish) must wait for what was written
      // before: the socket runs writes in order, so an empty one completes after them.
      data = EMPTY;
    }
    const encoding = typeof data === "string" ? "latin1" : undefined;
    if (callback === undefined) return this.socket.write(data, encoding);
    if (last) {
      return this.socket.write(data, encoding, (err?: Error | null) => {
        if (pooled !== undefined && (err === undefined || err === null)) reusePooled(pooled);
        callback(err);
      });
    }
    const pending = (this.pending ??= []);
    let called = false;
    const once = (err?: Error | null) => {
      if (called) return;
      called = true;
      const i = pending.indexOf(once);
      if (i !== -1) pending.splice(i, 1);
      callback(err);
    };
    pending.push(once);
    return this.socket.write(data, encoding, once);
  }

  /**
   * The status line and headers, once (undefined after). Adds Date, Connection and Keep-Alive
   * as node:http does, and decides how the body is framed: `lastBody` is the whole body when
   * `end` sends the head (its length is then known), `streaming` when a `write` does.
   */
  private headSent = false;
  private serializeHead(lastBody: Uint8Array | undefined, streaming: boolean): string | undefined {
    if (this.headSent) return undefined;
    this.headSent = true;
    this.headersSent = true;
    const status = this.statusCode;
    const h = this.headers;
    this.bodiless = this.isHead || status === 204 || status === 304 || status < 200;
    let connection = h.connection;
    if (connection !== undefined && /(?:^|,)\s*close\s*(?:,|$)/i.test(String(connection))) this.shouldKeepAlive = false;
    if (!this.bodiless && h["content-length"] === undefined && h["transfer-encoding"] === undefined) {
      if (!streaming) h["content-length"] = lastBody === undefined ? 0 : lastBody.byteLength;
      else if (this.http10) this.shouldKeepAlive = false;
      else {
        h["transfer-encoding"] = "chunked";
        this.chunked = true;
      }
    }
    let head = `HTTP/1.1 ${status} ${this.statusMessage ?? STATUS_CODES[status] ?? "unknown"}\r\n`;
    for (const name in h) {
      const value = h[name]!;
      if (typeof value === "object") {
        for (const v of value) head += headerLine(name, v);
      } else head += headerLine(name, typeof value === "number" ? String(value) : value);
    }
    if (this.sendDate && h.date === undefined) head += `Date: ${httpDate()}\r\n`;
    if (connection === undefined) {
      connection = this.shouldKeepAlive ? "keep-alive" : "close";
      head += this.shouldKeepAlive ? `Connection: keep-alive\r\nKeep-Alive: timeout=${this.keepAliveSeconds}\r\n` : "Connection: close\r\n";
    }
    return `${head}\r\n`;
  }
}

function headerLine(name: string, value: string): string {
  return `${name}: ${value}\r\n`;
}

const CRLF = Buffer.from("\r\n");
const LAST_CHUNK = Buffer.from("0\r\n\r\n");
const EMPTY = Buffer.alloc(0);
