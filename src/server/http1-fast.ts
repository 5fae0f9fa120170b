/**
 * The HTTP/1.1 fast path. Bun's `node:http` parsing and writing over a socket handed to it by
 * the listener cost ~40% of a small GET before cubby does any work (docs/benchmarks.md), so the
 * requests that matter — GET and HEAD of content URLs and share links — are read and answered
 * here: the head is parsed by http1-head.ts and served through the usual dispatch with light
 * request and response objects (http1-response.ts), the answer written in one `socket.write`.
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
 */
import type { Socket } from "node:net";
import { logError } from "../log.ts";
import { lingeringClose } from "./lingering-close.ts";
import { parseRequestHead, type FastHead } from "./http1-head.ts";
import { FastResponse, type ResponseOwner } from "./http1-response.ts";

/**
 * The part of Node's `IncomingMessage` that the dispatch and what it calls read, for a request
 * without a body (so it is `complete` from the start).
 */
export class FastRequest {
  readonly httpVersionMajor = 1;
  readonly httpVersionMinor: 0 | 1;
  readonly httpVersion: "1.0" | "1.1";
  readonly method: "GET" | "HEAD";
  url: string;
  readonly headers: Record<string, string | string[]>;
  readonly rawHeaders: string[];
  readonly complete = true;
  aborted = false;

  constructor(
    head: FastHead,
    readonly socket: Socket,
  ) {
    this.httpVersionMinor = head.versionMinor;
    this.httpVersion = head.versionMinor === 1 ? "1.1" : "1.0";
    this.method = head.method;
    this.url = head.target;
    this.headers = head.headers;
    this.rawHeaders = head.rawHeaders;
  }

  get connection(): Socket {
    return this.socket;
  }
}

export interface FastPathOptions {
  /** Header bytes a request may take; a longer head is handed over (node:http answers 431). */
  maxHeadBytes: number;
  /** Seconds an idle kept-alive connection stays open (the `Keep-Alive: timeout` answered). */
  keepAliveSeconds: number;
  /** Whether the fast path serves a request for `target` (origin form) with `method`. */
  serves: (method: "GET" | "HEAD", target: string) => boolean;
  /** Serves one request (the listener's dispatch). */
  dispatch: (req: FastRequest, res: FastResponse) => void;
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
export function serveHttp1Fast(socket: Socket, opts: FastPathOptions): void {
  new FastConnection(socket, opts).start();
}

const HEAD_END = Buffer.from("\r\n\r\n");

class FastConnection implements ResponseOwner {
  /** Bytes read and not yet consumed: `buf[0, len)`; `buf` may be a chunk as read, or a growing copy. */
  private buf: Buffer | undefined;
  private len = 0;
  private owned = false;
  /** Where to resume looking for the head's end (a head that trickles is scanned once). */
  private scanFrom = 0;
  private current: FastResponse | undefined;
  private currentRequest: FastRequest | undefined;
  private pausedByUs = false;
  /** Whether a pipelined head (or more than a head may take) waits for the response in flight. */
  private headWaiting = false;
  private looping = false;
  private done = false;
  private readonly onData = (chunk: Buffer) => this.received(chunk);
  private readonly onClose = () => this.closed();

  constructor(
    private readonly socket: Socket,
    private readonly opts: FastPathOptions,
  ) {}

  start(): void {
    this.socket.on("data", this.onData);
    this.socket.once("close", this.onClose);
  }

  private received(chunk: Buffer): void {
    if (this.done) return;
    this.append(chunk);
    if (this.current !== undefined) {
      // A request pipelined behind the one being answered: once its head is whole (or it is
      // past the limit) it waits for the response, so its header clock stops and reading
      // pauses; until then read on only as far as a head may go.
      // (Paused again if something resumed it: node-bridge's writeResponse resumes the socket.)
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
          return;
        }
        if (parsed.kind === "not_ours" || !this.opts.serves(parsed.head.method, parsed.head.target)) return this.handOver();
        this.consume(parsed.end);
        this.serve(parsed.head);
      }
    } finally {
      this.looping = false;
    }
  }

  private serve(head: FastHead): void {
    const req = new FastRequest(head, this.socket);
    const res = new FastResponse(this.socket, this, head.method === "HEAD", head.versionMinor === 0, head.keepAlive, this.opts.keepAliveSeconds);
    this.current = res;
    this.currentRequest = req;
    try {
      this.opts.dispatch(req, res);
    } catch (err) {
      // The dispatch catches what its handlers throw; this is a bug in it: the connection goes.
      logError(`http1-fast: the dispatch threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      this.socket.destroy();
    }
  }

  /** @see ResponseOwner */
  responseDone(keepAlive: boolean): void {
    this.current = undefined;
    this.currentRequest = undefined;
    if (this.done) return;
    if (!keepAlive) {
      // Half-close after the response and read what the client still sends (lingering-close.ts).
      this.finish();
      lingeringClose(this.socket);
      return;
    }
    this.headWaiting = false;
    if (this.pausedByUs) {
      this.pausedByUs = false;
      this.socket.resume();
    }
    this.next();
  }

  /** Stops reading and gives the socket, its unconsumed bytes put back, to node:http. */
  private handOver(): void {
    const rest = this.len > 0 ? this.buf!.subarray(0, this.len) : undefined;
    this.finish();
    const socket = this.socket;
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
  }

  private closed(): void {
    this.finish();
    const res = this.current;
    if (this.currentRequest !== undefined) this.currentRequest.aborted = true;
    this.current = undefined;
    this.currentRequest = undefined;
    res?.connectionClosed();
  }
}
