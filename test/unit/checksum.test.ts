import { describe, expect, test } from "bun:test";
import { outcome } from "../support/outcome.ts";
import { checksumOf, parseDeclaredChecksum } from "../../src/domain/checksum.ts";

describe("CRC32C", () => {
  test.each([
    ["check value of the Castagnoli polynomial", "123456789", "4waSgw=="],
    ["empty content", "", "AAAAAA=="],
    // RFC 3720 §B.4: 32 bytes of zeros → 0x8A9136AA.
    ["RFC 3720 zeros", new Uint8Array(32), Buffer.from([0x8a, 0x91, 0x36, 0xaa]).toString("base64")],
    // RFC 3720 §B.4: 32 bytes of 0xFF → 0x62A8AB43.
    ["RFC 3720 ones", new Uint8Array(32).fill(0xff), Buffer.from([0x62, 0xa8, 0xab, 0x43]).toString("base64")],
  ])("%s", (_, input, want) => expect(checksumOf(input)).toBe(want));
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
