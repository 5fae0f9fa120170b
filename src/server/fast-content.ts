/**
 * The content fast path: GET and HEAD of `/{id}` and `/{id}/{slug}` — the requests a file
 * sharing service answers most — served straight on the Node-style request and response,
 * without building a fetch `Request`, routing or a `Response`. The answer itself comes from
 * {@link contentReply}, the same code the HTTP app uses for these URLs, so both paths agree;
 * any URL of another shape goes the general way.
 */
import type { ServerResponse } from "node:http";
import type { HeaderSource } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import { report } from "../context/report.ts";
import { contentReply, type ContentDeps } from "../http/content.ts";
import { errorResponse } from "../http/respond.ts";
import { failed, headerOf, writeFileRange, writeResponse, type NodeRequest, type NodeResponse } from "./node-bridge.ts";

export interface FastContentOptions {
  deps: ContentDeps;
}

/** `/{21-char id}` or `/{21-char id}/{slug}`, the slug without escapes or further segments. */
const CONTENT_PATH = /^\/([A-Za-z0-9_-]{21})(?:\/([A-Za-z0-9._~-]+))?$/;

/** The file ID and slug when `pathname` is a content URL this path serves; undefined otherwise. */
export function contentTarget(pathname: string): { id: string; slug: string | undefined } | undefined {
  const m = CONTENT_PATH.exec(pathname);
  return m === null ? undefined : { id: m[1]!, slug: m[2] };
}

/**
 * Answers a content GET or HEAD: the same status, headers and body as the HTTP app (the request
 * ID and the access-log line come from the dispatch, server/access-log.ts). Errors are reported
 * and become the usual `google.rpc.Status` JSON.
 */
export async function serveContentFast(
  opts: FastContentOptions,
  req: NodeRequest,
  res: NodeResponse,
  target: { id: string; slug: string | undefined },
  pathname: string,
  search: string,
  context: RequestContext,
): Promise<void> {
  const headers: HeaderSource = { get: (name) => headerOf(req, name) };
  try {
    const reply = contentReply(opts.deps, { method: req.method ?? "GET", headers, pathname, search, clientAddress: context.clientAddress }, target.id, target.slug);
    const writer = res as ServerResponse;
    writer.writeHead(reply.status, reply.headers);
    if (reply.body === null || req.method === "HEAD") writer.end();
    else if (reply.body instanceof Uint8Array) writer.end(reply.body);
    else await writeFileRange(res, reply.body);
  } catch (err) {
    if (res.headersSent) failed(res, err, context);
    else await writeResponse(req, res, errorResponse(report(err, context))).catch((e: unknown) => failed(res, e, context));
  }
}
