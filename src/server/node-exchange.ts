/**
 * The exchange of a request that node:http (HTTP/1.1, after the reader's hand-over) or
 * node:http2's compat API (an HTTP/2 stream that is not a content GET) parsed into a Node-style
 * request and response: answers go through the response's `writeHead`/`write`/`end`, and the
 * request body through the one body reader (body-reader.ts, `body()`). The pair itself is given
 * only to connect-node (rpc-bridge.ts), through `node`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Duplex } from "node:stream";
import type { HeaderSource } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import { headerValue, type Buffering, type Exchange, type Outgoing } from "../serving/exchange.ts";
import type { AccessLog } from "../serving/access-log.ts";
import { bodyStream, resumeSource, type BodyReader, type BodySource } from "./body-reader.ts";
import { lingeringClose } from "./lingering-close.ts";
import type { NodeRequest, NodeResponse } from "./node-bridge.ts";

/** A download over HTTP/1.1: four buffers of 256 KiB keep the socket full (one download per connection). */
const H1_BUFFERING: Buffering = { chunkBytes: 256 * 1024, buffers: 4 };
/**
 * A download on an HTTP/2 stream. A connection carries up to 100 (H2_MAX_CONCURRENT_STREAMS),
 * each held back by the client's flow-control window, and Bun's HTTP/2 layer holds about as much
 * again as it is given: two of 128 KiB a stream download as fast (curl, ~0.9–1.4 GB/s on
 * loopback) while a connection whose client stops reading holds ~25 MiB instead of ~200.
 */
export const H2_BUFFERING: Buffering = { chunkBytes: 128 * 1024, buffers: 2 };

/** Response headers as a Node response takes them: Set-Cookie may be a list (the fetch bridge's). */
type NodeHeaders = Readonly<Record<string, string | readonly string[]>>;
type HeadWriter = NodeResponse & { writeHead(status: number, headers: NodeHeaders): unknown };

/** A Node-style request and response as an exchange. */
export class NodeExchange implements Exchange, HeaderSource, Outgoing {
  readonly method: string;
  readonly httpVersionMajor: 1 | 2;
  readonly target: string;
  pathname = "";
  search = "";
  readonly headers: HeaderSource = this;
  clientAddress = "";
  context!: RequestContext;
  readonly buffering: Buffering;
  private closed = false;
  private controller: AbortController | undefined;
  private reader: BodyReader | undefined;
  /** The connection closes after the answer (it was given before the body was read). */
  private closing = false;

  constructor(
    readonly req: NodeRequest,
    readonly res: NodeResponse,
    private readonly accessLog: AccessLog,
  ) {
    this.method = req.method ?? "GET";
    this.httpVersionMajor = req.httpVersionMajor === 2 ? 2 : 1;
    this.target = req.url ?? "";
    this.buffering = this.httpVersionMajor === 2 ? H2_BUFFERING : H1_BUFFERING;
  }

  /** @see Exchange.node */
  get node(): { req: NodeRequest; res: NodeResponse } {
    return this;
  }

  get headerRecord(): NodeRequest["headers"] {
    return this.req.headers;
  }

  get rawHeaders(): readonly string[] {
    return this.req.rawHeaders;
  }

  get peer(): string | undefined {
    return this.req.socket?.remoteAddress;
  }

  /** Whether the client can no longer receive (Bun's HTTP/2 response has no `destroyed` of its own: its stream's). */
  get gone(): boolean {
    return this.closed || this.res.destroyed === true || (this.res as Http2ServerResponse).stream?.destroyed === true;
  }

  /** @see HeaderSource */
  get(name: string): string | null {
    return headerValue(this.req.headers, name);
  }

  /** `X-Request-Id` is set on the response, and the log line written when it closes (answered or not). */
  open(context: RequestContext): void {
    this.context = context;
    const res = this.res;
    res.setHeader("x-request-id", context.requestId);
    res.once("close", () => {
      this.closed = true;
      this.controller?.abort();
      // Chunks read ahead and never taken (an answer given before the body was read) go now.
      this.reader?.abandon();
      this.accessLog.close(context, res.statusCode, res.getHeader("content-length") as string | number | undefined);
    });
  }

  /**
   * The one body reader of node:http and HTTP/2 compat requests ({@link bodyStream}): read-ahead
   * with back-pressure on the connection or stream, and the end-of-body checks. Made on the first
   * call (the same stream after): the dispatch makes it before a route's first query, so the
   * transport is paused until the route reads.
   */
  body(): ReadableStream<Uint8Array> {
    return (this.reader ??= bodyStream(this.req)).stream;
  }

  /**
   * Makes an answer given before the request body was read to its end (401, 413, …) arrive
   * (RFC 9110 §15.5.14, RFC 9112 §9.6): on HTTP/1.1, reads and discards the little that is often
   * left ({@link drainBriefly}: the connection then stays open), else marks the connection to
   * close after the answer, lingering (lingering-close.ts) so that a client still sending reads
   * the answer rather than a reset. HTTP/2 needs nothing: the stream alone ends.
   */
  async settleBody(): Promise<void> {
    const { req } = this;
    this.readAgain();
    if (!this.bodyPending) return;
    await drainBriefly(req);
    if (!req.complete) this.closeAfterAnswer();
  }

