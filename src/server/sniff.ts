/**
 * Protocol detection on a new connection, before any HTTP parser sees it: the HTTP/2 connection
 * preface (`PRI * HTTP/2.0`, RFC 9113 §3.4, h2c with prior knowledge) or else HTTP/1.x, decided
 * once the first request's headers are complete. The first request's headers must also arrive
 * within the header timeout (408) and fit in the header limit (431), however they trickle
 * (slowloris); later requests of an HTTP/1.1 connection are watched by {@link HeaderDeadline}.
 */
import type { Duplex } from "node:stream";
import { refuseConnection } from "./lingering-close.ts";

const H2_PREFIX = Buffer.from("PRI ");
const EMPTY = Buffer.alloc(0);

/** What a connection's first bytes say: which protocol, or that more are needed, or that they are too many. */
export type HeadVerdict = "http2" | "http1" | "more" | "too_large";

/**
 * Classifies the first bytes of a connection. HTTP/2 as soon as the preface's first 4 bytes are
 * there; HTTP/1.x once its headers end (`CRLF CRLF`, or bare LFs, RFC 9112 §2.2, which the HTTP/1
 * parser then answers at once with 400 instead of leaving the client to the timeout).
 * @param maxHeadBytes the most an HTTP/1.x request's headers may take before they are too large
 */
export function classifyHead(head: Buffer, maxHeadBytes: number): HeadVerdict {
  const n = Math.min(head.length, H2_PREFIX.length);
  if (head.subarray(0, n).equals(H2_PREFIX.subarray(0, n))) return head.length < H2_PREFIX.length ? "more" : "http2";
  if (head.indexOf("\r\n\r\n") !== -1 || head.indexOf("\n\n") !== -1) return "http1";
  return head.length > maxHeadBytes ? "too_large" : "more";
}

export interface SniffOptions {
  /** Milliseconds the first request has, from the connection's start, to complete its headers; 408 after. */
  headerTimeoutMs: number;
  /** Header bytes allowed before 431. */
  maxHeadBytes: number;
  /** Takes over an HTTP/1.x connection: called with the socket paused and its first bytes put back. */
  onHttp1: (socket: Duplex) => void;
  /** Takes over an HTTP/2 connection, the same way. */
  onHttp2: (socket: Duplex) => void;
  /** The connection was answered `status` (408, 431) and is closing; `head`: what it had sent (for the access log). */
  onRefused?: (status: number, head: Buffer) => void;
}

/**
 * Reads `socket` until {@link classifyHead} decides, then hands it over with everything read put
 * back (`unshift`), or refuses it (408, 431) with a lingering close; a connection whose client
 * half-closes (FIN) before that is closed.
 */
export function sniffProtocol(socket: Duplex, opts: SniffOptions): void {
  let head: Buffer = EMPTY;
  const refuse = (status: string) => {
    if (refuseConnection(socket, status)) opts.onRefused?.(Number.parseInt(status, 10), head);
  };
  const timer = setTimeout(() => refuse("408 Request Timeout"), opts.headerTimeoutMs);
  socket.once("close", () => clearTimeout(timer));
  // The client shut down its sending side before a request's headers were complete: none will
  // ever be, and nothing is owed (the listener allows half-open sockets, so this side is ours to end).
  const onEnd = () => {
    clearTimeout(timer);
    socket.end();
  };
  const onData = (chunk: Buffer) => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    const verdict = classifyHead(head, opts.maxHeadBytes);
    if (verdict === "more") return;
    socket.off("data", onData);
    socket.off("end", onEnd);
    clearTimeout(timer);
    if (verdict === "too_large") return refuse("431 Request Header Fields Too Large");
    socket.pause();
    socket.unshift(head);
    if (verdict === "http2") opts.onHttp2(socket);
    else opts.onHttp1(socket);
    socket.resume();
  };
  socket.on("data", onData);
  socket.once("end", onEnd);
}
