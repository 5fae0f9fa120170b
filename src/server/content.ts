/**
 * Content URLs on the wire: GET and HEAD of `/{id}` and `/{id}/{slug}`, the requests a file
 * sharing service answers most, and of share links `/s/{token}`, served straight on the Node-style request and response without
 * building a fetch `Request`, routing or a `Response`. What to answer comes from http/content.ts
 * (access, then the pure `contentReply`); this module is the one place that writes a file's
 * bytes to a connection.
 */
import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import type { HeaderSource } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import { report } from "../context/report.ts";
import { contentReply, openContent, type ContentDeps, type ContentReply, type ContentRequest } from "../http/content.ts";
import { shareReply, type ShareContentDeps } from "../http/share-content.ts";
import { negotiatedError } from "../http/pages.ts";
import { isFileId } from "../domain/ids.ts";
import type { FileContent } from "../service/files.ts";
import type { ByteRange, ReadPlan } from "../storage/ports.ts";
import { failed, HeaderLookup, headerOf, type NodeRequest, type NodeResponse } from "./node-bridge.ts";

export interface ContentOptions {
  deps: ContentDeps & ShareContentDeps;
}

/** `/{21-char id}` or `/{21-char id}/{one segment}`. */
const CONTENT_PATH = /^\/([A-Za-z0-9_-]{21})(?:\/([^/]+))?$/;

/**
 * The file ID and slug when `pathname` is a content URL; undefined otherwise. The slug is
 * percent-decoded (an undecodable one is kept as sent: it matches no slug, so it redirects).
 */
export function contentTarget(pathname: string): { id: string; slug: string | undefined } | undefined {
  const m = CONTENT_PATH.exec(pathname);
  if (m === null) return undefined;
  const raw = m[2];
  if (raw === undefined || !raw.includes("%")) return { id: m[1]!, slug: raw };
  try {
    return { id: m[1]!, slug: decodeURIComponent(raw) };
  } catch {
    return { id: m[1]!, slug: raw };
  }
}

/** `/s/{token}`: a share link (CONTRACT §8); the token's shape is checked when it is looked up. */
const SHARE_PATH = /^\/s\/([A-Za-z0-9_-]{1,64})$/;

/** The token when `pathname` is a share URL; undefined otherwise. */
export function shareTarget(pathname: string): string | undefined {
  return SHARE_PATH.exec(pathname)?.[1];
}

/**
 * Answers a content GET or HEAD (the request ID and the access-log line come from the dispatch,
 * server/access-log.ts).
 */
export function serveContent(
  opts: ContentOptions,
  req: NodeRequest,
  res: NodeResponse,
  target: { id: string; slug: string | undefined },
  pathname: string,
  search: string,
  context: RequestContext,
): Promise<void> {
  const request = contentRequest(req, pathname, search, context);
  return answer(req, res, context, () => decideContent(opts, request, target));
}

/** What a content answer is: the reply, and the file's content when the reply sends some of it. */
export interface ContentDecision {
  reply: ContentReply;
  content?: FileContent | undefined;
}

/**
 * Decides the answer to a content URL (http/content.ts: access, then `contentReply`).
 * @throws AppError (not_found, permission_denied, …) as the lookup does
 */
export async function decideContent(opts: ContentOptions, request: ContentRequest, target: { id: string; slug: string | undefined }): Promise<ContentDecision> {
  const opened = await openContent(opts.deps, request, target.id);
  if ("redirect" in opened) return { reply: opened.redirect };
  return { reply: contentReply(opened.file, request, target.slug, opts.deps.baseUrl()), content: opened };
}

/**
 * {@link decideContent} without waiting, for the answers that need no I/O: a file whose row is
 * in the read cache, public or opened by credentials the caches resolve
 * (FileService.openContentNow, Authenticator.optionalNow). Undefined when the answer needs a
 * lookup or an error (decideContent then gives it); never throws.
 */
export function decideContentNow(opts: ContentOptions, request: ContentRequest, target: { id: string; slug: string | undefined }): ContentDecision | undefined {
  if (!isFileId(target.id)) return undefined;
  const content = opts.deps.files.openContentNow(target.id, () => opts.deps.auth.optionalNow(request));
  if (content === undefined) return undefined;
  try {
    return { reply: contentReply(content.file, request, target.slug, opts.deps.baseUrl()), content };
  } catch {
    return undefined; // a malformed `download` parameter: decideContent answers 400
  }
}

/** Answers GET or HEAD of a share link, `/s/{token}` (http/share-content.ts decides). */
export function serveShare(opts: ContentOptions, req: NodeRequest, res: NodeResponse, token: string, pathname: string, search: string, context: RequestContext): Promise<void> {
  const request = contentRequest(req, pathname, search, context);
  return answer(req, res, context, () => shareReply(opts.deps, request, token));
}