  /** The HTTP/1.1 connection closes after the answer, lingering. */
  private closeAfterAnswer(): void {
    const { req, res } = this;
    this.closing = true;
    (res as ServerResponse).shouldKeepAlive = false;
    // Bun's IncomingMessage sometimes no longer has its socket here (seen when a disk-full
    // upload failed part-way): the response's is the same connection.
    const socket = (req.socket ?? (res as ServerResponse).socket) as (Duplex & { destroySoon?: () => void }) | null;
    // Bun's node:http closes such a connection with destroySoon() once the response is
    // written, which resets it while the client is still sending the body.
    if (socket !== null) socket.destroySoon = () => lingeringClose(socket);
  }

  /**
   * The body reader pauses an HTTP/1.1 connection (bodyStream), which also carries the next
   * request: once the answer begins, the connection reads again. Without a body reader nothing
   * of ours paused it.
   */
  private readAgain(): void {
    if (this.reader === undefined || this.req.httpVersionMajor !== 1) return;
    const socket = this.req.socket as (Duplex & BodySource) | null | undefined;
    if (socket) resumeSource(socket);
  }

  /** Whether an answer now would come before the end of an HTTP/1.1 request body. */
  private get bodyPending(): boolean {
    const { req } = this;
    if (req.httpVersionMajor !== 1 || req.complete || this.closing) return false;
    // A request without a body (most GETs) has nothing left to read, whatever `complete` says yet.
    const length = req.headers["content-length"];
    return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
  }

  /** `headers`, with `Connection: close` when the connection closes after the answer. */
  private headOf(headers: NodeHeaders): NodeHeaders {
    return this.closing ? { ...headers, connection: "close" } : headers;
  }

  /** @see Exchange.respond; an early answer waits for {@link settleBody}. */
  respond(status: number, headers: NodeHeaders, body?: Uint8Array | string): void {
    if (this.gone) return;
    // Deferred to the private writer, not to `respond`, which a tap may have wrapped (response-tap.ts).
    if (this.bodyPending) void this.settleBody().then(() => this.writeWhole(status, headers, body));
    else this.writeWhole(status, headers, body);
  }

  private writeWhole(status: number, headers: NodeHeaders, body?: Uint8Array | string): void {
    if (this.gone) return;
    this.readAgain();
    const res = this.res as HeadWriter;
    res.writeHead(status, this.headOf(headers));
    if (body === undefined || this.method === "HEAD") res.end();
    else res.end(body);
  }

  stream(status: number, headers: NodeHeaders): Outgoing {
    // Streamed before the body was read: no wait here, the connection closes after it.
    if (this.bodyPending) this.closeAfterAnswer();
    this.readAgain();
    (this.res as HeadWriter).writeHead(status, this.headOf(headers));
    return this;
  }

  /** @see Outgoing */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.gone) this.controller.abort();
    return this.controller.signal;
  }

  /** @see Outgoing */
  write(chunk: Uint8Array, callback: (err?: Error | null) => void): void {
    if (this.method === "HEAD") return void process.nextTick(callback);
    (this.res as { write(chunk: Uint8Array, cb: (err?: Error | null) => void): boolean }).write(chunk, (err) => {
      if (err) this.controller?.abort();
      callback(err);
    });
  }

  /** @see Outgoing */
  end(): void {
    this.res.end();
  }

  /** @see Outgoing */
  fail(): void {
    this.res.destroy();
  }
}

/** What an early answer reads and discards of its request's body before it is sent, at most: bytes and ms. */
const DRAIN_BYTES = 256 * 1024;
const DRAIN_MS = 250;

/**
 * Reads and discards what is left of `req`'s body, until it ends, {@link DRAIN_BYTES} have come,
 * or {@link DRAIN_MS} have passed. An answer sent while a request's last bytes are still arriving
 * must otherwise close the connection (lingering, as settleBody sets up). Together with the
 * body stream's cancel no longer destroying an HTTP/1.1 request, this ended the resets that made
 * a client lose the 413 to a 401-byte chunked upload past its quota about 1 time in 14
 * (test/integration/quota.test.ts with WORKERS=2; 0 in 300 after).
 */
function drainBriefly(req: IncomingMessage | Http2ServerRequest): Promise<void> {
  return new Promise((resolve) => {
    let bytes = 0;
    const done = () => {
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", done);
      req.off("close", done);
      req.off("error", done);
      resolve();
    };
    const onData = (chunk: Uint8Array) => {
      bytes += chunk.byteLength;
      if (bytes >= DRAIN_BYTES) done();
    };
    const timer = setTimeout(done, DRAIN_MS);
    req.on("data", onData);
    req.once("end", done);
    req.once("close", done);
    req.once("error", done);
    req.resume();
  });
}
