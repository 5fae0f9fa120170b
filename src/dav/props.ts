/**
 * PROPFIND and PROPPATCH (RFC 4918 §9.1, §9.2): live properties computed from the File and
 * Folder rows and the locks, dead properties stored as XML in dav_properties (namespaces kept as
 * sent), PROPFIND at Depth 0 and 1 (infinity refused with DAV:propfind-finite-depth), PROPPATCH
 * applied all or nothing in one transaction, its rows written in a few multi-row statements.
 *
 * Bounded work (CONTRACT §14): a Depth 1 PROPFIND answers a page of members at a time
 * (FolderService's keyset pages), reading the page's dead properties in one query (by resource
 * IN (…), through the primary key, itself paged by row count), the locks rooted at members once
 * (a range of the lock index), yields to the event loop between pages, and streams the
 * multistatus once it passes 1 MiB; the names one
 * PROPFIND asks for, and a resource's dead properties (count and bytes), are capped (limits.ts),
 * and their bytes count against the owner's quota.
 */
import { formatTimestamp, toHttpDate } from "../domain/time.ts";
import { requireScope } from "../domain/principal.ts";
import type { DavLockRow, DavPropertyCursor, DavPropertyRow } from "../storage/ports.ts";
import { answerText } from "../serving/text-answer.ts";
import { Slicer } from "../slices.ts";
import { DavError } from "./errors.ts";
import { MAX_PROPERTIES_PER_RESOURCE, MAX_PROPERTY_BYTES_PER_RESOURCE, MAX_PROPFIND_NAMES, overCap } from "./limits.ts";
import { activeLock, covering, parentPath, SUPPORTED_LOCK } from "./locks.ts";
import { encodeSegment, hrefOf, lockPathOf } from "./paths.ts";
import { etagOf, type DavRequest } from "./request.ts";
import { memberPages, propertyKey, type Resource } from "./resources.ts";
import { childElements, DAV_NS, emptyElement, escapeXml, isElement, parseXml, readSmallBody, serializeElement, XML_HEAD, type XmlElement } from "./xml.ts";

/** The live properties cubby computes (RFC 4918 §15), by local name in DAV:. */
const LIVE = ["creationdate", "displayname", "getcontentlength", "getcontenttype", "getetag", "getlastmodified", "lockdiscovery", "resourcetype", "supportedlock"] as const;
type LiveName = (typeof LIVE)[number];
const LIVE_SET: ReadonlySet<string> = new Set(LIVE);
/** The live properties of each kind of resource, in the order allprop and propname give them. */
const FILE_LIVE: readonly LiveName[] = ["creationdate", "displayname", "getcontentlength", "getcontenttype", "getetag", "getlastmodified", "resourcetype", "lockdiscovery", "supportedlock"];
const FOLDER_LIVE: readonly LiveName[] = ["creationdate", "displayname", "getlastmodified", "resourcetype", "lockdiscovery", "supportedlock"];
const ROOT_LIVE: readonly LiveName[] = ["resourcetype", "lockdiscovery", "supportedlock"];

/**
 * Members answered per page of a Depth 1 PROPFIND: each page is a listing query and a property
 * query of a few milliseconds each on SQLite (measured on 40 000 files: about 20 and 8 ms for
 * 1000 members), with a chance to yield after each.
 */
const MEMBERS_PER_PAGE = 250;

/** Properties written into one resource's response between two chances to yield. */
const NAMES_PER_SLICE = 512;

/** Dead-property rows read per query while a page of members is answered. */
const PROPERTY_ROWS = 1000;

/** A property's expanded name. */
interface PropName {
  ns: string;
  name: string;
}

/** What a PROPFIND asks for. */
type PropfindKind = { kind: "allprop" } | { kind: "propname" } | { kind: "prop"; names: PropName[] };

/** The XML of a 207 Multi-Status body from its `D:response` elements. */
export function multistatus(responses: string): string {
  return `${XML_HEAD}<D:multistatus xmlns:D="DAV:">${responses}</D:multistatus>`;
}

