/**
 * The fetch bridge: serves the fetch-style HTTP app on the Node-style request that `node:http`
 * (HTTP/1.1) and `node:http2`'s compat API (h2c) hand out (a NodeExchange): turns the request into
 * a `Request`, its body streamed from the connection, and writes the `Response` back on the
 * exchange. Small bodies whose length is known go out whole (`respond`); others stream with
 * backpressure (`stream`: a slow reader holds the body back, it is not buffered).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Duplex } from "node:stream";
import type { RequestContext } from "../context/request-context.ts";
import { AppError } from "../errors.ts";
import { attachContext } from "../http/request-context.ts";
import { failed, headerValue, type Outgoing } from "../serving/exchange.ts";
import { lingeringClose } from "./lingering-close.ts";
import type { NodeExchange } from "./node-exchange.ts";
import { REQUEST_ORIGIN } from "./request-target.ts";

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;
/** A fetch-style application: the HTTP app's `handle`. */
export type FetchHandler = (request: Request) => Promise<Response> | Response;

/** Bodies up to this size with a Content-Length are read whole and written at once. */
const SINGLE_WRITE_BYTES = 64 * 1024;

/** What an early answer reads and discards of its request's body before it is sent, at most: bytes and ms. */
const DRAIN_BYTES = 256 * 1024;
const DRAIN_MS = 250;

/**
 * Reads and discards what is left of `req`'s body, until it ends, {@link DRAIN_BYTES} have come,
 * or {@link DRAIN_MS} have passed. An answer sent while a request's last bytes are still arriving
 * must otherwise close the connection (lingering, as writeResponse sets up). Together with the
 * body stream's cancel no longer destroying an HTTP/1.1 request, this ended the resets that made
 * a client lose the 413 to a 401-byte chunked upload past its quota about 1 time in 14
 * (test/integration/quota.test.ts with WORKERS=2; 0 in 300 after).
 */
function drainBriefly(req: IncomingMessage | Http2ServerRequest): Promise<void> {
  return new Promise((resolve) => {
    let bytes = 0;
    const done = () => {
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", done);
      req.off("close", done);
      req.off("error", done);
      resolve();
    };
    const onData = (chunk: Uint8Array) => {
      bytes += chunk.byteLength;
      if (bytes >= DRAIN_BYTES) done();
    };
    const timer = setTimeout(done, DRAIN_MS);
    req.on("data", onData);
    req.once("end", done);
    req.once("close", done);
    req.once("error", done);
    req.resume();
  });
}
/** Response headers that belong to one HTTP connection, never copied to the Node response. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "set-cookie"]);

/** One request header as a single string ({@link headerValue}). */
export function headerOf(req: NodeRequest, name: string): string | null {
  return headerValue(req.headers, name);
}

/**
 * Handles one request with the fetch-style `app`, the request's `context` attached for the
 * app's handlers (http/request-context.ts), and writes its answer on `ex`. Errors are reported
 * and answered with their JSON if nothing was sent yet, else the answer is reset.
 */
export async function serveWithFetch(ex: NodeExchange, app: FetchHandler, context: RequestContext): Promise<void> {
  let out: Outgoing | undefined;
  try {
    const request = toRequest(ex.req);
    attachContext(request, context);
    const response = await app(request);
    out = await writeResponse(ex, response);
    if (out !== undefined) await writeBody(out, response.body!);
  } catch (err) {
    failed(ex, err, context, out);
  }
}

/**
 * Writes `response` on `ex`: status, headers (Set-Cookie kept apart, hop-by-hop ones dropped)
 * and body (none for HEAD): whole when its length is known and small, else its head, returning
 * the {@link Outgoing} its body is to be streamed into.
 */
async function writeResponse(ex: NodeExchange, response: Response): Promise<Outgoing | undefined> {
  const out: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) out[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) out["set-cookie"] = cookies;
  const { req, res } = ex;
  // A body read stopped part-way (bodyStream) leaves the connection paused: it reads again now.
  if (req.httpVersionMajor === 1) (req.socket as Duplex | undefined)?.resume();
  // The little that is often left of a body answered early (a chunked body's last chunk, the
  // rest of a small upload) is read first: the connection then stays open as usual.
  if (!req.complete && req.httpVersionMajor === 1) await drainBriefly(req);
  if (!req.complete && req.httpVersionMajor === 1) {
    // Answered before the request body was read (413, 401…): the connection closes after this
    // response instead of parsing leftover body bytes as the next request, and lingers so the
    // client, still sending, reads the answer instead of a reset (lingering-close.ts).
    out.connection = "close";
    (res as ServerResponse).shouldKeepAlive = false;
    // Bun's IncomingMessage sometimes no longer has its socket here (seen when a disk-full
    // upload failed part-way): the response's is the same connection.
    const socket = (req.socket ?? (res as ServerResponse).socket) as (Duplex & { destroySoon?: () => void }) | null;
    // Bun's node:http closes such a connection with destroySoon() once the response is
    // written, which resets it while the client is still sending the body.
    if (socket !== null) socket.destroySoon = () => lingeringClose(socket);
  }
  if (response.body === null || req.method === "HEAD") {
    // A bodiless answer says so, rather than being sent as an empty chunked body.
    const bodiless = response.status === 204 || response.status === 304 || response.status < 200;
    if (response.body === null && !bodiless && out["content-length"] === undefined) out["content-length"] = "0";
    ex.respond(response.status, out);
    return undefined;
  }
  if (Number(out["content-length"] ?? Number.NaN) <= SINGLE_WRITE_BYTES) {
    ex.respond(response.status, out, await response.bytes());
    return undefined;
  }
  return ex.stream(response.status, out);
}

