/**
 * The fetch-style entry for HTTP requests that are neither RPCs nor content URLs (those are
 * served on the Node request directly, see one-port.ts), whichever connection brought them
 * (HTTP/1.1 or h2c): the HTTP app (REST, dashboard, static files). Adds the request ID header
 * and writes one access-log line per request.
 */
import { CLIENT_ADDRESS_HEADER, clientAddressOf } from "../auth/rate-limit.ts";
import { requestIdOf } from "../http/request-id.ts";

export type FetchHandler = (request: Request) => Promise<Response> | Response;

/** The shared handler: a request and the address of the peer (client or proxy) that sent it. */
export type ClientRequestHandler = (request: Request, clientAddress: string) => Promise<Response>;

export interface RequestHandlerOptions {
  /** The HTTP application (Elysia's `app.handle`). */
  app: FetchHandler;
  log: (line: string) => void;
  /** Proxy addresses whose X-Forwarded-For is believed (TRUSTED_PROXIES). */
  trustedProxies: ReadonlySet<string>;
}

/** Builds the shared request handler. */
export function createRequestHandler(opts: RequestHandlerOptions): ClientRequestHandler {
  return async (request, peer) => {
    const started = performance.now();
    // Only the listener knows the client's address; a client cannot set it.
    request.headers.set(CLIENT_ADDRESS_HEADER, clientAddressOf(peer, request.headers.get("x-forwarded-for"), opts.trustedProxies));
    // Handlers that log (RPC errors) read the ID from the request: one ID per request everywhere.
    const requestId = requestIdOf(request);
    request.headers.set("x-request-id", requestId);
    const url = new URL(request.url);
    const response = await opts.app(request);
    response.headers.set("x-request-id", requestId);
    opts.log(accessLogLine(request.method, url.pathname, response.status, response.headers.get("content-length"), started, requestId));
    return response;
  };
}

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
