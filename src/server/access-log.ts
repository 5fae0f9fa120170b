/**
 * The access log, and where each request's context begins: {@link AccessLog.open} creates the
 * request's {@link RequestContext} (its ID and client address decided once), echoes the ID, and
 * writes the request's one log line when its response closes — for every request, whichever
 * path serves it (RPC, content URLs, the HTTP app, a refused target).
 */
import { createRequestContext, type RequestContext } from "../context/request-context.ts";
import { headerOf, type NodeRequest, type NodeResponse } from "./node-bridge.ts";

/** `method=GET path="/x" status=200 bytes=12 duration_ms=0.4 request_id=abc` */
export function accessLogLine(
  method: string,
  pathname: string,
  status: number,
  bytes: string | number | null | undefined,
  startedAt: number,
  requestId: string,
): string {
  return (
    `method=${method} path=${JSON.stringify(pathname)} status=${status} bytes=${bytes ?? "-"} ` +
    `duration_ms=${(performance.now() - startedAt).toFixed(1)} request_id=${requestId}`
  );
}

/**
 * Opens each request's context (request ID, client address) and writes its access-log line when
 * the response closes: the one place both happen.
 */
export class AccessLog {
  /**
   * @param log writes one line (see {@link batchedLog})
   * @param trustedProxies proxy addresses whose X-Forwarded-For is believed (TRUSTED_PROXIES)
   */
  constructor(
    private readonly log: (line: string) => void,
    private readonly trustedProxies: ReadonlySet<string>,
  ) {}

  /**
   * Begins one request: its context, its `X-Request-Id` response header, and its log line,
   * written when `res` closes with the status and Content-Length it was answered with (the
   * duration is from here to the close, in milliseconds).
   * @param path what the log shows as the path (no query)
   */
  open(req: NodeRequest, res: NodeResponse, path: string): RequestContext {
    const context = createRequestContext(
      {
        method: req.method ?? "GET",
        path,
        peer: req.socket?.remoteAddress ?? "unknown",
        forwardedFor: headerOf(req, "x-forwarded-for"),
        requestId: headerOf(req, "x-request-id"),
      },
      this.trustedProxies,
    );
    res.setHeader("x-request-id", context.requestId);
    res.once("close", () => {
      const bytes = res.getHeader("content-length") as string | number | undefined;
      this.log(accessLogLine(context.method, context.path, res.statusCode, bytes, context.startedAt, context.requestId));
    });
    return context;
  }
}

/** Lines kept back at most before a write, whatever the event loop is doing. */
const LOG_BATCH_LINES = 1024;

/**
 * An access log that writes the lines of one event-loop turn together: one `write` for a burst
 * of requests instead of one per request (nginx's `access_log … buffer=` does the same). A line
 * waits at most until the loop's next turn; `flush` writes what is waiting at once (on stop).
 */
export function batchedLog(write: (chunk: string) => void): { log: (line: string) => void; flush: () => void } {
  let pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const chunk = `${pending.join("\n")}\n`;
    pending = [];
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
