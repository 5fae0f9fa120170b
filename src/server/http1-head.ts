/**
 * The HTTP/1.1 fast path's request-head parser (http1-fast.ts). It accepts only the plainest
 * heads — a GET or HEAD with no body, in origin form, every header a clean token and printable
 * ASCII value — and says "not ours" for everything else, which Bun's `node:http` then parses
 * and answers as before. It never has to reject anything itself: its only failure mode that
 * matters is accepting a head that node:http would read differently (request smuggling), so
 * every doubt hands over. Also here: what the access log shows of a head node:http refused.
 */
import { UNREAD, type RequestLine } from "../serving/access-log.ts";

/** A request head the fast path serves. */
export interface FastHead {
  method: "GET" | "HEAD";
  /** The request target, origin form (`/path?query`), as sent. */
  target: string;
  /** 1 for HTTP/1.1, 0 for HTTP/1.0. */
  versionMinor: 0 | 1;
  /**
   * Header values by lower-cased name, repeated headers combined as Node's IncomingMessage does:
   * Set-Cookie an array, Cookie joined with "; ", the single-valued ones of
   * {@link FIRST_ONLY} keep the first, any other joined with ", ".
   */
  headers: Record<string, string | string[]>;
  /** Names and values as sent, alternating (IncomingMessage.rawHeaders). */
  rawHeaders: string[];
  /** Whether the connection persists after this request (RFC 9112 §9.3). */
  keepAlive: boolean;
}

/** What the bytes at the front of a connection's buffer are. */
export type HeadParse =
  /** The head is not complete yet (and nothing seen so far makes it not ours). */
  | { kind: "more" }
  /** Not for the fast path: hand the connection to node:http from this request on. */
  | { kind: "not_ours" }
  /** A head the fast path serves; it took the buffer's bytes `[start, end)`. */
  | { kind: "ours"; head: FastHead; end: number };

const MORE: HeadParse = { kind: "more" };
const NOT_OURS: HeadParse = { kind: "not_ours" };

/**
 * `GET` or `HEAD`, one space, an origin-form target of RFC 3986 characters (pchar, "/", "?";
 * RFC 9112 §3.2.1), one space, `HTTP/1.1` or `HTTP/1.0` (RFC 9112 §3). Anything else — other
 * methods, absolute or asterisk form, spaces or controls or non-ASCII in the target, a `#`,
 * HTTP/0.9 or 2.0 — is not ours.
 */
const REQUEST_LINE = /^(GET|HEAD) (\/[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*) HTTP\/1\.([01])$/;

/**
 * `name: value`: a token name directly followed by ":" (no whitespace before it, RFC 9112
 * §5.1), the value printable ASCII and spaces only (no HTAB, no obs-text, no CR, LF or NUL:
 * such heads are rare and not ours). A line starting with whitespace (obs-fold, RFC 9112 §5.2)
 * does not match.
 */
const HEADER_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):([\x20-\x7e]*)$/;

/**
 * Headers of which Node's IncomingMessage keeps the first when repeated (its
 * `matchKnownFields`; Bun's node:http does the same).
 */
const FIRST_ONLY = new Set([
  "content-type",
  "content-length",
  "user-agent",
  "referer",
  "host",
  "authorization",
  "proxy-authorization",
  "if-modified-since",
  "if-unmodified-since",
  "from",
  "location",
  "max-forwards",
  "retry-after",
  "etag",
  "last-modified",
  "server",
  "age",
  "expires",
]);

const CRLFCRLF = Buffer.from("\r\n\r\n");
const LF = 0x0a;
const CR = 0x0d;

/**
 * Parses the request head at `buf[start…]`. `from` (≥ start) is where to look for the head's
 * end and for bare LFs: a caller that got "more" may pass the previous buffer length less 3,
 * so a head that trickles in is scanned once, not once per chunk.
 *
 * Not ours: anything {@link REQUEST_LINE} or {@link HEADER_LINE} refuses; a bare LF or CR
 * (RFC 9112 §2.2; node:http answers 400); a head longer than `maxHeadBytes` (node:http answers
 * 431); a body (`Transfer-Encoding`, a `Content-Length` other than a single `0`; RFC 9112 §6);
 * `Upgrade`, `Expect`; a `Connection` with other options than `close` and `keep-alive`; a
 * repeated `Host` (RFC 9112 §3.2: the dispatch refuses it with 400); a header named `__proto__`.
 */
