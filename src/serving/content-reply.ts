/**
 * What a content URL (`/{id}` and `/{id}/{slug}`, CONTRACT §3) answers: access by visibility,
 * slug redirects, conditional requests (RFC 9110 §13), single byte ranges (RFC 9110 §14),
 * Content-Disposition (RFC 6266) and sandboxing of active content. The bytes themselves are
 * written by serving/content.ts, the one place that sends content.
 */
import { AppError } from "../errors.ts";
import { canonicalUrl, type FileRecord } from "../domain/file.ts";
import { contentDisposition } from "../domain/content-disposition.ts";
import { isFileId } from "../domain/ids.ts";
import { essenceOf, parseQuery } from "../domain/params.ts";
import { parseRange } from "../domain/range.ts";
import { toHttpDate } from "../domain/time.ts";
import type { Authenticator, RequestLike } from "../auth/principal.ts";
import type { FileContent, FileService } from "../service/files.ts";
import { settle, type NowOrLater } from "../domain/later.ts";
import type { ByteRange } from "../storage/ports.ts";

export interface ContentDeps {
  files: FileService;
  auth: Authenticator;
  baseUrl: () => string;
}

/**
 * Media types a browser shows without running anything that could reach cubby's origin.
 * Everything else (HTML, SVG, XML, JavaScript, unknown types…) is served with a sandboxing CSP.
 * PDF is here because Chromium's PDF viewer refuses to render under `sandbox`; browsers run
 * PDF scripts, if at all, isolated from the page's origin.
 */
function isPassive(essence: string): boolean {
  if (essence === "image/svg+xml") return false;
  return (
    essence.startsWith("image/") ||
    essence.startsWith("audio/") ||
    essence.startsWith("video/") ||
    essence === "text/plain" ||
    essence === "application/pdf" ||
    essence === "application/octet-stream"
  );
}

/**
 * Uploaded active content runs as an opaque origin with no scripts: it cannot read cookies or
 * call the API as the viewer (the reason picoshare gives its downloads a sandboxing CSP).
 */
const SANDBOX_CSP = "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'";

/** What serving content needs of a request, whichever server parsed it. */
export interface ContentRequest extends RequestLike {
  /** The request path, as sent (percent-encoded). */
  pathname: string;
  /** The query string with its `?`, or "". */
  search: string;
}

/** What an answer sent: body bytes written, and whether it ended whole (nothing cut, the client still there). */
export interface Sent {
  bytes: number;
  completed: boolean;
}

/** A content answer: status and headers, and which bytes of the content to send, if any. */
export interface ContentReply {
  status: number;
  /**
   * Lower-case names. Read-only: the plain 200 answer's object is shared by every reply for
   * the same file version (frozen), so writers may keep its encoding by identity.
   */
  headers: Readonly<Record<string, string>>;
  /** The bytes to send (absent for HEAD-like answers: redirects, 304, 416, empty content). */
  range?: ByteRange;
  /** A small body of the reply's own instead of content (a share's password form, a thumbnail). */
  body?: string | Uint8Array;
}

/** What the content URL asked for: a redirect (sign-in), or a file with its content handle. */
export type OpenedContent = { redirect: ContentReply } | FileContent;

/**
 * Finds the file of a content URL and checks access: public to anyone, otherwise the caller's
 * credentials decide ({@link FileService.openContent}). An anonymous browser navigation to a
 * file that needs sign-in is redirected to sign-in with a return path instead.
 * @throws AppError not_found (also for IDs of the wrong shape) / unauthenticated;
 *   resource_exhausted (429, Retry-After) when a file that needs credentials is asked for with
 *   credentials from a rate-limited address ({@link Authenticator.optional})
 * @param opened what {@link FileService.openContent} gave for this request already, if it was asked
 */
export async function openContent(deps: ContentDeps, request: ContentRequest, id: string, opened?: NowOrLater<FileContent>): Promise<OpenedContent> {
  if (!isFileId(id)) throw new AppError("not_found", "not found");
  try {
    return await settle(opened ?? deps.files.openContent(() => deps.auth.optional(request), id));
  } catch (err) {
    if (err instanceof AppError && err.code === "unauthenticated" && wantsHtml(request)) {
      const next = request.pathname + request.search;
      return { redirect: { status: 302, headers: { location: `/auth/login?next=${encodeURIComponent(next)}`, "content-length": "0" } } };
    }
    throw err;
  }
}

/** A file version's headers that no request changes, and its attachment disposition. */
interface FixedHeaders {
  /** With the inline Content-Disposition. */
  headers: Readonly<Record<string, string>>;
  attachment: string;
  /** The headers of the plain answer, 200 with the whole content inline: `headers` and Content-Length (frozen, shared by every such reply). */
  whole: Readonly<Record<string, string>>;
}

/**
 * The headers of a file version that every request for it gets (etag, last-modified, type,
 * dispositions, CSP, vary), worked out once per FileRecord: the read cache hands out the same
 * record until the row changes, so a small GET served from it formats no date or file name.
 */
