/**
 * Every protocol on one TCP port (CONTRACT §4). Bun.serve cannot send HTTP/2 trailers, which
 * gRPC needs, so the port is a `node:net` listener that reads the first bytes of each connection
 * (sniff.ts):
 *
 * - the HTTP/2 connection preface (`PRI * HTTP/2.0`, RFC 9113 §3.4, h2c with prior knowledge)
 *   → an in-process `node:http2` server;
 * - anything else (HTTP/1.x), once the first request's headers are complete → the fast path
 *   (http1-fast.ts) for GET/HEAD of content URLs, share links and `/healthz`, and from the
 *   first other request on an in-process `node:http` server (Bun's), handed the socket with
 *   `emit("connection")`.
 *
 * Every wire hands the one dispatch (dispatch.ts) an exchange (serving/exchange.ts): the
 * HTTP/1.1 reader (http1-exchange.ts), node:http's and the HTTP/2 compat API's request and
 * response (node-exchange.ts), HTTP/2 content streams (h2-exchange.ts). Connections are
 * counted, watched and stopped by connections.ts. Tried and dropped (docs/design.md): relaying HTTP/1.1 over loopback to
 * Bun.serve (slow), and letting Bun's `node:http` own the port and hand h2c connections over
 * from its HPE_PAUSED_H2_UPGRADE client error (fast, but about one streamed RPC in a thousand
 * was reset).
 */
import type { ConnectRouter } from "@connectrpc/connect";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { Duplex } from "node:stream";
import type { LogFormat } from "../log.ts";
import type { FileUnaryMethods } from "../rpc/file-service.ts";
import type { ContentDeps } from "../serving/content-reply.ts";
import type { DavServeDeps } from "../dav/handler.ts";
import type { S3Deps } from "../s3/handler.ts";
import type { ShareContentDeps } from "../serving/share-reply.ts";
import { AccessLog } from "../serving/access-log.ts";
import { requestLineOf } from "./http1-head.ts";
import { Connections } from "./connections.ts";
import { createDispatch, routeOf } from "./dispatch.ts";
import { h2StreamListener, notePeer } from "./h2-exchange.ts";
import { CorkedSocket } from "./h2-socket.ts";
import { refuseConnection } from "./lingering-close.ts";
import type { Metrics } from "../serving/metrics.ts";
import { serveHttp1Fast } from "./http1-fast.ts";
import type { FetchHandler } from "./node-bridge.ts";
import { freeParsedChunks } from "./body-reader.ts";
import { NodeExchange } from "./node-exchange.ts";
import { rpcHandler } from "./rpc-bridge.ts";
import { sniffProtocol } from "./sniff.ts";

export interface OnePortOptions {
  port: number;
  /** Listen with SO_REUSEPORT, beside the other workers' sockets (process/workers.ts). */
  reusePort?: boolean;
  /** The HTTP app (`app.handle`): REST, dashboard, sign-in, static files. */
  app: FetchHandler;
  /** RPC routes, served by connect-node on both HTTP versions. */
  routes: (router: ConnectRouter) => void;
  /** RPC request paths: these go to connect-node. */
  rpcPaths: ReadonlySet<string>;
  /** FileService's unary methods, for the unary fast path (rpc/unary.ts); undefined: connect-node serves every call. */
  unary?: FileUnaryMethods;
  /** What content URLs (GET/HEAD of `/{id}` and `/{id}/{slug}`) and share links are answered with. */
  content: ContentDeps & ShareContentDeps;
  /** What WebDAV at `/dav/` is served with; undefined: not served. */
  dav?: DavServeDeps;
  /** What the S3 endpoint is served with (CONTRACT §16); undefined: not served. */
  s3?: S3Deps;
  /** Whether content decided now is answered now (serving/content.ts); true unless a test says otherwise. */
  answerAtOnce?: boolean;
  /** Writes one access-log line. */
  log: (line: string) => void;
  /** Access-log lines as text (default) or JSON (LOG_FORMAT). */
  logFormat?: LogFormat;
  /** Observes every request and RPC call, and serves `/metrics` with METRICS_TOKEN; undefined: neither. */
  metrics?: { metrics: Metrics; token: string | undefined };
  /** Proxy addresses whose X-Forwarded-For is believed (TRUSTED_PROXIES). */
  trustedProxies: ReadonlySet<string>;
  /** Seconds a request has to send its complete headers, from its first byte; 408 after. */
  headerTimeoutSeconds: number;
  /** Open connections allowed at once, in total and per client address (0: no limit). */
  maxConnections: { total: number; perClient: number };
  /** Seconds a connection may stay silent, no bytes either way, before it is closed. */
  idleTimeoutSeconds: number;
}

