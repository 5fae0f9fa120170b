/**
 * The one body reader (docs/design.md "One body reader"): a request body of node:http (HTTP/1.1,
 * after the reader's hand-over) or of node:http2's compat API as a web stream, read ahead of its
 * consumer within the process's body budget (body-budget.ts), with back-pressure on the
 * connection or stream and the end-of-body checks; and the freeing of what node:http parsed.
 */
import type { Http2ServerRequest } from "node:http2";
import type { Duplex } from "node:stream";
import { bodyBudget, type BudgetShare, type ByteBudget } from "../body-budget.ts";
import { AppError } from "../errors.ts";
import { freeNow, gcPacer, markReleasable, releaseChunk } from "../gc-pacer.ts";
import { headerValue } from "../serving/exchange.ts";
import type { NodeRequest } from "./node-bridge.ts";

/**
 * Frees each chunk node:http reads from `socket` once its HTTP parser has read it. Bun's node:http
 * (its HTTP/1.1 parser over a socket it is handed) copies a request body out of each chunk (no
 * body chunk shares a socket chunk's buffer: counted over a 1 GiB upload) and leaves the chunk
 * itself for the collector: a GiB of garbage per GiB uploaded, which no pacer counted, and most
 * of what ten 8 MiB parts at once added to the peak (~50 of 150 MiB, issue 42). Call it right
 * after handing the socket over (`emit("connection")`), so the listener comes after the parser's.
 * Nothing else keeps a socket's chunk: the parser's error path reads it synchronously (the
 * `clientError` handler, one-port.ts), and there is no `upgrade` listener to hand a part of it to.
 */
export function freeParsedChunks(socket: Duplex): void {
  socket.on("data", (chunk: Uint8Array) => {
    if (!freeNow(chunk)) gcPacer.add(chunk.byteLength);
  });
}

/**
 * Bytes of a request body read ahead of its consumer at most before the connection (HTTP/1.1) or
 * the stream (HTTP/2, whose flow control then holds the client back) is paused, when the process's
 * body budget has room (body-budget.ts; with many bodies at once each gets less): enough that a
 * consumer writing to disk in the background rarely waits for the network, and that the
 * connection is paused and resumed only now and then instead of once per chunk (with writes in
 * the background and a pause per chunk, a 1 GiB upload took 3.4–4.1 s of server CPU against
 * 2.5–2.9 s before, measured under load, issue 28).
 */
const READ_AHEAD_BYTES = 1024 * 1024;

/** A request body as {@link bodyStream} reads it. */
export interface BodyReader {
  readonly stream: ReadableStream<Uint8Array>;
  /** Drops what is read ahead and leaves the budget: the exchange is over, whatever was read. */
  abandon(): void;
}

/** What the body reader pauses and resumes: the HTTP/1.1 connection, or the HTTP/2 request. */
export type BodySource = { pause(): unknown; resume(): unknown; _paused?: boolean };

/** Sockets whose `_paused` the body reader set (cleared by {@link resumeSource}, also when an answer begins). */
const pausedByBody = new WeakSet<object>();

/**
 * Pauses `source`. A socket is also marked `_paused`: Bun's node:http resumes the socket under a
 * request whenever that request wants more (its `_read`), unless `socket._paused` (the flag its
 * own pipelining pauses reads with), so a plain pause was undone whenever node:http read on
 * (ten 8 MiB parts at once, read ahead 1 MiB each and written straight: 63 MiB over idle without
 * the flag, 55 with it, issue 42).
 */
function pauseSource(source: BodySource, isSocket: boolean): void {
  if (isSocket) {
    source._paused = true;
    pausedByBody.add(source);
  }
  source.pause();
}

/** Resumes `source`, clearing the `_paused` mark {@link pauseSource} set. */
export function resumeSource(source: BodySource): void {
  if (pausedByBody.delete(source)) source._paused = false;
  source.resume();
}

/**
 * The request body as a web stream, read ahead of its consumer by at most its share of the
 * process's body budget (body-budget.ts, up to {@link READ_AHEAD_BYTES}): past that the source is
 * paused until the consumer catches up or, when the budget was what stopped it, until other
 * bodies drain; a chunk that arrives while the consumer waits goes to it at once. So a slow disk
 * holds an upload back instead of piling it up in memory, and many uploads at once hold about
 * the budget between them. The stream ends normally only when the transport says the body ended
 * normally and its length matches a declared Content-Length (RFC 9110 §8.6, RFC 9113 §8.1.1);
 * anything else (a reset stream, a closed connection, a length mismatch) errors it with
 * `invalid_argument`, so an upload that reads it stores nothing.
 */
