/**
 * A record of every HTTP response the server sends, for the tests only: with
 * `CUBBY_TEST_RESPONSE_LOG=<file>` (config.ts) each response to a request the dispatch routed
 * (REST, content URLs, share links, pages; not RPC) is appended to the file as one JSON line,
 * and test/support/server.ts validates them against /openapi.json when the server is disposed
 * (CONTRACT §9: every REST response of the tests validates). Unset, as in production, each way
 * of writing an answer pays one `undefined` check per request and nothing else happens.
 *
 * What is recorded is what went on the wire: the status and headers answered and the body bytes
 * given. One hook, in the dispatch: the exchange's `respond` and `stream` ({@link tapExchange}),
 * through which every routed answer but RPC's is written, on every wire (content URLs, share
 * links, `/metrics`, and the HTTP app's answers, which the fetch bridge writes on the exchange).
 */
import fs from "node:fs";
import type { AnswerHeaders, Exchange, Outgoing } from "../serving/exchange.ts";

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
  /** Set when the answer was written before the dispatch returned (decided now, serving/content.ts). */
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
 * Watches the answer of `ex` and appends its record once it is written whole (`respond`), or its
 * streamed body has ended or failed. Only called when the tap is on.
 * @param path the request path the dispatch routed on
 * @returns to call when the dispatch returns: an answer given before is marked `atOnce`
 */
export function tapExchange(ex: Exchange, path: string): () => void {
  let inDispatch = true;
  const record = (status: number, headers: AnswerHeaders, body: Uint8Array | string | undefined, finished: boolean, chunks: Buffer[] = [], streamed = 0) => {
    let bodyBytes = streamed;
    if (body !== undefined && ex.method !== "HEAD") {
      chunks.push(Buffer.from(body));
      bodyBytes += chunks[0]!.byteLength;
    }
    const names = [...Object.keys(headers), "x-request-id"];
    append({ method: ex.method, path, status, type: (headers["content-type"] as string | undefined) ?? null, names, bodyBytes, chunks, finished, atOnce: inDispatch });
  };
  const respond = ex.respond.bind(ex);
  ex.respond = (status, headers, body) => {
    const answerable = !ex.gone;
    respond(status, headers, body);
    if (answerable) record(status, headers, body, true);
  };
  const stream = ex.stream.bind(ex);
  ex.stream = (status, headers) => {
    const out = stream(status, headers);
    const chunks: Buffer[] = [];
    let bytes = 0;
    let done = false;
    const close = (finished: boolean) => {
      if (done) return;
      done = true;
      record(status, headers, undefined, finished, chunks, bytes);
    };
    const tapped: Outgoing = {
      get signal() {
        return out.signal;
      },
      write: (chunk, callback) => {
        bytes += chunk.byteLength;
        if (bytes <= MAX_BODY_BYTES) chunks.push(Buffer.from(chunk));
        out.write(chunk, callback);
      },
      end: () => {
        out.end();
        close(true);
      },
      fail: () => {
        out.fail();
        close(false);
      },
    };
    out.signal.addEventListener("abort", () => close(false));
    return tapped;
  };
  return () => (inDispatch = false);
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