export function parseRequestHead(buf: Buffer, start: number, maxHeadBytes: number, from = start): HeadParse {
  const headEnd = buf.indexOf(CRLFCRLF, Math.max(start, from));
  if (headEnd === -1) {
    if (buf.length - start > maxHeadBytes) return NOT_OURS;
    // A head ended by bare LFs would never be followed by CRLF CRLF: hand it over at once.
    for (let i = buf.indexOf(LF, Math.max(start, from)); i !== -1; i = buf.indexOf(LF, i + 1)) if (i === start || buf[i - 1] !== CR) return NOT_OURS;
    return MORE;
  }
  if (headEnd - start > maxHeadBytes) return NOT_OURS;
  const lines = buf.toString("latin1", start, headEnd).split("\r\n");
  const line = REQUEST_LINE.exec(lines[0]!);
  if (line === null) return NOT_OURS;
  const versionMinor = line[3] === "1" ? 1 : 0;
  const headers: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  const rawHeaders: string[] = [];
  let close = false;
  let keepAliveOption = false;
  for (let i = 1; i < lines.length; i++) {
    const field = HEADER_LINE.exec(lines[i]!);
    if (field === null) return NOT_OURS;
    const rawName = field[1]!;
    const value = field[2]!.trim();
    const name = rawName.toLowerCase();
    switch (name) {
      case "transfer-encoding":
      case "upgrade":
      case "expect":
      case "__proto__":
        return NOT_OURS;
      case "content-length":
        if (value !== "0" || headers[name] !== undefined) return NOT_OURS;
        break;
      case "host":
        if (headers[name] !== undefined) return NOT_OURS;
        break;
      case "connection":
        for (const option of value.split(",")) {
          const o = option.trim().toLowerCase();
          if (o === "close") close = true;
          else if (o === "keep-alive") keepAliveOption = true;
          else return NOT_OURS;
        }
        break;
    }
    rawHeaders.push(rawName, value);
    const prev = headers[name];
    if (prev === undefined) headers[name] = name === "set-cookie" ? [value] : value;
    else if (Array.isArray(prev)) prev.push(value);
    else if (!FIRST_ONLY.has(name)) headers[name] = `${prev}${name === "cookie" ? "; " : ", "}${value}`;
  }
  // RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only with "keep-alive".
  const keepAlive = !close && (versionMinor === 1 || keepAliveOption);
  return { kind: "ours", head: { method: line[1] as "GET" | "HEAD", target: line[2]!, versionMinor, headers, rawHeaders, keepAlive }, end: headEnd + 4 };
}

/** RFC 9110 §5.6.2 `token`, the form of a method. */
const METHOD_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** An origin-form target of visible ASCII (RFC 9112 §3.2.1): anything else is not shown. */
const ORIGIN_FORM = /^\/[\x21-\x7e]*$/;
/** The longest path a refused request's line shows (its target is the client's to choose). */
const MAX_LOGGED_PATH = 1024;

/**
 * The method and path of the request that an HTTP/1.x parser refused, from the bytes it was
 * given: the request starts after the last head that ended before `errorAt` (pipelined requests
 * without bodies before it), and its line (RFC 9112 §3: `method SP request-target SP
 * HTTP-version`) is read if it has that shape; a method that is not a token, or a target not in
 * origin form, is "-". A guess for a request behind one with a body: then most often "-".
 * @param bytes the chunk the parser failed on (node:http's `err.rawPacket`), if known
 * @param errorAt the offset in `bytes` where parsing failed (`err.bytesParsed`); unknown: the
 *   bytes are the head of one request (the sniff's)
 */
export function requestLineOf(bytes: Uint8Array | undefined, errorAt?: number): RequestLine {
  if (bytes === undefined || bytes.byteLength === 0) return UNREAD;
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = Math.min(errorAt ?? 0, buf.length);
  const lastHead = end >= CRLFCRLF.length ? buf.lastIndexOf(CRLFCRLF, end - CRLFCRLF.length) : -1;
  const start = lastHead === -1 ? 0 : lastHead + CRLFCRLF.length;
  const lineEnd = buf.indexOf(0x0a, start);
  const line = buf.toString("latin1", start, Math.min(lineEnd === -1 ? buf.length : lineEnd, start + MAX_LOGGED_PATH + 64)).replace(/\r$/, "");
  const parts = line.split(" ");
  if (parts.length !== 3 || !/^HTTP\/\d\.\d$/.test(parts[2]!)) return UNREAD;
  const target = parts[1]!;
  const query = target.indexOf("?");
  const path = query === -1 ? target : target.slice(0, query);
  return {
    method: METHOD_TOKEN.test(parts[0]!) ? parts[0]! : "-",
    path: ORIGIN_FORM.test(path) && path.length <= MAX_LOGGED_PATH ? path : "-",
  };
}
