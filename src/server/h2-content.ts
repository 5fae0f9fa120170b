/**
 * The HTTP/2 server's `stream` listener. GET and HEAD of content URLs and share links, the
 * requests a file sharing service answers most, are answered on the stream itself with the core
 * API (h2-respond.ts): no compat request and response are built, which in Bun cost more than the
 * answer (docs/benchmarks.md, issue 16). Every other stream gets the compat objects, as
 * node:http2's own `request` event would give them, and the shared dispatch.
 *
 * What the dispatch does for every request is done here too: the target and authority checked
 * (anything unusual goes to the dispatch, which refuses it), the request's context and
 * `X-Request-Id`, the access-log line and metrics when the stream closes, and the tests'
 * response tap. Bytes sent are counted by the connection's socket (h2-socket.ts).
 */
import http2, { type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import type { RequestContext } from "../context/request-context.ts";
import { report } from "../context/report.ts";
import { negotiatedError } from "../http/pages.ts";
import { shareReply } from "../http/share-content.ts";
import type { AccessLog } from "./access-log.ts";
import type { ContentNow } from "./content-now.ts";
import { contentRequestOf, decideContent, H2_PLAN, writeContent, type ContentDecision, type ContentOptions } from "./content.ts";
import { routeOf, templateOf } from "./dispatch.ts";
import { isAnswerable, listenForErrors, resetStream, respondHead, respondWhole } from "./h2-respond.ts";
import { headerValue, type NodeRequest, type NodeResponse } from "./node-bridge.ts";
import { authorityProblem } from "./request-target.ts";
import { responseTapFile, tapStream } from "./response-tap.ts";

export interface H2StreamOptions {
  /** The dispatch every stream not answered here goes to, with compat request and response. */
  dispatch: (req: NodeRequest, res: NodeResponse) => void;
  rpcPaths: ReadonlySet<string>;
  content: ContentOptions;
  /** Content answers that need no I/O, written in the turn the stream opened; undefined: none. */
  contentNow: ContentNow | undefined;
  accessLog: AccessLog;
}

/** The TCP peer of each HTTP/2 session: reading it through `session.socket` costs a Proxy trap and two getters a stream. */
const peers = new WeakMap<Http2Session, string | undefined>();

/** Notes a new session's TCP peer address (the `session` event). */
export function notePeer(session: Http2Session, address: string | undefined): void {
  peers.set(session, address);
}

/** The TCP peer address of `stream`'s session. */
function peerOf(stream: ServerHttp2Stream): string | undefined {
  const session = stream.session;
  return session === undefined ? undefined : (peers.get(session) ?? session.socket?.remoteAddress);
}

/** The listener for the HTTP/2 server's `stream` event (the server is given no `request` listener). */
export function h2StreamListener(opts: H2StreamOptions): (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, rawHeaders: string[]) => void {
  return (stream, headers, _flags, rawHeaders) => {
    if (serveOnStream(opts, stream, headers, rawHeaders)) return;
    // What node:http2 does for its `request` event (Node's lib/internal/http2/compat.js).
    const req = new http2.Http2ServerRequest(stream, headers, {}, rawHeaders);
    const res = new http2.Http2ServerResponse(stream);
    if (headers[":method"] === "CONNECT") {
      res.statusCode = 405;
      res.end();
      return;
    }
    const expect = headers.expect;
    if (expect !== undefined) {
      if (expect !== "100-continue") {
        res.statusCode = 417;
        res.end();
        return;
      }
      res.writeContinue();
    }
    opts.dispatch(req, res);
  };
}

/**
 * Answers `stream` here when it is a GET or HEAD of a content URL or share link with a plain
 * target and an `:authority` that passes the dispatch's check ({@link authorityProblem}); false
 * (nothing done) for anything else.
 */
function serveOnStream(opts: H2StreamOptions, stream: ServerHttp2Stream, headers: IncomingHttpHeaders, rawHeaders: string[]): boolean {
  const method = headers[":method"];
  if (method !== "GET" && method !== "HEAD") return false;
  const target = headers[":path"];
  if (target === undefined || target.charCodeAt(0) !== 47 /* "/" */ || headers[":authority"] === undefined || headers.expect !== undefined || authorityProblem(headers, rawHeaders) !== undefined) return false;
  const route = routeOf(method, target, opts.rpcPaths);
  if (route.kind !== "content" && route.kind !== "share") return false;

  const now = route.kind === "content" ? opts.contentNow?.answer(method, route, headers, peerOf(stream)) : undefined;
  if (now !== undefined && isAnswerable(stream)) {
    listenForErrors(stream);
    respondWhole(stream, now.status, now.headers, now.body, now.context.requestId);
    now.sent();
    return true;
  }

  const context = opts.accessLog.begin(method, route.pathname, peerOf(stream), headerValue(headers, "x-forwarded-for"), headerValue(headers, "x-request-id"));
  context.route = templateOf(route);
  const request = contentRequestOf(method, route, headers, context);
  const decide = route.kind === "content" ? () => decideContent(opts.content, request, route) : () => shareReply(opts.content.deps, request, route.token);
  if (responseTapFile !== undefined) tapStream(stream, method, route.pathname);
  void answerOnStream(opts.accessLog, stream, method === "HEAD", headerValue(headers, "accept") ?? null, context, decide);
  return true;
}

/**
 * Writes what `decide` answers on `stream`, as server/content.ts's `answer` does on a Node
 * response: the reply's head, then its own body or the content's range (nothing for HEAD).
 * Errors are reported and become the usual `google.rpc.Status` JSON; a failure after the
 * headers went out resets the stream. The access-log line is written when the stream closes.
 */
async function answerOnStream(
  accessLog: AccessLog,
  stream: ServerHttp2Stream,
  head: boolean,
  accept: string | null,
  context: RequestContext,
  decide: () => Promise<ContentDecision>,
): Promise<void> {
  // As Node's response says when nothing was answered (the client reset the stream first).
  let status = 200;
  let length: string | undefined;
  let gone: AbortController | undefined;
  listenForErrors(stream);
  stream.once("close", () => {
    gone?.abort();
    accessLog.close(context, status, length);
  });
  const begin = (answer: number, headers: Record<string, string>) => {
    status = answer;
    length = headers["content-length"];
    headers["x-request-id"] = context.requestId;
  };
  const send = (answer: number, headers: Record<string, string>, body?: Uint8Array | string) => {
    begin(answer, headers);
    respondWhole(stream, answer, headers, head ? undefined : body);
  };
  try {
    const { reply, content } = await decide();
    if (!isAnswerable(stream)) return;
    const headers = { ...reply.headers };
    if (head || reply.body !== undefined || reply.range === undefined || content === undefined) send(reply.status, headers, reply.body);
    else if (content.cached !== undefined) send(reply.status, headers, content.cached.subarray(reply.range.start, reply.range.start + reply.range.length));
    else {
      begin(reply.status, headers);
      respondHead(stream, reply.status, headers);
      gone = new AbortController();
      await writeContent(stream, content, reply.range, gone, H2_PLAN);
    }
  } catch (err) {
    if (stream.headersSent) {
      report(err, context);
      resetStream(stream);
      return;
    }
    // A page for a browser navigation, JSON for a program (CONTRACT §11).
    const error = negotiatedError(report(err, context), accept);
    if (!isAnswerable(stream)) return;
    send(error.status, error.headers, error.body);
  }
}