export interface OnePortServer {
  /** The bound TCP port. */
  port: number;
  /** Bytes read from and written to clients' connections since start (see Connections.transferred). */
  transferred(): { received: number; sent: number };
  /**
   * Stops accepting connections, lets in-flight requests finish for up to `graceMs`, then
   * closes whatever is left.
   */
  stop(graceMs: number): Promise<void>;
}

/** The most an HTTP/1.x client may send as a request's headers: 431 past it. */
const MAX_HEAD_BYTES = 64 * 1024;
/** HTTP/2 flow-control window per stream and per connection: large transfers need more than 64 KiB. */
const H2_WINDOW_BYTES = 4 * 1024 * 1024;
/**
 * Streams one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS,
 * RFC 9113 §6.5.2): the client is refused more (REFUSED_STREAM). A download holds at most
 * 256 KiB of buffers, so one connection holds at most 25 MiB however its client behaves.
 */
export const H2_MAX_CONCURRENT_STREAMS = 100;
/**
 * node:http2's `maxSessionMemory` (MB): past it the session refuses new streams with RST_STREAM
 * ENHANCE_YOUR_CALM. Node's default, 10, is less than 100 downloads' queued chunks (128 KiB each
 * on REST, 1 MiB on RPC), so a client (or an h2c proxy) with 100 downloads under way on a busy
 * server had some refused. What a connection holds is already bounded by the streams' own
 * back-pressure (one queued chunk each), so the budget covers that bound: 100 × 1 MiB and slack.
 */
const H2_SESSION_MEMORY_MB = 128;

