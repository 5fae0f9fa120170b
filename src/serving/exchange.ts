/**
 * The exchange: one request and its answer, as every wire hands it to the routes. Each wire has
 * one adapter that produces it (server/http1-exchange.ts for the HTTP/1.1 reader,
 * server/node-exchange.ts for node:http after the hand-over and for the compat objects the
 * bridges need, server/h2-exchange.ts for node:http2 streams), and the one dispatch
 * (server/dispatch.ts) checks its target and authority, opens its context and routes it. Content
 * URLs and share links (serving/content.ts) are written once, over this, for every wire.
 *
 * An answer is given once, in one of two ways:
 * - {@link Exchange.respond}: status, headers and a whole small body, written at once (no
 *   promise, no callback: the HTTP/1.1 reader writes head and body in one `write`);
 * - {@link Exchange.stream}: the head now, then the body in writes whose callbacks say when each
 *   chunk has left, stopped when the client goes ({@link Outgoing.signal}).
 */
import type { RequestContext } from "../context/request-context.ts";
import type { HeaderSource } from "../auth/principal.ts";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { report } from "../context/report.ts";
import { errorHeaders, httpStatusOf, toRpcStatus, type AppError } from "../errors.ts";
import { negotiatedError } from "./pages.ts";

/** A request as node:http (HTTP/1.1) or node:http2's compat API hands it out. */
export type NodeRequest = IncomingMessage | Http2ServerRequest;
/** Its response. */
export type NodeResponse = ServerResponse | Http2ServerResponse;

/** Response headers by lower-case name; a list is sent as one header line each (Set-Cookie). */
export type AnswerHeaders = Readonly<Record<string, string | readonly string[]>>;

/** Header values by lower-case name, repeated ones combined as node:http does (Set-Cookie an array). */
export type HeaderRecord = Readonly<Record<string, string | string[] | undefined>>;

/** One header of `headers` as a single string (RFC 9110 §5.3 list join; `; ` for Cookie, RFC 9113 §8.2.3), or null. */
export function headerValue(headers: HeaderRecord, name: string): string | null {
  const v = headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(name === "cookie" ? "; " : ", ") : (v as string);
}

/** How a download is buffered: chunk size (bytes) and buffers held at once (ReadPlan). */
export interface Buffering {
  chunkBytes: number;
  buffers: number;
}

/** The body of a streamed answer ({@link Exchange.stream}). */
export interface Outgoing {
  /** Aborted when the client can no longer receive (connection closed, stream reset, a write failed). */
  readonly signal: AbortSignal;
  /**
   * Sends a body chunk; `callback` runs once it has left (or with an error when the connection
   * went first), after which the chunk's buffer may be reused.
   */
  write(chunk: Uint8Array, callback: (err?: Error | null) => void): void;
  /** Ends the answer once the chunks written have left. */
  end(): void;
  /** Ends the answer as failed after its head went out: the connection (HTTP/1.1) or stream (HTTP/2) is reset. */
  fail(): void;
}

/**
 * One request and its answer, whichever wire carried it. It is itself the request the handlers
 * read (`RequestLike`/`ContentRequest`: method, headers, client address, context, path, query).
 */
