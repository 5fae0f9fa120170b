/**
 * An answer of text made a part at a time (a PROPFIND's multistatus, a collection's listing):
 * short ones go whole with a Content-Length, long ones stream at the client's pace, so what a
 * process holds for one such answer stays about {@link STREAM_AFTER_BYTES} whatever its length
 * (CONTRACT §14).
 */
import type { AnswerHeaders, Exchange, Outgoing } from "./exchange.ts";

/**
 * An answer shorter than this is sent whole, with a Content-Length (most are); past it, what is
 * ready goes out and the rest streams. Bytes of text.
 */
export const STREAM_AFTER_BYTES = 1024 * 1024;
/** Once streaming, what is ready goes out in writes of about this many bytes. */
export const STREAM_CHUNK_BYTES = 128 * 1024;

/**
 * Sends `status`, `headers` and the text of `parts` in order: whole (Exchange.respond) when it
 * stays under {@link STREAM_AFTER_BYTES}, else streamed (Exchange.stream) in writes of about
 * {@link STREAM_CHUNK_BYTES}, each awaited until it has left, so the next part is made only as
 * the client takes the last. A client that goes away stops the parts (their generator returns).
 * @throws what `parts` throws while nothing was sent yet (the caller answers the error); once the
 *   head has gone out a failure cuts the answer (Outgoing.fail), the only way left to say it is incomplete
 */
export async function answerText(ex: Exchange, status: number, headers: AnswerHeaders, parts: AsyncIterable<string>): Promise<void> {
  let pending: string[] = [];
  let pendingBytes = 0;
  let out: Outgoing | undefined;
  try {
    for await (const part of parts) {
      pending.push(part);
      pendingBytes += part.length;
      if (pendingBytes >= STREAM_AFTER_BYTES || (out !== undefined && pendingBytes >= STREAM_CHUNK_BYTES)) {
        out ??= ex.stream(status, headers);
        await send(out, pending.join(""));
        pending = [];
        pendingBytes = 0;
        if (out.signal.aborted) return;
      }
    }
    if (out === undefined) return ex.respond(status, headers, pending.join(""));
    await send(out, pending.join(""));
    out.end();
  } catch (err) {
    if (out === undefined) throw err;
    out.fail();
  }
}

/** Writes `text` and waits until it has left (the connection's pace bounds what is held). */
function send(out: Outgoing, text: string): Promise<void> {
  if (out.signal.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => out.write(Buffer.from(text), (err) => (err ? reject(err) : resolve())));
}
