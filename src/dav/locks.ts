/**
 * WebDAV write locks (RFC 4918 §6, §7): which locks cover a path, which lock tokens a change
 * must have submitted, which locks a new one conflicts with, the Timeout header, and the
 * `DAV:activelock` element. The locks themselves live in the metadata store (dav_locks), so
 * every worker and instance sees them; expired ones are ignored and deleted lazily.
 */
import type { DavLockRow } from "../storage/ports.ts";
import { DavError } from "./errors.ts";
import { escapeXml } from "./xml.ts";
import { DAV_PREFIX, encodeSegment, isAncestorOrSelf } from "./paths.ts";

/** The longest lock granted, seconds (a client asking for more, or Infinite, gets this). */
export const MAX_LOCK_SECONDS = 7 * 24 * 3600;
/** A lock's timeout when the client names none, seconds. */
export const DEFAULT_LOCK_SECONDS = 3600;

/** The locks that apply to `path` itself: rooted there, or at an ancestor with depth infinity (RFC 4918 §6.1, §7.5). */
export function covering(locks: readonly DavLockRow[], path: string): DavLockRow[] {
  return locks.filter((l) => l.path === path || (l.depth === -1 && isAncestorOrSelf(l.path, path)));
}

/** The locks rooted strictly below `path` (a collection's members, at any depth). */
export function below(locks: readonly DavLockRow[], path: string): DavLockRow[] {
  return locks.filter((l) => l.path !== path && isAncestorOrSelf(path, l.path));
}

/** A lock path and its ancestors, the top first ("/a/b" → "/", "/a", "/a/b"): the roots of the locks that can cover it. */
export function ancestorsOf(path: string): string[] {
  if (path === "/") return ["/"];
  const out = ["/"];
  for (let at = path.indexOf("/", 1); at !== -1; at = path.indexOf("/", at + 1)) out.push(path.slice(0, at));
  out.push(path);
  return out;
}

/** The parent of a lock path ("/a/b" → "/a", "/a" → "/"). */
export function parentPath(path: string): string {
  const at = path.lastIndexOf("/");
  return at <= 0 ? "/" : path.slice(0, at);
}

/**
 * The locks a change must hold the tokens of (RFC 4918 §7.4, §9.6, §9.9.3):
 * - `content`: the resource changes (PUT, PROPPATCH): the locks covering it;
 * - `membership`: it is added to or removed from its collection (PUT of a new name, MKCOL,
 *   DELETE, MOVE's both ends, COPY's destination, a lock-null LOCK): those, the locks of
 *   everything below it, and those covering its parent (a depth-0 lock on a collection guards
 *   its membership).
 */
export function locksToHonour(locks: readonly DavLockRow[], path: string, kind: "content" | "membership"): DavLockRow[] {
  const out = new Set(covering(locks, path));
  if (kind === "membership") {
    for (const l of below(locks, path)) out.add(l);
    if (path !== "/") for (const l of covering(locks, parentPath(path))) out.add(l);
  }
  return [...out];
}

/**
 * Refuses a change when a lock it must honour has no token among `submitted`.
 * @throws DavError 423 with DAV:lock-token-submitted naming the locks' roots
 */
export function assertUnlocked(needed: readonly DavLockRow[], submitted: ReadonlySet<string>): void {
  const missing = needed.filter((l) => !submitted.has(l.token));
  if (missing.length === 0) return;
  const hrefs = [...new Set(missing.map((l) => l.path))].map((p) => `<D:href>${escapeXml(lockHref(p))}</D:href>`).join("");
  throw new DavError(423, "the resource is locked: submit the lock token in an If header", "lock-token-submitted", hrefs);
}

/**
 * Whether a new lock on `path` conflicts with a held one: an exclusive lock conflicts with any
 * other, a shared one with exclusive ones, wherever one's scope meets the other's (RFC 4918 §6.2).
 */
export function conflicting(locks: readonly DavLockRow[], path: string, depth: 0 | -1, exclusive: boolean): DavLockRow[] {
  const meets = [...covering(locks, path), ...(depth === -1 ? below(locks, path) : [])];
  return meets.filter((l) => exclusive || l.exclusive);
}

/** The href of a lock root. */
export function lockHref(path: string): string {
  return path === "/" ? `${DAV_PREFIX}/` : DAV_PREFIX + path.split("/").map((s) => (s === "" ? "" : encodeSegment(s))).join("/");
}

/**
 * The timeout to grant for a `Timeout` header (RFC 4918 §10.7: `Second-N` or `Infinite`, a
 * list, the first understood taken), at most {@link MAX_LOCK_SECONDS}; seconds.
 */
export function grantedTimeout(header: string | null): number {
  if (header === null) return DEFAULT_LOCK_SECONDS;
  for (const part of header.split(",")) {
    const v = part.trim();
    if (/^infinite$/i.test(v)) return MAX_LOCK_SECONDS;
    const m = /^Second-(\d{1,12})$/i.exec(v);
    if (m !== null) return Math.max(1, Math.min(MAX_LOCK_SECONDS, Number(m[1])));
  }
  return DEFAULT_LOCK_SECONDS;
}

/** The DAV:activelock element of a lock (RFC 4918 §14.1), its timeout counted from `nowMicros`. */
export function activeLock(lock: DavLockRow, nowMicros: number): string {
  const left = Math.max(0, Math.ceil((lock.expiresAt - nowMicros) / 1_000_000));
  return (
    "<D:activelock>" +
    "<D:locktype><D:write/></D:locktype>" +
    `<D:lockscope>${lock.exclusive ? "<D:exclusive/>" : "<D:shared/>"}</D:lockscope>` +
    `<D:depth>${lock.depth === 0 ? "0" : "infinity"}</D:depth>` +
    lock.ownerXml +
    `<D:timeout>Second-${left}</D:timeout>` +
    `<D:locktoken><D:href>${escapeXml(lock.token)}</D:href></D:locktoken>` +
    `<D:lockroot><D:href>${escapeXml(lockHref(lock.path))}</D:href></D:lockroot>` +
    "</D:activelock>"
  );
}

/** The DAV:supportedlock value: exclusive and shared write locks (RFC 4918 §15.10). */
export const SUPPORTED_LOCK =
  "<D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>" +
  "<D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>";
