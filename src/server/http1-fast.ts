/**
 * The HTTP/1.1 fast path. Bun's `node:http` parsing and writing over a socket handed to it by
 * the listener cost ~40% of a small GET before cubby does any work (docs/benchmarks.md), so the
 * requests that matter — GET and HEAD of content URLs and share links (and `/healthz`, which
 * load balancers and the stall probe ask often) — are read and answered
 * here: the head is parsed by http1-head.ts and handed to the one dispatch as an exchange
 * (http1-exchange.ts), whose answer is written straight to the socket.
 *
 * The first request that is not ours (another method or route, a body, anything odd or
 * malformed, a head too large) hands the connection to node:http for good, as the sniff does
 * today: reading stops, every byte not yet consumed (that request's included) is put back, and
 * `onHandOver` (`h1.emit("connection")`) gives node:http the socket, which then answers as
 * before (400, 431, 413, bodies, upgrades…). A hand-over waits for the response in flight.
 *
 * Requests are served one at a time, in order (pipelining, RFC 9112 §9.3.2). While one is
 * answered, what follows is read until a whole head (or `maxHeadBytes`) is there; then the
 * socket is paused and that request's header clock stopped: it waits on the server, not the
 * client (HeaderDeadline.onHeadReceived).
 *
 * A client that half-closes (its FIN after its requests, as `nc -N` and some proxies do; the
 * listener allows half-open sockets) still gets every answer to what it sent: the requests
 * already read are answered in order, then the server closes its side too (CONTRACT §10). A
 * half-closed connection with nothing to answer closes at once, so it is never held open.
 */
import type { Socket } from "node:net";
import type { RequestContext } from "../context/request-context.ts";
import { logError } from "../log.ts";
import { lingeringClose } from "./lingering-close.ts";
import { parseRequestHead, type FastHead } from "./http1-head.ts";
import { Http1Exchange, type Http1Connection } from "./http1-exchange.ts";

/** @typeParam R what `route` says of a request the fast path takes, handed back to `dispatch` */
export interface FastPathOptions<R> {
  /** Header bytes a request may take; a longer head is handed over (node:http answers 431). */
  maxHeadBytes: number;
  /** Seconds an idle kept-alive connection stays open (the `Keep-Alive: timeout` answered). */
  keepAliveSeconds: number;
  /** The route of a request for `target` (origin form) with `method` when the fast path serves it; undefined: it does not. */
  route: (method: "GET" | "HEAD", target: string) => R | undefined;
  /** Serves one exchange (the listener's dispatch), answering now or later. */
  dispatch: (exchange: Http1Exchange, route: R) => void;
  /** Writes an exchange's access-log line (AccessLog.close). */
  logClose: (context: RequestContext, status: number, bytes: string | undefined) => void;
  /**
   * A request of `socket` has been read whole: its header clock stops, and it is in flight
   * until {@link answerWritten}.
   * @returns whether the connection may carry another request (false once the server stops)
   */
  requestRead: (socket: Socket) => boolean;
  /** The answer to the request in flight on `socket` has left the socket's buffer (not called if the connection closes first). */
  answerWritten: (socket: Socket) => void;
  /** Gives the connection to node:http, paused, with its unread bytes put back. */
  onHandOver: (socket: Socket) => void;
  /** A request's head has arrived whole while the one before it is being answered (its header clock stops). */
  onPipelinedHead: (socket: Socket) => void;
}

/**
 * Reads HTTP/1.x requests from `socket` (just classified by the sniff, paused, its first bytes
 * put back) and serves them until one is not ours; see the module comment. Call before the
 * socket is resumed.
 */
export function serveHttp1Fast<R>(socket: Socket, opts: FastPathOptions<R>): void {
  new FastConnection(socket, opts).start();
}

const HEAD_END = Buffer.from("\r\n\r\n");

