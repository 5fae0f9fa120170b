/**
 * The small XML bodies S3 requests carry (DeleteObjects' `Delete`, CompleteMultipartUpload's
 * `CompleteMultipartUpload`): read up to 2 MiB, parsed with @xmldom/xmldom (a DOCTYPE is refused,
 * so no entity is declared or resolved). What S3 answers is escaped with errors.ts's xmlText.
 */
import { DOMParser, type Element } from "@xmldom/xmldom";
import { S3Error } from "./errors.ts";

/** The largest request XML body read (S3's DeleteObjects of 1 000 keys of 1 024 bytes fits). */
export const MAX_XML_BYTES = 2 * 1024 * 1024;

/**
 * The root element of a body, which must be `name`.
 * @throws S3Error MalformedXML (not well-formed, another root), MaxMessageLengthExceeded (past MAX_XML_BYTES)
 */
export async function xmlRoot(body: AsyncIterable<Uint8Array>, name: string): Promise<Element> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > MAX_XML_BYTES) throw new S3Error(400, "MaxMessageLengthExceeded", `an XML body is at most ${MAX_XML_BYTES} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (/<!DOCTYPE/i.test(text)) throw new S3Error(400, "MalformedXML", "a DOCTYPE is not allowed");
  let root: Element | null;
  try {
    const doc = new DOMParser({
      onError: (level, message) => {
        if (level !== "warning") throw new Error(message);
      },
    }).parseFromString(text, "application/xml");
    root = doc.documentElement;
  } catch (err) {
    throw new S3Error(400, "MalformedXML", `the XML is not well-formed: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`);
  }
  if (root === null || root.localName !== name) throw new S3Error(400, "MalformedXML", `the body must be a ${name} document`);
  return root;
}

/** An element's child elements named `name` (any namespace: clients send S3's or none). */
export function childrenNamed(el: Element, name: string): Element[] {
  const out: Element[] = [];
  for (let n = el.firstChild; n !== null; n = n.nextSibling) if (n.nodeType === 1 && (n as Element).localName === name) out.push(n as Element);
  return out;
}

/** The text of `el`'s first child element `name`, or "" without one. */
export function childText(el: Element, name: string): string {
  return childrenNamed(el, name)[0]?.textContent ?? "";
}
