/**
 * Parsers for the values clients send, applied at the edge before anything is stored. Each
 * returns the domain value or throws AppError("invalid_argument") naming the parameter.
 * Limits and patterns are the specification's (section "Limits").
 */
import mime from "mime";
import { AppError } from "../errors.ts";
import { FILE_ID_PATTERN } from "./ids.ts";
import { VISIBILITIES, type Visibility } from "./file.ts";

const SLUG_PATTERN = /^[A-Za-z0-9._~-]*$/;
// Spec: no "/" and no control characters (0x00-0x1F, 0x7F).
const NAME_FORBIDDEN = /[/\x00-\x1F\x7F]/;

function invalid(message: string): never {
  throw new AppError("invalid_argument", message);
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * A lower-cased e-mail address: something@domain.tld, at most 254 characters (RFC 5321
 * §4.5.3.1.3 path limit less the brackets). Deliverability is the identity provider's business.
 */
export function parseEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email)) invalid(`"${raw}" is not an e-mail address`);
  return email;
}

/** A file ID (`^[A-Za-z0-9_-]{21}$`). */
export function parseFileId(raw: string): string {
  if (!FILE_ID_PATTERN.test(raw)) invalid(`id: "${truncate(raw)}" is not a file ID (21 characters of A-Z a-z 0-9 _ -)`);
  return raw;
}

/**
 * A comma-separated list of 1 to `max` file IDs (`GET /v1/thumbnails?file_ids=`), duplicates
 * dropped, in the order given.
 * @throws AppError invalid_argument naming `name`: none, more than `max`, or one that is no file ID
 */
export function parseFileIds(raw: string, name: string, max: number): string[] {
  const ids = raw.split(",");
  if (ids.length > max) invalid(`${name}: at most ${max} file IDs (got ${ids.length})`);
  const bad = ids.find((id) => !FILE_ID_PATTERN.test(id));
  if (bad !== undefined) invalid(`${name}: "${truncate(bad)}" is not a file ID (21 characters of A-Z a-z 0-9 _ -; several are separated by commas)`);
  return [...new Set(ids)];
}

/** A slug: at most 128 of `A-Z a-z 0-9 . _ ~ -`; "" means none. "." and ".." are refused (they are not path segments a URL can keep). */
export function parseSlug(raw: string): string {
  if (raw.length > 128) invalid(`slug: at most 128 characters (got ${raw.length})`);
  if (!SLUG_PATTERN.test(raw)) invalid(`slug: only A-Z a-z 0-9 . _ ~ - are allowed (got "${truncate(raw)}")`);
  if (raw === "." || raw === "..") invalid(`slug: "${raw}" cannot be a URL segment`);
  return raw;
}

/** A file name: at most 255 characters (Unicode code points), no "/" and no control characters; "" means none. */
export function parseName(raw: string): string {
  const count = codePoints(raw);
  if (count > 255) invalid(`name: at most 255 characters (got ${count})`);
  if (NAME_FORBIDDEN.test(raw)) invalid(`name: "/" and control characters are not allowed`);
  if (!raw.isWellFormed()) invalid("name: not valid Unicode");
  return raw;
}

/** The longest display name (CONTRACT §15), in characters (Unicode code points). */
export const MAX_DISPLAY_NAME = 100;
/** Control characters (C0, DEL, C1) and line or paragraph separators: they would break the pages that show a display name. */
const DISPLAY_NAME_FORBIDDEN = /[\x00-\x1F\x7F-\x9F\u2028\u2029]/;

/**
 * A display name as sent (`PATCH /v1/me`): at most {@link MAX_DISPLAY_NAME} characters, no
 * control characters. Stored trimmed, "" meaning the default ({@link storedDisplayName}).
 * @throws AppError invalid_argument naming display_name
 */
export function parseDisplayName(raw: string): string {
  const count = codePoints(raw);
  if (count > MAX_DISPLAY_NAME) invalid(`display_name: at most ${MAX_DISPLAY_NAME} characters (got ${count})`);
  if (DISPLAY_NAME_FORBIDDEN.test(raw)) invalid("display_name: control characters are not allowed");
  if (!raw.isWellFormed()) invalid("display_name: not valid Unicode");
  return raw;
}

/** A display name as stored: trimmed, or null (the default) when nothing is left. */
export function storedDisplayName(name: string): string | null {
  const trimmed = name.trim();
  return trimmed === "" ? null : trimmed;
}

