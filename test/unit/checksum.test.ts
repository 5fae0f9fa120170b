import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { outcome } from "../support/outcome.ts";
import { checksumOf, crc32cCombine, crc32cUpdate, parseDeclaredChecksum } from "../../src/domain/checksum.ts";

/** CRC32C by its definition, one bit at a time (RFC 3720 §B.4; reflected polynomial 0x82F63B78): the reference. */
function bitwiseCrc32c(bytes: Uint8Array, state = 0): number {
  let crc = ~state;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return ~crc >>> 0;
}

describe("CRC32C", () => {
  test.each([
    ["check value of the Castagnoli polynomial", "123456789", "4waSgw=="],
    ["empty content", "", "AAAAAA=="],
    // RFC 3720 §B.4: 32 bytes of zeros → 0x8A9136AA.
    ["RFC 3720 zeros", new Uint8Array(32), Buffer.from([0x8a, 0x91, 0x36, 0xaa]).toString("base64")],
    // RFC 3720 §B.4: 32 bytes of 0xFF → 0x62A8AB43.
    ["RFC 3720 ones", new Uint8Array(32).fill(0xff), Buffer.from([0x62, 0xa8, 0xab, 0x43]).toString("base64")],
  ])("%s", (_, input, want) => expect(checksumOf(input)).toBe(want));

  // RFC 3720 §B.4's other two vectors, as 32-bit values.
  test.each([
    ["incrementing bytes 0x00…0x1F", Uint8Array.from({ length: 32 }, (_, i) => i), 0x46dd794e],
    ["decrementing bytes 0x1F…0x00", Uint8Array.from({ length: 32 }, (_, i) => 31 - i), 0x113fdb5c],
  ])("RFC 3720 %s", (_, input, want) => expect(crc32cUpdate(0, input)).toBe(want));

  test("random content of any length, split anywhere, equals the bitwise reference", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), fc.nat(), (bytes, a, b) => {
        const [i, j] = [a % (bytes.length + 1), b % (bytes.length + 1)].sort((x, y) => x - y) as [number, number];
        const pieces = crc32cUpdate(crc32cUpdate(crc32cUpdate(0, bytes.subarray(0, i)), bytes.subarray(i, j)), bytes.subarray(j));
        expect({ whole: crc32cUpdate(0, bytes), pieces }).toEqual({ whole: bitwiseCrc32c(bytes), pieces: bitwiseCrc32c(bytes) });
      }),
      { numRuns: 2000 },
    );
  });

  // The implementation copies at most 64 KiB at a time into the WebAssembly memory: lengths
  // around that window, unaligned views into a larger buffer, and a signed state.
  test.each([65_535, 65_536, 65_537, 3 * 65_536 + 17, 1_000_003])("%i random bytes at an odd offset", (length) => {
    const backing = crypto.getRandomValues(new Uint8Array(length + 3));
    const bytes = backing.subarray(3);
    const state = bitwiseCrc32c(crypto.getRandomValues(new Uint8Array(7)));
    expect({ fresh: crc32cUpdate(0, bytes), continued: crc32cUpdate(state | 0, bytes) }).toEqual({
      fresh: bitwiseCrc32c(bytes),
      continued: bitwiseCrc32c(bytes, state),
    });
  });
});

describe("crc32cCombine", () => {
  test("the checksums of two pieces combine into the bitwise checksum of both, signed states too", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), (bytes, a) => {
        const i = a % (bytes.length + 1);
        const [head, tail] = [bytes.subarray(0, i), bytes.subarray(i)];
        expect(crc32cCombine(bitwiseCrc32c(head) | 0, bitwiseCrc32c(tail), tail.length)).toBe(bitwiseCrc32c(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  // The shift by the second piece's length is built from x^(2^k) by repeated squaring: long pieces too.
  test.each([65_536, 16 * 2 ** 20 + 5])("a second piece of %i bytes", (length) => {
    const head = crypto.getRandomValues(new Uint8Array(11));
    const tail = crypto.getRandomValues(new Uint8Array(length));
    expect(crc32cCombine(crc32cUpdate(0, head), crc32cUpdate(0, tail), length)).toBe(crc32cUpdate(crc32cUpdate(0, head), tail));
  });

  test("of an empty second piece is the first's checksum; of an empty first, the second's", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(100));
    expect([crc32cCombine(crc32cUpdate(0, bytes), 0, 0), crc32cCombine(0, crc32cUpdate(0, bytes), bytes.length)]).toEqual([crc32cUpdate(0, bytes), crc32cUpdate(0, bytes)]);
  });
});

describe("parseDeclaredChecksum", () => {
  const h = (entries: Record<string, string>) => new Headers(entries);
  test.each([
    ["none", {}, { ok: undefined }],
    ["x-goog-hash", { "x-goog-hash": "crc32c=4waSgw==" }, { ok: "4waSgw==" }],
    ["x-goog-hash with md5", { "x-goog-hash": "md5=XrY7u+Ae7tCTyyK7j1rNww==, crc32c=4waSgw==" }, { ok: "4waSgw==" }],
    ["x-goog-hash md5 only", { "x-goog-hash": "md5=XrY7u+Ae7tCTyyK7j1rNww==" }, { ok: undefined }],
    ["x-amz-checksum-crc32c", { "x-amz-checksum-crc32c": "4waSgw==" }, { ok: "4waSgw==" }],
    ["both agree", { "x-goog-hash": "crc32c=4waSgw==", "x-amz-checksum-crc32c": "4waSgw==" }, { ok: "4waSgw==" }],
    ["both disagree", { "x-goog-hash": "crc32c=4waSgw==", "x-amz-checksum-crc32c": "AAAAAA==" }, { error: "invalid_argument" }],
    ["malformed", { "x-amz-checksum-crc32c": "hello" }, { error: "invalid_argument" }],
    ["hex instead of base64", { "x-goog-hash": "crc32c=e3069283" }, { error: "invalid_argument" }],
  ])("%s", (_, headers, want) => expect(outcome(() => parseDeclaredChecksum(h(headers)))).toEqual(want));
});
