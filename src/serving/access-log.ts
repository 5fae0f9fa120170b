/**
 * The access log, and where each request's context begins: {@link AccessLog.begin} creates the
 * request's {@link RequestContext} (its ID and client address decided once) in the dispatch, and
 * {@link AccessLog.close} writes the request's one log line once its exchange is answered — for
 * every request, whichever path serves it (RPC, content URLs, the HTTP app, a refused target).
 */
import { createRequestContext, type RequestContext } from "../context/request-context.ts";
import { jsonLine, type LogFormat } from "../log.ts";
import { loggedPath } from "./logged-path.ts";
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
   * `X-Request-Id` and calls {@link close} once answered (serving/exchange.ts's `open`). The
   * context keeps the path as logs and error reports print it ({@link loggedPath}: never a login
   * link's token).
   * @param peer the TCP peer's address
   */
  begin(method: string, path: string, peer: string | undefined, forwardedFor: string | null, requestId: string | null): RequestContext {
    return createRequestContext({ method, path: loggedPath(path), peer: peer ?? "unknown", forwardedFor, requestId }, this.trustedProxies);
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

/** A request line none of which could be read. */
export const UNREAD: RequestLine = { method: "-", path: "-" };
