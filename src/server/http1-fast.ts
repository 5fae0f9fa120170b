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
 *
 * A client that half-closes (its FIN after its requests, as `nc -N` and some proxies do; the
 * listener allows half-open sockets) still gets every answer to what it sent: the requests
 * already read are answered in order, then the server closes its side too (CONTRACT §10). A
 * half-closed connection with nothing to answer closes at once, so it is never held open.
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { logError } from "../log.ts";
import type { ImmediateAnswer } from "./content-now.ts";
import { lingeringClose } from "./lingering-close.ts";
import { parseRequestHead, type FastHead } from "./http1-head.ts";
import { FastResponse, httpDate, POOLED_BYTES, pooledBuffer, reusePooled, type ResponseOwner } from "./http1-response.ts";

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

/** @typeParam R what `route` says of a request the fast path takes, handed back to `answerNow` */
export interface FastPathOptions<R> {
  /** Header bytes a request may take; a longer head is handed over (node:http answers 431). */
  maxHeadBytes: number;
  /** Seconds an idle kept-alive connection stays open (the `Keep-Alive: timeout` answered). */
  keepAliveSeconds: number;
  /** The route of a request for `target` (origin form) with `method` when the fast path serves it; undefined: it does not. */
  route: (method: "GET" | "HEAD", target: string) => R | undefined;
  /** Serves one request (the listener's dispatch). */
  dispatch: (req: FastRequest, res: FastResponse) => void;
  /**
   * Answers at once, when it can, a request of `route` (content-now.ts): the answer, which is
   * written whole before the next request is read; undefined: `dispatch` serves it.
   */
  answerNow?: (head: FastHead, route: R, socket: Socket) => ImmediateAnswer | undefined;
  /**
   * A request of `socket` is being answered at once: its header clock stops, and it is in
   * flight until {@link answerWritten}.
   * @returns whether the connection may carry another request (false once the server stops)
   */
  answeringNow?: (socket: Socket) => boolean;
  /** The answer given at once on `socket` has left the socket's buffer (not called if the connection closes first). */
  answerWritten?: (socket: Socket) => void;
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

/** The encoded header lines of shared, frozen header objects (a file version's plain answer, http/content.ts). */
const encodedBlocks = new WeakMap<object, Buffer>();

/** `name: value\r\n` for each of `headers`: kept by identity when the object is frozen (never changes). */
function headerBlock(headers: Readonly<Record<string, string>>): Buffer | string {
  const known = encodedBlocks.get(headers);
  if (known !== undefined) return known;
  let text = "";
  for (const name in headers) text += `${name}: ${headers[name]}\r\n`;
  if (!Object.isFrozen(headers)) return text;
  const block = Buffer.from(text, "latin1");
  encodedBlocks.set(headers, block);
  return block;
}

class FastConnection<R> implements ResponseOwner {
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
  /** An answer written at once is still in the socket's buffer: the next request waits until it has left. */
  private draining = false;
  private done = false;
  /** The client has shut down its sending side (FIN): nothing more will arrive. */
  private clientEnded = false;
  private readonly onData = (chunk: Buffer) => this.received(chunk);
  private readonly onClose = () => this.closed();
  private readonly onEnd = () => this.ended();
  private readonly onWrittenNow = (err?: Error | null) => this.writtenNow(err);

  constructor(
    private readonly socket: Socket,
    private readonly opts: FastPathOptions<R>,
  ) {}

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
    if (!this.clientEnded || this.done || this.current !== undefined || this.draining) return;
    this.finish();
    this.socket.end();
  }

  private received(chunk: Buffer): void {
    if (this.done) return;
    this.append(chunk);
    if (this.current !== undefined || this.draining) {
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
      while (!this.done && this.current === undefined && !this.draining && this.len > 0) {
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
    const now = this.opts.answerNow?.(head, route, this.socket);
    if (now !== undefined) return this.writeNow(head, now);
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

  /**
   * Writes an answer decided at once in one `write`, as FastResponse would frame it (the same
   * head: status line, X-Request-Id, the reply's headers, Date, Connection and Keep-Alive).
   * The next request is read once the bytes have left the socket's buffer: at once, or when the
   * write's callback says so. Not on `drain`: a stream emits that only after a write that
   * reached its high-water mark (16 KiB), and a smaller answer the kernel took in part would
   * leave the connection waiting for good.
   */
  private writeNow(head: FastHead, answer: ImmediateAnswer): void {
    const socket = this.socket;
    const keepAlive = (this.opts.answeringNow?.(socket) ?? true) && head.keepAlive;
    const first = `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\nx-request-id: ${answer.context.requestId}\r\n`;
    const block = headerBlock(answer.headers);
    const last = `Date: ${httpDate()}\r\n${keepAlive ? `Connection: keep-alive\r\nKeep-Alive: timeout=${this.opts.keepAliveSeconds}\r\n\r\n` : "Connection: close\r\n\r\n"}`;
    const body = answer.body;
    const size = first.length + block.length + last.length + (body === undefined ? 0 : body.byteLength);
    const pooled = size <= POOLED_BYTES ? pooledBuffer() : undefined;
    const out = pooled ?? Buffer.allocUnsafe(size);
    let at = out.write(first, 0, "latin1");
    at += typeof block === "string" ? out.write(block, at, "latin1") : block.copy(out, at);
    at += out.write(last, at, "latin1");
    if (body !== undefined) out.set(body, at);
    socket.write(pooled === undefined ? out : out.subarray(0, size), this.onWrittenNow);
    // Bun's socket has written it all to the kernel by now, unless the client reads slowly.
    if (socket.writableLength === 0) {
      if (pooled !== undefined) reusePooled(pooled);
      this.opts.answerWritten?.(socket);
    } else this.draining = true;
    answer.sent();
    if (!keepAlive) {
      this.finish();
      lingeringClose(socket);
    }
  }

  /**
   * A write of {@link writeNow} has completed (`err`: failed, the connection is closing). Also
   * called, a tick late, for answers that left at once: only the one waited for counts, once
   * nothing is left in the socket's buffer.
   */
  private writtenNow(err: Error | null | undefined): void {
    if (!this.draining || err != null || this.socket.writableLength > 0) return;
    this.draining = false;
    this.opts.answerWritten?.(this.socket);
    this.responseDone(true);
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
    const res = this.current;
    if (this.currentRequest !== undefined) this.currentRequest.aborted = true;
    this.current = undefined;
    this.currentRequest = undefined;
    res?.connectionClosed();
  }
}
