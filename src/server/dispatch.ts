/**
 * The one dispatch every request reaches, as an exchange (serving/exchange.ts), whichever wire
 * read it: checks the target and its authority, opens the request's context and access-log
 * entry, and routes — GET and HEAD of content URLs and share links to serving/content.ts, of
 * `/healthz` to its fixed answer here, RPC paths to the RPC bridge, `/metrics` to
 * serving/metrics.ts, any method under `/dav` to dav/handler.ts (WebDAV, written against the
 * exchange), signed S3 requests to s3/handler.ts, everything else through the fetch
 * bridge to the HTTP app, which reads and answers on the exchange. connect-node alone is given
 * the Node request and response the exchange was made of (`Exchange.node`).
 */
import type { AccessLog } from "../serving/access-log.ts";
import { AppError } from "../errors.ts";
import { errorAnswer, failed, type Exchange } from "../serving/exchange.ts";
import { contentTarget, serveContent, serveShare, shareTarget, type ContentOptions } from "../serving/content.ts";
import { serveMetrics, type Metrics } from "../serving/metrics.ts";
import { serveDav, type DavServeDeps } from "../dav/handler.ts";
import { isS3Request, serveS3, type S3Deps } from "../s3/handler.ts";
import { isDavPath } from "../dav/paths.ts";
import { serveWithFetch, type FetchHandler } from "./node-bridge.ts";
import { authorityProblem, originFormOf } from "./request-target.ts";
import { responseTapFile, tapExchange } from "./response-tap.ts";
import type { RpcHandler } from "./rpc-bridge.ts";

/** Where a request goes: its path (no query) and, for content URLs, the file and the query. */
export type Route =
  | { kind: "rpc"; pathname: string }
  | { kind: "content"; pathname: string; id: string; slug: string | undefined; search: string }
  | { kind: "share"; pathname: string; token: string; search: string }
  | { kind: "metrics"; pathname: string }
  | { kind: "health"; pathname: string }
  | { kind: "dav"; pathname: string; search: string }
  | { kind: "s3"; pathname: string; search: string }
  | { kind: "app"; pathname: string };

/**
 * The route of a request whose target is `target` (origin form, `/path?query`).
 * @param rpcPaths the RPC request paths (`/cubby.v1.FileService/GetFile`, …)
 */
