/**
 * Every protocol on one TCP port (CONTRACT §4). Bun.serve cannot send HTTP/2 trailers, which
 * gRPC needs, so the port is a `node:net` listener that reads the first bytes of each connection:
 *
 * - the HTTP/2 connection preface (`PRI * HTTP/2.0`, RFC 9113 §3.4, h2c with prior knowledge)
 *   → an in-process `node:http2` server;
 * - anything else (HTTP/1.x), once the first request's headers are complete → an in-process
 *   `node:http` server (Bun's), handed the socket with `emit("connection")`.
 *
 * Both servers share one dispatch: RPC paths to connect-node (gRPC, gRPC-Web, Connect), GET and
 * HEAD of content URLs to the content fast path, everything else through the fetch bridge to
 * the HTTP app. Tried and dropped (docs/design.md): relaying HTTP/1.1 over loopback to Bun.serve
 * (slow), and letting Bun's `node:http` own the port and hand h2c connections over from its
 * HPE_PAUSED_H2_UPGRADE client error (fast, but about one streamed RPC in a thousand was reset).
 */
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { Duplex } from "node:stream";
import { RPC_OPTIONS } from "../rpc/index.ts";
import { contentTarget, serveContent, type ContentOptions } from "./content.ts";
import { AppError } from "../errors.ts";
import { clientOf, refuse, serveWithFetch, type NodeRequest, type NodeResponse } from "./node-bridge.ts";
import { originFormOf } from "./request-target.ts";
import { CLIENT_ADDRESS_HEADER, plainAddress } from "../auth/rate-limit.ts";
import { ConnectionLimits } from "./connection-limits.ts";
import { HeaderDeadline } from "./header-deadline.ts";
import { refuseConnection } from "./lingering-close.ts";
import { accessLogLine, type ClientRequestHandler } from "./request-handler.ts";

