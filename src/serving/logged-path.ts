/**
 * What logs and error reports print of a request's path: as sent, except a login link's token
 * (`/auth/link/{token}`, `cubby login-link`, CONTRACT §11), which signs someone in and so is
 * never printed, whichever way the path spells it (issue 37: `/auth/./link/{token}` was routed to
 * the link and printed whole).
 *
 * One rule decides: the path is read the way the most lenient reader of it could (the URL
 * Standard's parser, which the fetch bridge and the router use, and more): scheme and authority
 * of an absolute-form target dropped, percent-escapes decoded (a few times over), `\` as `/`,
 * tabs and line breaks removed, empty, `.` and `..` segments resolved, letters compared without
 * case. A path that then begins with `auth/link` and has anything after it (a further segment,
 * a query) is printed as `/auth/link/…`. Any spelling the router sends to the link reads so,
 * since this reading removes at least what the router's does; a spelling that reads so but is
 * not routed there loses only its tail in the log.
 */

/** What a redacted path is printed as. */
export const REDACTED_LOGIN_LINK_PATH = "/auth/link/…";

/**
 * Without a `%` (which could spell anything) a path that reads as `auth/link` must hold the
 * letters `auth` as they are; nearly every path has neither, and is printed without more work.
 */
const MAY_NAME_A_LINK = /auth|%/i;

/** Passes of percent-decoding: the router decodes once; two more cover double encodings. */
const DECODE_PASSES = 3;

/**
 * The path as logs and error reports print it (see the module comment).
 * @param path a request's path (origin form, no query) or, for a refused request, what of its
 *   target could be read (any form, with its query)
 * @returns `path`, or {@link REDACTED_LOGIN_LINK_PATH} when it may carry a login link's token
 */
export function loggedPath(path: string): string {
  if (!MAY_NAME_A_LINK.test(path)) return path;
  return namesLoginLink(path) ? REDACTED_LOGIN_LINK_PATH : path;
}

/** Whether `target` reads as `/auth/link` followed by anything (see the module comment). */
function namesLoginLink(target: string): boolean {
  let rest = target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#\\]*/i, "");
  const end = rest.search(/[?#]/);
  const tail = end !== -1;
  if (tail) rest = rest.slice(0, end);
  for (let pass = 0; pass < DECODE_PASSES && rest.includes("%"); pass++) rest = decodePercent(rest);
  const segments = canonicalSegments(rest);
  return segments[0] === "auth" && segments[1] === "link" && (segments.length > 2 || tail);
}

/** `%XX` replaced by the byte it names (as a Latin-1 character: only ASCII matters here); malformed escapes kept. */
function decodePercent(s: string): string {
  return s.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * The path's segments, lower-cased, with `\` as `/`, tabs and line breaks removed, and empty,
 * `.` and `..` segments resolved (RFC 3986 §5.2.4, and the URL Standard's path state).
 */
function canonicalSegments(path: string): string[] {
  const segments: string[] = [];
  for (const raw of path.replace(/[\t\n\r]/g, "").split(/[/\\]/)) {
    const segment = raw.toLowerCase();
    if (segment === "" || segment === ".") continue;
    if (segment === "..") segments.pop();
    else segments.push(segment);
  }
  return segments;
}
