/**
 * Every protocol on one TCP port (CONTRACT §4). The port is Bun's `node:http` server (the same
 * native HTTP/1.1 parser as Bun.serve, without a fetch round trip per request):
 *
 * - HTTP/1.x requests are served there, through the shared fetch handler (REST, content, static,
 *   Connect and gRPC-Web);
 * - a connection that opens with the HTTP/2 preface (`PRI * HTTP/2.0`, RFC 9113 §3.4, h2c with
 *   prior knowledge) stops the HTTP/1 parser, which reports it as a client error
 *   (`HPE_PAUSED_H2_UPGRADE`, as Node.js does). That connection is switched to a raw tunnel and
 *   given, first bytes included, to an in-process `node:http2` server: gRPC, gRPC-Web and Connect
 *   through connect-node (Bun.serve cannot send the HTTP/2 trailers gRPC needs), and every other
 *   path through the shared fetch handler.
 *
 * Switching to a tunnel uses two members of Bun's server socket that Bun uses for
 * CONNECT/Upgrade itself but does not export (see `tunnel` below); Bun is pinned, and the HTTP/2
 * tests fail loudly if a new Bun renames them.
 */
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import http from "node:http";
import http2 from "node:http2";
import type { Duplex } from "node:stream";
import { requestIdFrom } from "../http/request-id.ts";
import { RPC_OPTIONS } from "../rpc/index.ts";
import { contentTarget, serveContentFast, type FastContentOptions } from "./fast-content.ts";
import { serveWithFetch, type NodeRequest, type NodeResponse } from "./node-bridge.ts";
import { CLIENT_ADDRESS_HEADER, clientAddressOf } from "../auth/rate-limit.ts";
import { accessLogLine, type ClientRequestHandler } from "./request-handler.ts";

export interface OnePortOptions {
  port: number;
  /** The shared fetch handler: REST, dashboard, static files, content URLs of unusual shape. */
  handle: ClientRequestHandler;
  /** RPC routes, served by connect-node on both HTTP versions. */
  routes: (router: ConnectRouter) => void;
  /** RPC request paths: these go to connect-node. */
  rpcPaths: Set<string>;
  /** The content fast path (GET/HEAD of file URLs). */
  content: FastContentOptions;
  log: (line: string) => void;
  /** Proxy addresses whose X-Forwarded-For is believed (TRUSTED_PROXIES). */
  trustedProxies: ReadonlySet<string>;
  /**
   * Seconds a connection may go without progress before it is closed: incomplete headers, a
   * stalled body or response, an idle keep-alive or HTTP/2 connection.
   */
  idleTimeoutSeconds: number;
}

