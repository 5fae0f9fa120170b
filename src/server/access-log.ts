/**
 * The access log, and where each request's context begins: {@link AccessLog.begin} creates the
 * request's {@link RequestContext} (its ID and client address decided once) in the dispatch, and
 * {@link AccessLog.close} writes the request's one log line once its exchange is answered — for
 * every request, whichever path serves it (RPC, content URLs, the HTTP app, a refused target).
 */
import { createRequestContext, type RequestContext } from "../context/request-context.ts";
import { jsonLine, type LogFormat } from "../log.ts";
import { UNMATCHED_ROUTE, type Metrics } from "./metrics.ts";

/**
 * `method=GET path="/x" status=200 bytes=12 duration_ms=0.4 request_id=abc`
 * @param durationMs from the request's arrival to its response's end
 */
export function accessLogLine(
  method: string,
  pathname: string,
  status: number,
  bytes: string | number | null | undefined,
  durationMs: number,
  requestId: string,
): string {
  return `method=${method} path=${jsonString(pathname)} status=${status} bytes=${bytes ?? "-"} duration_ms=${tenths(durationMs)} request_id=${requestId}`;
}

/** What JSON.stringify escapes in a string (RFC 8259 §7: `"`, `\`, controls), and surrogates, which it may. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** `value` as a JSON string: quoted as it is when nothing in it needs escaping (nearly every path). */
function jsonString(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** A non-negative number of milliseconds to one decimal (`12.3`), rounded half up. */
function tenths(ms: number): string {
  const t = Math.round(ms * 10);
  return `${Math.floor(t / 10)}.${t % 10}`;
}

/**
 * The JSON form of an access-log line (LOG_FORMAT=json, CONTRACT §9): `time`, `level`,
 * `request_id`, `method`, `route` (the template, null when none matched), `path`, `status`,
 * `bytes` (the Content-Length answered, null when streamed), `duration_ms`, `client_address`
 * and `user_id` (null when no credential was verified).
 */
export function accessLogJson(context: RequestContext, status: number, bytes: string | number | null | undefined, durationMs: number): string {
  return jsonLine("info", {
    request_id: context.requestId,
    method: context.method,
    route: context.route ?? null,
    path: context.path,
    status,
    bytes: bytes === undefined || bytes === null ? null : Number(bytes),
    duration_ms: Math.round(durationMs * 10) / 10,
    client_address: context.clientAddress,
    user_id: context.userId ?? null,
  });
}

export interface AccessLogOptions {
  /** `text` (default) or `json` lines. */
  format?: LogFormat;
  /** Told of every finished request (route, status, duration). */
  metrics?: Metrics;
}

/**
 * Opens each request's context (request ID, client address) and, when the response closes,
 * writes its access-log line and counts it in the metrics: the one place all of this happens.
 */
export class AccessLog {
  private readonly format: LogFormat;
  private readonly metrics: Metrics | undefined;

  /**
   * @param log writes one line (see {@link batchedLog})
   * @param trustedProxies proxy addresses whose X-Forwarded-For is believed (TRUSTED_PROXIES)
   */
  constructor(
    private readonly log: (line: string) => void,
    private readonly trustedProxies: ReadonlySet<string>,
    opts: AccessLogOptions = {},
  ) {
    this.format = opts.format ?? "text";
    this.metrics = opts.metrics;
  }

  /**
   * Begins one request (the dispatch, for every exchange): its context only. The exchange sends
   * `X-Request-Id` and calls {@link close} once answered (serving/exchange.ts's `open`).
   * @param peer the TCP peer's address
   */
  begin(method: string, path: string, peer: string | undefined, forwardedFor: string | null, requestId: string | null): RequestContext {
    return createRequestContext({ method, path, peer: peer ?? "unknown", forwardedFor, requestId }, this.trustedProxies);
  }

  /**
   * Ends one request: its access-log line and its count in the metrics.
   * @param bytes the Content-Length answered (undefined when streamed)
   */
  close(context: RequestContext, status: number, bytes: string | number | undefined): void {
    const ms = performance.now() - context.startedAt;
    this.metrics?.observeRequest(context.method, context.route ?? UNMATCHED_ROUTE, status, ms / 1000);
    this.log(this.format === "json" ? accessLogJson(context, status, bytes, ms) : accessLogLine(context.method, context.path, status, bytes, ms, context.requestId));
  }

  /**
   * Logs a request refused before any handler saw it — malformed (400), headers too large (431)
   * or too slow (408) — whose bodiless answer the listener wrote itself (lingering-close.ts):
   * one line like any other, with what of its request line could be read ("-" otherwise) and,
   * in text lines, the client's address (`client=`), since no request ID was echoed to it and
   * the address is all there is to know it by. X-Forwarded-For is not read from a refused head.
   * @param peer the TCP peer's address
   * @param requestLine what {@link requestLineOf} read of the request
   */
  refused(peer: string | undefined, status: number, requestLine: RequestLine = UNREAD): void {
    const context = this.begin(requestLine.method, requestLine.path, peer, null, null);
    this.metrics?.observeRequest(context.method, UNMATCHED_ROUTE, status, 0);
    this.log(
      this.format === "json"
        ? accessLogJson(context, status, 0, 0)
        : `${accessLogLine(context.method, context.path, status, 0, 0, context.requestId)} client=${context.clientAddress}`,
    );
  }
}

/** What the access log shows of a request line: its method and path (no query), "-" for what could not be read. */
export interface RequestLine {
  method: string;
  path: string;
}

const UNREAD: RequestLine = { method: "-", path: "-" };
/** RFC 9110 §5.6.2 `token`, the form of a method. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** An origin-form target of visible ASCII (RFC 9112 §3.2.1): anything else is not shown. */
const ORIGIN_FORM = /^\/[\x21-\x7e]*$/;
/** The longest path a refused request's line shows (its target is the client's to choose). */
const MAX_LOGGED_PATH = 1024;
const HEAD_END = Buffer.from("\r\n\r\n");

/**
 * The method and path of the request that an HTTP/1.x parser refused, from the bytes it was
 * given: the request starts after the last head that ended before `errorAt` (pipelined requests
 * without bodies before it), and its line (RFC 9112 §3: `method SP request-target SP
 * HTTP-version`) is read if it has that shape; a method that is not a token, or a target not in
 * origin form, is "-". A guess for a request behind one with a body: then most often "-".
 * @param bytes the chunk the parser failed on (node:http's `err.rawPacket`), if known
 * @param errorAt the offset in `bytes` where parsing failed (`err.bytesParsed`); unknown: the
 *   bytes are the head of one request (the sniff's)
 */
export function requestLineOf(bytes: Uint8Array | undefined, errorAt?: number): RequestLine {
  if (bytes === undefined || bytes.byteLength === 0) return UNREAD;
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = Math.min(errorAt ?? 0, buf.length);
  const lastHead = end >= HEAD_END.length ? buf.lastIndexOf(HEAD_END, end - HEAD_END.length) : -1;
  const start = lastHead === -1 ? 0 : lastHead + HEAD_END.length;
  const lineEnd = buf.indexOf(0x0a, start);
  const line = buf.toString("latin1", start, Math.min(lineEnd === -1 ? buf.length : lineEnd, start + MAX_LOGGED_PATH + 64)).replace(/\r$/, "");
  const parts = line.split(" ");
  if (parts.length !== 3 || !/^HTTP\/\d\.\d$/.test(parts[2]!)) return UNREAD;
  const target = parts[1]!;
  const query = target.indexOf("?");
  const path = query === -1 ? target : target.slice(0, query);
  return {
    method: TOKEN.test(parts[0]!) ? parts[0]! : "-",
    path: ORIGIN_FORM.test(path) && path.length <= MAX_LOGGED_PATH ? path : "-",
  };
}

/** Lines kept back at most before a write, whatever the event loop is doing. */
const LOG_BATCH_LINES = 1024;

/**
 * PIPE_BUF on Linux (pipe(7)): a write of at most this many bytes to a pipe is never interleaved
 * with another process's writes. Workers (WORKERS > 1) share their supervisor's stdout.
 */
export const PIPE_ATOMIC_BYTES = 4096;

/**
 * An access log that writes the lines of one event-loop turn together: one `write` for a burst
 * of requests instead of one per request (nginx's `access_log … buffer=` does the same). A line
 * waits at most until the loop's next turn; `flush` writes what is waiting at once (on stop).
 * @param maxWriteBytes the most one write carries, cut at line ends (a longer line goes alone):
 *   {@link PIPE_ATOMIC_BYTES} where several processes write to one pipe, so lines never mix
 */
export function batchedLog(write: (chunk: string) => void, maxWriteBytes = Number.POSITIVE_INFINITY): { log: (line: string) => void; flush: () => void } {
  let pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const lines = pending;
    pending = [];
    if (maxWriteBytes === Number.POSITIVE_INFINITY) return write(`${lines.join("\n")}\n`);
    let chunk = "";
    let bytes = 0;
    for (const line of lines) {
      const size = Buffer.byteLength(line) + 1;
      if (bytes > 0 && bytes + size > maxWriteBytes) {
        write(chunk);
        chunk = "";
        bytes = 0;
      }
      chunk += `${line}\n`;
      bytes += size;
    }
    write(chunk);
  };
  return {
    log(line) {
      pending.push(line);
      if (pending.length >= LOG_BATCH_LINES) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}