export function bodyStream(req: NodeRequest, budget: ByteBudget = bodyBudget): BodyReader {
  // Bun's node:http reads a connection handed to it by the listener as fast as it arrives,
  // whatever the request's consumer does: over HTTP/1.1 the connection itself is what pauses.
  // Paused from the start: the handler's queries before it reads (authentication, the quota's
  // headroom on PostgreSQL) let a fast client fill ~50 MB of memory otherwise. The first read
  // resumes it, and the exchange does once the answer starts (readAgain).
  const socket = req.httpVersionMajor === 1 ? (req.socket as (Duplex & BodySource) | null | undefined) : undefined;
  const source: BodySource = socket ?? req;
  const isSocket = source !== req;
  pauseSource(source, isSocket);
  let paused = true;
  let received = 0;
  let settled = false;
  /** Chunks read ahead, oldest first (from `head` on), and their bytes, held on `share`. */
  const queue: Uint8Array[] = [];
  let head = 0;
  /** The consumer asked for a chunk and none was queued: the next one goes to it at once. */
  let wanted = false;
  /** The body ended normally with chunks still queued: the stream closes once they are taken. */
  let closing = false;
  let share: BudgetShare | undefined;
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  const resume = () => {
    if (!paused || settled) return;
    paused = false;
    resumeSource(source);
    if (isSocket) req.resume();
  };
  /** Reads on when the share allows another chunk (the budget's `onRoom` too). */
  const readOnIfAllowed = () => {
    if (paused && (share === undefined || share.mayHold())) resume();
  };
  const leave = () => {
    share?.leave();
    share = undefined;
  };
  /** Drops what is queued (the body failed or was cancelled): freed now, not left for a collection. */
  const dropQueue = () => {
    for (let i = head; i < queue.length; i++) releaseChunk(queue[i]!);
    queue.length = 0;
    head = 0;
    leave();
  };
  const detach = () => {
    settled = true;
    req.off("data", onData);
    req.off("end", onEnd);
    req.off("error", onCutShort);
    req.off("close", onCutShort);
  };
  const onData = (chunk: Uint8Array) => {
    received += chunk.byteLength;
    markReleasable(chunk);
    if (wanted) {
      wanted = false;
      controller.enqueue(chunk);
      return;
    }
    queue.push(chunk);
    share ??= budget.join(READ_AHEAD_BYTES, readOnIfAllowed);
    share.hold(chunk.byteLength);
    if (!paused && !share.mayHold()) {
      paused = true;
      pauseSource(source, isSocket);
      share.whenRoom();
    }
  };
  const onEnd = () => {
    if (settled) return;
    detach();
    const problem = bodyEndProblem(req, received);
    if (problem !== undefined) {
      dropQueue();
      controller.error(new AppError("invalid_argument", problem));
    } else if (head < queue.length) {
      closing = true;
    } else {
      leave();
      controller.close();
    }
  };
  // Node streams say "Premature close" when the peer went away mid-body; Bun may only close.
  const onCutShort = (err?: unknown) => {
    if (settled) return;
    detach();
    dropQueue();
    controller.error(new AppError("invalid_argument", CUT_SHORT, err instanceof Error ? { cause: err } : undefined));
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        req.on("data", onData);
        req.on("end", onEnd);
        req.on("error", onCutShort);
        req.on("close", onCutShort);
      },
      // The high-water mark is 0: pull() means the consumer waits for a chunk.
      pull(c) {
        if (head < queue.length) {
          const chunk = queue[head]!;
          queue[head++] = EMPTY;
          if (head === queue.length) {
            queue.length = 0;
            head = 0;
          }
          share?.release(chunk.byteLength);
          c.enqueue(chunk);
          if (closing && head === queue.length) {
            leave();
            c.close();
          } else readOnIfAllowed();
          return;
        }
        if (settled) return;
        // Nothing queued, so nothing held: a body whose consumer waits always reads on.
        wanted = true;
        share ??= budget.join(READ_AHEAD_BYTES, readOnIfAllowed);
        resume();
      },
      cancel() {
        detach();
        dropQueue();
        resumeSource(source);
        // HTTP/2: the stream alone ends (RST_STREAM). HTTP/1.1: the connection is left to the
        // answer, which reads what is left of the body or lingers (settleBody); destroying
        // it here reset the connection under the answer's feet.
        if (req.httpVersionMajor !== 1) req.destroy();
      },
    },
    { highWaterMark: 0 },
  );
  return {
    stream,
    abandon() {
      // Later bytes of this body (a client still sending after the answer) are not read ahead:
      // they would hold the budget with no one to take them.
      const open = !settled || closing;
      detach();
      dropQueue();
      closing = false;
      if (open) controller.error(new AppError("invalid_argument", CUT_SHORT));
    },
  };
}

const EMPTY = new Uint8Array(0);

const CUT_SHORT = "the request body was cut short: the client reset the stream or closed the connection";

/**
 * Why a request body that its stream reported as ended is not complete, or undefined when it
 * is. Bun reports a body whose HTTP/2 stream was reset (or whose connection closed) before it
 * was read as an empty body that ended normally; `aborted` and the stream's reset code tell.
 */
function bodyEndProblem(req: NodeRequest, received: number): string | undefined {
  if (req.aborted || ((req as Http2ServerRequest).stream?.rstCode ?? 0) !== 0) return CUT_SHORT;
  const declared = headerValue(req.headers, "content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) !== received) {
    return `the request body has ${received} bytes, not the ${declared} its Content-Length declares`;
  }
  return undefined;
}
