/**
 * Paths under `/dav/` (CONTRACT §12): a request's path as decoded segments, the `href` of a
 * resource (RFC 4918 §8.3: a path, each segment percent-encoded), and the names members show
 * under: a folder's name; a file's name, or, where that name is shared with another member of
 * the same collection (possible only at the top, where files keep the flat list's freedom) or
 * is empty, `name (id).ext` or the ID alone.
 */
import type { FileRecord } from "../domain/file.ts";
import { DavError } from "./errors.ts";

/** Where WebDAV is served. */
export const DAV_PREFIX = "/dav";

/** Whether `pathname` (as sent, percent-encoded) is under `/dav` (`/dav` itself included). */
export function isDavPath(pathname: string): boolean {
  return pathname === DAV_PREFIX || pathname.startsWith(`${DAV_PREFIX}/`);
}

/**
 * The decoded segments of a path under `/dav` (`/dav/a/b%20c/` → `["a", "b c"]`); empty for the top.
 * @throws DavError 400 for a malformed percent-escape, an empty, `.` or `..` segment, or a
 *   segment with a control character
 */
export function segmentsOf(pathname: string): string[] {
  if (!isDavPath(pathname)) throw new DavError(400, "not a path under /dav/");
  const parts = pathname.slice(DAV_PREFIX.length).split("/");
  // The leading "" (after /dav) and a trailing "" (a collection's slash) are not segments.
  if (parts[0] === "") parts.shift();
  if (parts.length > 0 && parts[parts.length - 1] === "") parts.pop();
  return parts.map((raw) => {
    let s: string;
    try {
      s = decodeURIComponent(raw);
    } catch {
      throw new DavError(400, "malformed percent-escape in the path");
    }
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the rule is about control characters
    if (s === "" || s === "." || s === ".." || s.includes("/") || /[\x00-\x1F\x7F]/.test(s)) throw new DavError(400, "a path segment is empty, '.', '..', or holds '/' or a control character");
    return s;
  });
}

/** The path a lock is rooted at, as dav_locks keeps it: "/" for the top, `/a/b` below. */
export function lockPathOf(segments: readonly string[]): string {
  return `/${segments.join("/")}`;
}

/** Whether lock path `a` is `b` or one of its ancestors. */
export function isAncestorOrSelf(a: string, b: string): boolean {
  return a === b || a === "/" || b.startsWith(`${a}/`);
}

/** The href of a resource: `/dav/` + encoded segments, with a trailing slash for a collection. */
export function hrefOf(segments: readonly string[], collection: boolean): string {
  if (segments.length === 0) return `${DAV_PREFIX}/`;
  return `${DAV_PREFIX}/${segments.map(encodeSegment).join("/")}${collection ? "/" : ""}`;
}

/** One segment percent-encoded (RFC 3986 unreserved characters and sub-delims kept, as encodeURIComponent does). */
export function encodeSegment(segment: string): string {
  return encodeURIComponent(segment);
}

/**
 * The name a file shows under in its collection: its name, or, when `shared` (another member of
 * the collection has the same name) or the name is empty, `name (id).ext` (`.ext` its
 * extension, if any) or its ID.
 */
export function memberName(file: Pick<FileRecord, "id" | "name">, shared: boolean): string {
  if (file.name === "") return file.id;
  if (!shared) return file.name;
  const dot = file.name.lastIndexOf(".");
  if (dot <= 0) return `${file.name} (${file.id})`;
  return `${file.name.slice(0, dot)} (${file.id})${file.name.slice(dot)}`;
}

/** `name (id).ext`, `name (id)` or a bare ID: the file ID a decorated member name carries. */
const DECORATED = /^(?:.* \(([A-Za-z0-9_-]{21})\)(?:\.[^.]*)?|([A-Za-z0-9_-]{21}))$/s;

/** The file ID in a decorated member name ({@link memberName}), if it has that shape. */
export function decoratedId(segment: string): string | undefined {
  const m = DECORATED.exec(segment);
  return m === null ? undefined : (m[1] ?? m[2]);
}
