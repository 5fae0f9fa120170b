// The dashboard's size parser (web/size.js, the quota field of the Admin section) reads sizes
// exactly as the CLI's (src/domain/size.ts, whose own cases are in size.test.ts), and what it
// writes back reads as the same bytes.
import { expect, test } from "bun:test";
import fc from "fast-check";
import { parseSize as cliParseSize } from "../../src/domain/size.ts";
// @ts-ignore: a browser module in plain JavaScript (web/ is not type-checked).
import { exactSize, parseSize } from "../../web/size.js";

const CASES = ["0", "1", "5368709120", "5G", "5g", "5 G", "500MiB", "500 mib", "2TB", "1.5G", "1.5", "10KB", "3k", "7 B", "", "G", "5 GiBs", "-1", "5  G", "1e9", "99999999999999999", "1.1234567G", " 12 MiB ", "none"];

test("sizes read as the CLI reads them", () => {
  expect(CASES.map((c) => [c, parseSize(c)])).toEqual(CASES.map((c) => [c, cliParseSize(c)]));
  fc.assert(
    fc.property(fc.tuple(fc.stringMatching(/^\d{0,17}(\.\d{0,7})?$/), fc.constantFrom("", " ", "  "), fc.constantFrom("", "b", "K", "kib", "M", "MiB", "g", "GB", "T", "tib", "x", "kk")), ([n, space, unit]) => {
      const text = `${n}${space}${unit}`;
      expect(parseSize(text)).toBe(cliParseSize(text));
    }),
  );
});

test("a quota written back reads as the same bytes", () => {
  for (const bytes of [0, 1, 1023, 1024, 1536, 5 * 1024 ** 3, 500 * 1024 ** 2, 2e12, 3 * 1024 ** 4]) expect(parseSize(exactSize(bytes))).toBe(bytes);
  expect([exactSize(5 * 1024 ** 3), exactSize(500 * 1024 ** 2), exactSize(1234)]).toEqual(["5 GiB", "500 MiB", "1234 B"]);
});
