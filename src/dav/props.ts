/**
 * PROPFIND and PROPPATCH (RFC 4918 §9.1, §9.2): live properties computed from the File and
 * Folder rows and the locks, dead properties stored as XML in dav_properties (namespaces kept as
 * sent), PROPFIND at Depth 0 and 1 (infinity refused with DAV:propfind-finite-depth), PROPPATCH
 * applied all or nothing in one transaction.
 */
import type { Element } from "@xmldom/xmldom";
import { formatTimestamp, toHttpDate } from "../domain/time.ts";
import { requireScope } from "../domain/principal.ts";
import type { DavPropertyRow } from "../storage/ports.ts";
import { DavError } from "./errors.ts";
import { activeLock, covering, SUPPORTED_LOCK } from "./locks.ts";
import { hrefOf, lockPathOf } from "./paths.ts";
import { etagOf, type DavRequest } from "./request.ts";
import { membersOf, propertyKey, type Resource } from "./resources.ts";
import { childElements, DAV_NS, emptyElement, escapeXml, isElement, parseXml, readSmallBody, serializeElement, XML_HEAD } from "./xml.ts";

/** The live properties cubby computes (RFC 4918 §15), by local name in DAV:. */
const LIVE = ["creationdate", "displayname", "getcontentlength", "getcontenttype", "getetag", "getlastmodified", "lockdiscovery", "resourcetype", "supportedlock"] as const;
const LIVE_SET: ReadonlySet<string> = new Set(LIVE);

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

/** Answers PROPFIND. */
export async function propfind(req: DavRequest): Promise<void> {
  const depthHeader = req.ex.headers.get("depth")?.trim().toLowerCase() ?? "infinity";
  if (depthHeader !== "0" && depthHeader !== "1") {
    if (depthHeader === "infinity") throw new DavError(403, "PROPFIND with Depth: infinity is not served; use 0 or 1", "propfind-finite-depth");
    throw new DavError(400, "Depth: 0, 1 or infinity");
  }
  const ask = parsePropfind(parseXml(await readSmallBody(req.ex.body())));
  const { resource } = await req.resolve();
  if (resource === undefined) throw new DavError(404, "nothing at this path");
  await req.checkIf(resource);
  const entries: { segments: string[]; resource: Resource; name: string }[] = [{ segments: req.segments, resource, name: req.segments[req.segments.length - 1] ?? "" }];
  if (depthHeader === "1" && resource.kind !== "file") {
    for (const m of await membersOf(req.deps, req.principal, resource)) entries.push({ segments: [...req.segments, m.name], resource: m.resource, name: m.name });
  }
  const locks = await req.locks();
  const now = req.now();
  const wantsDead = ask.kind !== "prop" || ask.names.some((n) => n.ns !== DAV_NS || !LIVE_SET.has(n.name));
  let body = "";
  for (const e of entries) {
    const live = liveProperties(e.resource, e.name, () => covering(locks, lockPathOf(e.segments)).map((l) => activeLock(l, now)).join(""));
    const dead = wantsDead ? await req.deps.store.dav.properties(req.principal.userId, propertyKey(e.resource)) : [];
    body += `<D:response><D:href>${escapeXml(hrefOf(e.segments, e.resource.kind !== "file"))}</D:href>${propstats(ask, live, dead)}</D:response>`;
  }
  req.ex.respond(207, { "content-type": 'application/xml; charset="utf-8"' }, multistatus(body));
}

/** The propstats of one resource for what was asked. */
function propstats(ask: PropfindKind, live: Map<string, () => string>, dead: DavPropertyRow[]): string {
  if (ask.kind === "propname") {
    const names = [...live.keys()].map((n) => `<D:${n}/>`).join("") + dead.map((d) => emptyElement(d.namespace, d.name)).join("");
    return propstat(names, "200 OK");
  }
  if (ask.kind === "allprop") {
    const values = [...live.entries()].map(([n, v]) => emptyElement(DAV_NS, n, v())).join("") + dead.map((d) => d.value).join("");
    return propstat(values, "200 OK");
  }
  let found = "";
  let missing = "";
  for (const { ns, name } of ask.names) {
    const value = ns === DAV_NS ? live.get(name) : undefined;
    const stored = value === undefined ? dead.find((d) => d.namespace === ns && d.name === name) : undefined;
    if (value !== undefined) found += emptyElement(DAV_NS, name, value());
    else if (stored !== undefined) found += stored.value;
    else missing += emptyElement(ns, name);
  }
  return (found === "" && missing !== "" ? "" : propstat(found, "200 OK")) + (missing === "" ? "" : propstat(missing, "404 Not Found"));
}