/** A `D:propstat` of `props` (XML) with `status`. */
function propstat(props: string, status: string): string {
  return `<D:propstat><D:prop>${props}</D:prop><D:status>HTTP/1.1 ${status}</D:status></D:propstat>`;
}

/** One resource of a PROPFIND's answer: its href, its lock path, what it is, the name it shows under, the locks that may cover it. */
interface Entry {
  href: string;
  path: string;
  resource: Resource;
  name: string;
  locks: readonly DavLockRow[];
}

const XML_TYPE = { "content-type": 'application/xml; charset="utf-8"' };

/** Answers PROPFIND: Depth 0 whole, Depth 1 of a collection a page of members at a time (serving/text-answer.ts streams a long one). */
export async function propfind(req: DavRequest): Promise<void> {
  const depthHeader = req.ex.headers.get("depth")?.trim().toLowerCase() ?? "infinity";
  if (depthHeader !== "0" && depthHeader !== "1") {
    if (depthHeader === "infinity") throw new DavError(403, "PROPFIND with Depth: infinity is not served; use 0 or 1", "propfind-finite-depth");
    throw new DavError(400, "Depth: 0, 1 or infinity");
  }
  const ask = parsePropfind(await parseXml(await readSmallBody(req.ex.body())));
  const { resource } = await req.resolve();
  if (resource === undefined) throw new DavError(404, "nothing at this path");
  await req.checkIf(resource);
  const path = lockPathOf(req.segments);
  const around = await req.locksAround(path);
  const self: Entry = { href: hrefOf(req.segments, resource.kind !== "file"), path, resource, name: req.segments[req.segments.length - 1] ?? "", locks: around };
  const answer = new Answer(req, ask);
  const head = `${XML_HEAD}<D:multistatus xmlns:D="DAV:">`;
  const selfParts = await answer.page([self]);
  if (depthHeader === "0" || resource.kind === "file") {
    req.ex.respond(207, XML_TYPE, `${head}${selfParts.join("")}</D:multistatus>`);
    return;
  }
  const collection = resource;
  // The locks that can cover a member: the collection's and its ancestors' of depth infinity,
  // and those rooted at the member (read at once: one range of the (owner_id, path) index, at
  // most MAX_LOCKS_PER_USER rows).
  const inherited = around.filter((l) => l.depth === -1);
  const own = new Map<string, DavLockRow[]>();
  for (const l of await req.deps.store.dav.locksBelow(req.principal.userId, path, req.now())) {
    if (parentPath(l.path) === path) own.set(l.path, [...(own.get(l.path) ?? []), l]);
  }
  const hrefPrefix = hrefOf(req.segments, true);
  const pathPrefix = path === "/" ? "/" : `${path}/`;
  async function* parts(): AsyncIterable<string> {
    yield head;
    yield* selfParts;
    const slicer = new Slicer();
    for await (const members of memberPages(req.deps, req.principal, collection, MEMBERS_PER_PAGE)) {
      await slicer.breathe();
      const entries = members.map((m): Entry => {
        const at = pathPrefix + m.name;
        const mine = own.get(at);
        return { href: hrefPrefix + encodeSegment(m.name) + (m.resource.kind === "file" ? "" : "/"), path: at, resource: m.resource, name: m.name, locks: mine === undefined ? inherited : [...inherited, ...mine] };
      });
      yield* await answer.page(entries, slicer);
      await slicer.breathe();
    }
    yield "</D:multistatus>";
  }
  await answerText(req.ex, 207, XML_TYPE, parts());
}

/** The `D:response`s of a PROPFIND for what it asks. */
class Answer {
  private readonly now: number;
  private readonly wantsDead: boolean;
  private readonly owner: string;

  constructor(
    private readonly req: DavRequest,
    private readonly ask: PropfindKind,
  ) {
    this.now = req.now();
    this.owner = req.principal.userId;
    this.wantsDead = ask.kind !== "prop" || ask.names.some((n) => n.ns !== DAV_NS || !LIVE_SET.has(n.name));
  }

