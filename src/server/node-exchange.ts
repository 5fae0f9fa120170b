/**
 * The exchange of a request that node:http (HTTP/1.1, after the reader's hand-over) or
 * node:http2's compat API (an HTTP/2 stream that is not a content GET) parsed into a Node-style
 * request and response: answers go through the response's `writeHead`/`write`/`end`. The same
 * pair is what the fetch bridge (node-bridge.ts) and connect-node (rpc-bridge.ts) are given.
 */
import type { Http2ServerResponse } from "node:http2";
import type { HeaderSource } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import { headerValue, type Buffering, type Exchange, type Outgoing } from "../serving/exchange.ts";
import type { AccessLog } from "../serving/access-log.ts";
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
      this.accessLog.close(context, res.statusCode, res.getHeader("content-length") as string | number | undefined);
    });
  }

  body(): AsyncIterable<Uint8Array> {
    return this.req as AsyncIterable<Uint8Array>;
  }

  respond(status: number, headers: NodeHeaders, body?: Uint8Array | string): void {
    if (this.gone) return;
    const res = this.res as HeadWriter;
    res.writeHead(status, headers);
    if (body === undefined || this.method === "HEAD") res.end();
    else res.end(body);
  }

  stream(status: number, headers: NodeHeaders): Outgoing {
    (this.res as HeadWriter).writeHead(status, headers);
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
