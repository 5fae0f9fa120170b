/**
 * The listener's connections: counted against the caps when accepted (connection-limits.ts),
 * watched while they live (idle timeout; for HTTP/1.1 a header deadline per request,
 * header-deadline.ts), and closed gracefully on stop.
 */
import type http from "node:http";
import type http2 from "node:http2";
import type { Duplex } from "node:stream";
import { plainAddress } from "../context/client-address.ts";
import { ConnectionLimits, type ConnectionLimitsOptions } from "./connection-limits.ts";
import { HeaderDeadline, headerCheckIntervalMs } from "./header-deadline.ts";
import { refuseConnection } from "./lingering-close.ts";
import type { NodeRequest, NodeResponse } from "./node-bridge.ts";

/** What the tracker needs of a TCP socket (a `net.Socket`; a fake in unit tests). */
export interface TrackedSocket extends Duplex {
  remoteAddress?: string | undefined;
  /** Bytes read from and written to the connection so far (node:net's Socket). */
  readonly bytesRead?: number;
  readonly bytesWritten?: number;
  readonly closed: boolean;
  setTimeout(ms: number, onTimeout?: () => void): this;
}

export interface ConnectionsOptions {
  limits: ConnectionLimitsOptions;
  /** Milliseconds each HTTP/1.1 request after the first has to complete its headers (408 after). */
  headerTimeoutMs: number;
  /** Milliseconds a connection may stay silent, no bytes either way, before it is closed. */
  idleTimeoutMs: number;
  /** A connection was answered 408 (its header deadline ran out) and is closing: for the access log. */
  onRefused?: (socket: Duplex, status: number) => void;
}

/** An HTTP/1.1 connection: its header deadline and its latest request. */
interface Http1State {
  deadline: HeaderDeadline;
  latest: NodeRequest | undefined;
}

/** How often, during a stop, HTTP/1.1 connections are checked for having turned idle (ms). */
const STOP_SWEEP_MS = 50;

/**
 * The listener's open connections: admission by the connection caps, header deadlines of
 * HTTP/1.1 connections, HTTP/2 sessions, and the graceful stop.
 */