class FastConnection<R> implements Http1Connection {
  /** Bytes read and not yet consumed: `buf[0, len)`; `buf` may be a chunk as read, or a growing copy. */
  private buf: Buffer | undefined;
  private len = 0;
  private owned = false;
  /** Where to resume looking for the head's end (a head that trickles is scanned once). */
  private scanFrom = 0;
  /** The exchange being answered (until its bytes have left the socket's buffer). */
  private current: Http1Exchange | undefined;
  /** The exchange whose whole answer is still in the socket's buffer. */
  private drainingExchange: Http1Exchange | undefined;
  private pausedByUs = false;
  /** Whether a pipelined head (or more than a head may take) waits for the response in flight. */
  private headWaiting = false;
  private looping = false;
  private done = false;
  /** The client has shut down its sending side (FIN): nothing more will arrive. */
  private clientEnded = false;
  private readonly onData = (chunk: Buffer) => this.received(chunk);
  private readonly onClose = () => this.closed();
  private readonly onEnd = () => this.ended();
  /** @see Http1Connection */
  readonly onWritten = (err?: Error | null) => this.writtenNow(err);
  readonly keepAliveSeconds: number;

  constructor(
    readonly socket: Socket,
    private readonly opts: FastPathOptions<R>,
  ) {
    this.keepAliveSeconds = opts.keepAliveSeconds;
  }

  start(): void {
    this.socket.on("data", this.onData);
    this.socket.once("close", this.onClose);
    this.socket.once("end", this.onEnd);
  }

  /** The client's FIN: what is buffered is served, then the connection closes (module comment). */
  private ended(): void {
    this.clientEnded = true;
    this.next();
  }

  /**
   * After the client's FIN, closes the connection once nothing is being answered: the requests
   * read before it have all been served (a head left incomplete will never be, nginx closes too).
   * The socket is ended, not destroyed: what is still in its buffer goes out first.
   */
  private closeIfDone(): void {
    if (!this.clientEnded || this.done || this.current !== undefined) return;
    this.finish();
    this.socket.end();
  }

  private received(chunk: Buffer): void {
    if (this.done) return;
    this.append(chunk);
    if (this.current !== undefined) {
      // A request pipelined behind the one being answered: once its head is whole (or it is
      // past the limit) it waits for the response, so its header clock stops and reading
      // pauses; until then read on only as far as a head may go.
      // (Paused again if something resumed it: the fetch bridge resumes the socket.)
      let whole = this.headWaiting || this.len > this.opts.maxHeadBytes;
      if (!whole) {
        // Scanned from where the last look stopped; left there when found, for next() to find.
        whole = this.buf!.subarray(0, this.len).indexOf(HEAD_END, this.scanFrom) !== -1;
        if (!whole) this.scanFrom = Math.max(0, this.len - 3);
      }
      if (whole) {
        this.pausedByUs = true;
        this.socket.pause();
        if (!this.headWaiting) {
          this.headWaiting = true;
          this.opts.onPipelinedHead(this.socket);
        }
      }
      return;
    }
    this.next();
  }