  /**
   * The responses of a page of entries, as text parts of bounded size: the page's dead
   * properties are read in queries of {@link PROPERTY_ROWS} rows in key order, each resource's
   * response written once its rows are all read.
   */
  async page(entries: readonly Entry[], slicer = new Slicer()): Promise<string[]> {
    const parts: string[] = [];
    let text = "";
    const emit = async (e: Entry, dead: readonly DavPropertyRow[]) => {
      // A resource with many properties (or a PROPFIND naming many) is written in slices.
      const many = dead.length + (this.ask.kind === "prop" ? this.ask.names.length : 0) > NAMES_PER_SLICE;
      text += many ? await this.response(e, dead, slicer) : this.response(e, dead);
      if (text.length >= 256 * 1024) {
        parts.push(text);
        text = "";
      }
    };
    if (!this.wantsDead) {
      for (const e of entries) await emit(e, []);
      if (text !== "") parts.push(text);
      return parts;
    }
    const byKey = new Map(entries.map((e) => [propertyKey(e.resource), e]));
    const keys = [...byKey.keys()];
    const done = new Set<string>();
    let after: DavPropertyCursor | undefined;
    let current: { key: string; rows: DavPropertyRow[] } | undefined;
    for (;;) {
      const rows = await this.req.deps.store.dav.propertiesOf(this.owner, keys, after, PROPERTY_ROWS);
      for (const r of rows) {
        if (current !== undefined && current.key !== r.resource) {
          await emit(byKey.get(current.key)!, current.rows);
          done.add(current.key);
          current = undefined;
        }
        current ??= { key: r.resource, rows: [] };
        current.rows.push({ namespace: r.namespace, name: r.name, value: r.value });
      }
      if (rows.length < PROPERTY_ROWS) break;
      const last = rows[rows.length - 1]!;
      after = { resource: last.resource, namespace: last.namespace, name: last.name };
      await slicer.breathe();
    }
    if (current !== undefined) {
      await emit(byKey.get(current.key)!, current.rows);
      done.add(current.key);
    }
    for (const [key, e] of byKey) if (!done.has(key)) await emit(e, []);
    if (text !== "") parts.push(text);
    return parts;
  }

  /** One resource's `D:response`; with `slicer`, yielding every {@link NAMES_PER_SLICE} properties. */
  private response(e: Entry, dead: readonly DavPropertyRow[]): string;
  private response(e: Entry, dead: readonly DavPropertyRow[], slicer: Slicer): Promise<string>;
  private response(e: Entry, dead: readonly DavPropertyRow[], slicer?: Slicer): string | Promise<string> {
    if (slicer === undefined) {
      const steps = this.steps(e, dead);
      for (let step = steps.next(); ; step = steps.next()) if (step.done === true) return step.value;
    }
    return (async () => {
      const steps = this.steps(e, dead);
      for (let step = steps.next(); ; step = steps.next()) {
        if (step.done === true) return step.value;
        await slicer.breathe();
      }
    })();
  }

