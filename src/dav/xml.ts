/**
 * XML for WebDAV (RFC 4918 §14): request bodies are parsed here, namespace-aware (every element
 * is read by its expanded name, namespace URI + local name, never by its prefix, RFC 4918 §17;
 * Namespaces in XML 1.0), by a small parser that yields to the event loop between slices of
 * tags (CONTRACT §14: a 1 MiB PROPPATCH of 90 000 properties must not hold the process; a DOM
 * parser took 0.9 s for it). A property's element is kept as the text the client sent, with the
 * namespace declarations it inherits added to its start tag, so it stands alone. No DOCTYPE is
 * accepted (no entity but the five predefined and character references). Answers are written by
 * hand, every text escaped, with `D:` bound to `DAV:` and no default namespace declared, so a
 * stored property without a namespace stays so.
 */
import { Slicer } from "../slices.ts";
import { DavError } from "./errors.ts";

/** The WebDAV namespace (RFC 4918 §21). */
export const DAV_NS = "DAV:";

/** The largest XML request body read (bytes): PROPFIND, PROPPATCH and LOCK bodies are small. */
export const MAX_XML_BYTES = 1024 * 1024;

/** The XML declaration every XML answer starts with. */
export const XML_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n';

const NEEDS_ESCAPE = /[&<>"']/;

/** `text` escaped for XML character data and attribute values. */
export function escapeXml(text: string): string {
  if (!NEEDS_ESCAPE.test(text)) return text;
  return text.replace(/[&<>"']/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === '"' ? "&quot;" : "&apos;"));
}

/**
 * Reads a request body of at most {@link MAX_XML_BYTES} as text.
 * @throws DavError 413 past the limit
 */
export async function readSmallBody(body: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > MAX_XML_BYTES) throw new DavError(413, `an XML body is at most ${MAX_XML_BYTES} bytes (cap MAX_XML_BYTES = ${MAX_XML_BYTES})`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** An element of a parsed body: its expanded name, its element children, where it is in the text. */
export interface XmlElement {
  /** The namespace URI; "" for none. */
  readonly namespaceURI: string;
  readonly localName: string;
  readonly children: XmlElement[];
  /** The body's text, and the element's span in it: `<` of its start tag to after its end tag's `>`. */
  readonly source: string;
  readonly start: number;
  end: number;
  /** Where its start tag's name ends (declarations are inserted there). */
  readonly nameEnd: number;
  /** The declarations in scope at its parent (prefix → URI, "" the default namespace). */
  readonly inherited: ReadonlyMap<string, string>;
  /** The prefixes it declares itself ("" the default namespace). */
  readonly declared: ReadonlySet<string>;
  /** The prefixes its name and attributes use ("" for an unprefixed name: the default namespace). */
  readonly used: readonly string[];
}

/** Tags parsed between two chances to yield. */
const TAGS_PER_CHECK = 256;

const NAME = /[^\s/>=<&"':!?]+(?::[^\s/>=<&"':!?]+)?/y;
const ATTRIBUTE = /\s*([^\s/>=<&"']+)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')/y;
const TAG_END = /\s*(\/?)>/y;
const BAD_REFERENCE = /&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);)/;
const EMPTY_SCOPE: ReadonlyMap<string, string> = new Map([["xml", "http://www.w3.org/XML/1998/namespace"]]);

/**
 * The root element of an XML body, or undefined for an empty (or all white space) body. Yields
 * to the event loop every {@link TAGS_PER_CHECK} tags when the work has run a slice.
 * @throws DavError 400 for a body that is not well-formed XML (namespaces included) or has a DOCTYPE
 */
export async function parseXml(text: string): Promise<XmlElement | undefined> {
  if (text.trim() === "") return undefined;
  const bad = (why: string) => new DavError(400, `malformed XML: ${why}`);
  const slicer = new Slicer();
  const stack: { el: XmlElement; qname: string; scope: ReadonlyMap<string, string> }[] = [];
  let root: XmlElement | undefined;
  let tags = 0;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const checkText = (from: number, to: number) => {
    if (from === to) return;
    const chunk = text.slice(from, to);
    if (stack.length === 0) {
      if (chunk.trim() !== "") throw bad("text outside the root element");
    } else if (chunk.includes("&") && BAD_REFERENCE.test(chunk)) throw bad("an undefined entity or a bare '&'");
    else if (chunk.includes("]]>")) throw bad("']]>' in text");
  };
  for (;;) {
    const lt = text.indexOf("<", i);
    if (lt === -1) {
      checkText(i, text.length);
      break;
    }
    checkText(i, lt);
    if (text.startsWith("<?", lt)) {
      const close = text.indexOf("?>", lt + 2);
      if (close === -1) throw bad("an unterminated processing instruction");
      i = close + 2;
      continue;
    }
    if (text.startsWith("<!--", lt)) {
      const close = text.indexOf("-->", lt + 4);
      if (close === -1) throw bad("an unterminated comment");
      i = close + 3;
      continue;
    }
    if (text.startsWith("<![CDATA[", lt)) {
      if (stack.length === 0) throw bad("CDATA outside the root element");
      const close = text.indexOf("]]>", lt + 9);
      if (close === -1) throw bad("an unterminated CDATA section");
      i = close + 3;
      continue;
    }
    if (text.startsWith("<!", lt)) throw bad("a DOCTYPE or declaration is not accepted");
    if (++tags % TAGS_PER_CHECK === 0) await slicer.breathe();
    if (text.startsWith("</", lt)) {
      NAME.lastIndex = lt + 2;
      const m = NAME.exec(text);
      const top = stack.pop();
      if (m === null || top === undefined || m[0] !== top.qname) throw bad(`an end tag that closes nothing open${top === undefined ? "" : ` (expected </${top.qname}>)`}`);
      TAG_END.lastIndex = NAME.lastIndex;
      const end = TAG_END.exec(text);
      if (end === null || end[1] === "/") throw bad("a malformed end tag");
      top.el.end = TAG_END.lastIndex;
      i = TAG_END.lastIndex;
      continue;
    }
    if (root !== undefined && stack.length === 0) throw bad("more than one root element");
    NAME.lastIndex = lt + 1;
    const m = NAME.exec(text);
    if (m === null) throw bad("a malformed start tag");
    const qname = m[0];
    const nameEnd = NAME.lastIndex;
    let at = nameEnd;
    const attributes: [string, string][] = [];
    for (;;) {
      TAG_END.lastIndex = at;
      const end = TAG_END.exec(text);
      if (end !== null) break;
      ATTRIBUTE.lastIndex = at;
      const a = ATTRIBUTE.exec(text);
      if (a === null || !/\s/.test(text[at] ?? "")) throw bad(`a malformed attribute in <${qname}>`);
      attributes.push([a[1]!, a[2] ?? a[3] ?? ""]);
      at = ATTRIBUTE.lastIndex;
    }
    TAG_END.lastIndex = at;
    const tagEnd = TAG_END.exec(text)!;
    const selfClosing = tagEnd[1] === "/";
    i = TAG_END.lastIndex;
    const inherited = stack.length === 0 ? EMPTY_SCOPE : stack[stack.length - 1]!.scope;
    let scope = inherited;
    const declared = new Set<string>();
    const seen = new Set<string>();
    for (const [name, value] of attributes) {
      if (seen.has(name)) throw bad(`attribute ${name} repeated in <${qname}>`);
      seen.add(name);
      if (BAD_REFERENCE.test(value)) throw bad("an undefined entity or a bare '&' in an attribute");
      const prefix = name === "xmlns" ? "" : name.startsWith("xmlns:") ? name.slice(6) : undefined;
      if (prefix === undefined) continue;
      if (prefix === "xmlns" || prefix === "xml") throw bad(`the prefix ${prefix} cannot be declared`);
      if (prefix !== "" && value === "") throw bad(`the prefix ${prefix} is declared with an empty namespace`);
      if (scope === inherited) scope = new Map(inherited);
      (scope as Map<string, string>).set(prefix, decodeReferences(value));
      declared.add(prefix);
    }
    const colon = qname.indexOf(":");
    const prefix = colon === -1 ? "" : qname.slice(0, colon);
    const used = [prefix];
    for (const [name] of attributes) {
      const at = name.indexOf(":");
      if (at <= 0 || name.slice(0, at) === "xmlns") continue;
      if (!scope.has(name.slice(0, at))) throw bad(`the prefix of attribute ${name} is not declared`);
      used.push(name.slice(0, at));
    }
    const ns = scope.get(prefix);
    if (prefix !== "" && ns === undefined) throw bad(`the prefix ${prefix} is not declared`);
    const el: XmlElement = { namespaceURI: ns ?? "", localName: colon === -1 ? qname : qname.slice(colon + 1), children: [], source: text, start: lt, end: i, nameEnd, inherited, declared, used };
    if (stack.length === 0) root = el;
    else stack[stack.length - 1]!.el.children.push(el);
    if (!selfClosing) stack.push({ el, qname, scope });
  }
  if (stack.length > 0) throw bad(`<${stack[stack.length - 1]!.qname}> is not closed`);
  if (root === undefined) throw bad("no root element");
  return root;
}

/** An attribute value's references decoded (a namespace URI compares by its characters). */
function decodeReferences(value: string): string {
  if (!value.includes("&")) return value;
  return value.replace(/&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);/g, (_, r: string) =>
    r === "amp" ? "&" : r === "lt" ? "<" : r === "gt" ? ">" : r === "quot" ? '"' : r === "apos" ? "'" : String.fromCodePoint(r[1] === "x" ? Number.parseInt(r.slice(2), 16) : Number(r.slice(1))),
  );
}

/** Whether `el` is `{ns}name`. */
export function isElement(el: XmlElement | null | undefined, ns: string, name: string): el is XmlElement {
  return el !== null && el !== undefined && el.namespaceURI === ns && el.localName === name;
}

/** The element children of `el`, in order (text and comments skipped). */
export function childElements(el: XmlElement): XmlElement[] {
  return el.children;
}

/** The first child of `el` named `{ns}name`. */
export function child(el: XmlElement, ns: string, name: string): XmlElement | undefined {
  return el.children.find((c) => isElement(c, ns, name));
}

/**
 * `el` as XML that stands alone: its text as sent, with the namespace declarations it inherits
 * (and does not make itself) that it or its descendants use added to its start tag.
 */
export function serializeElement(el: XmlElement): string {
  let used: { has(p: string): boolean } = { has: (p) => el.used.includes(p) };
  if (el.children.length > 0) {
    const all = new Set<string>();
    for (const stack = [el]; stack.length > 0; ) {
      const e = stack.pop()!;
      for (const p of e.used) all.add(p);
      stack.push(...e.children);
    }
    used = all;
  }
  let added = "";
  for (const [prefix, uri] of el.inherited) {
    if (prefix === "xml" || el.declared.has(prefix) || !used.has(prefix)) continue;
    added += prefix === "" ? ` xmlns="${escapeXml(uri)}"` : ` xmlns:${prefix}="${escapeXml(uri)}"`;
  }
  return el.source.slice(el.start, el.nameEnd) + added + el.source.slice(el.nameEnd, el.end);
}

/**
 * An empty element for a property name in an answer: `D:` for DAV:, `xmlns=""` for none, else
 * a prefix declared on the element itself.
 */
export function emptyElement(ns: string, name: string, inner = ""): string {
  if (ns === DAV_NS) return inner === "" ? `<D:${name}/>` : `<D:${name}>${inner}</D:${name}>`;
  const open = ns === "" ? `<${name} xmlns=""` : `<x:${name} xmlns:x="${escapeXml(ns)}"`;
  const close = ns === "" ? `</${name}>` : `</x:${name}>`;
  return inner === "" ? `${open}/>` : `${open}>${inner}${close}`;
}
