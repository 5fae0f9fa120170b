/**
 * Serves fetch-style handlers on Node-style request/response pairs, which both `node:http`
 * (HTTP/1.1) and `node:http2` (h2c) hand out: turns the request into a `Request` and writes the
 * `Response` back. Small bodies whose length is known go out in one write; others stream with
 * backpressure (a slow reader pauses the body, it is not buffered).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import fsp from "node:fs/promises";
import type { Duplex } from "node:stream";
import { clientAddressOf } from "../auth/rate-limit.ts";
import { httpStatusOf, toAppError, toRpcStatus } from "../errors.ts";
import { requestIdFrom } from "../http/request-id.ts";
import type { ClientRequestHandler } from "./request-handler.ts";

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

/** Bodies up to this size with a Content-Length are read whole and written at once. */
const SINGLE_WRITE_BYTES = 64 * 1024;
/** Response headers that belong to one HTTP connection, never copied to the Node response. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "set-cookie"]);

/** One request header as a single string (RFC 9110 §5.3 list join; `; ` for Cookie, RFC 9113 §8.2.3). */
export function headerOf(req: NodeRequest, name: string): string | null {
  const v = req.headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(name === "cookie" ? "; " : ", ") : v;
}

/**
 * Who sent the request and its ID, for the paths served on the Node request itself (RPC,
 * content): the client's address as {@link clientAddressOf} decides it from the peer and
 * X-Forwarded-For, and the ID as {@link requestIdFrom} (a sane incoming X-Request-Id, or a new one).
 */
export function clientOf(req: NodeRequest, trustedProxies: ReadonlySet<string>): { address: string; requestId: string } {
  return {
    address: clientAddressOf(req.socket?.remoteAddress ?? "unknown", headerOf(req, "x-forwarded-for"), trustedProxies),
    requestId: requestIdFrom(headerOf(req, "x-request-id")),
  };
}

/** Handles one request with `handle`. Errors end the response with a 500 if nothing was sent. */
export async function serveWithFetch(req: NodeRequest, res: NodeResponse, handle: ClientRequestHandler): Promise<void> {
  try {
    await writeResponse(req, res, await handle(toRequest(req), req.socket?.remoteAddress ?? "unknown"));
  } catch (err) {
    failed(req, res, err);
  }
}

/**
 * Writes `response` to `res`: status, headers (Set-Cookie kept apart, hop-by-hop ones dropped)
 * and body (none for HEAD). Resolves when the body is handed to the connection.
 */
export async function writeResponse(req: NodeRequest, res: NodeResponse, response: Response): Promise<void> {
  const out: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) out[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) out["set-cookie"] = cookies;
  const writer = res as ServerResponse;
  // A body read stopped part-way (bodyStream) leaves the connection paused: it reads again now.
  if (req.httpVersionMajor === 1) (req.socket as Duplex | undefined)?.resume();
  if (!req.complete && req.httpVersionMajor === 1) {
    // Answered before the request body was read (413, 401…): the rest of the body is read and
    // dropped, as Node.js does, and the connection closes after this response instead of
    // parsing leftover body bytes as the next request.
    out.connection = "close";
    writer.shouldKeepAlive = false;
    req.resume();
  }
  if (response.body === null || req.method === "HEAD") {
    // A bodiless answer says so, rather than being sent as an empty chunked body.
    const bodiless = response.status === 204 || response.status === 304 || response.status < 200;
    if (response.body === null && !bodiless && out["content-length"] === undefined) out["content-length"] = "0";
    writer.writeHead(response.status, out);
    writer.end();
    return;
  }
  if (Number(out["content-length"] ?? Number.NaN) <= SINGLE_WRITE_BYTES) {
    const bytes = await response.bytes();
    writer.writeHead(response.status, out);
    writer.end(bytes);
    return;
  }
  writer.writeHead(response.status, out);
  await writeBody(res, response.body);
}

