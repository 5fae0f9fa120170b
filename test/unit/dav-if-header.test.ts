// The If header of RFC 4918 §10.4: untagged and tagged lists, Not, entity tags, and what is refused.
import { describe, expect, test } from "bun:test";
import { parseIf, submittedTokens } from "../../src/dav/if-header.ts";
import { MAX_IF_CONDITIONS, MAX_IF_LISTS } from "../../src/dav/limits.ts";
import { DavError } from "../../src/dav/errors.ts";

describe("parseIf", () => {
  test.each([
    ["(<urn:uuid:1>)", [{ tag: undefined, conditions: [{ not: false, token: "urn:uuid:1" }] }]],
    ['(<urn:uuid:1> ["etag"]) (Not <DAV:no-lock> ["etag"])', [
      { tag: undefined, conditions: [{ not: false, token: "urn:uuid:1" }, { not: false, etag: '"etag"' }] },
      { tag: undefined, conditions: [{ not: true, token: "DAV:no-lock" }, { not: false, etag: '"etag"' }] },
    ]],
    ["<http://h/dav/a> (<urn:uuid:1>) <http://h/dav/b> (Not <urn:uuid:2>)", [
      { tag: "http://h/dav/a", conditions: [{ not: false, token: "urn:uuid:1" }] },
      { tag: "http://h/dav/b", conditions: [{ not: true, token: "urn:uuid:2" }] },
    ]],
    ['([W/"weak"])', [{ tag: undefined, conditions: [{ not: false, etag: 'W/"weak"' }] }]],
  ])("%s", (header, lists) => {
    expect(parseIf(header)).toEqual(lists as ReturnType<typeof parseIf>);
  });

  test.each(["", "()", "<http://h/a>", "(<urn:x>) <http://h/a> (<urn:y>)", "(urn:x)", "(<urn:x>", "junk"])("refuses %p with 400", (header) => {
    let caught: unknown;
    try {
      parseIf(header);
    } catch (err) {
      caught = err;
    }
    expect(caught instanceof DavError && caught.status).toBe(400);
  });

  test("every state token named is submitted, negated or not", () => {
    expect([...submittedTokens(parseIf("(<urn:a>) (Not <urn:b> [\"e\"])"))].sort()).toEqual(["urn:a", "urn:b"]);
  });

  test("past MAX_IF_LISTS lists or MAX_IF_CONDITIONS conditions: 400 naming the cap, in time linear in the header", () => {
    const refused = (header: string) => {
      try {
        parseIf(header);
      } catch (err) {
        return err instanceof DavError ? `${err.status} ${err.message}` : String(err);
      }
      return "accepted";
    };
    expect(parseIf("(<urn:a>) ".repeat(MAX_IF_LISTS))).toHaveLength(MAX_IF_LISTS);
    expect(refused("(<urn:a>) ".repeat(MAX_IF_LISTS + 1))).toContain("400 too many lists in the If header (cap MAX_IF_LISTS");
    expect(refused(`(${"<urn:a> ".repeat(MAX_IF_CONDITIONS + 1)})`)).toContain("400 too many conditions in the If header (cap MAX_IF_CONDITIONS");
  });
});