export interface OnePortOptions {
  port: number;
  /** The shared fetch handler: REST, dashboard, static files, content URLs of unusual shape. */
  handle: ClientRequestHandler;
  /** RPC routes, served by connect-node on both HTTP versions. */
  routes: (router: ConnectRouter) => void;
  /** RPC request paths: these go to connect-node. */
  rpcPaths: Set<string>;
  /** Content URLs (GET/HEAD of `/{id}` and `/{id}/{slug}`). */
  content: ContentOptions;
  log: (line: string) => void;
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
const H2_PREFIX = Buffer.from("PRI ");

/** Starts the listener. */
export async function listenOnePort(opts: OnePortOptions): Promise<OnePortServer> {
  const rpcOverNode = connectNodeAdapter({ ...RPC_OPTIONS, routes: opts.routes });
  let stopping = false;
  /** Header deadlines of HTTP/1.1 connections; they also know whether a request is in flight. */
  const h1Connections = new Map<object, HeaderDeadline>();
  const h2Sockets = new WeakSet<net.Socket>();
  /** The latest request on each HTTP/1.1 connection. */
  const latestRequest = new WeakMap<object, NodeRequest>();
  /** Every request, HTTP/1.1 or HTTP/2: RPC, the content fast path, or the shared fetch handler. */
  const dispatch = (req: NodeRequest, res: NodeResponse): void => {
    if (req.httpVersionMajor === 1) {
      // During a stop, HTTP/1.1 connections close after their current response.
      if (stopping) (res as http.ServerResponse).shouldKeepAlive = false;
      const deadline = h1Connections.get(req.socket);
      if (deadline !== undefined) {
        latestRequest.set(req.socket, req);
        deadline.onRequest();
        res.once("close", () => deadline.onResponseDone());
      }
    }
    const checked = originFormOf(req);
    if ("problem" in checked) return refuseRequest(req, res, new AppError("invalid_argument", checked.problem));
    if (req.url !== checked.target) req.url = checked.target;
    const url = checked.target;
    const q = url.indexOf("?");
    const pathname = q === -1 ? url : url.slice(0, q);
    if (opts.rpcPaths.has(pathname)) return serveRpc(req, res, pathname);
    if (req.method === "GET" || req.method === "HEAD") {
      const target = contentTarget(pathname);
      if (target !== undefined) return void serveContent(opts.content, req, res, target, pathname, q === -1 ? "" : url.slice(q));
    }
    void serveWithFetch(req, res, opts.handle);
  };
  const refuseRequest = (req: NodeRequest, res: NodeResponse, err: AppError): void => {
    const started = performance.now();
    const { requestId } = clientOf(req, opts.trustedProxies);
    res.setHeader("x-request-id", requestId);
    refuse(res, err);
    opts.log(accessLogLine(req.method ?? "GET", (req.url ?? "").slice(0, 200), res.statusCode, null, started, requestId));
  };
  const serveRpc = (req: NodeRequest, res: NodeResponse, path: string): void => {
    const started = performance.now();
    const { address, requestId } = clientOf(req, opts.trustedProxies);
    // connect-node reads credentials and the client address from req.headers, and the RPC layer
    // logs errors with the request's x-request-id: make both the ones decided here.
    req.headers[CLIENT_ADDRESS_HEADER] = address;
    req.headers["x-request-id"] = requestId;
    // connect-node builds the request URL from the Host, which HTTP/1.0 may leave out.
    if (req.httpVersionMajor === 1) req.headers.host ??= "localhost";
    res.setHeader("x-request-id", requestId);
    res.on("close", () => opts.log(accessLogLine(req.method ?? "POST", path, res.statusCode, null, started, requestId)));
    rpcOverNode(req, res);
  };
  const sessions = new Set<http2.ServerHttp2Session>();
  const h2 = http2.createServer(
    { settings: { initialWindowSize: H2_WINDOW_BYTES, maxConcurrentStreams: H2_MAX_CONCURRENT_STREAMS } },
    dispatch,
  );
  h2.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
    session.setLocalWindowSize(H2_WINDOW_BYTES);
    session.setTimeout(opts.idleTimeoutSeconds * 1000, () => session.destroy());
  });

  const h1 = http.createServer({ maxHeaderSize: MAX_HEAD_BYTES, requireHostHeader: false, keepAliveTimeout: opts.idleTimeoutSeconds * 1000 }, dispatch);
  h1.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === "ECONNRESET" || !socket.writable) return socket.destroy();
    const status = err.code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large" : "400 Bad Request";
    // A malformed request pipelined behind a valid one is refused after the valid one's answer.
    const deadline = h1Connections.get(socket);
    if (deadline === undefined) refuseConnection(socket, status);
    else deadline.whenIdle(() => refuseConnection(socket, status));
  });

  const sockets = new Set<net.Socket>();
  const limits = new ConnectionLimits({ ...opts.maxConnections, exempt: opts.trustedProxies });
  const listener = net.createServer({ noDelay: true }, (socket) => {
    const peer = plainAddress(socket.remoteAddress ?? "unknown");
    if (!limits.admit(peer)) {
      // Over a limit: closed before a byte is read. The protocol is not known yet, so the
      // client sees a closed connection, as from a full accept queue.
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      limits.release(peer);
      h1Connections.get(socket)?.dispose();
      h1Connections.delete(socket);
    });
    socket.on("error", () => socket.destroy());
    socket.setTimeout(opts.idleTimeoutSeconds * 1000, () => socket.destroy());
    // Slow clients (slowloris): the first request's headers must be complete in time, however
    // they trickle; later requests on an HTTP/1.1 connection have a HeaderDeadline each.
    const headerTimer = setTimeout(() => refuseConnection(socket, "408 Request Timeout"), opts.headerTimeoutSeconds * 1000);
    socket.once("close", () => clearTimeout(headerTimer));
    let head: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFIX.length);
      const maybeH2 = head.subarray(0, n).equals(H2_PREFIX.subarray(0, n));
      if (maybeH2 && head.length < H2_PREFIX.length) return; // wait for more bytes
      // Headers ended by bare LFs (RFC 9112 §2.2) go on too: the HTTP/1 parser answers them at
      // once (400) instead of leaving the client to the timeout.
      if (!maybeH2 && head.indexOf("\r\n\r\n") === -1 && head.indexOf("\n\n") === -1) {
        if (head.length > MAX_HEAD_BYTES) {
          socket.off("data", onData);
          clearTimeout(headerTimer);
          refuseConnection(socket, "431 Request Header Fields Too Large");
        }
        return; // the headers are not complete yet
      }
      socket.off("data", onData);
      clearTimeout(headerTimer);
      socket.pause();
      socket.unshift(head);
      if (maybeH2) {
        // node:http2 reads the socket natively, so the socket never sees activity: the session's
        // own timeout (set on "session" above) watches HTTP/2 traffic instead.
        socket.setTimeout(0);
        h2Sockets.add(socket);
        h2.emit("connection", socket);
      } else {
        const deadline = new HeaderDeadline({ timeoutMs: opts.headerTimeoutSeconds * 1000, refuse: () => refuseConnection(socket, "408 Request Timeout") });
        h1Connections.set(socket, deadline);
        // Registered before the HTTP parser's own listener, so it sees each chunk first.
        socket.on("data", () => deadline.onBytes(latestRequest.get(socket)?.complete ?? true));
        h1.emit("connection", socket);
      }
      socket.resume();
    };
    socket.on("data", onData);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once("error", reject);
    listener.listen(opts.port, () => resolve());
  });
  const address = listener.address() as net.AddressInfo;

  return {
    port: address.port,
    async stop(graceMs) {
      stopping = true;
      listener.close();
      for (const s of sessions) s.close();
      const cut = setTimeout(() => {
        for (const s of sessions) s.destroy();
        for (const s of sockets) s.destroy();
      }, graceMs);
      // HTTP/1.1 connections close after their current response (see dispatch); the ones with
      // no request in flight are closed now and whenever one turns idle.
      const sweep = setInterval(() => {
        for (const s of sockets) if (!h2Sockets.has(s) && h1Connections.get(s)?.busy !== true) s.destroy();
      }, 50);
      await Promise.all([...sockets].map((s) => new Promise<void>((resolve) => (s.closed ? resolve() : s.once("close", () => resolve())))));
      clearInterval(sweep);
      clearTimeout(cut);
      h2.close();
    },
  };
}
