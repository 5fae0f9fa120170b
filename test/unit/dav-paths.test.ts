// Paths under /dav/ and the names members show under (CONTRACT §12).
import { describe, expect, test } from "bun:test";
import { decoratedId, hrefOf, memberName, segmentsOf } from "../../src/dav/paths.ts";
import { DavError } from "../../src/dav/errors.ts";
import { conflicting, grantedTimeout, locksToHonour, MAX_LOCK_SECONDS } from "../../src/dav/locks.ts";
import type { DavLockRow } from "../../src/storage/ports.ts";

const ID = "AbCdEfGhIjKlMnOpQrStU";

describe("segments and hrefs", () => {
  test.each([
    ["/dav", []],
    ["/dav/", []],
    ["/dav/a/b%20c/", ["a", "b c"]],
    ["/dav/%C3%A9t%C3%A9.txt", ["été.txt"]],
  ])("%s", (path, segments) => {
    expect(segmentsOf(path)).toEqual(segments);
  });

  test.each(["/dav/a//b", "/dav/./a", "/dav/../x", "/dav/a%2Fb", "/dav/%ZZ", "/dav/a%00"])("refuses %s with 400", (path) => {
    expect(() => segmentsOf(path)).toThrow(DavError);
  });

  test("hrefs encode each segment; collections end in a slash", () => {
    expect([hrefOf([], true), hrefOf(["a b", "c?.txt"], false), hrefOf(["d"], true)]).toEqual(["/dav/", "/dav/a%20b/c%3F.txt", "/dav/d/"]);
  });
});

describe("member names", () => {
  test.each([
    ["report.pdf", false, "report.pdf"],
    ["report.pdf", true, `report (${ID}).pdf`],
    ["archive.tar.gz", true, `archive.tar (${ID}).gz`],
    ["README", true, `README (${ID})`],
    [".profile", true, `.profile (${ID})`],
    ["", false, ID],
  ])("%p shared=%p → %p, whose ID reads back", (name, shared, shown) => {
    expect(memberName({ id: ID, name }, shared)).toBe(shown);
    if (shown !== name) expect(decoratedId(shown)).toBe(ID);
  });

  test("a plain name carries no ID", () => {
    expect([decoratedId("report.pdf"), decoratedId("a (short).txt")]).toEqual([undefined, undefined]);
  });
});

describe("locks", () => {
  const lock = (path: string, depth: 0 | -1, exclusive = true, token = path): DavLockRow => ({ token, ownerId: "u", path, depth, exclusive, ownerXml: "", timeoutSeconds: 60, expiresAt: 1, createdAt: 0 });

  test("a change honours the locks covering it; a membership change also those below it and on its parent", () => {
    const locks = [lock("/a", -1), lock("/a/b", 0), lock("/c", 0), lock("/c/d/e", 0), lock("/x", 0)];
    expect(locksToHonour(locks, "/a/b/f", "content").map((l) => l.token)).toEqual(["/a"]);
    expect(locksToHonour(locks, "/c/d", "content").map((l) => l.token)).toEqual([]);
    expect(locksToHonour(locks, "/c/d", "membership").map((l) => l.token).sort()).toEqual(["/c", "/c/d/e"]);
  });

  test("exclusive conflicts with anything in scope; shared only with exclusive", () => {
    const locks = [lock("/s", 0, false), lock("/e/f", 0, true)];
    expect(conflicting(locks, "/s", 0, false)).toEqual([]);
    expect(conflicting(locks, "/s", 0, true).length).toBe(1);
    expect(conflicting(locks, "/e", 0, true)).toEqual([]);
    expect(conflicting(locks, "/e", -1, false).length).toBe(1);
  });

  test("Timeout: Second-N (capped), Infinite, the first understood of a list, a default", () => {
    expect([grantedTimeout("Second-30"), grantedTimeout("Infinite, Second-5"), grantedTimeout("Bogus, Second-9"), grantedTimeout("Second-99999999999"), grantedTimeout(null)]).toEqual([
      30,
      MAX_LOCK_SECONDS,
      9,
      MAX_LOCK_SECONDS,
      3600,
    ]);
  });
});