export interface Exchange {
  /** `GET`, `HEAD`, … as sent. */
  readonly method: string;
  /** 1 for HTTP/1.x, 2 for HTTP/2. */
  readonly httpVersionMajor: 1 | 2;
  /** The request target as sent (`/path?query`, or absolute or asterisk form), before the dispatch checks it. */
  readonly target: string;
  /** The checked target's path, as sent (percent-encoded); set by the dispatch. */
  pathname: string;
  /** The checked target's query with its `?`, or ""; set by the dispatch. */
  search: string;
  /** The request's headers, looked up by lower-case name (a repeated one as one list value, RFC 9110 §5.3). */
  readonly headers: HeaderSource;
  /** The same headers as a record, for the authority check (request-target.ts). */
  readonly headerRecord: HeaderRecord;
  /**
   * The headers as sent (names and values alternating), in which the dispatch counts the Host
   * headers; undefined when the wire has refused a repeated Host itself (http1-head.ts).
   */
  readonly rawHeaders: readonly string[] | undefined;
  /** The TCP peer's address. */
  readonly peer: string | undefined;
  /** The address the request is attributed to (context/client-address.ts); set by the dispatch. */
  clientAddress: string;
  /** The request's context; set by the dispatch ({@link open}). */
  context: RequestContext;
  /** How a download on this wire is buffered. */
  readonly buffering: Buffering;
  /** Whether the client can no longer receive an answer (connection closed, stream reset). */
  readonly gone: boolean;
  /**
   * Begins the request: its context, echoed as `X-Request-Id` in the answer, and its access-log
   * line, written when the answer has been sent or the client went (the adapter's job).
   */
  open(context: RequestContext): void;
  /**
   * The request body (none for GET and HEAD), read through the wire's one body reader: ahead of
   * its consumer by a bounded amount with back-pressure on the transport, and ending in an
   * `invalid_argument` error when it is cut short or its length is not the declared
   * Content-Length. Each call returns the same stream; an answer given before it is read to the
   * end still arrives (the adapter reads a little more or closes the connection lingering).
   */
  body(): AsyncIterable<Uint8Array>;
  /**
   * Makes an answer about to be given before the body was read to its end arrive (RFC 9110
   * §15.5.14, RFC 9112 §9.6): reads a little more of it, or has the connection close after the
   * answer, lingering. `respond` does this itself; the fetch bridge awaits it before it turns
   * the app's answer into a whole or streamed one. Nothing to do on wires that carry no body.
   */
  settleBody(): Promise<void>;
  /**
   * The Node request and response this exchange was made of, for connect-node (RPC), which
   * takes nothing else; undefined on the wires that do not carry RPC.
   */
  readonly node?: { readonly req: NodeRequest; readonly res: NodeResponse };
  /**
   * Answers whole: `status`, `headers` (lower-case names; read-only, maybe a shared frozen
   * object) and `body` (not sent for HEAD, 204, 304 and 1xx). Content-Length is added when
   * absent. Written before this returns, as far as the connection takes it; nothing is written
   * when the client is gone.
   */
  respond(status: number, headers: AnswerHeaders, body?: Uint8Array | string): void;
  /** Sends the head of an answer whose body follows through the {@link Outgoing} (a download). */
  stream(status: number, headers: AnswerHeaders): Outgoing;
}

/** An error's answer: the `google.rpc.Status` JSON of CONTRACT §2, with its status and headers. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * The answer to `error` (reported already, context/report.ts): its status (errors.ts), its JSON,
 * and the headers of http/respond.ts's `errorResponse`, in the order a fetch `Headers` gives them
 * (by name), as they went out when they were written through one. Given the request's `accept`
 * (a URL people open in a browser: content URLs, share links), it is negotiated instead
 * (serving/pages.ts `negotiatedError`): an HTML page for `text/html`, else the same JSON.
 */
export function errorAnswer(error: AppError, accept?: string | null): ErrorAnswer {
  if (accept !== undefined) {
    // A page for a browser navigation, JSON for a program (CONTRACT §11), varying by Accept.
    // The exchange's routes are content URLs, share links, /dav and /metrics: a person who meets
    // an error page here followed someone's link (CONTRACT §15).
    const negotiated = negotiatedError(error, accept, "GET", undefined, "recipient");
    return { status: negotiated.status, headers: negotiated.headers, body: negotiated.body ?? "" };
  }
  const body = JSON.stringify(toRpcStatus(error));
  const headers: Record<string, string> = { "content-length": String(Buffer.byteLength(body)), "content-type": "application/json", ...errorHeaders(error) };
  return { status: httpStatusOf(error.code), headers, body };
}

/**
 * Reports `err` (context/report.ts) and ends the answer: its error when nothing was sent yet,
 * else, when `out` has begun, a reset.
 */
export function failed(ex: Exchange, err: unknown, context: RequestContext, out?: Outgoing): void {
  const error = report(err, context);
  if (out !== undefined) return out.fail();
  if (ex.gone) return;
  const { status, headers, body } = errorAnswer(error, ex.headers.get("accept"));
  ex.respond(status, headers, body);
}
