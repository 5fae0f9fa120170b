/**
 * XML for WebDAV (RFC 4918 §14): request bodies are parsed with @xmldom/xmldom, which resolves
 * namespaces (every element is read by its expanded name, namespace URI + local name, never by
 * its prefix, RFC 4918 §17); answers are written by hand, every text escaped, with `D:` bound to
 * `DAV:` and no default namespace declared, so a stored property without a namespace stays so.
 */
import { DOMParser, XMLSerializer, type Document, type Element } from "@xmldom/xmldom";
import { DavError } from "./errors.ts";

/** The WebDAV namespace (RFC 4918 §21). */
export const DAV_NS = "DAV:";

/** The largest XML request body read (bytes): PROPFIND, PROPPATCH and LOCK bodies are small. */
export const MAX_XML_BYTES = 1024 * 1024;

/** The XML declaration every XML answer starts with. */
export const XML_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n';

/** `text` escaped for XML character data and attribute values. */
export function escapeXml(text: string): string {
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
    if (size > MAX_XML_BYTES) throw new DavError(413, `an XML body is at most ${MAX_XML_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The root element of an XML body, or undefined for an empty (or all white space) body.
 * @throws DavError 400 for a body that is not well-formed XML (namespaces included)
 */
export function parseXml(text: string): Element | undefined {
  if (text.trim() === "") return undefined;
  let doc: Document;
  try {
    doc = new DOMParser({
      onError: (level, message) => {
        if (level !== "warning") throw new Error(message);
      },
    }).parseFromString(text, "text/xml");
  } catch (err) {
    throw new DavError(400, `malformed XML: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`);
  }
  const root = doc.documentElement;
  if (root === null) throw new DavError(400, "malformed XML: no root element");
  return root;
}

/** Whether `el` is `{ns}name`. */
export function isElement(el: Element | null | undefined, ns: string, name: string): el is Element {
  return el !== null && el !== undefined && (el.namespaceURI ?? "") === ns && el.localName === name;
}

/** The element children of `el`, in order (text and comments skipped). */
export function childElements(el: Element): Element[] {
  const out: Element[] = [];
  for (let n = el.firstChild; n !== null; n = n.nextSibling) if (n.nodeType === 1) out.push(n as Element);
  return out;
}

/** The first child of `el` named `{ns}name`. */
export function child(el: Element, ns: string, name: string): Element | undefined {
  return childElements(el).find((c) => isElement(c, ns, name));
}

/** `el` as XML, with the namespace declarations it needs to stand alone. */
export function serializeElement(el: Element): string {
  return new XMLSerializer().serializeToString(el);
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
