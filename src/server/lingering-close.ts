/**
 * Closing an HTTP/1.1 connection whose client may still be sending (an early 401 or 413 to an
 * upload, a 408 to a slow request, a 400 to a malformed one). Closing the socket while unread
 * bytes are arriving makes the kernel answer with a TCP reset, and a reset makes the client's
 * kernel drop whatever it had received but not yet read: often the very response that said
 * why. So the server half-closes (FIN after the response), then reads and discards what still
 * comes for a bounded time, as nginx does (`lingering_close`, `lingering_time`,
 * `lingering_timeout`), and closes once the client has closed its side or gone quiet.
 */
import type { Duplex } from "node:stream";

/**
 * Longest a closing connection is read from, in all: nginx's `lingering_time`, 30 s. A client
 * that reads the answer only after sending its whole body (Python's urllib) needs the server to
 * read until it is done: 10 s here broke a 1 GiB upload answered 401 when urllib sent it at under
 * 100 MB/s (a full test run, two test files at once on two cores). Quiet clients still go after
 * {@link LINGER_QUIET_MS}.
 */
const LINGER_MS = 30_000;
/** A closing connection that sends nothing for this long is closed (nginx: lingering_timeout 5 s). */
const LINGER_QUIET_MS = 2_000;

/**
 * Half-closes `socket` once what was written to it is flushed, discards what the client still
 * sends, and destroys it when the client closes, goes quiet, or {@link LINGER_MS} has passed.
 * Every other reader of the socket (the HTTP parser) is detached first.
 */
export function lingeringClose(socket: Duplex): void {
  if (socket.destroyed) return;
  socket.removeAllListeners("data");
  const done = () => {
    clearTimeout(total);
    clearTimeout(quiet);
    socket.destroy();
  };
  const total = setTimeout(done, LINGER_MS);
  let quiet = setTimeout(done, LINGER_QUIET_MS);
  socket.on("data", () => {
    clearTimeout(quiet);
    quiet = setTimeout(done, LINGER_QUIET_MS);
  });
  socket.once("end", done);
  socket.once("close", done);
  socket.on("error", done);
  socket.end();
  socket.resume();
}

/**
 * Answers a connection that never reached a handler with a bodiless error response
 * (`status` as "408 Request Timeout") and closes it as {@link lingeringClose}.
 * @returns whether the answer was written (false: the connection was already closed or ending)
 */
export function refuseConnection(socket: Duplex, status: string): boolean {
  if (socket.destroyed || !socket.writable) return false;
  socket.write(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  lingeringClose(socket);
  return true;
}
