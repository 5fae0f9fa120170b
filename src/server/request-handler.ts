/**
 * The fetch-style entry every HTTP request goes through, whichever connection brought it
 * (HTTP/1.1 or h2c): RPC paths go to the Connect handlers, everything else to the HTTP app.
 * Adds the request ID header and writes one access-log line per request.
 */
import { CLIENT_ADDRESS_HEADER, clientAddressOf } from "../auth/rate-limit.ts";
import { requestIdOf } from "../http/request-id.ts";

export type FetchHandler = (request: Request) => Promise<Response> | Response;

/** The shared handler: a request and the address of the peer (client or proxy) that sent it. */
export type ClientRequestHandler = (request: Request, clientAddress: string) => Promise<Response>;

export interface RequestHandlerOptions {
  /** The HTTP application (Elysia's `app.handle`). */
  app: FetchHandler;
  /** RPC request path → handler (Connect and gRPC-Web over any HTTP version). */
  rpc: Map<string, FetchHandler>;
  log: (line: string) => void;
  /** Proxy addresses whose X-Forwarded-For is believed (TRUSTED_PROXIES). */
  trustedProxies: ReadonlySet<string>;
}

/** Builds the shared request handler. */
export function createRequestHandler(opts: RequestHandlerOptions): ClientRequestHandler {
  return async (incoming, peer) => {
    const started = performance.now();
    const request = withRoutableUrl(incoming);
    // Only the listener knows the client's address; a client cannot set it.
    request.headers.set(CLIENT_ADDRESS_HEADER, clientAddressOf(peer, request.headers.get("x-forwarded-for"), opts.trustedProxies));
    // Handlers that log (RPC errors) read the ID from the request: one ID per request everywhere.
    const requestId = requestIdOf(request);
    request.headers.set("x-request-id", requestId);
    const url = new URL(request.url);
    const rpc = request.method === "POST" || request.method === "GET" ? opts.rpc.get(url.pathname) : undefined;
    const response = await (rpc ?? opts.app)(request);
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

/**
 * Elysia finds the path with `url.indexOf("/", 11)`, which misses it when the Host is shorter
 * than four characters (`http://nas/…`). Such requests get an equivalent URL whose host is
 * long enough; handlers only use the path and query, never the host.
 */
function withRoutableUrl(request: Request): Request {
  const url = request.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  if (pathStart >= 11 || pathStart < 0) return request;
  return new Request(`http://localhost${url.slice(pathStart)}`, request);
}
