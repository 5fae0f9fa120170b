/**
 * LOCK and UNLOCK (RFC 4918 §9.10, §9.11): exclusive and shared write locks, Depth 0 or
 * infinity, a timeout, a refresh (a LOCK with no body and the lock's token in If), and a LOCK
 * of an unmapped path, which creates an empty file (§7.3). A new lock is checked against the
 * held ones in a transaction that first locks the owner's row, so that two workers or instances
 * cannot both grant conflicting locks; there too the caps (locks per user, DAV:owner size) and
 * the quota (a lock's DAV:owner counts, CONTRACT §14) are checked. Only the locks on the
 * ancestors of the path and below it are read.
 */
import { requireScope } from "../domain/principal.ts";
import type { DavLockRow } from "../storage/ports.ts";
import { DavError } from "./errors.ts";
import { activeLock, ancestorsOf, conflicting, covering, grantedTimeout } from "./locks.ts";
import { MAX_LOCK_OWNER_BYTES, MAX_LOCKS_PER_USER, overCap } from "./limits.ts";
import { DEFAULT_CONTENT_TYPE, parseName, typeFromName } from "../domain/params.ts";
import { lockPathOf } from "./paths.ts";
import type { DavRequest } from "./request.ts";
import { folderIdOf } from "./resources.ts";
import { child, childElements, DAV_NS, isElement, parseXml, readSmallBody, serializeElement, XML_HEAD, type XmlElement } from "./xml.ts";

/** The answer's body: the lock in DAV:lockdiscovery (RFC 4918 §9.10.1). */
function lockBody(lock: DavLockRow, now: number): string {
  return `${XML_HEAD}<D:prop xmlns:D="DAV:"><D:lockdiscovery>${activeLock(lock, now)}</D:lockdiscovery></D:prop>`;
}

const XML_TYPE = { "content-type": 'application/xml; charset="utf-8"' };

/** Answers LOCK. */
export async function lock(req: DavRequest): Promise<void> {
  requireScope(req.principal, "files.write");
  const root = await parseXml(await readSmallBody(req.ex.body()));
  const now = req.now();
  const timeoutSeconds = grantedTimeout(req.ex.headers.get("timeout"));
  const path = lockPathOf(req.segments);
  if (root === undefined) return refresh(req, path, timeoutSeconds, now);
  const info = parseLockInfo(root);
  const depthHeader = req.ex.headers.get("depth")?.trim().toLowerCase() ?? "infinity";
  if (depthHeader !== "0" && depthHeader !== "infinity") throw new DavError(400, "LOCK takes Depth: 0 or infinity");
  const depth = depthHeader === "0" ? 0 : -1;
  const { resource, parent } = await req.resolve();
  if (resource === undefined && parent === undefined) throw new DavError(409, "the parent collection does not exist");
  // A new lock is not a change of the resource: only a lock-null LOCK adds a member.
  if (resource === undefined) await req.checkChange([{ segments: req.segments, kind: "membership" }], resource);
  else await req.checkIf(resource);
  const row: DavLockRow = {
    token: `urn:uuid:${crypto.randomUUID()}`,
    ownerId: req.principal.userId,
    path,
    depth,
    exclusive: info.exclusive,
    ownerXml: info.ownerXml,
    timeoutSeconds,
    expiresAt: now + timeoutSeconds * 1_000_000,
    createdAt: now,
  };
  const owner = req.principal.userId;
  await req.deps.store.transaction(async (tx) => {
    const quota = await req.deps.quotas.lock(tx, owner);
    await tx.dav.deleteExpiredLocks(now);
    if ((await tx.dav.lockTotals(owner, now)).count >= MAX_LOCKS_PER_USER) throw overCap(507, "too many locks held", "MAX_LOCKS_PER_USER", MAX_LOCKS_PER_USER);
    const near = [...(await tx.dav.locksAt(owner, ancestorsOf(path), now)), ...(depth === -1 ? await tx.dav.locksBelow(owner, path, now) : [])];
    if (conflicting(near, path, depth, info.exclusive).length > 0) {
      throw new DavError(423, "a conflicting lock is held", "no-conflicting-lock");
    }
    await tx.dav.insertLock(row);
    await quota.settle(Buffer.byteLength(row.ownerXml));
  });
  req.forgetLocks();
  if (resource === undefined) {
    try {
      const name = parseName(req.segments[req.segments.length - 1]!);
      await req.deps.files.create(req.principal, { slug: "", name, visibility: undefined, contentType: typeFromName(name) ?? DEFAULT_CONTENT_TYPE, content: null, folderId: folderIdOf(parent!) ?? undefined });
    } catch (err) {
      await req.deps.store.dav.deleteLock(row.token);
      throw err;
    }
  }
  req.ex.respond(resource === undefined ? 201 : 200, { ...XML_TYPE, "lock-token": `<${row.token}>` }, lockBody(row, now));
}