  private append(chunk: Buffer): void {
    if (this.len === 0) {
      this.buf = chunk;
      this.len = chunk.length;
      this.owned = false;
      return;
    }
    const need = this.len + chunk.length;
    if (!this.owned || need > this.buf!.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.owned ? this.buf!.length * 2 : 4096));
      this.buf!.copy(grown, 0, 0, this.len);
      this.buf = grown;
      this.owned = true;
    }
    chunk.copy(this.buf!, this.len);
    this.len = need;
  }

  /** Drops the first `n` bytes of the buffer. */
  private consume(n: number): void {
    this.scanFrom = 0;
    if (n >= this.len) {
      this.buf = undefined;
      this.len = 0;
      return;
    }
    // A view, not a copy: the next append copies (it sees an unowned buffer).
    this.buf = this.buf!.subarray(n, this.len);
    this.len -= n;
    this.owned = false;
  }

  /** Serves the next buffered request, if its head is complete; hands over at the first that is not ours. */
  private next(): void {
    if (this.looping) return;
    this.looping = true;
    try {
      while (!this.done && this.current === undefined && this.len > 0) {
        const buf = this.len === this.buf!.length ? this.buf! : this.buf!.subarray(0, this.len);
        const parsed = parseRequestHead(buf, 0, this.opts.maxHeadBytes, this.scanFrom);
        if (parsed.kind === "more") {
          this.scanFrom = Math.max(0, this.len - 3);
          break;
        }
        if (parsed.kind === "not_ours") return this.handOver();
        const route = this.opts.route(parsed.head.method, parsed.head.target);
        if (route === undefined) return this.handOver();
        this.consume(parsed.end);
        this.serve(parsed.head, route);
      }
    } finally {
      this.looping = false;
    }
    this.closeIfDone();
  }

  private serve(head: FastHead, route: R): void {
    const exchange = new Http1Exchange(this, head, this.opts.requestRead(this.socket));
    this.current = exchange;
    try {
      this.opts.dispatch(exchange, route);
    } catch (err) {
      // The dispatch catches what its handlers throw; this is a bug in it: the connection goes.
      logError(`http1-fast: the dispatch threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      this.socket.destroy();
    }
  }

  /** @see Http1Connection */
  logClose(context: RequestContext, status: number, bytes: string | undefined): void {
    this.opts.logClose(context, status, bytes);
  }

  /** @see Http1Connection */
  draining(exchange: Http1Exchange): void {
    this.drainingExchange = exchange;
  }

  /** @see Http1Connection */
  closing(): void {
    if (this.done) return;
    // Half-close after the answer and read what the client still sends (lingering-close.ts).
    this.finish();
    lingeringClose(this.socket);
  }

  /**
   * A whole answer's write has completed (`err`: failed, the connection is closing). Also
   * called, a tick late, for answers that left at once: only the one waited for counts, once
   * nothing is left in the socket's buffer.
   */
  private writtenNow(err: Error | null | undefined): void {
    const exchange = this.drainingExchange;
    if (exchange === undefined || err != null || this.socket.writableLength > 0) return;
    this.drainingExchange = undefined;
    this.answered(exchange, true);
  }

  /** @see Http1Connection */
  answered(exchange: Http1Exchange, keepAlive: boolean): void {
    if (this.current !== exchange) return;
    this.current = undefined;
    this.opts.answerWritten(this.socket);
    if (this.done) return;
    if (!keepAlive) return this.closing();
    this.headWaiting = false;
    if (this.pausedByUs) {
      this.pausedByUs = false;
      this.socket.resume();
    }
    this.next();
  }

  /**
   * Stops reading and gives the socket, its unconsumed bytes put back, to node:http. After the
   * client's FIN the socket can take nothing back (`unshift` after `end` is an error) and
   * node:http would never learn of the FIN: the bytes are given to its `data` listener and the
   * FIN to its `end` listener (the ones added by the hand-over) instead, as if they arrived now.
   */
  private handOver(): void {
    const rest = this.len > 0 ? this.buf!.subarray(0, this.len) : undefined;
    this.finish();
    const socket = this.socket;
    if (this.clientEnded) {
      const before = new Set(socket.listeners("end"));
      this.opts.onHandOver(socket);
      if (rest !== undefined) socket.emit("data", rest);
      for (const listener of socket.listeners("end")) if (!before.has(listener)) (listener as () => void).call(socket);
      return;
    }
    socket.pause();
    if (rest !== undefined) socket.unshift(rest);
    this.opts.onHandOver(socket);
    socket.resume();
  }

  private finish(): void {
    this.done = true;
    this.buf = undefined;
    this.len = 0;
    this.socket.off("data", this.onData);
    this.socket.off("close", this.onClose);
    this.socket.off("end", this.onEnd);
  }

  private closed(): void {
    this.finish();
    const exchange = this.current;
    this.current = undefined;
    this.drainingExchange = undefined;
    exchange?.connectionClosed();
  }
}
