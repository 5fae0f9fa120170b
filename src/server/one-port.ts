/**
 * Every protocol on one TCP port (CONTRACT §4). Bun.serve cannot send HTTP/2 trailers, which
 * gRPC needs, so the port is a `node:net` listener that reads the first bytes of each
 * connection:
 *
 * - the HTTP/2 connection preface (`PRI * HTTP/2.0`, RFC 9113 §3.4, h2c with prior knowledge)
 *   → an in-process `node:http2` server: gRPC, gRPC-Web and Connect through connect-node, and
 *   every other path (REST, content, static) through the shared fetch handler;
 * - anything else (HTTP/1.x) → relayed to an internal `Bun.serve` on a loopback port, which
 *   serves the same fetch handler (Connect and gRPC-Web included). The relay remembers which
 *   client each of its loopback connections stands for, so handlers see the real address.
 *
 * Piping costs throughput on tiny requests (see docs/benchmarks.md) but keeps Bun.serve's
 * fast HTTP/1.1 parser and sendfile for content, and node streams handle backpressure both ways.
 */
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Server } from "bun";
import http2 from "node:http2";
import net from "node:net";
import { nanoid } from "nanoid";
import { RPC_OPTIONS } from "../rpc/index.ts";
import { serveH2WithFetch } from "./h2-bridge.ts";
import { CLIENT_ADDRESS_HEADER, clientAddressOf } from "../auth/rate-limit.ts";
import { accessLogLine, type ClientRequestHandler } from "./request-handler.ts";

export interface OnePortOptions {
  port: number;
  /** The shared fetch handler (REST, content, static, and RPC over fetch). */
  handle: ClientRequestHandler;
  /** RPC routes for the HTTP/2 path (connect-node, which can send trailers). */
  routes: (router: ConnectRouter) => void;
  /** RPC request paths, to log RPCs served on the HTTP/2 path. */
  rpcPaths: Set<string>;
  log: (line: string) => void;
  /** Proxy addresses whose X-Forwarded-For is believed (TRUSTED_PROXIES). */
  trustedProxies: ReadonlySet<string>;
  /** Seconds a new connection has to send its first request's headers; 408 after. */
  headerTimeoutSeconds: number;
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

/** The most an HTTP/1.x client may send before its first request's headers end: 431 past it. */
const MAX_HEAD_BYTES = 64 * 1024;
/** HTTP/2 flow-control window per stream and per connection: large transfers need more than 64 KiB. */
const H2_WINDOW_BYTES = 4 * 1024 * 1024;
const H2_PREFIX = Buffer.from("PRI ");

/** Starts the listener. */
export async function listenOnePort(opts: OnePortOptions): Promise<OnePortServer> {
  // Local port of each relay connection → the address of the client it carries.
  const relayed = new Map<number, string>();
  const internal: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: opts.idleTimeoutSeconds,
    fetch(request, server) {
      const peer = server.requestIP(request);
      return opts.handle(request, (peer && relayed.get(peer.port)) ?? peer?.address ?? "unknown");
    },
  });
  const internalPort = internal.port!;

  const rpcOverNode = connectNodeAdapter({
    ...RPC_OPTIONS,
    routes: opts.routes,
    fallback: (req, res) => void serveH2WithFetch(req as http2.Http2ServerRequest, res as http2.Http2ServerResponse, opts.handle),
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  const h2 = http2.createServer({ settings: { initialWindowSize: H2_WINDOW_BYTES } }, (req, res) => {
    const path = req.url.split("?")[0] ?? "";
    if (opts.rpcPaths.has(path)) {
      // connect-node reads credentials and the client address from req.headers; other paths go
      // through the shared fetch handler, which sets the address itself.
      const forwardedFor = req.headers["x-forwarded-for"];
      req.headers[CLIENT_ADDRESS_HEADER] = clientAddressOf(
        req.socket?.remoteAddress ?? "unknown",
        Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor,
        opts.trustedProxies,
      );
      const started = performance.now();
      const requestId = req.headers["x-request-id"]?.toString() ?? nanoid(12);
      // The RPC layer logs errors with the request's x-request-id: make it this one.
      req.headers["x-request-id"] = requestId;
      res.on("close", () => opts.log(accessLogLine(req.method, path, res.statusCode, null, started, requestId)));
    }
    rpcOverNode(req, res);
  });
  h2.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
    session.setLocalWindowSize(H2_WINDOW_BYTES);
    session.setTimeout(opts.idleTimeoutSeconds * 1000, () => session.destroy());
  });

  const sockets = new Set<net.Socket>();
  const listener = net.createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    socket.setTimeout(opts.idleTimeoutSeconds * 1000, () => socket.destroy());
    // Slow clients (slowloris): the first request's headers must be complete in time. Later
    // requests on the connection are bounded by the idle timeout.
    const headerTimer = setTimeout(() => refuse(socket, "408 Request Timeout"), opts.headerTimeoutSeconds * 1000);
    socket.once("close", () => clearTimeout(headerTimer));
    let head: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFIX.length);
      const maybeH2 = head.subarray(0, n).equals(H2_PREFIX.subarray(0, n));
      if (maybeH2 && head.length < H2_PREFIX.length) return; // wait for more bytes
      // Headers ended by bare LFs (RFC 9112 §2.2) go on too: Bun.serve answers them at once
      // (505) instead of leaving the client to the header timeout.
      if (!maybeH2 && head.indexOf("\r\n\r\n") === -1 && head.indexOf("\n\n") === -1) {
        if (head.length > MAX_HEAD_BYTES) {
          socket.off("data", onData);
          clearTimeout(headerTimer);
          refuse(socket, "431 Request Header Fields Too Large");
        }
        return; // the headers are not complete yet
      }
      socket.off("data", onData);
      clearTimeout(headerTimer);
      socket.pause();
      if (maybeH2) {
        // node:http2 reads the socket natively, so the socket never sees activity: the session's
        // own timeout (set on "session" below) watches HTTP/2 traffic instead.
        socket.setTimeout(0);
        socket.unshift(head);
        h2.emit("connection", socket);
        socket.resume();
      } else {
        forward(socket, head, internalPort, relayed);
      }
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
      listener.close();
      for (const s of sessions) s.close();
      const cut = setTimeout(() => {
        void internal.stop(true);
        for (const s of sessions) s.destroy();
        for (const s of sockets) s.destroy();
      }, graceMs);
      // In-flight HTTP/1.1 requests finish inside Bun.serve; their responses still have to be
      // relayed, so public sockets are left to close on their own (the internal server closes
      // each connection once it is idle) until the grace period cuts them.
      await internal.stop(false);
      await Promise.all([...sessions, ...sockets].map((s) => new Promise<void>((resolve) => (s.closed ? resolve() : s.once("close", () => resolve())))));
      clearTimeout(cut);
      h2.close();
    },
  };
}