/** Streams `body` into `out` and ends it, each chunk once the one before has left (a slow reader holds the body back). */
async function writeBody(out: Outgoing, body: ReadableStream<Uint8Array>): Promise<void> {
  for await (const chunk of body) {
    if (out.signal.aborted) return;
    await new Promise<void>((resolve) => {
      const signal = out.signal;
      const done = () => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      signal.addEventListener("abort", done);
      out.write(chunk, done);
    });
  }
  if (!out.signal.aborted) out.end();
}

/**
 * The request as a fetch `Request` on the fixed {@link REQUEST_ORIGIN} (its target was checked
 * and reduced to origin form by the listener); the body, if any, streams from the connection.
 */
function toRequest(req: NodeRequest): Request {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.charCodeAt(0) !== 58 /* ":" */) headers.append(name, raw[i + 1]!);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(REQUEST_ORIGIN + req.url, {
    method: req.method,
    headers,
    body: hasBody ? bodyStream(req) : null,
    duplex: "half",
  } as RequestInit);
}

/**
 * Bytes of a request body read ahead of its consumer before the connection (HTTP/1.1) or the
 * stream (HTTP/2, whose flow control then holds the client back) is paused: enough that a
 * consumer writing to disk in the background rarely waits for the network, and that the
 * connection is paused and resumed only now and then instead of once per chunk (with writes in
 * the background and a pause per chunk, a 1 GiB upload took 3.4–4.1 s of server CPU against
 * 2.5–2.9 s before, measured under load, issue 28).
 */
const READ_AHEAD_BYTES = 1024 * 1024;

/**
 * The request body as a web stream that reads ahead of its consumer by at most
 * {@link READ_AHEAD_BYTES}: past that the source is paused until the consumer catches up, so a
 * slow disk holds an upload back instead of piling it up in memory. The stream ends normally
 * only when the transport says the body ended normally and its length matches a declared
 * Content-Length (RFC 9110 §8.6, RFC 9113 §8.1.1); anything else (a reset stream, a closed
 * connection, a length mismatch) errors it with `invalid_argument`, so an upload that reads it
 * stores nothing.
 */
function bodyStream(req: NodeRequest): ReadableStream<Uint8Array> {
  // Bun's node:http reads a connection handed to it by the listener as fast as it arrives,
  // whatever the request's consumer does: over HTTP/1.1 the connection itself is what pauses.
  // Paused from the start: the handler's queries before it reads (authentication, the quota's
  // headroom on PostgreSQL) let a fast client fill ~50 MB of memory otherwise. The first pull
  // resumes it, and writeResponse does once the answer starts.
  const source: { pause(): unknown; resume(): unknown } =
    req.httpVersionMajor === 1 ? ((req.socket as Duplex | undefined) ?? req) : req;
  source.pause();
  let received = 0;
  let settled = false;
  let paused = true;
  const detach = () => {
    settled = true;
    req.off("data", onData);
    req.off("end", onEnd);
    req.off("error", onCutShort);
    req.off("close", onCutShort);
  };
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const onData = (chunk: Uint8Array) => {
    received += chunk.byteLength;
    controller.enqueue(chunk);
    if ((controller.desiredSize ?? 0) <= 0 && !paused) {
      paused = true;
      source.pause();
    }
  };
  const onEnd = () => {
    if (settled) return;
    detach();
    const problem = bodyEndProblem(req, received);
    if (problem === undefined) controller.close();
    else controller.error(new AppError("invalid_argument", problem));
  };
  // Node streams say "Premature close" when the peer went away mid-body; Bun may only close.
  const onCutShort = (err?: unknown) => {
    if (settled) return;
    detach();
    controller.error(new AppError("invalid_argument", CUT_SHORT, err instanceof Error ? { cause: err } : undefined));
  };
  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        req.on("data", onData);
        req.on("end", onEnd);
        req.on("error", onCutShort);
        req.on("close", onCutShort);
      },
      pull() {
        if (paused && !settled) {
          paused = false;
          source.resume();
          if (source !== req) req.resume();
        }
      },
      cancel() {
        detach();
        source.resume();
        // HTTP/2: the stream alone ends (RST_STREAM). HTTP/1.1: the connection is left to the
        // answer, which reads what is left of the body or lingers (writeResponse); destroying
        // it here reset the connection under the answer's feet.
        if (req.httpVersionMajor !== 1) req.destroy();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: READ_AHEAD_BYTES }),
  );
}

const CUT_SHORT = "the request body was cut short: the client reset the stream or closed the connection";

/**
 * Why a request body that its stream reported as ended is not complete, or undefined when it
 * is. Bun reports a body whose HTTP/2 stream was reset (or whose connection closed) before it
 * was read as an empty body that ended normally; `aborted` and the stream's reset code tell.
 */
function bodyEndProblem(req: NodeRequest, received: number): string | undefined {
  if (req.aborted || ((req as Http2ServerRequest).stream?.rstCode ?? 0) !== 0) return CUT_SHORT;
  const declared = headerOf(req, "content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) !== received) {
    return `the request body has ${received} bytes, not the ${declared} its Content-Length declares`;
  }
  return undefined;
}