/** A LOCK with no body: the lock named in If, covering this path, gets a new timeout. */
async function refresh(req: DavRequest, path: string, timeoutSeconds: number, now: number): Promise<void> {
  if (req.ifHeader() === undefined) throw new DavError(400, "a LOCK with no body refreshes a lock named in an If header");
  const submitted = req.submitted();
  const held = covering(await req.locksAround(path), path).find((l) => submitted.has(l.token));
  if (held === undefined) throw new DavError(412, "no lock named in the If header covers this resource", "lock-token-matches-request-uri");
  const { resource } = await req.resolve();
  await req.checkIf(resource);
  const expiresAt = now + timeoutSeconds * 1_000_000;
  await req.deps.store.dav.refreshLock(held.token, timeoutSeconds, expiresAt);
  req.ex.respond(200, XML_TYPE, lockBody({ ...held, timeoutSeconds, expiresAt }, now));
}

/** The lockinfo of a LOCK body: scope and the owner element as XML. @throws DavError 400; 413 past MAX_LOCK_OWNER_BYTES */
function parseLockInfo(root: XmlElement): { exclusive: boolean; ownerXml: string } {
  if (!isElement(root, DAV_NS, "lockinfo")) throw new DavError(400, "a LOCK body is a DAV:lockinfo element");
  const scope = child(root, DAV_NS, "lockscope");
  const type = child(root, DAV_NS, "locktype");
  if (scope === undefined || type === undefined) throw new DavError(400, "DAV:lockinfo needs lockscope and locktype");
  const kind = childElements(scope)[0];
  const exclusive = isElement(kind, DAV_NS, "exclusive") ? true : isElement(kind, DAV_NS, "shared") ? false : undefined;
  if (exclusive === undefined) throw new DavError(400, "DAV:lockscope is exclusive or shared");
  if (!isElement(childElements(type)[0], DAV_NS, "write")) throw new DavError(400, "only write locks exist (DAV:locktype write)");
  const owner = child(root, DAV_NS, "owner");
  const ownerXml = owner === undefined ? "" : serializeElement(owner);
  if (Buffer.byteLength(ownerXml) > MAX_LOCK_OWNER_BYTES) throw overCap(413, "the DAV:owner element is too large", "MAX_LOCK_OWNER_BYTES", MAX_LOCK_OWNER_BYTES);
  return { exclusive, ownerXml };
}

/** Answers UNLOCK: the lock named in Lock-Token, which must cover this path, goes. */
export async function unlock(req: DavRequest): Promise<void> {
  requireScope(req.principal, "files.write");
  const header = req.ex.headers.get("lock-token")?.trim();
  const token = header === undefined ? undefined : /^<(.+)>$/.exec(header)?.[1];
  if (token === undefined) throw new DavError(400, "UNLOCK needs a Lock-Token header: <token>");
  const held = covering(await req.locksAround(lockPathOf(req.segments)), lockPathOf(req.segments)).find((l) => l.token === token);
  if (held === undefined) throw new DavError(409, "no such lock covers this resource", "lock-token-matches-request-uri");
  await req.deps.store.dav.deleteLock(token);
  req.forgetLocks();
  req.ex.respond(204, {});
}
