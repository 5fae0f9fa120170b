/**
 * Content answered at once. The request a file sharing service answers most — GET or HEAD of a
 * file's content URL — usually needs no I/O: the file's row is in the read cache (valid while
 * nothing commits, service/read-cache.ts), a small file's bytes are in the blob cache, and a
 * bearer key's row and its user's account are cached too: decideContent (server/content.ts)
 * decides it now, without a promise (domain/later.ts).
 * Such a request is decided and written in the turn it arrived, by whichever protocol read it
 * (http1-fast.ts, h2-content.ts), without the Node-style request and response objects, the
 * promises and the listeners of the usual path (server/content.ts), which cost a small GET more
 * than reading and writing its socket did (docs/benchmarks.md, issue 16).
 *
 * Anything else — a session cookie, a row or key not cached, a last use to record, content
 * not in memory, a share link, an error to answer — returns undefined and goes the usual way,
 * which also counts failed credentials against the rate limit. The answer is the same
 * either way: both come from `contentReply` (http/content.ts), and
 * test/integration/content-now.test.ts compares them byte for byte.
 */
import type { RequestContext } from "../context/request-context.ts";
import type { AccessLog } from "./access-log.ts";
import { contentRequestOf, decideContent, type ContentOptions } from "./content.ts";
import { isNow } from "../domain/later.ts";
import { templateOf, type Route } from "./dispatch.ts";
import { headerValue } from "./node-bridge.ts";
import { responseTapFile, StreamTap } from "./response-tap.ts";

/** A content URL as the dispatch routes it. */
export type ContentRoute = Extract<Route, { kind: "content" }>;

/** An answer decided without waiting: the caller writes it whole, then calls {@link sent}. */
export class ImmediateAnswer {
  constructor(
    readonly status: number,
    /**
     * The reply's headers (lower-case names; read-only, maybe shared, see ContentReply):
     * Content-Length is among them unless the status has no body (304). `x-request-id` is not:
     * it is `context.requestId`.
     */
    readonly headers: Readonly<Record<string, string>>,
    /** The bytes to send after the head (GET only; none for HEAD), or undefined. */
    readonly body: Uint8Array | undefined,
    /** The request's context (ID, client address, start, route): the access-log line's. */
    readonly context: RequestContext,
    private readonly accessLog: AccessLog,
  ) {}

  /** The answer has been written whole: its access-log line, its metrics and (in tests) its tap record. */
  sent(): void {
    const context = this.context;
    if (responseTapFile !== undefined) {
      const tap = new StreamTap(context.method, context.path, true);
      tap.head(this.status, { ...this.headers, "x-request-id": context.requestId });
      if (this.body !== undefined) tap.chunk(this.body);
      tap.close(true);
    }
    this.accessLog.close(context, this.status, this.headers["content-length"]);
  }
}

/** Decides content answers without waiting; see the module comment. */
export class ContentNow {
  constructor(
    private readonly content: ContentOptions,
    private readonly accessLog: AccessLog,
  ) {}

  /**
   * The answer to GET or HEAD of a content URL when it needs no I/O; undefined (nothing done,
   * nothing logged) otherwise.
   * @param headers the request's headers by lower-case name (repeated ones combined as node:http does)
   * @param peer the TCP peer's address
   */
  answer(method: "GET" | "HEAD", route: ContentRoute, headers: Readonly<Record<string, string | string[] | undefined>>, peer: string | undefined): ImmediateAnswer | undefined {
    const context = this.accessLog.begin(method, route.pathname, peer, headerValue(headers, "x-forwarded-for"), headerValue(headers, "x-request-id"));
    // Not decided now: the rest is dropped unrun (it started nothing), the usual path decides.
    const decision = decideContent(this.content, contentRequestOf(method, route, headers, context), route);
    if (!isNow(decision) || decision.reply.body !== undefined) return undefined;
    const { reply, content } = decision;
    let body: Uint8Array | undefined;
    if (reply.range !== undefined && method === "GET") {
      const cached = content?.cached;
      if (cached === undefined) return undefined; // read from the store: the usual way streams it
      body = reply.range.start === 0 && reply.range.length === cached.byteLength ? cached : cached.subarray(reply.range.start, reply.range.start + reply.range.length);
    }
    context.route = templateOf(route);
    return new ImmediateAnswer(reply.status, reply.headers, body, context, this.accessLog);
  }
}
