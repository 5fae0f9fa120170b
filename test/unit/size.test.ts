// Sizes as people write them (domain/size.ts parseSize; CONTRACT §15, §17): bytes, binary units
// (K, KiB, …), decimal units (KB, …), any case, an optional space, fractions only with a unit.
import { expect, test } from "bun:test";
import fc from "fast-check";
import { formatSize, parseSize } from "../../src/domain/size.ts";

test.each([
  ["5368709120", 5368709120],
  ["0", 0],
  ["5G", 5 * 1024 ** 3],
  ["5g", 5 * 1024 ** 3],
  ["500MiB", 500 * 1024 ** 2],
  ["500 MiB", 500 * 1024 ** 2],
  ["2TB", 2 * 1000 ** 4],
  ["1.5G", 1.5 * 1024 ** 3],
  ["10KB", 10_000],
  ["10k", 10_240],
  ["7B", 7],
])("%p is %p bytes", (text, bytes) => {
  expect(parseSize(text)).toBe(bytes);
});

test.each(["", "-1", "1.5", "G", "5 furlongs", "5GG", "1e9", "99999999999999999G", "0x10", "5 G B"])("%p is not a size", (text) => {
  expect(parseSize(text)).toBeUndefined();
});

test("what formatSize writes (above 10 units, whole) reads back within its rounding", () => {
  fc.assert(
    fc.property(fc.integer({ min: 10 * 1024, max: 2 ** 50 }), (bytes) => {
      const back = parseSize(formatSize(bytes))!;
      expect(Math.abs(back - bytes) / bytes).toBeLessThan(0.05);
    }),
  );
});
