/**
 * The one dispatch every request reaches, HTTP/1.1 or HTTP/2: checks the target, opens the
 * request's context and access-log entry (access-log.ts), and routes — RPC paths to connect-node,
 * GET and HEAD of content URLs and share links to server/content.ts, of `/metrics` to
 * server/metrics.ts, everything else through the fetch bridge to the HTTP app.
 */
import { AppError } from "../errors.ts";
import type { AccessLog } from "./access-log.ts";
import { contentTarget, serveContent, serveShare, shareTarget, type ContentOptions } from "./content.ts";
import { serveMetrics, type Metrics } from "./metrics.ts";
import { failed, refuse, serveWithFetch, type FetchHandler, type NodeRequest, type NodeResponse } from "./node-bridge.ts";
import { originFormOf } from "./request-target.ts";
import { responseTapFile, tapResponse } from "./response-tap.ts";
import type { RpcHandler } from "./rpc-bridge.ts";

/** Where a request goes: its path (no query) and, for content URLs, the file and the query. */
export type Route =
  | { kind: "rpc"; pathname: string }
  | { kind: "content"; pathname: string; id: string; slug: string | undefined; search: string }
  | { kind: "share"; pathname: string; token: string; search: string }
  | { kind: "metrics"; pathname: string }
  | { kind: "app"; pathname: string };

/**
 * The route of a request whose target is `target` (origin form, `/path?query`).
 * @param rpcPaths the RPC request paths (`/cubby.v1.FileService/GetFile`, …)
 */
export function routeOf(method: string | undefined, target: string, rpcPaths: ReadonlySet<string>): Route {
  const q = target.indexOf("?");
  const pathname = q === -1 ? target : target.slice(0, q);
  if (rpcPaths.has(pathname)) return { kind: "rpc", pathname };
  if (method === "GET" || method === "HEAD") {
    const search = q === -1 ? "" : target.slice(q);
    const file = contentTarget(pathname);
    if (file !== undefined) return { kind: "content", pathname, id: file.id, slug: file.slug, search };
    const token = shareTarget(pathname);
    if (token !== undefined) return { kind: "share", pathname, token, search };
    if (pathname === METRICS_PATH) return { kind: "metrics", pathname };
  }
  return { kind: "app", pathname };
}

/** Where Prometheus scrapes (CONTRACT §9). */
export const METRICS_PATH = "/metrics";

/** The route template of a route served outside the HTTP app (whose templates Elysia knows). */
export function templateOf(route: Route): string | undefined {
  switch (route.kind) {
    case "rpc":
    case "metrics":
      return route.pathname;
    case "content":
      return route.slug === undefined ? "/:id" : "/:id/:slug";
    case "share":
      return "/s/:token";
    case "app":
      return undefined;
  }
}

export interface DispatchOptions {
  rpcPaths: ReadonlySet<string>;
  rpc: RpcHandler;
  content: ContentOptions;
  /** The HTTP app (REST, dashboard, sign-in, static files). */
  app: FetchHandler;
  accessLog: AccessLog;
  /** The metrics and METRICS_TOKEN; undefined: `/metrics` is not served. */
  metrics?: { metrics: Metrics; token: string | undefined };
  /** Told first of every HTTP/1.1 request (its connection's header deadline and keep-alive). */
  onHttp1Request: (req: NodeRequest, res: NodeResponse) => void;
}

/** The request listener both `node:http` and `node:http2` are given. */
export function createDispatch(opts: DispatchOptions): (req: NodeRequest, res: NodeResponse) => void {
  return (req, res) => {
    if (req.httpVersionMajor === 1) opts.onHttp1Request(req, res);
    const checked = originFormOf(req);
    if ("problem" in checked) {
      opts.accessLog.open(req, res, (req.url ?? "").slice(0, 200));
      return refuse(res, new AppError("invalid_argument", checked.problem));
    }
    if (req.url !== checked.target) req.url = checked.target;
    const route = routeOf(req.method, checked.target, opts.rpcPaths);
    const context = opts.accessLog.open(req, res, route.pathname);
    context.route = templateOf(route);
    if (responseTapFile !== undefined && route.kind !== "rpc") tapResponse(req, res, route.pathname);
    if (route.kind === "rpc") opts.rpc(req, res, context);
    else if (route.kind === "metrics" && opts.metrics !== undefined) void serveMetrics(opts.metrics.metrics, opts.metrics.token, req, res).catch((err) => failed(res, err, context));
    else if (route.kind === "content") void serveContent(opts.content, req, res, route, route.pathname, route.search, context);
    else if (route.kind === "share") void serveShare(opts.content, req, res, route.token, route.pathname, route.search, context);
    else void serveWithFetch(req, res, opts.app, context);
  };
}
