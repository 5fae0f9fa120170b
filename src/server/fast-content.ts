/**
 * The content fast path: GET and HEAD of `/{id}` and `/{id}/{slug}` — the requests a file
 * sharing service answers most — served straight on the Node-style request and response,
 * without building a fetch `Request`, routing or a `Response`. The answer itself comes from
 * {@link contentReply}, the same code the HTTP app uses for these URLs, so both paths agree;
 * any URL of another shape goes the general way.
 */
import type { ServerResponse } from "node:http";
import { CLIENT_ADDRESS_HEADER } from "../auth/rate-limit.ts";
import type { HeaderSource } from "../auth/principal.ts";
import { contentReply, type ContentDeps } from "../http/content.ts";
import { errorResponse } from "../http/respond.ts";
import { clientOf, failed, headerOf, writeFileRange, writeResponse, type NodeRequest, type NodeResponse } from "./node-bridge.ts";
import { accessLogLine } from "./request-handler.ts";

export interface FastContentOptions {
  deps: ContentDeps;
  log: (line: string) => void;
  /** Proxy addresses whose X-Forwarded-For is believed (TRUSTED_PROXIES). */
  trustedProxies: ReadonlySet<string>;
}

/** `/{21-char id}` or `/{21-char id}/{slug}`, the slug without escapes or further segments. */
const CONTENT_PATH = /^\/([A-Za-z0-9_-]{21})(?:\/([A-Za-z0-9._~-]+))?$/;

/** The file ID and slug when `pathname` is a content URL this path serves; undefined otherwise. */
export function contentTarget(pathname: string): { id: string; slug: string | undefined } | undefined {
  const m = CONTENT_PATH.exec(pathname);
  return m === null ? undefined : { id: m[1]!, slug: m[2] };
}

/**
 * Answers a content GET or HEAD: the same status, headers and body as the HTTP app, plus the
 * request ID and one access-log line. Errors become the usual `google.rpc.Status` JSON.
 */
export async function serveContentFast(
  opts: FastContentOptions,
  req: NodeRequest,
  res: NodeResponse,
  target: { id: string; slug: string | undefined },
  pathname: string,
  search: string,
): Promise<void> {
  const started = performance.now();
  const { address, requestId } = clientOf(req, opts.trustedProxies);
  const headers: HeaderSource = { get: (name) => (name === CLIENT_ADDRESS_HEADER ? address : headerOf(req, name)) };
  let status = 500;
  let bytes: string | undefined;
  try {
    const reply = contentReply(opts.deps, { method: req.method ?? "GET", headers, pathname, search }, target.id, target.slug);
    reply.headers["x-request-id"] = requestId;
    status = reply.status;
    bytes = reply.headers["content-length"];
    const writer = res as ServerResponse;
    writer.writeHead(reply.status, reply.headers);
    if (reply.body === null || req.method === "HEAD") writer.end();
    else if (reply.body instanceof Uint8Array) writer.end(reply.body);
    else await writeFileRange(res, reply.body);
  } catch (err) {
    if (res.headersSent) {
      failed(req, res, err);
    } else {
      const response = errorResponse(err, requestId);
      response.headers.set("x-request-id", requestId);
      status = response.status;
      bytes = response.headers.get("content-length") ?? undefined;
      await writeResponse(req, res, response).catch((e: unknown) => failed(req, res, e));
    }
  } finally {
    opts.log(accessLogLine(req.method ?? "GET", pathname, status, bytes, started, requestId));
  }
}
