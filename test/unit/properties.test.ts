// Property-based tests (fast-check) of every parser: any input gives a domain value or an
// AppError("invalid_argument"), never another exception, and accepted values obey the spec.
import { expect, test } from "bun:test";
import fc from "fast-check";
import { outcome } from "../support/outcome.ts";
import { parseDeclaredChecksum } from "../../src/domain/checksum.ts";
import { contentDisposition } from "../../src/domain/content-disposition.ts";
import {
  parseFileId,
  parseMediaType,
  parseName,
  parsePageSize,
  parsePageToken,
  parseSlug,
  parseVisibility,
} from "../../src/domain/params.ts";
import { parseRange } from "../../src/domain/range.ts";

const RUNS = { numRuns: 2000 };

/** The parsed value, or "rejected" for invalid_argument; any other outcome fails the property. */
function accepted<T>(parse: () => T): T | "rejected" {
  const r = outcome(parse);
  if ("ok" in r) return r.ok as T;
  if (r.error !== "invalid_argument") throw new Error(`unexpected error code ${r.error}`);
  return "rejected";
}

const anyString = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "grapheme", maxLength: 300 }), fc.string({ unit: "binary", maxLength: 300 }));

test("slugs: accepted ones are ≤128 chars of the spec's alphabet and unchanged", () => {
  fc.assert(
    fc.property(fc.oneof(anyString, fc.stringMatching(/^[A-Za-z0-9._~-]{0,140}$/)), (s) => {
      const r = accepted(() => parseSlug(s));
      if (r !== "rejected") expect(r === s && s.length <= 128 && /^[A-Za-z0-9._~-]*$/.test(s)).toBe(true);
    }),
    RUNS,
  );
});

test("names: accepted ones have ≤255 code points, no '/' and no control characters", () => {
  fc.assert(
    fc.property(anyString, (s) => {
      const r = accepted(() => parseName(s));
      if (r !== "rejected") expect(r === s && [...s].length <= 255 && !/[/\x00-\x1F\x7F]/.test(s)).toBe(true);
    }),
    RUNS,
  );
});

test("ids, visibility, page sizes and tokens never throw anything but invalid_argument", () => {
  fc.assert(
    fc.property(anyString, (s) => {
      const id = accepted(() => parseFileId(s));
      if (id !== "rejected") expect(/^[A-Za-z0-9_-]{21}$/.test(id)).toBe(true);
      const v = accepted(() => parseVisibility(s));
      if (v !== "rejected") expect(["private", "internal", "public"]).toContain(v);
      const n = accepted(() => parsePageSize(s));
      if (n !== "rejected") expect(Number.isInteger(n) && n >= 1 && n <= 1000).toBe(true);
      accepted(() => parsePageToken(s));
    }),
    RUNS,
  );
});

test("media types: accepted ones carry no CR, LF or other control characters (no header injection)", () => {
  fc.assert(
    fc.property(fc.oneof(anyString, fc.constantFrom("text/plain", "a/b; c=d", 'x/y; q="a\\"b"')), (s) => {
      const r = accepted(() => parseMediaType(s));
      if (r !== "rejected") expect(/[\x00-\x08\x0A-\x1F\x7F]/.test(r)).toBe(false);
    }),
    RUNS,
  );
});

test("Range headers: never throw; a range is always within the content", () => {
  fc.assert(
    fc.property(fc.oneof(anyString, fc.tuple(fc.nat(), fc.nat()).map(([a, b]) => `bytes=${a}-${b}`), fc.nat().map((n) => `bytes=-${n}`)), fc.nat(1 << 30), (h, size) => {
      const r = parseRange(h, size);
      if (r.kind === "range") expect(r.range.start >= 0 && r.range.start <= r.range.end && r.range.end < size).toBe(true);
    }),
    RUNS,
  );
});

test("checksum headers: never throw anything but invalid_argument", () => {
  fc.assert(
    fc.property(anyString, anyString, (goog, amz) => {
      const headers = new Map([["x-goog-hash", goog], ["x-amz-checksum-crc32c", amz]]);
      const r = accepted(() => parseDeclaredChecksum({ get: (n) => headers.get(n) ?? null }));
      if (r !== "rejected" && r !== undefined) expect(/^[A-Za-z0-9+/]{6}==$/.test(r)).toBe(true);
    }),
    RUNS,
  );
});

test("Content-Disposition of any valid name is one line of visible ASCII", () => {
  fc.assert(
    fc.property(anyString, (s) => {
      const name = accepted(() => parseName(s));
      if (name === "rejected") return;
      expect(/^[\x20-\x7E]*$/.test(contentDisposition("inline", name))).toBe(true);
    }),
    RUNS,
  );
});