function contentRequest(req: NodeRequest, pathname: string, search: string, context: RequestContext): ContentRequest {
  const headers: HeaderSource = { get: (name) => headerOf(req, name) };
  return { method: req.method ?? "GET", headers, pathname, search, clientAddress: context.clientAddress, context };
}

/**
 * The {@link ContentRequest} of a request read without a Node request object (an HTTP/2
 * stream's headers, the HTTP/1.1 fast path's head).
 * @param headers by lower-case name, repeated ones combined as node:http does
 */
export function contentRequestOf(method: string, route: { pathname: string; search: string }, headers: Readonly<Record<string, string | string[] | undefined>>, context: RequestContext): ContentRequest {
  return { method, headers: new HeaderLookup(headers), pathname: route.pathname, search: route.search, clientAddress: context.clientAddress, context };
}

/**
 * Writes what `decide` answers: the reply's head, then its own body or the content's range
 * (nothing for HEAD). Errors are reported and become the usual `google.rpc.Status` JSON; a
 * failure after the headers went out resets the response.
 */
async function answer(
  req: NodeRequest,
  res: NodeResponse,
  context: RequestContext,
  decide: () => Promise<ContentDecision>,
): Promise<void> {
  // Watched from the start: a stream reset while the file is looked up (a database round trip)
  // has already closed when the content would be written.
  const gone = new AbortController();
  const close = () => gone.abort();
  res.once("close", close);
  try {
    const { reply, content } = await decide();
    if (gone.signal.aborted) return;
    // content-length stays among the headers: the access log reads it when the response closes.
    (res as ServerResponse).writeHead(reply.status, reply.headers);
    if (req.method === "HEAD") res.end();
    else if (reply.body !== undefined) (res as ServerResponse).end(reply.body);
    else if (reply.range === undefined || content === undefined) res.end();
    else await writeContent(res as ServerResponse, content, reply.range, gone, (res as Http2ServerResponse).stream === undefined ? H1_PLAN : H2_PLAN);
  } catch (err) {
    if (res.headersSent) failed(res, err, context);
    else {
      // A page for a browser navigation, JSON for a program (CONTRACT §11).
      const error = negotiatedError(report(err, context), headerOf(req, "accept") ?? null, req.method);
      (res as ServerResponse).writeHead(error.status, error.headers);
      if (error.body === undefined) res.end();
      else res.end(error.body);
    }
  } finally {
    res.off("close", close);
  }
}

/**
 * How a download is buffered. An HTTP/1.1 connection carries one download at a time: four
 * 256 KiB buffers keep the socket full. An HTTP/2 connection carries up to 100
 * (H2_MAX_CONCURRENT_STREAMS), each held back by the client's flow-control window, and Bun's
 * HTTP/2 layer holds about as much again as it is given: two of 128 KiB a stream download as
 * fast (curl, ~0.9–1.4 GB/s on loopback) while a connection whose client stops reading holds
 * ~25 MiB instead of ~200.
 */
const H1_PLAN = { chunkBytes: 256 * 1024, buffers: 4 };
export const H2_PLAN = { chunkBytes: 128 * 1024, buffers: 2 };

/** Where {@link writeContent} writes: a Node response, or an HTTP/2 stream (h2-content.ts). */
export interface ContentWriter {
  write(chunk: Uint8Array, callback: (err?: Error | null) => void): unknown;
  end(chunk?: Uint8Array): unknown;
}

/**
 * Sends `range` of a file's content and ends `writer`: from memory when the blob store keeps the
 * content, else chunk by chunk from the store, each chunk released (and its buffer refilled)
 * only in the write's callback. Stops, releasing the blob and its buffers, as soon as the
 * response closes or a write fails (client gone, stream reset, GOAWAY, session closed or timed
 * out; `gone` aborts then, the caller watches the response's `close`): Bun's
 * `Http2ServerResponse` has no `destroyed` and delivers no callback for a reset stream, so
 * waiting for callbacks alone would never stop.
 * @param buffering the chunk size and count of buffers held at once ({@link H2_PLAN} on HTTP/2)
 * @throws what reading the blob throws (the caller resets the response)
 */
export async function writeContent(
  writer: ContentWriter,
  content: FileContent,
  range: ByteRange,
  gone: AbortController,
  buffering: Omit<ReadPlan, "signal">,
): Promise<void> {
  if (content.cached !== undefined) {
    writer.end(content.cached.subarray(range.start, range.start + range.length));
    return;
  }
  const plan: ReadPlan = { ...buffering, signal: gone.signal };
  for await (const chunk of content.read(range, plan)) {
    writer.write(chunk.bytes, (err) => {
      if (err) gone.abort();
      chunk.release();
    });
    if (gone.signal.aborted) break;
  }
  if (!gone.signal.aborted) writer.end();
}