export interface OnePortServer {
  /** The bound TCP port. */
  port: number;
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

/** Starts the listener. */
export async function listenOnePort(opts: OnePortOptions): Promise<OnePortServer> {
  const rpcOverNode = connectNodeAdapter({ ...RPC_OPTIONS, routes: opts.routes });
  let stopping = false;
  /** Every request, HTTP/1.1 or HTTP/2: RPC, the content fast path, or the shared fetch handler. */
  const dispatch = (req: NodeRequest, res: NodeResponse): void => {
    // During a stop, HTTP/1.1 connections close after their current response.
    if (stopping && req.httpVersionMajor === 1) (res as http.ServerResponse).shouldKeepAlive = false;
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const pathname = q === -1 ? url : url.slice(0, q);
    if (opts.rpcPaths.has(pathname)) return serveRpc(req, res, pathname);
    if (req.method === "GET" || req.method === "HEAD") {
      const target = contentTarget(pathname);
      if (target !== undefined) return void serveContentFast(opts.content, req, res, target, pathname, q === -1 ? "" : url.slice(q));
    }
    void serveWithFetch(req, res, opts.handle);
  };
  const serveRpc = (req: NodeRequest, res: NodeResponse, path: string): void => {
    // connect-node reads credentials and the client address from req.headers.
    const forwardedFor = req.headers["x-forwarded-for"];
    req.headers[CLIENT_ADDRESS_HEADER] = clientAddressOf(
      req.socket?.remoteAddress ?? "unknown",
      Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor,
      opts.trustedProxies,
    );
    const started = performance.now();
    const requestId = requestIdFrom(req.headers["x-request-id"]?.toString());
    // The RPC layer logs errors with the request's x-request-id: make it this one.
    req.headers["x-request-id"] = requestId;
    res.setHeader("x-request-id", requestId);
    res.on("close", () => opts.log(accessLogLine(req.method ?? "POST", path, res.statusCode, null, started, requestId)));
    rpcOverNode(req, res);
  };
  const sessions = new Set<http2.ServerHttp2Session>();
  const h2 = http2.createServer({ settings: { initialWindowSize: H2_WINDOW_BYTES } }, dispatch);
  h2.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
    session.setLocalWindowSize(H2_WINDOW_BYTES);
    session.setTimeout(opts.idleTimeoutSeconds * 1000, () => session.destroy());
  });

  const h1 = http.createServer({ maxHeaderSize: MAX_HEAD_BYTES, requireHostHeader: false, keepAliveTimeout: opts.idleTimeoutSeconds * 1000 }, dispatch);
  // Bun's server closes a connection that makes no progress for this long; bytes of unfinished
  // headers do not count as progress.
  h1.setTimeout(opts.idleTimeoutSeconds * 1000);
  const tunnels = new Set<Duplex>();
  h1.on("clientError", (err: NodeJS.ErrnoException & { rawPacket?: ArrayBuffer }, socket: Duplex) => {
    if (err.code === "HPE_PAUSED_H2_UPGRADE" && err.rawPacket !== undefined && tunnel(socket)) {
      tunnels.add(socket);
      socket.on("close", () => tunnels.delete(socket));
      socket.on("error", () => socket.destroy());
      socket.unshift(Buffer.from(err.rawPacket));
      h2.emit("connection", socket);
      return;
    }
    if (err.code === "HPE_HEADER_OVERFLOW") return refuse(socket, "431 Request Header Fields Too Large");
    if (err.code === "ECONNRESET" || !socket.writable) return socket.destroy();
    refuse(socket, "400 Bad Request");
  });
  await new Promise<void>((resolve, reject) => {
    h1.once("error", reject);
    h1.listen(opts.port, () => resolve());
  });
  const address = h1.address() as { port: number };

  return {
    port: address.port,
    async stop(graceMs) {
      stopping = true;
      const closed = new Promise<void>((resolve) => h1.close(() => resolve()));
      for (const s of sessions) s.close();
      // Keep-alive connections whose in-flight request finishes during the stop turn idle and
      // are closed at the next sweep; Bun's close() only closes those idle at the time.
      const sweep = setInterval(() => h1.closeIdleConnections(), 50);
      const cut = setTimeout(() => {
        h1.closeAllConnections();
        for (const s of sessions) s.destroy();
        for (const s of tunnels) s.destroy();
      }, graceMs);
      await Promise.all([closed, ...[...sessions].map((s) => new Promise<void>((resolve) => (s.closed ? resolve() : s.once("close", () => resolve()))))]);
      clearInterval(sweep);
      clearTimeout(cut);
      h2.close();
    },
  };
}

/** Answers a connection that never reached a handler with a bodiless error and closes it. */
function refuse(socket: Duplex, status: string): void {
  if (socket.destroyed) return;
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/**
 * Turns Bun's HTTP/1 server socket into a raw byte stream both ways, as Bun does itself before
 * it emits `connect` or `upgrade`: the native handle stops parsing HTTP (`upgradeToTunnel`) and
 * the socket starts delivering and accepting opaque data (its `kEnableStreaming` method).
 * Neither is exported, so both are found by their symbol's description.
 * @returns false (and destroys the socket) when this Bun lacks them
 */
function tunnel(socket: Duplex): boolean {
  const handleKey = symbolNamed(socket, "handle");
  const streamingKey = symbolNamed(socket, "kEnableStreaming");
  const record = socket as unknown as Record<symbol, unknown>;
  const handle = handleKey && (record[handleKey] as { upgradeToTunnel?: () => void } | undefined);
  const enableStreaming = streamingKey && (record[streamingKey] as ((on: boolean) => void) | undefined);
  if (typeof handle?.upgradeToTunnel !== "function" || typeof enableStreaming !== "function") {
    console.error("h2c: this Bun's node:http socket cannot be switched to a tunnel; HTTP/2 connection refused");
    socket.destroy();
    return false;
  }
  handle.upgradeToTunnel();
  enableStreaming.call(socket, true);
  return true;
}

/** The symbol-keyed member of `object` (or its prototypes) whose symbol is described as `name`. */
function symbolNamed(object: object, name: string): symbol | undefined {
  for (let o: object | null = object; o !== null; o = Object.getPrototypeOf(o)) {
    for (const s of Object.getOwnPropertySymbols(o)) if (s.description === name) return s;
  }
  return undefined;
}
