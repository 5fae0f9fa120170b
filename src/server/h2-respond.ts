/**
 * Answers written on a `node:http2` stream with the core API (`stream.respond` + `stream.end`)
 * instead of the compat `Http2ServerResponse`. In Bun, the compat request and response cost
 * more than the answer itself: each is a stream with half a dozen listeners on the HTTP/2 stream
 * (scripts/bench/h2-layers.ts: a 4 KiB answer through the compat API does ~0.6–0.7× the
 * requests per second of the same answer on the core API). A whole answer written here goes out
 * as HEADERS then DATA with END_STREAM, which Bun's frame writer sends in one `sendto`.
 */
import http2 from "node:http2";
import type { OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";

/**
 * Sends a complete response on `stream`: `status` and `headers` (lower-case names, no pseudo
 * headers; Bun adds `date`) with `x-request-id` when given, then `body` if there is one, ending
 * the stream (RFC 9113 §8.1).
 * A bodiless answer ends with its HEADERS frame (END_STREAM); so does any answer to HEAD, whose
 * body Bun drops (RFC 9110 §9.3.2).
 * @throws ERR_HTTP2_INVALID_STREAM when the stream is already closed, ERR_HTTP2_HEADERS_SENT
 *   when it was answered before
 */
export function respondWhole(stream: ServerHttp2Stream, status: number, headers: OutgoingHttpHeaders, body?: Uint8Array | string, requestId?: string): void {
  const head: OutgoingHttpHeaders = { ...headers, ":status": status };
  if (requestId !== undefined) head["x-request-id"] = requestId;
  if (body === undefined || body.length === 0) {
    stream.respond(head, END_STREAM);
    return;
  }
  stream.respond(head);
  stream.end(body);
}

const END_STREAM = { endStream: true };

/**
 * Sends the head of a response whose body follows in writes on `stream` (a download), which
 * the caller ends.
 * @throws as {@link respondWhole}
 */
export function respondHead(stream: ServerHttp2Stream, status: number, headers: OutgoingHttpHeaders): void {
  stream.respond({ ...headers, ":status": status });
}

/**
 * Whether `stream` can still be answered: not closed or reset by the client, its session not
 * gone (GOAWAY, timeout, closed connection).
 */
export function isAnswerable(stream: ServerHttp2Stream): boolean {
  return !stream.destroyed && !stream.closed && stream.session !== undefined && !stream.session.destroyed;
}

/**
 * Listens for `stream`'s errors, which an answer written with the core API must do: a stream
 * whose connection is reset while it is written (EPIPE, ECONNRESET) emits `error`, and unheard
 * that stops the process (the compat request listens for it itself). Its `close` follows, which
 * is where the caller learns the answer ended.
 */
export function listenForErrors(stream: ServerHttp2Stream): void {
  stream.on("error", ignoreError);
}

function ignoreError(): void {}

/** Resets `stream` with INTERNAL_ERROR (RFC 9113 §7): an answer that failed after its headers went out. */
export function resetStream(stream: ServerHttp2Stream): void {
  if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
}