/** Streams `body` into `res` and ends it, waiting for `drain` whenever `res` is full. */
async function writeBody(res: NodeResponse, body: ReadableStream<Uint8Array>): Promise<void> {
  const writer = res as ServerResponse;
  for await (const chunk of body) {
    if (res.destroyed) return;
    if (!writer.write(chunk)) await drained(res);
  }
  writer.end();
}

/** Bytes read from a file per write when sending it, and how many such buffers a download uses. */
const FILE_CHUNK_BYTES = 256 * 1024;
const FILE_BUFFERS = 4;

/**
 * Sends `length` bytes of the file at `path` from `start` and ends `res`: positional reads of
 * 256 KiB into at most four buffers, each filled again only after the connection's write
 * callback says it is done with it. Memory per download stays 1 MiB whatever the file's size,
 * and a long download makes no garbage. Stops early if the client goes away.
 * @throws what opening or reading the file throws (the caller resets the response)
 */
export async function writeFileRange(res: NodeResponse, range: { path: string; start: number; length: number }): Promise<void> {
  const writer = res as ServerResponse;
  const file = await fsp.open(range.path, "r");
  // Buffers the connection has finished with, reused so a long download makes no garbage.
  const free: Buffer[] = [];
  let buffers = 0;
  let wake: (() => void) | undefined;
  const release = (buffer: Buffer) => {
    free.push(buffer);
    wake?.();
  };
  const closed = () => wake?.();
  res.on("close", closed);
  try {
    let position = range.start;
    const end = range.start + range.length;
    while (position < end && !res.destroyed) {
      if (free.length === 0 && buffers === FILE_BUFFERS) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      const buffer = free.pop() ?? (buffers++, Buffer.allocUnsafe(FILE_CHUNK_BYTES));
      const { bytesRead } = await file.read(buffer, 0, Math.min(FILE_CHUNK_BYTES, end - position), position);
      if (bytesRead === 0) throw new Error(`${range.path} ended at byte ${position}, before ${end}`);
      position += bytesRead;
      writer.write(buffer.subarray(0, bytesRead), () => release(buffer));
    }
  } finally {
    res.off("close", closed);
    await file.close();
  }
  writer.end();
}

/** Logs a failure and ends the response: a 500 if nothing was sent yet, else a reset. */
export function failed(req: NodeRequest, res: NodeResponse, err: unknown): void {
  console.error(`request ${req.method} ${req.url} failed: ${err instanceof Error ? err.stack : String(err)}`);
  if (!res.headersSent) {
    const status = toAppError(err);
    (res as ServerResponse).writeHead(httpStatusOf(status.code), { "content-type": "application/json" });
    res.end(JSON.stringify(toRpcStatus(status)));
  } else {
    res.destroy();
  }
}

/** The request as a fetch `Request`; the body, if any, streams from the connection. */
function toRequest(req: NodeRequest): Request {
  const authority = req.headers[":authority"] ?? req.headers.host ?? "localhost";
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.charCodeAt(0) !== 58 /* ":" */) headers.append(name, raw[i + 1]!);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(`http://${authority}${req.url}`, {
    method: req.method,
    headers,
    body: hasBody ? bodyStream(req) : null,
    duplex: "half",
  } as RequestInit);
}

/**
 * The request body as a web stream that reads from the connection only when its consumer asks
 * (high-water mark 0): nothing is queued beyond what Node's own stream holds.
 */
function bodyStream(req: NodeRequest): ReadableStream<Uint8Array> {
  const chunks = (req as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  // Bun's node:http reads a connection handed to it by the listener as fast as it arrives,
  // whatever the request's consumer does: over HTTP/1.1 the connection itself is paused after
  // each chunk until the consumer asks for the next, so an upload is held back by the disk
  // instead of piling up in memory (HTTP/2 has flow control per stream). writeResponse resumes it.
  const socket = req.httpVersionMajor === 1 ? (req.socket as Duplex | undefined) : undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        socket?.resume();
        const { value, done } = await chunks.next();
        if (done) controller.close();
        else {
          socket?.pause();
          controller.enqueue(value);
        }
      },
      async cancel() {
        socket?.resume();
        await chunks.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

/** Resolves when `res` can take more data, or has closed. */
function drained(res: NodeResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