/** Answers a connection that never reached a handler with a bodiless error and closes it. */
function refuse(socket: net.Socket, status: string): void {
  if (socket.destroyed) return;
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/**
 * Relays an HTTP/1.x connection to the internal Bun.serve, first bytes included. Nothing is sent
 * before the loopback connection is up and registered in `relayed`, so the handler always finds
 * the client's address. Hand-written rather than `pipe()`: the same pause-on-full /
 * resume-on-drain backpressure with fewer layers per chunk.
 */
function forward(socket: net.Socket, head: Buffer, port: number, relayed: Map<number, string>): void {
  const upstream = net.connect({ host: "127.0.0.1", port });
  upstream.setNoDelay(true);
  const close = () => {
    socket.destroy();
    upstream.destroy();
  };
  upstream.on("error", close);
  socket.on("error", close);
  socket.on("close", () => upstream.destroy());
  upstream.once("connect", () => {
    const localPort = upstream.localPort!;
    relayed.set(localPort, socket.remoteAddress ?? "unknown");
    upstream.on("close", () => {
      relayed.delete(localPort);
      socket.end();
    });
    relay(socket, upstream);
    relay(upstream, socket);
    upstream.write(head);
    socket.resume();
  });
}

/** Copies `from` into `to`, pausing `from` while `to` is full; ends `to` when `from` ends. */
function relay(from: net.Socket, to: net.Socket): void {
  from.on("data", (chunk: Buffer) => {
    if (!to.write(chunk)) from.pause();
  });
  to.on("drain", () => from.resume());
  from.on("end", () => to.end());
}