const fixedHeaders = new WeakMap<FileRecord, FixedHeaders>();

function fixedHeadersOf(file: FileRecord): FixedHeaders {
  let fixed = fixedHeaders.get(file);
  if (fixed !== undefined) return fixed;
  const headers: Record<string, string> = {
    "content-type": file.contentType,
    "accept-ranges": "bytes",
    etag: `"${file.blob}"`,
    "last-modified": toHttpDate(file.updatedAt),
    "cache-control": file.visibility === "public" ? "no-cache, public" : "no-cache, private",
    "x-content-type-options": "nosniff",
    "content-disposition": contentDisposition("inline", file.name),
  };
  if (!isPassive(essenceOf(file.contentType))) headers["content-security-policy"] = SANDBOX_CSP;
  if (file.visibility !== "public") headers.vary = "Authorization, Cookie";
  fixed = { headers, attachment: contentDisposition("attachment", file.name), whole: Object.freeze({ ...headers, "content-length": String(file.size) }) };
  fixedHeaders.set(file, fixed);
  return fixed;
}

/**
 * The answer to GET or HEAD of `/{id}` or `/{id}/{slug}` (`slug` undefined for the ID-only
 * form) for a file the caller may open: a pure function of the file and the request. A wrong
 * slug redirects to the canonical URL; then conditional requests (RFC 9110 §13), a single byte
 * range (§14), Content-Disposition (RFC 6266) and the sandbox for active content.
 * @throws AppError invalid_argument for a malformed or repeated `download` parameter
 */
export function contentReply(file: FileRecord, request: ContentRequest, slug: string | undefined, baseUrl: string): ContentReply {
  if (slug !== undefined && slug !== file.slug) {
    return { status: 302, headers: { location: canonicalUrl(baseUrl, file) + request.search, "content-length": "0" } };
  }

  const fixed = fixedHeadersOf(file);
  const etag = fixed.headers.etag!;
  const lastModified = fixed.headers["last-modified"]!;
  const attachment = request.search !== "" && parseQuery(request.search, ["download"]).get("download") === "1";

  if (notModified(request, etag, file.updatedAt)) {
    return { status: 304, headers: pick(fixed.headers, ["etag", "last-modified", "cache-control", "vary"]) };
  }

  const rangeHeader = ifRangeHolds(request, etag, lastModified) ? request.headers.get("range") : null;
  const range = parseRange(rangeHeader, file.size);
  if (range.kind === "unsatisfiable") {
    return {
      status: 416,
      headers: { ...pick(fixed.headers, ["etag", "last-modified", "cache-control", "accept-ranges"]), "content-range": `bytes */${file.size}`, "content-length": "0" },
    };
  }
  if (range.kind !== "range" && !attachment) {
    // The answer most requests get: its headers are the same object every time.
    return file.size === 0 ? { status: 200, headers: fixed.whole } : { status: 200, headers: fixed.whole, range: { start: 0, length: file.size } };
  }
  const headers: Record<string, string> = { ...fixed.headers };
  if (attachment) headers["content-disposition"] = fixed.attachment;
  const { start, end } = range.kind === "range" ? range.range : { start: 0, end: file.size - 1 };
  headers["content-length"] = String(end - start + 1);
  if (range.kind === "range") {
    headers["content-range"] = `bytes ${start}-${end}/${file.size}`;
    return { status: 206, headers, range: { start, length: end - start + 1 } };
  }
  return file.size === 0 ? { status: 200, headers } : { status: 200, headers, range: { start: 0, length: file.size } };
}

/** Browser navigations ask for HTML; API clients do not. */
export function wantsHtml(request: RequestLike): boolean {
  return (request.headers.get("accept") ?? "").includes("text/html");
}

/**
 * RFC 9110 §13.1.2 / §13.1.3: If-None-Match (weak comparison, `*` matches) decides when
 * present; otherwise If-Modified-Since at one-second resolution.
 */
function notModified(request: RequestLike, etag: string, updatedAtMicros: number): boolean {
  const inm = request.headers.get("if-none-match");
  if (inm !== null) {
    if (inm.trim() === "*") return true;
    return inm.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
  }
  const ims = request.headers.get("if-modified-since");
  if (ims === null) return false;
  const since = Date.parse(ims);
  if (Number.isNaN(since)) return false;
  return Math.floor(updatedAtMicros / 1_000_000) * 1000 <= since;
}

/** RFC 9110 §13.1.5: a Range applies only if If-Range (strong ETag or exact date) still matches. */
function ifRangeHolds(request: RequestLike, etag: string, lastModified: string): boolean {
  const ifRange = request.headers.get("if-range");
  if (ifRange === null) return true;
  const v = ifRange.trim();
  if (v.startsWith('"') || v.startsWith("W/")) return v === etag;
  return v === lastModified;
}

function pick(headers: Record<string, string>, names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) if (headers[n] !== undefined) out[n] = headers[n]!;
  return out;
}