export function routeOf(method: string | undefined, target: string, rpcPaths: ReadonlySet<string>): Route {
  const q = target.indexOf("?");
  const pathname = q === -1 ? target : target.slice(0, q);
  if (rpcPaths.has(pathname)) return { kind: "rpc", pathname };
  if (isDavPath(pathname)) return { kind: "dav", pathname, search: q === -1 ? "" : target.slice(q) };
  if (method === "GET" || method === "HEAD") {
    if (pathname === HEALTH_PATH) return { kind: "health", pathname };
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

/**
 * The liveness check (GET or HEAD; README "Operations", a container's HEALTHCHECK, the tests'
 * stall probe): answered by the dispatch itself, on the HTTP/1.1 fast path, with no store read,
 * so what it measures is whether the process's event loop is free (CONTRACT §14), not the cost of
 * the HTTP app in front of it (~1.2 ms of CPU an answer through node:http and Elysia against
 * ~0.3 ms here, measured with the probe's 6 connections on this 2-core machine).
 */
export const HEALTH_PATH = "/healthz";
const HEALTH_BODY = '{"status":"ok"}';
const HEALTH_HEADERS = Object.freeze({ "content-type": "application/json", "content-length": String(HEALTH_BODY.length), "cache-control": "no-store" });

/** The route template of a route served outside the HTTP app (whose templates Elysia knows). */
export function templateOf(route: Route): string | undefined {
  switch (route.kind) {
    case "rpc":
    case "metrics":
    case "health":
      return route.pathname;
    case "content":
      return route.slug === undefined ? "/:id" : "/:id/:slug";
    case "share":
      return "/s/:token";
    case "dav":
      return "/dav/*";
    case "s3":
      return "s3";
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
  /** What WebDAV at `/dav/` is served with (CONTRACT §12); undefined: `/dav` goes to the app (404). */
  dav?: DavServeDeps;
  /** What the S3 endpoint is served with (CONTRACT §16); undefined: signed requests go where their paths do. */
  s3?: S3Deps;
  /** The metrics and METRICS_TOKEN; undefined: `/metrics` is not served. */
  metrics?: { metrics: Metrics; token: string | undefined };
}

/**
 * The dispatch: serves one exchange. `route`, when given, is the route of its target, which the
 * wire has already read as origin form (the HTTP/1.1 reader, HTTP/2 content streams); its
 * authority is checked here all the same.
 */
export function createDispatch(opts: DispatchOptions): (exchange: Exchange, route?: Route) => void {
  return (ex, route) => {
    let problem: string | undefined;
    let target = ex.target;
    if (route === undefined) {
      const checked = originFormOf(ex.method, ex.target, ex.headerRecord, ex.rawHeaders);
      if ("problem" in checked) problem = checked.problem;
      else route = routeOf(ex.method, (target = checked.target), opts.rpcPaths);
    } else problem = authorityProblem(ex.headerRecord, ex.rawHeaders);
    if (route === undefined || problem !== undefined) {
      refuse(ex, opts.accessLog, problem ?? "");
      return;
    }
    // An AWS-signed request is S3's whatever its path (CONTRACT §16): the same
    // port, and content URLs, /v1 and /dav keep their meaning for every other request.
    if (opts.s3 !== undefined && route.kind !== "rpc") {
      const search = target.slice(route.pathname.length);
      if (isS3Request(ex.headers.get("authorization"), search.slice(1))) route = { kind: "s3", pathname: route.pathname, search };
    }
    ex.pathname = route.pathname;
    const context = opts.accessLog.begin(ex.method, route.pathname, ex.peer, ex.headers.get("x-forwarded-for"), ex.headers.get("x-request-id"));
    context.route = templateOf(route);
    ex.clientAddress = context.clientAddress;
    ex.open(context);
    if (route.kind === "health" || route.kind === "content" || route.kind === "share" || (route.kind === "metrics" && opts.metrics !== undefined)) {
      const tapped = responseTapFile === undefined ? undefined : tapExchange(ex, route.pathname);
      if (route.kind === "health") ex.respond(200, HEALTH_HEADERS, HEALTH_BODY);
      else if (route.kind === "content") {
        ex.search = route.search;
        serveContent(opts.content, ex, route);
      } else if (route.kind === "share") {
        ex.search = route.search;
        serveShare(opts.content, ex, route.token);
      } else void serveMetrics(opts.metrics!.metrics, opts.metrics!.token, ex).catch((err) => failed(ex, err, context));
      tapped?.();
      return;
    }
    if (route.kind === "s3") {
      ex.search = route.search;
      // The body reader is made now: the transport stays paused until the operation reads it.
      if (ex.method !== "GET" && ex.method !== "HEAD") ex.body();
      void serveS3(opts.s3!, ex);
      return;
    }
    if (route.kind === "dav" && opts.dav !== undefined) {
      ex.search = route.search;
      // The body reader is made now: the transport stays paused until the method reads it.
      if (ex.method !== "GET" && ex.method !== "HEAD") ex.body();
      void serveDav(opts.dav, ex);
      return;
    }
    if (route.kind === "rpc") {
      // connect-node takes the Node request and response: only node:http and the HTTP/2 compat
      // pair carry RPC (the reader and HTTP/2 content streams route to content only).
      const node = ex.node;
      if (node === undefined) return failed(ex, new Error("an RPC route reached the dispatch without a Node request"), context);
      if (node.req.url !== target) node.req.url = target;
      opts.rpc(node.req, node.res, context);
      return;
    }
    ex.search = target.slice(route.pathname.length);
    if (responseTapFile !== undefined) tapExchange(ex, route.pathname)();
    void serveWithFetch(ex, opts.app, context);
  };
}

/** Answers 400 to a request whose target or authority the dispatch refuses (its context's path: what of the target fits a log). */
function refuse(ex: Exchange, accessLog: AccessLog, problem: string): void {
  const context = accessLog.begin(ex.method, ex.target.slice(0, 200), ex.peer, ex.headers.get("x-forwarded-for"), ex.headers.get("x-request-id"));
  ex.clientAddress = context.clientAddress;
  ex.open(context);
  const { status, headers, body } = errorAnswer(new AppError("invalid_argument", problem));
  ex.respond(status, headers, body);
}
