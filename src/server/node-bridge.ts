/**
 * The fetch bridge: serves the fetch-style HTTP app (REST, tus, pages, MCP) on an exchange of any
 * wire: turns it into a `Request` whose body is the exchange's body reader, and writes the
 * `Response` back on the exchange. Small bodies whose length is known go out whole (`respond`);
 * others stream with backpressure (`stream`: a slow reader holds the body back, it is not
 * buffered).
 */
import type { RequestContext } from "../context/request-context.ts";
import { attachContext } from "../http/request-context.ts";
import { failed, type Exchange, type Outgoing } from "../serving/exchange.ts";
import { REQUEST_ORIGIN } from "./request-target.ts";

export type { NodeRequest, NodeResponse } from "../serving/exchange.ts";
/** A fetch-style application: the HTTP app's `handle`. */
export type FetchHandler = (request: Request) => Promise<Response> | Response;

/** Bodies up to this size with a Content-Length are read whole and written at once. */
const SINGLE_WRITE_BYTES = 64 * 1024;

/** Response headers that belong to one HTTP connection, never copied to the Node response. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "set-cookie"]);

/**
 * Handles one request with the fetch-style `app`, the request's `context` attached for the
 * app's handlers (http/request-context.ts), and writes its answer on `ex`. Errors are reported
 * and answered with their JSON if nothing was sent yet, else the answer is reset.
 */
export async function serveWithFetch(ex: Exchange, app: FetchHandler, context: RequestContext): Promise<void> {
  let out: Outgoing | undefined;
  try {
    const request = toRequest(ex);
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
async function writeResponse(ex: Exchange, response: Response): Promise<Outgoing | undefined> {
  const out: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) out[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) out["set-cookie"] = cookies;
  // An answer given before the body was read (413, 401…) is made to arrive: the exchange
  // reads the little that is often left, else closes the connection lingering.
  await ex.settleBody();
  if (response.body === null || ex.method === "HEAD") {
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
 * The request as a fetch `Request` on the fixed {@link REQUEST_ORIGIN}, at the target the
 * dispatch checked (origin form: `pathname` and `search`); the body, if any, is the exchange's
 * body reader. HTTP/2's pseudo-headers are left out.
 */
function toRequest(ex: Exchange): Request {
  const headers = new Headers();
  const raw = ex.rawHeaders;
  if (raw !== undefined) {
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      if (name.charCodeAt(0) !== 58 /* ":" */) headers.append(name, raw[i + 1]!);
    }
  } else {
    for (const [name, value] of Object.entries(ex.headerRecord)) {
      if (value === undefined || name.charCodeAt(0) === 58) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
  }
  const hasBody = ex.method !== "GET" && ex.method !== "HEAD";
  return new Request(REQUEST_ORIGIN + ex.pathname + ex.search, {
    method: ex.method,
    headers,
    body: hasBody ? (ex.body() as ReadableStream<Uint8Array>) : null,
    duplex: "half",
  } as RequestInit);
}
