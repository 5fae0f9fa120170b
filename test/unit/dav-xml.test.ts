// The WebDAV body parser (src/dav/xml.ts): expanded names whatever the prefixes, a property's
// element kept as sent with the declarations it inherits, what is refused as malformed, and a
// 1 MiB body parsed without holding the event loop.
import { expect, test } from "bun:test";
import { DavError } from "../../src/dav/errors.ts";
import { childElements, parseXml, serializeElement } from "../../src/dav/xml.ts";
import { SLICE_MS } from "../../src/slices.ts";

test("names are expanded: prefixes, the default namespace, none", async () => {
  const root = (await parseXml('<?xml version="1.0"?><a:propfind xmlns:a="DAV:" xmlns="urn:d"><a:prop><x/><y xmlns=""/><z:w xmlns:z="urn:z"/></a:prop></a:propfind>'))!;
  expect([root.namespaceURI, root.localName]).toEqual(["DAV:", "propfind"]);
  const props = childElements(childElements(root)[0]!).map((e) => [e.namespaceURI, e.localName]);
  expect(props).toEqual([["urn:d", "x"], ["", "y"], ["urn:z", "w"]]);
  expect(await parseXml("  \n")).toBeUndefined();
});

test("a property is kept as sent, with the inherited declarations it uses added, and parses again to the same names", async () => {
  const root = (await parseXml('<D:set xmlns:D="DAV:" xmlns:b="urn:b" xmlns="urn:d" xmlns:u="urn:unused"><b:p kind="a&amp;b"><inner>1 &lt; 2</inner><![CDATA[<raw>]]></b:p></D:set>'))!;
  const value = serializeElement(childElements(root)[0]!);
  expect(value).toBe('<b:p xmlns:b="urn:b" xmlns="urn:d" kind="a&amp;b"><inner>1 &lt; 2</inner><![CDATA[<raw>]]></b:p>');
  const again = (await parseXml(value))!;
  expect([again.namespaceURI, childElements(again)[0]!.namespaceURI]).toEqual(["urn:b", "urn:d"]);
});

test.each([
  ["<a>", "not closed"],
  ["<a></b>", "closes nothing open"],
  ["<a/><b/>", "more than one root"],
  ["<x:a/>", "prefix x is not declared"],
  ['<a xmlns:x=""/>', "empty namespace"],
  ["<a>&nbsp;</a>", "undefined entity"],
  ['<!DOCTYPE a [<!ENTITY e "e">]><a/>', "DOCTYPE"],
  ['<a b="1" b="2"/>', "repeated"],
  ["text", "outside the root"],
])("%p is refused with 400 (%s)", async (body, why) => {
  const err = await parseXml(body).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err instanceof DavError && err.status).toBe(400);
  expect((err as Error).message).toContain(why);
});

test("a 1 MiB body of 10 000 properties is parsed in slices: the event loop is never held much past a slice", async () => {
  let props = "";
  for (let i = 0; i < 10_000; i++) props += `<b:p${i}>${"v".repeat(82)}</b:p${i}>`;
  const body = `<D:propertyupdate xmlns:D="DAV:" xmlns:b="urn:b"><D:set><D:prop>${props}</D:prop></D:set></D:propertyupdate>`;
  let worst = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 0);
  const root = (await parseXml(body))!;
  clearInterval(timer);
  expect(childElements(childElements(childElements(root)[0]!)[0]!)).toHaveLength(10_000);
  // Generous: the machine is shared; what matters is that no single stretch takes the whole parse.
  expect(worst).toBeLessThan(SLICE_MS * 8);
});