export class Connections {
  private stopping = false;
  private readonly sockets = new Set<TrackedSocket>();
  private readonly http1 = new Map<Duplex, Http1State>();
  private readonly http2Sockets = new WeakSet<Duplex>();
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  private readonly limits: ConnectionLimits;
  /** Bytes read from and written to connections that have closed. */
  private readonly closedBytes = { received: 0, sent: 0 };
  /** Checks the header clocks of the HTTP/1.1 connections while there are any. */
  private headerCheck: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly opts: ConnectionsOptions) {
    this.limits = new ConnectionLimits(opts.limits);
  }

  /** Connections open now. */
  get size(): number {
    return this.sockets.size;
  }

  /**
   * Bytes read from and written to every connection since start, open ones included (metrics).
   * HTTP/2 sessions write through the socket's `write` (h2-socket.ts), so their bytes count too.
   */
  transferred(): { received: number; sent: number } {
    let { received, sent } = this.closedBytes;
    for (const socket of this.sockets) {
      received += socket.bytesRead ?? 0;
      sent += socket.bytesWritten ?? 0;
    }
    return { received, sent };
  }

  /**
   * A new TCP connection: counted and watched, or destroyed before a byte is read when it is
   * over a limit (the protocol is not known yet, so the client sees a closed connection, as
   * from a full accept queue).
   * @returns whether it was admitted
   */
  admit(socket: TrackedSocket): boolean {
    const peer = plainAddress(socket.remoteAddress ?? "unknown");
    if (!this.limits.admit(peer)) {
      socket.destroy();
      return false;
    }
    this.sockets.add(socket);
    socket.on("close", () => {
      this.sockets.delete(socket);
      this.closedBytes.received += socket.bytesRead ?? 0;
      this.closedBytes.sent += socket.bytesWritten ?? 0;
      this.limits.release(peer);
      const state = this.http1.get(socket);
      if (state !== undefined) {
        state.deadline.dispose();
        this.http1.delete(socket);
        if (this.http1.size === 0) this.stopHeaderCheck();
      }
    });
    socket.on("error", () => socket.destroy());
    socket.setTimeout(this.opts.idleTimeoutMs, () => socket.destroy());
    return true;
  }

  /** `socket` speaks HTTP/1.1: every request on it gets a header deadline. Call before the HTTP parser reads it. */
  watchHttp1(socket: Duplex): void {
    const refuse = () => {
      if (refuseConnection(socket, "408 Request Timeout")) this.opts.onRefused?.(socket, 408);
    };
    const state: Http1State = {
      deadline: new HeaderDeadline({ timeoutMs: this.opts.headerTimeoutMs, refuse }),
      latest: undefined,
    };
    this.http1.set(socket, state);
    this.headerCheck ??= setInterval(() => {
      for (const watched of this.http1.values()) watched.deadline.check();
    }, headerCheckIntervalMs(this.opts.headerTimeoutMs));
    // Registered before the HTTP parser's own listener, so it sees each chunk first.
    socket.on("data", () => state.deadline.onBytes(state.latest?.complete ?? true));
  }

  private stopHeaderCheck(): void {
    clearInterval(this.headerCheck);
    this.headerCheck = undefined;
  }

  /**
   * `socket` speaks HTTP/2. node:http2 reads it natively, so the socket never sees activity:
   * the session's own timeout ({@link watchSession}) watches HTTP/2 traffic instead.
   */
  watchHttp2(socket: TrackedSocket): void {
    socket.setTimeout(0);
    this.http2Sockets.add(socket);
  }

  /**
   * A new HTTP/2 session: closed after the idle timeout, sent GOAWAY on stop, and ended when the
   * client half-closes the TCP connection (FIN), since no new stream can come: gracefully
   * (GOAWAY, the streams in flight finish, then the connection closes; CONTRACT §10) — unless
   * the client sent GOAWAY first: then it is leaving, and its streams are dropped at once
   * rather than left writing to a client that reads no more (test/integration/h2-hostile.test.ts).
   */
  watchSession(session: http2.ServerHttp2Session): void {
    this.sessions.add(session);
    session.on("close", () => this.sessions.delete(session));
    session.setTimeout(this.opts.idleTimeoutMs, () => session.destroy());
    let leaving = false;
    session.once("goaway", () => (leaving = true));
    session.socket?.once("end", () => {
      if (session.destroyed) return;
      if (leaving) session.destroy();
      else if (!session.closed) session.close();
    });
  }

  /** An HTTP/1.1 request's headers are complete: stop its clock, and during a stop close its connection after the response. */
  onHttp1Request(req: NodeRequest, res: NodeResponse): void {
    if (this.stopping) (res as http.ServerResponse).shouldKeepAlive = false;
    const state = this.http1.get(req.socket);
    if (state === undefined) return;
    state.latest = req;
    state.deadline.onRequest();
    res.once("close", () => state.deadline.onResponseDone());
  }

  /**
   * An HTTP/1.1 request on `socket` is answered the moment its headers were complete
   * by the HTTP/1.1 reader (http1-fast.ts): its header clock stops, as in {@link onHttp1Request}, and it is in flight
   * (a stop does not cut the connection) until {@link http1AnswerWritten}.
   * @returns whether the connection may carry another request: false once the server stops
   */
  http1AnswerBegun(socket: Duplex): boolean {
    this.http1.get(socket)?.deadline.onRequest();
    return !this.stopping;
  }

  /** The answer of {@link http1AnswerBegun} has left the socket's buffer. */
  http1AnswerWritten(socket: Duplex): void {
    this.http1.get(socket)?.deadline.onResponseDone();
  }

  /**
   * A request pipelined on `socket` behind one still being answered has arrived whole (the
   * HTTP/1.1 fast path reads ahead): its header clock stops (HeaderDeadline.onHeadReceived).
   */
  onHttp1HeadReceived(socket: Duplex): void {
    this.http1.get(socket)?.deadline.onHeadReceived();
  }

  /**
   * The client half-closed `socket` (FIN) in the middle of a request: its head or body can never
   * be whole, so it is not answered. A request whose body was still arriving is destroyed, which
   * closes the connection (IncomingMessage's `_destroy`, as node:http does on a FIN without
   * `httpAllowHalfOpen`): its upload fails and stores nothing. A head cut short is dropped, as
   * the fast path does, and the connection closes once the responses before it are written.
   */
  endCutShort(socket: Duplex): void {
    const latest = this.http1.get(socket)?.latest;
    if (latest !== undefined && !latest.complete) latest.destroy();
    this.whenIdle(socket, () => socket.end());
  }

  /** Runs `fn` once no request is in flight on `socket` (now, for a connection not known as HTTP/1.1). */
  whenIdle(socket: Duplex, fn: () => void): void {
    const state = this.http1.get(socket);
    if (state === undefined) fn();
    else state.deadline.whenIdle(fn);
  }

  /**
   * Closes every connection gracefully: HTTP/2 sessions get GOAWAY; HTTP/1.1 connections close
   * after their current response, and those with no request in flight are closed now and
   * whenever one turns idle. Whatever is left after `graceMs` is destroyed.
   * @returns when every connection has closed
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    for (const s of this.sessions) s.close();
    const cut = setTimeout(() => {
      for (const s of this.sessions) s.destroy();
      for (const s of this.sockets) s.destroy();
    }, graceMs);
    const sweep = () => {
      for (const s of this.sockets) if (!this.http2Sockets.has(s) && this.http1.get(s)?.deadline.busy !== true) s.destroy();
    };
    const sweeper = setInterval(sweep, STOP_SWEEP_MS);
    await Promise.all([...this.sockets].map((s) => new Promise<void>((resolve) => (s.closed ? resolve() : s.once("close", () => resolve())))));
    clearInterval(sweeper);
    clearTimeout(cut);
    this.stopHeaderCheck();
  }
}