/** Starts the listener. */
export async function listenOnePort(opts: OnePortOptions): Promise<OnePortServer> {
  const headerTimeoutMs = opts.headerTimeoutSeconds * 1000;
  const idleTimeoutMs = opts.idleTimeoutSeconds * 1000;
  const metrics = opts.metrics?.metrics;
  const accessLog = new AccessLog(opts.log, opts.trustedProxies, { format: opts.logFormat, metrics: opts.metrics?.metrics });
  // Requests refused before a handler saw them get an access-log line too (issue 25: every answer has one).
  const peerOf = (socket: Duplex) => (socket as net.Socket).remoteAddress;
  const connections = new Connections({
    limits: { ...opts.maxConnections, exempt: opts.trustedProxies },
    headerTimeoutMs,
    idleTimeoutMs,
    onRefused: (socket, status) => accessLog.refused(peerOf(socket), status),
  });
  const dispatch = createDispatch({
    rpcPaths: opts.rpcPaths,
    rpc: rpcHandler(
      opts.routes,
      metrics === undefined ? [] : [metrics.interceptor()],
      opts.unary === undefined ? undefined : { methods: opts.unary, observe: metrics === undefined ? undefined : (procedure, code) => metrics.observeRpc(procedure, code) },
    ),
    content: { deps: opts.content, atOnce: opts.answerAtOnce !== false },
    dav: opts.dav,
    s3: opts.s3,
    app: opts.app,
    accessLog,
    metrics: opts.metrics,
  });

  // No `request` listener: h2-exchange.ts answers content GETs on the stream and builds the
  // compat request and response for the rest.
  // strictSingleValueFields: false skips Bun's check, on every response, that no single-value
  // field (Content-Type, ETag, …) is given twice: cubby's header objects have one lower-case key
  // each, so it never fires, and it cost a small h2c GET ~0.8 µs (docs/benchmarks.md).
  const h2 = http2.createServer({
    maxSessionMemory: H2_SESSION_MEMORY_MB,
    strictSingleValueFields: false,
    settings: { initialWindowSize: H2_WINDOW_BYTES, maxConcurrentStreams: H2_MAX_CONCURRENT_STREAMS },
  });
  h2.on("stream", h2StreamListener({ dispatch, rpcPaths: opts.rpcPaths, accessLog }));
  h2.on("session", (session) => {
    notePeer(session, session.socket?.remoteAddress);
    connections.watchSession(session);
    session.setLocalWindowSize(H2_WINDOW_BYTES);
  });
  const h1 = http.createServer({ maxHeaderSize: MAX_HEAD_BYTES, requireHostHeader: false, keepAliveTimeout: idleTimeoutMs }, (req, res) => {
    connections.onHttp1Request(req, res);
    dispatch(new NodeExchange(req, res, accessLog));
  });
  // A client's FIN ends what it sends, not what it receives (CONTRACT §10): the responses to the
  // requests it sent are written, the last one closes the connection (Node's and Bun's
  // `httpAllowHalfOpen`; without it, the FIN ended the socket at once and cut answers in flight).
  (h1 as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  h1.on("clientError", (err: NodeJS.ErrnoException & { rawPacket?: Buffer; bytesParsed?: number }, socket: Duplex) => {
    if (err.code === "ECONNRESET" || !socket.writable) return socket.destroy();
    // The client's FIN came in the middle of a request (httpAllowHalfOpen lets node:http say so).
    if (err.code === "HPE_INVALID_EOF_STATE") return connections.endCutShort(socket);
    const status = err.code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large" : "400 Bad Request";
    // Read now: node:http's parser lets go of the bytes it failed on.
    const requestLine = requestLineOf(err.rawPacket, err.bytesParsed);
    // A malformed request pipelined behind a valid one is refused after the valid one's answer.
    connections.whenIdle(socket, () => {
      if (refuseConnection(socket, status)) accessLog.refused(peerOf(socket), Number.parseInt(status, 10), requestLine);
    });
  });

  // allowHalfOpen: a client's FIN does not end our side; each protocol ends it once the answers
  // to what the client sent are out (sniff.ts, http1-fast.ts, node:http, node:http2).
  const listener = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
    if (!connections.admit(socket)) return;
    sniffProtocol(socket, {
      headerTimeoutMs,
      maxHeadBytes: MAX_HEAD_BYTES,
      onRefused: (status, head) => accessLog.refused(socket.remoteAddress, status, requestLineOf(head)),
      onHttp2: () => {
        connections.watchHttp2(socket);
        h2.emit("connection", new CorkedSocket(socket));
      },
      onHttp1: () => {
        connections.watchHttp1(socket);
        // GET/HEAD of content URLs, share links and /healthz are answered by the fast path
        // until a request that is not ours hands the connection to node:http (http1-fast.ts).
        serveHttp1Fast(socket, {
          maxHeadBytes: MAX_HEAD_BYTES,
          keepAliveSeconds: opts.idleTimeoutSeconds,
          route: (method, target) => {
            const route = routeOf(method, target, opts.rpcPaths);
            return route.kind === "content" || route.kind === "share" || route.kind === "health" ? route : undefined;
          },
          dispatch,
          logClose: (context, status, bytes) => accessLog.close(context, status, bytes),
          requestRead: (s) => connections.http1AnswerBegun(s),
          answerWritten: (s) => connections.http1AnswerWritten(s),
          onHandOver: (s) => {
            h1.emit("connection", s);
            freeParsedChunks(s);
          },
          onPipelinedHead: (s) => connections.onHttp1HeadReceived(s),
        });
      },
    });
  });
  await new Promise<void>((resolve, reject) => {
    listener.once("error", reject);
    listener.listen({ port: opts.port, reusePort: opts.reusePort === true }, () => resolve());
  });

  return {
    port: (listener.address() as net.AddressInfo).port,
    transferred: () => connections.transferred(),
    async stop(graceMs) {
      listener.close();
      await connections.stop(graceMs);
      h2.close();
    },
  };
}
