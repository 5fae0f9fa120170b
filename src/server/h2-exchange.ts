/**
 * The HTTP/2 server's `stream` listener and the exchange of a stream answered with the core API
 * (`stream.respond` + `stream.end`). In Bun, the compat `Http2ServerRequest`/`Http2ServerResponse`
 * cost more than a small answer (each a stream with half a dozen listeners on the HTTP/2 stream;
 * scripts/bench/h2-layers.ts: ~0.6–0.7× the requests per second), so GET and HEAD of content
 * URLs and share links, the requests a file sharing service answers most, are exchanges on the
 * stream itself; every other stream gets the compat pair, built as node:http2's own `request`
 * event builds it, as a NodeExchange (node-exchange.ts) for the bridges. Both go to the one
 * dispatch. A whole answer goes out as HEADERS then DATA with END_STREAM, which Bun's frame
 * writer sends in one `sendto`.
 */
import http2, { type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import type { HeaderSource } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import { headerValue, type AnswerHeaders, type Buffering, type Exchange, type Outgoing } from "../serving/exchange.ts";
import type { AccessLog } from "../serving/access-log.ts";
import { routeOf, type Route } from "./dispatch.ts";
import { H2_BUFFERING, NodeExchange } from "./node-exchange.ts";

export interface H2StreamOptions {
  /** The one dispatch; `route` when the listener routed the stream already. */
  dispatch: (exchange: Exchange, route?: Route) => void;
  rpcPaths: ReadonlySet<string>;
  accessLog: AccessLog;
}

/** The TCP peer of each HTTP/2 session: reading it through `session.socket` costs a Proxy trap and two getters a stream. */
const peers = new WeakMap<Http2Session, string | undefined>();

/** Notes a new session's TCP peer address (the `session` event). */
export function notePeer(session: Http2Session, address: string | undefined): void {
  peers.set(session, address);
}

/** The listener for the HTTP/2 server's `stream` event (the server is given no `request` listener). */
export function h2StreamListener(opts: H2StreamOptions): (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, rawHeaders: string[]) => void {
  return (stream, headers, _flags, rawHeaders) => {
    const method = headers[":method"];
    const target = headers[":path"];
    if ((method === "GET" || method === "HEAD") && target !== undefined && target.charCodeAt(0) === 47 /* "/" */ && headers.expect === undefined) {
      const route = routeOf(method, target, opts.rpcPaths);
      if (route.kind === "content" || route.kind === "share") {
        const exchange = new H2Exchange(stream, headers, rawHeaders, opts.accessLog);
        opts.dispatch(exchange, route);
        exchange.dispatched();
        return;
      }
    }
    // What node:http2 does for its `request` event (Node's lib/internal/http2/compat.js).
    const req = new http2.Http2ServerRequest(stream, headers, {}, rawHeaders);
    const res = new http2.Http2ServerResponse(stream);
    if (method === "CONNECT") {
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
    opts.dispatch(new NodeExchange(req, res, opts.accessLog));
  };
}

const END_STREAM = { endStream: true };

/** A stream answered with the core API (see the module comment). */
export class H2Exchange implements Exchange, HeaderSource, Outgoing {
  readonly httpVersionMajor = 2;
  readonly method: string;
  readonly target: string;
  pathname = "";
  search = "";
  readonly headers: HeaderSource = this;
  clientAddress = "";
  context!: RequestContext;
  readonly buffering: Buffering = H2_BUFFERING;
  /** Whether the stream's `close` is listened for (an answer not given in the dispatch's turn). */
  private watched = false;
  private answered = false;
  private logged = false;
  private status = 200;
  private length: string | undefined;
  private controller: AbortController | undefined;

  constructor(
    private readonly h2: ServerHttp2Stream,
    readonly headerRecord: IncomingHttpHeaders,
    readonly rawHeaders: readonly string[],
    private readonly accessLog: AccessLog,
  ) {
    this.method = headerRecord[":method"]!;
    this.target = headerRecord[":path"]!;
    // A stream whose connection is reset while it is written (EPIPE, ECONNRESET) emits `error`,
    // and unheard that stops the process (the compat request listens for it itself).
    h2.on("error", ignoreError);
  }

  get peer(): string | undefined {
    const session = this.h2.session;
    return session === undefined ? undefined : (peers.get(session) ?? session.socket?.remoteAddress);
  }

  /** Whether the stream can no longer be answered: closed or reset by the client, its session gone (GOAWAY, timeout, closed connection). */
  get gone(): boolean {
    const stream = this.h2;
    return stream.destroyed || stream.closed || stream.session === undefined || stream.session.destroyed;
  }

  /** @see HeaderSource */
  get(name: string): string | null {
    return headerValue(this.headerRecord, name);
  }

  open(context: RequestContext): void {
    this.context = context;
  }

  /**
   * The dispatch has returned: an answer still to come is watched for from now on (the stream's
   * `close` aborts its download and writes its log line); one given already was logged.
   */
  dispatched(): void {
    if (this.answered) return;
    if (this.gone) return this.log();
    this.watched = true;
    this.h2.once("close", () => {
      this.controller?.abort();
      this.log();
    });
  }

  async *body(): AsyncIterable<Uint8Array> {}

  /** @see Exchange.settleBody: this wire carries GET and HEAD only. */
  async settleBody(): Promise<void> {}

  /**
   * Sends the whole answer: HEADERS (`x-request-id` added; Bun adds `date`), then DATA with
   * END_STREAM, or END_STREAM on the HEADERS frame when there is no body (HEAD's is dropped,
   * RFC 9110 §9.3.2).
   */
  respond(status: number, headers: AnswerHeaders, body?: Uint8Array | string): void {
    if (this.answered || this.gone) return;
    this.begin(status, headers);
    const head = { ...headers, "x-request-id": this.context.requestId, ":status": status };
    if (body === undefined || body.length === 0 || this.method === "HEAD") this.h2.respond(head, END_STREAM);
    else {
      this.h2.respond(head);
      this.h2.end(body);
    }
    if (!this.watched) this.log();
  }

  stream(status: number, headers: AnswerHeaders): Outgoing {
    this.begin(status, headers);
    this.h2.respond({ ...headers, "x-request-id": this.context.requestId, ":status": status });
    return this;
  }

  private begin(status: number, headers: AnswerHeaders): void {
    this.answered = true;
    this.status = status;
    this.length = headers["content-length"] as string | undefined;
  }

  private log(): void {
    if (this.logged) return;
    this.logged = true;
    this.accessLog.close(this.context, this.status, this.length);
  }

  /** @see Outgoing */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.gone) this.controller.abort();
    return this.controller.signal;
  }

  /** @see Outgoing */
  write(chunk: Uint8Array, callback: (err?: Error | null) => void): void {
    this.h2.write(chunk, (err?: Error | null) => {
      if (err) this.controller?.abort();
      callback(err);
    });
  }

  /** @see Outgoing */
  end(): void {
    this.h2.end();
  }

  /** Resets the stream with INTERNAL_ERROR (RFC 9113 §7): an answer that failed after its head went out. */
  fail(): void {
    if (!this.h2.destroyed) this.h2.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  }
}

function ignoreError(): void {}
