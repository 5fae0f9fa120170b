/**
 * A record of every HTTP response the server sends, for the tests only: with
 * `CUBBY_TEST_RESPONSE_LOG=<file>` (config.ts) each response to a request the dispatch routed
 * (REST, content URLs, share links, pages; not RPC) is appended to the file as one JSON line,
 * and test/support/server.ts validates them against /openapi.json when the server is disposed
 * (CONTRACT §9: every REST response of the tests validates). Unset, as in production, each way
 * of writing an answer pays one `undefined` check per request and nothing else happens.
 *
 * What is recorded is what went on the wire: the status and headers given to `writeHead` (or a
 * stream's `respond`) and the bytes given to `write`/`end`. There is one hook per way of writing
 * an answer, each one branch where that writer begins: a Node response ({@link tapResponse}, in
 * the dispatch: the fetch bridge, content.ts, `refuse`), an HTTP/2 stream written with the core
 * API ({@link tapStream}, h2-content.ts), and an answer written whole at once (content-now.ts's
 * `sent`, for both wires).
 */
import fs from "node:fs";
import type { ServerResponse } from "node:http";
import type { OutgoingHttpHeaders, ServerHttp2Stream, ServerStreamResponseOptions } from "node:http2";
import { observeWrites, type NodeRequest, type NodeResponse } from "./node-bridge.ts";

/** One response as the tap records it (one JSON line). */
export interface TappedResponse {
  method: string;
  /** The request path, no query. */
  path: string;
  status: number;
  /** The Content-Type header sent, or null. */
  contentType: string | null;
  /** The names of the headers sent, lower-case. */
  headers: string[];
  /** Body bytes sent (counted whatever their size). */
  bodyBytes: number;
  /** The body as UTF-8, when it is JSON, at most {@link MAX_BODY_BYTES} and complete. */
  body?: string;
  /** Whether the response finished (false: the connection went away first). */
  finished: boolean;
  /** Set when the answer was decided and written at once (server/content-now.ts). */
  atOnce?: true;
}

/** JSON bodies up to this size are recorded; larger ones only counted. */
export const MAX_BODY_BYTES = 64 * 1024;

/** The file the tap appends to; undefined when the tap is off (always, outside tests). */
export let responseTapFile: string | undefined;

/**
 * The tap's descriptor, opened once (O_APPEND: the workers' lines never overwrite each other). Not
 * a file opened per record: a test that makes open(2) fail in the server (EMFILE injected with
 * strace, faults.test.ts) would crash it from inside the tap, which is not the product's code.
 */
let tapFd: number | undefined;

/** Turns the tap on: every routed response from now on is appended to `file` (created if missing). */
export function enableResponseTap(file: string): void {
  tapFd = fs.openSync(file, "a");
  responseTapFile = file;
}

/**
 * Watches `res` and appends its record when it closes. Only called when the tap is on.
 * @param path the request path the dispatch routed on
 */
export function tapResponse(req: NodeRequest, res: NodeResponse, path: string): void {
  if (responseTapFile === undefined) return;
  const writer = res as ServerResponse;
  const chunks: Buffer[] = [];
  let bodyBytes = 0;
  let headers: Record<string, unknown> = {};
  observeWrites(res, (chunk) => {
    bodyBytes += typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.byteLength;
    // Copied (the writer may reuse its buffer once written), and only while the body is small.
    if (bodyBytes <= MAX_BODY_BYTES) chunks.push(Buffer.from(chunk));
  });
  const writeHead = writer.writeHead.bind(writer);
  writer.writeHead = ((status: number, ...rest: unknown[]) => {
    const given = rest.find((r) => typeof r === "object" && r !== null && !Array.isArray(r));
    if (given !== undefined) headers = given as Record<string, unknown>;
    return (writeHead as (...a: unknown[]) => ServerResponse)(status, ...rest);
  }) as typeof writer.writeHead;

  res.once("close", () => {
    // A stream the client reset or abandoned before the answer began was never answered.
    if (!writer.headersSent) return;
    const names = [...Object.keys(headers), ...res.getHeaderNames()];
    const type = headerValue(headers, "content-type") ?? (res.getHeader("content-type") as string | undefined) ?? null;
    append({ method: req.method ?? "GET", path, status: res.statusCode, type, names, bodyBytes, chunks, finished: writer.writableFinished !== false });
  });
}

/**
 * Watches a response written on an HTTP/2 stream with the core API (h2-content.ts, no Node
 * response) and appends its record when the stream closes: the status and headers given to
 * `respond`, the bytes given to `write`/`end`. Only called when the tap is on.
 * @param path the request path the dispatch routed on
 */
export function tapStream(stream: ServerHttp2Stream, method: string, path: string): void {
  const tap = new StreamTap(method, path);
  const respond = stream.respond.bind(stream);
  stream.respond = ((headers?: OutgoingHttpHeaders, options?: ServerStreamResponseOptions) => {
    const { ":status": status, ...sent } = headers ?? {};
    tap.head(Number(status ?? 200), sent);
    return respond(headers, options);
  }) as typeof stream.respond;
  observeWrites(stream as unknown as NodeResponse, (chunk) => tap.chunk(chunk));
  stream.once("close", () => tap.close(stream.writableFinished));
}

/**
 * The record of one response written without a Node response: on an HTTP/2 stream
 * ({@link tapStream}) or at once (content-now.ts), whose writer reports the head, the body
 * chunks and the close. Only created when the tap is on.
 */
export class StreamTap {
  private status: number | undefined;
  private headers: Record<string, unknown> = {};
  private readonly chunks: Buffer[] = [];
  private bodyBytes = 0;

  /**
   * @param path the request path the dispatch routed on
   * @param atOnce whether the answer was decided and written at once (content-now.ts)
   */
  constructor(
    private readonly method: string,
    private readonly path: string,
    private readonly atOnce = false,
  ) {}

  /** The status and headers sent. */
  head(status: number, headers: Record<string, unknown>): void {
    this.status = status;
    this.headers = headers;
  }

  /** A body chunk sent. */
  chunk(chunk: string | Uint8Array): void {
    this.bodyBytes += typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.byteLength;
    if (this.bodyBytes <= MAX_BODY_BYTES) this.chunks.push(Buffer.from(chunk));
  }

  /** The stream closed; `finished`: the whole answer was sent. Appends the record if a head was sent. */
  close(finished: boolean): void {
    if (responseTapFile === undefined || this.status === undefined) return;
    const type = headerValue(this.headers, "content-type") ?? null;
    append({ method: this.method, path: this.path, status: this.status, type, names: Object.keys(this.headers), bodyBytes: this.bodyBytes, chunks: this.chunks, finished, atOnce: this.atOnce });
  }
}

function append(
  r: { method: string; path: string; status: number; type: string | null; names: string[]; bodyBytes: number; chunks: Buffer[]; finished: boolean; atOnce?: boolean },
): void {
  const record: TappedResponse = {
    method: r.method,
    path: r.path,
    status: r.status,
    contentType: r.type === null ? null : String(r.type),
    headers: [...new Set(r.names.map((n) => n.toLowerCase()))].sort(),
    bodyBytes: r.bodyBytes,
    finished: r.finished,
  };
  if (r.atOnce === true) record.atOnce = true;
  if (r.type !== null && /json/i.test(String(r.type)) && r.bodyBytes <= MAX_BODY_BYTES) record.body = Buffer.concat(r.chunks).toString("utf8");
  fs.writeSync(tapFd!, `${JSON.stringify(record)}\n`);
}

function headerValue(headers: Record<string, unknown>, name: string): string | undefined {
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return String(v);
  return undefined;
}