  /** Writes one resource's `D:response`, pausing (yield) every {@link NAMES_PER_SLICE} properties; returns it. */
  private *steps(e: Entry, dead: readonly DavPropertyRow[]): Generator<void, string> {
    const r = e.resource;
    const live = r.kind === "file" ? FILE_LIVE : r.kind === "folder" ? FOLDER_LIVE : ROOT_LIVE;
    const value = (n: LiveName) => liveValue(n, r, e, this.now);
    let body: string;
    if (this.ask.kind === "propname") {
      let names = live.map((n) => `<D:${n}/>`).join("");
      for (let i = 0; i < dead.length; i++) {
        names += emptyElement(dead[i]!.namespace, dead[i]!.name);
        if (i % NAMES_PER_SLICE === NAMES_PER_SLICE - 1) yield;
      }
      body = propstat(names, "200 OK");
    } else if (this.ask.kind === "allprop") {
      let values = "";
      for (const n of live) {
        const v = value(n);
        values += v === "" ? `<D:${n}/>` : `<D:${n}>${v}</D:${n}>`;
      }
      for (let i = 0; i < dead.length; i++) {
        values += dead[i]!.value;
        if (i % NAMES_PER_SLICE === NAMES_PER_SLICE - 1) yield;
      }
      body = propstat(values, "200 OK");
    } else {
      const stored = dead.length === 0 ? undefined : new Map<string, string>();
      for (let i = 0; i < dead.length; i++) {
        stored!.set(`${dead[i]!.namespace}\n${dead[i]!.name}`, dead[i]!.value);
        if (i % NAMES_PER_SLICE === NAMES_PER_SLICE - 1) yield;
      }
      let found = "";
      let missing = "";
      const names = this.ask.names;
      for (let i = 0; i < names.length; i++) {
        const { ns, name } = names[i]!;
        if (i % NAMES_PER_SLICE === NAMES_PER_SLICE - 1) yield;
        if (ns === DAV_NS && (live as readonly string[]).includes(name)) {
          found += emptyElement(DAV_NS, name, value(name as LiveName));
          continue;
        }
        const d = stored?.get(`${ns}\n${name}`);
        if (d !== undefined) found += d;
        else missing += emptyElement(ns, name);
      }
      body = (found === "" && missing !== "" ? "" : propstat(found, "200 OK")) + (missing === "" ? "" : propstat(missing, "404 Not Found"));
    }
    return `<D:response><D:href>${escapeXml(e.href)}</D:href>${body}</D:response>`;
  }
}

/** A live property's value as XML ("" for an empty one). */
function liveValue(n: LiveName, r: Resource, e: Entry, now: number): string {
  switch (n) {
    case "creationdate":
      return r.kind === "file" ? formatTimestamp(r.file.createdAt) : r.kind === "folder" ? formatTimestamp(r.folder.createdAt) : "";
    case "displayname":
      return escapeXml(e.name);
    case "getcontentlength":
      return r.kind === "file" ? String(r.file.size) : "";
    case "getcontenttype":
      return r.kind === "file" ? escapeXml(r.file.contentType) : "";
    case "getetag":
      return r.kind === "file" ? escapeXml(etagOf(r)!) : "";
    case "getlastmodified":
      return r.kind === "file" ? toHttpDate(r.file.updatedAt) : r.kind === "folder" ? toHttpDate(r.folder.updatedAt) : "";
    case "resourcetype":
      return r.kind === "file" ? "" : "<D:collection/>";
    case "lockdiscovery":
      return e.locks.length === 0 ? "" : covering(e.locks, e.path).map((l) => activeLock(l, now)).join("");
    case "supportedlock":
      return SUPPORTED_LOCK;
  }
}

/** A PROPFIND body: none (allprop), `propfind` with allprop, propname or prop. @throws DavError 400; 413 past MAX_PROPFIND_NAMES */
function parsePropfind(root: XmlElement | undefined): PropfindKind {
  if (root === undefined) return { kind: "allprop" };
  if (!isElement(root, DAV_NS, "propfind")) throw new DavError(400, "a PROPFIND body is a DAV:propfind element");
  for (const c of childElements(root)) {
    if (isElement(c, DAV_NS, "allprop")) return { kind: "allprop" };
    if (isElement(c, DAV_NS, "propname")) return { kind: "propname" };
    if (isElement(c, DAV_NS, "prop")) {
      const asked = childElements(c);
      if (asked.length > MAX_PROPFIND_NAMES) throw overCap(413, "a PROPFIND asks for too many properties", "MAX_PROPFIND_NAMES", MAX_PROPFIND_NAMES);
      return { kind: "prop", names: asked.map((p) => ({ ns: p.namespaceURI, name: p.localName })) };
    }
  }
  throw new DavError(400, "DAV:propfind holds none of allprop, propname, prop");
}

/** One PROPPATCH instruction, in document order. */
type Instruction = { op: "set"; row: DavPropertyRow } | { op: "remove"; ns: string; name: string };

/**
 * Answers PROPPATCH: all the instructions apply, in order, or none does (RFC 4918 §9.2). The
 * outcome of the instructions is one set of removals and one of values (a later instruction on
 * a name overrides an earlier one), written in a few multi-row statements in one transaction
 * that then checks the resource's caps and the owner's quota.
 * @throws DavError 400; 507 past MAX_PROPERTIES_PER_RESOURCE or MAX_PROPERTY_BYTES_PER_RESOURCE;
 *   QuotaExceededError (507) past the quota
 */