/** The longest name search (`q` of `GET /v1/files`), in characters (Unicode code points). */
export const MAX_NAME_QUERY = 256;

/**
 * The text a name search looks for (`q` of `GET /v1/files`): any text of at most
 * {@link MAX_NAME_QUERY} characters (Unicode code points), matched literally; "" means no filter.
 */
export function parseNameQuery(raw: string): string {
  const count = codePoints(raw);
  if (count > MAX_NAME_QUERY) invalid(`q: the name to search for is at most ${MAX_NAME_QUERY} characters (got ${count})`);
  return raw;
}

/** One of `private`, `internal`, `public`. */
export function parseVisibility(raw: string): Visibility {
  if (!(VISIBILITIES as readonly string[]).includes(raw)) {
    invalid(`visibility: must be one of private, internal, public (got "${truncate(raw)}")`);
  }
  return raw as Visibility;
}

/** Default page size of list calls (CONTRACT §2). */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 1000;

/** A page size from a query string: a whole number 1..1000, in decimal without leading zeros (as the document's integer). */
export function parsePageSize(raw: string): number {
  if (!/^(0|[1-9]\d{0,3})$/.test(raw)) invalid(`page_size: must be a whole number from 1 to ${MAX_PAGE_SIZE} (got "${truncate(raw)}")`);
  const n = Number(raw);
  if (n < 1 || n > MAX_PAGE_SIZE) invalid(`page_size: must be from 1 to ${MAX_PAGE_SIZE} (got ${n})`);
  return n;
}

/**
 * `ListFilesRequest.page_size` of the RPC API: proto3 cannot tell 0 from unset, so 0 means
 * {@link DEFAULT_PAGE_SIZE}; otherwise as {@link parsePageSize}.
 */
export function parseRpcPageSize(n: number): number {
  if (n === 0) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) invalid(`page_size: must be from 1 to ${MAX_PAGE_SIZE} (got ${n})`);
  return n;
}

/**
 * A listing's `page_size` (absent: {@link DEFAULT_PAGE_SIZE}) and `page_token` (absent or "":
 * the first page), from a query string read by {@link parseQuery}.
 */
export function parsePaging(query: Map<string, string>): { pageSize: number; cursor: PageCursor | undefined } {
  const size = query.get("page_size");
  return { pageSize: size === undefined ? DEFAULT_PAGE_SIZE : parsePageSize(size), cursor: parsePageToken(query.get("page_token") ?? "") };
}

/** Where a listing continues: the (created_at, id) of the last row of the previous page. */
export interface PageCursor {
  createdAt: number;
  id: string;
}

/** Encodes a cursor as an opaque URL-safe token: base64url of `created_at.id`. */
export function encodePageToken(c: PageCursor): string {
  return Buffer.from(`${c.createdAt}.${c.id}`).toString("base64url");
}

/**
 * Decodes a token made by {@link encodePageToken}; "" means the first page. The ID part may be
 * any ID cubby makes (1-64 of `0-9 A-Z a-z _ -`: files, keys, shares, links, uploads): a cursor
 * only says where a keyset range starts, so one format serves every listing.
 * @throws AppError invalid_argument ("page_token: not a token this server issued") for anything else
 */
export function parsePageToken(raw: string): PageCursor | undefined {
  if (raw === "") return undefined;
  const bad = () => invalid("page_token: not a token this server issued");
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(raw)) bad();
  const text = Buffer.from(raw, "base64url").toString("latin1");
  const m = /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/.exec(text);
  if (!m) bad();
  return { createdAt: Number(m![1]), id: m![2]! };
}

/** A page of a listing in its order, and where the next page starts (undefined on the last). */
export interface Page<T> {
  items: T[];
  next: PageCursor | undefined;
}

/**
 * A page from up to `pageSize + 1` rows read in listing order (newest first by created_at, id):
 * the first `pageSize`, and the cursor of the last of them when a row more was read.
 */
export function pageFrom<T extends PageCursor>(rows: T[], pageSize: number): Page<T> {
  const more = rows.length > pageSize;
  const items = more ? rows.slice(0, pageSize) : rows;
  const last = items[items.length - 1];
  return { items, next: more && last !== undefined ? { createdAt: last.createdAt, id: last.id } : undefined };
}

/** The `next_page_token` of a page as REST and MCP send it: "" on the last page. */
export function nextPageToken(page: { next: PageCursor | undefined }): string {
  return page.next === undefined ? "" : encodePageToken(page.next);
}