/** The live properties a resource has, by local name in DAV:, each its value's XML (computed when asked). */
function liveProperties(r: Resource, name: string, lockdiscovery: () => string): Map<string, () => string> {
  const out = new Map<string, () => string>();
  if (r.kind === "file") {
    const f = r.file;
    out.set("creationdate", () => escapeXml(formatTimestamp(f.createdAt)));
    out.set("displayname", () => escapeXml(name));
    out.set("getcontentlength", () => String(f.size));
    out.set("getcontenttype", () => escapeXml(f.contentType));
    out.set("getetag", () => escapeXml(etagOf(r)!));
    out.set("getlastmodified", () => toHttpDate(f.updatedAt));
    out.set("resourcetype", () => "");
  } else {
    if (r.kind === "folder") {
      const f = r.folder;
      out.set("creationdate", () => escapeXml(formatTimestamp(f.createdAt)));
      out.set("displayname", () => escapeXml(name));
      out.set("getlastmodified", () => toHttpDate(f.updatedAt));
    }
    out.set("resourcetype", () => "<D:collection/>");
  }
  out.set("lockdiscovery", lockdiscovery);
  out.set("supportedlock", () => SUPPORTED_LOCK);
  return out;
}

/** A PROPFIND body: none (allprop), `propfind` with allprop, propname or prop. */
function parsePropfind(root: Element | undefined): PropfindKind {
  if (root === undefined) return { kind: "allprop" };
  if (!isElement(root, DAV_NS, "propfind")) throw new DavError(400, "a PROPFIND body is a DAV:propfind element");
  for (const c of childElements(root)) {
    if (isElement(c, DAV_NS, "allprop")) return { kind: "allprop" };
    if (isElement(c, DAV_NS, "propname")) return { kind: "propname" };
    if (isElement(c, DAV_NS, "prop")) return { kind: "prop", names: childElements(c).map((p) => ({ ns: p.namespaceURI ?? "", name: p.localName ?? "" })) };
  }
  throw new DavError(400, "DAV:propfind holds none of allprop, propname, prop");
}

/** One PROPPATCH instruction, in document order. */
type Instruction = { op: "set"; row: DavPropertyRow } | { op: "remove"; ns: string; name: string };

/** Answers PROPPATCH: all the instructions apply, in order, or none does (RFC 4918 §9.2). */
export async function proppatch(req: DavRequest): Promise<void> {
  requireScope(req.principal, "files.write");
  const root = parseXml(await readSmallBody(req.ex.body()));
  if (!isElement(root, DAV_NS, "propertyupdate")) throw new DavError(400, "a PROPPATCH body is a DAV:propertyupdate element");
  const instructions: Instruction[] = [];
  for (const c of childElements(root)) {
    const op = isElement(c, DAV_NS, "set") ? "set" : isElement(c, DAV_NS, "remove") ? "remove" : undefined;
    if (op === undefined) continue;
    for (const prop of childElements(c).filter((p) => isElement(p, DAV_NS, "prop"))) {
      for (const p of childElements(prop)) {
        const ns = p.namespaceURI ?? "";
        const name = p.localName ?? "";
        instructions.push(op === "set" ? { op, row: { namespace: ns, name, value: serializeElement(p) } } : { op, ns, name });
      }
    }
  }
  if (instructions.length === 0) throw new DavError(400, "DAV:propertyupdate holds no property to set or remove");
  const { resource } = await req.resolve();
  if (resource === undefined) throw new DavError(404, "nothing at this path");
  await req.checkChange([{ segments: req.segments, kind: "content" }], resource);
  const nameOf = (i: Instruction) => (i.op === "set" ? { ns: i.row.namespace, name: i.row.name } : { ns: i.ns, name: i.name });
  const isProtected = (i: Instruction) => nameOf(i).ns === DAV_NS && LIVE_SET.has(nameOf(i).name);
  let body: string;
  if (instructions.some(isProtected)) {
    // One refused, all refused: the protected ones 403, the rest 424 Failed Dependency.
    body =
      propstat(instructions.filter(isProtected).map((i) => emptyElement(nameOf(i).ns, nameOf(i).name)).join(""), "403 Forbidden") +
      propstat(instructions.filter((i) => !isProtected(i)).map((i) => emptyElement(nameOf(i).ns, nameOf(i).name)).join(""), "424 Failed Dependency");
    body = body.replace(propstat("", "424 Failed Dependency"), "");
  } else {
    const owner = req.principal.userId;
    const key = propertyKey(resource);
    await req.deps.store.transaction(async (tx) => {
      await tx.users.account(owner);
      for (const i of instructions) {
        if (i.op === "set") await tx.dav.setProperty(owner, key, i.row);
        else await tx.dav.removeProperty(owner, key, i.ns, i.name);
      }
    });
    body = propstat(instructions.map((i) => emptyElement(nameOf(i).ns, nameOf(i).name)).join(""), "200 OK");
  }
  const response = `<D:response><D:href>${escapeXml(hrefOf(req.segments, resource.kind !== "file"))}</D:href>${body}</D:response>`;
  req.ex.respond(207, { "content-type": 'application/xml; charset="utf-8"' }, multistatus(response));
}
