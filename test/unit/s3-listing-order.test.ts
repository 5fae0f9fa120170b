// The order of S3 keys: compareKeys agrees with the byte order of UTF-8 (S3 ListObjects) on
// strings that straddle the surrogates, U+E000–FFFF and prefixes, without allocating.
import { expect, test } from "bun:test";
import { compareKeys } from "../../src/s3/listing.ts";
test("compareKeys is UTF-8 byte order", () => {
  const pool = ["", "a", "a/", "a-b", "a0", "\uE000", "\uFFFF", "\u{10000}", "\u{1F600}", "é", "z", "\uD7FF", "a\u{1F600}", "a\uFFFD"];
  for (const a of pool) for (const b of pool) expect(Math.sign(compareKeys(a, b))).toBe(Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
});