/**
 * `next_page_token` for a list whose answer the contract gave before it was paged
 * (`{"shares":[…]}`, `{"keys":[…]}`, `{"upload_links":[…]}`): present only when there is a next
 * page, as proto3's JSON leaves out an empty string, so an answer that fits one page is as it was.
 */
export function nextPageField(page: { next: PageCursor | undefined }): { next_page_token?: string } {
  return page.next === undefined ? {} : { next_page_token: encodePageToken(page.next) };
}

// RFC 9110 §5.6.2 token characters. Quoted parameter values are ASCII only: the obs-text
// (0x80-0xFF) RFC 9110 §5.6.4 tolerates has no agreed charset, and came back double-encoded over
// HTTP/1.1 and as latin-1 over HTTP/2, so it is refused rather than stored mangled.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_TYPE = new RegExp(
  `^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|"(?:[\\t \\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\t \\x21-\\x7E])*"))*[ \\t]*;?$`,
);

/** Stored when an upload has no Content-Type (CONTRACT §2). */
export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/**
 * A media type as sent in Content-Type (RFC 9110 §8.3.1: `type "/" subtype *( OWS ";" OWS
 * parameter )`), kept as sent with its parameters, surrounding white space trimmed.
 * Absent or empty means `application/octet-stream`.
 */
export function parseMediaType(raw: string | null | undefined): string {
  if (raw === null || raw === undefined) return DEFAULT_CONTENT_TYPE;
  const v = raw.trim();
  if (v === "") return DEFAULT_CONTENT_TYPE;
  if (v.length > 255 || !MEDIA_TYPE.test(v)) invalid(`content type: "${truncate(v)}" is not a media type in ASCII (like image/png)`);
  return v;
}

/**
 * The media type registered for `name`'s extension (the `mime` package's database: IANA's
 * registry with Apache's and nginx's common additions), or undefined for a name with no known
 * extension. Case does not matter (`IMG_1.JPG` is image/jpeg).
 */
export function typeFromName(name: string): string | undefined {
  return mime.getType(name) ?? undefined;
}

/**
 * The media type an upload stores (CONTRACT §17, "types from names"): the Content-Type the
 * client sent (parseMediaType's rules: the specification's, stored as sent); when it sent none,
 * the type registered for the file's name, else application/octet-stream. (WebDAV's PUT, whose
 * clients send application/octet-stream for everything, takes that as none too: dav/changes.ts.)
 * @throws AppError invalid_argument (what parseMediaType throws)
 */
export function uploadMediaType(raw: string | null | undefined, name: string): string {
  const none = raw === null || raw === undefined || raw.trim() === "";
  return none ? (typeFromName(name) ?? DEFAULT_CONTENT_TYPE) : parseMediaType(raw);
}

/**
 * A query string (`?a=1&b=2`, the `?` optional) read strictly, for the parameters in `known`:
 * `application/x-www-form-urlencoded` as the URL Standard §5.1 parses it (`+` is a space),
 * except that a malformed percent-escape or percent-escaped bytes that are not UTF-8 (`%FF`)
 * are refused instead of becoming U+FFFD, and so is a known parameter given twice (which one
 * would win is a guess). Unknown parameters are ignored.
 * @returns each known parameter present, by name
 * @throws AppError("invalid_argument") naming the parameter
 */
export function parseQuery(search: string, known: readonly string[]): Map<string, string> {
  const found = new Map<string, string>();
  const query = search.startsWith("?") ? search.slice(1) : search;
  if (query === "") return found;
  for (const pair of query.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const name = decodeComponent(eq === -1 ? pair : pair.slice(0, eq), "a parameter name");
    if (!known.includes(name)) continue;
    const value = decodeComponent(eq === -1 ? "" : pair.slice(eq + 1), name);
    if (found.has(name)) invalid(`${name}: given more than once`);
    found.set(name, value);
  }
  return found;
}

function decodeComponent(raw: string, what: string): string {
  try {
    return decodeURIComponent(raw.replaceAll("+", " "));
  } catch {
    return invalid(`${what}: malformed percent-encoding or not UTF-8 (${JSON.stringify(truncate(raw))})`);
  }
}

/** The lower-cased `type/subtype` of a media type, parameters dropped. */
export function essenceOf(mediaType: string): string {
  const semi = mediaType.indexOf(";");
  return (semi < 0 ? mediaType : mediaType.slice(0, semi)).trim().toLowerCase();
}

function codePoints(s: string): number {
  let count = 0;
  for (const _ of s) count++;
  return count;
}

function truncate(s: string): string {
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}