export async function proppatch(req: DavRequest): Promise<void> {
  requireScope(req.principal, "files.write");
  const root = await parseXml(await readSmallBody(req.ex.body()));
  if (!isElement(root, DAV_NS, "propertyupdate")) throw new DavError(400, "a PROPPATCH body is a DAV:propertyupdate element");
  const slicer = new Slicer();
  const instructions: Instruction[] = [];
  for (const c of childElements(root)) {
    const op = isElement(c, DAV_NS, "set") ? "set" : isElement(c, DAV_NS, "remove") ? "remove" : undefined;
    if (op === undefined) continue;
    for (const prop of childElements(c).filter((p) => isElement(p, DAV_NS, "prop"))) {
      for (const p of childElements(prop)) {
        instructions.push(op === "set" ? { op, row: { namespace: p.namespaceURI, name: p.localName, value: serializeElement(p) } } : { op, ns: p.namespaceURI, name: p.localName });
        if (instructions.length % 1024 === 0) await slicer.breathe();
      }
    }
  }
  if (instructions.length === 0) throw new DavError(400, "DAV:propertyupdate holds no property to set or remove");
  const { resource } = await req.resolve();
  if (resource === undefined) throw new DavError(404, "nothing at this path");
  await req.checkChange([{ segments: req.segments, kind: "content" }], resource);
  const nameOf = (i: Instruction) => (i.op === "set" ? { ns: i.row.namespace, name: i.row.name } : { ns: i.ns, name: i.name });
  const isProtected = (i: Instruction) => nameOf(i).ns === DAV_NS && LIVE_SET.has(nameOf(i).name);
  const names = (list: Instruction[]) => list.map((i) => emptyElement(nameOf(i).ns, nameOf(i).name)).join("");
  let body: string;
  if (instructions.some(isProtected)) {
    // One refused, all refused: the protected ones 403, the rest 424 Failed Dependency.
    const others = instructions.filter((i) => !isProtected(i));
    body = propstat(names(instructions.filter(isProtected)), "403 Forbidden") + (others.length === 0 ? "" : propstat(names(others), "424 Failed Dependency"));
  } else {
    // The last instruction on a name decides it.
    const outcome = new Map<string, Instruction>();
    for (const i of instructions) {
      const { ns, name } = nameOf(i);
      const k = `${ns}\n${name}`;
      outcome.delete(k);
      outcome.set(k, i);
    }
    const set: DavPropertyRow[] = [];
    const remove: { namespace: string; name: string }[] = [];
    for (const i of outcome.values()) {
      if (i.op === "set") set.push(i.row);
      else remove.push({ namespace: i.ns, name: i.name });
    }
    const owner = req.principal.userId;
    const key = propertyKey(resource);
    await req.deps.store.transaction(async (tx) => {
      const quota = await req.deps.quotas.lock(tx, owner);
      const before = await tx.dav.propertyTotals(owner, key);
      await tx.dav.applyProperties(owner, key, set, remove);
      const after = await tx.dav.propertyTotals(owner, key);
      if (after.count > MAX_PROPERTIES_PER_RESOURCE) throw overCap(507, "too many dead properties on this resource", "MAX_PROPERTIES_PER_RESOURCE", MAX_PROPERTIES_PER_RESOURCE);
      if (after.bytes > MAX_PROPERTY_BYTES_PER_RESOURCE) throw overCap(507, "the dead properties of this resource are too large", "MAX_PROPERTY_BYTES_PER_RESOURCE", MAX_PROPERTY_BYTES_PER_RESOURCE);
      await quota.settle(after.bytes - before.bytes);
    });
    body = propstat(names(instructions), "200 OK");
  }
  const response = `<D:response><D:href>${escapeXml(hrefOf(req.segments, resource.kind !== "file"))}</D:href>${body}</D:response>`;
  req.ex.respond(207, XML_TYPE, multistatus(response));
}
