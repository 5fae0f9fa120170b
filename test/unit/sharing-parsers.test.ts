// The parsers of sharing (CONTRACT §8): table rows for the cases that matter and fast-check
// properties over everything else: any input gives a domain value or AppError
// invalid_argument, never another exception, and accepted values round-trip.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { formatExpiry, MAX_EXPIRY_MICROS, parseExpiry, parseRfc3339, parseTtl } from "../../src/domain/expiry.ts";
import {
  formatUploadConcat,
  formatUploadMetadata,
  MAX_CONCAT_PARTS,
  parseUploadChecksum,
  parseUploadConcat,
  parseUploadLength,
  parseUploadMetadata,
  parseUploadOffset,
} from "../../src/domain/tus.ts";
import { parseNewUploadLink } from "../../src/http/upload-links-routes.ts";
import { chainOf } from "../../src/storage/s3-partials.ts";
import { outcome } from "../support/outcome.ts";

const RUNS = { numRuns: 2000 };
const NOW = Date.UTC(2026, 10, 23, 12, 0, 0) * 1000;
const anyString = fc.oneof(fc.string({ maxLength: 120 }), fc.string({ unit: "grapheme", maxLength: 120 }), fc.string({ unit: "binary", maxLength: 120 }));

function accepted<T>(parse: () => T): T | "rejected" {
  const r = outcome(parse);
  if ("ok" in r) return r.ok as T;
  if (r.error !== "invalid_argument") throw new Error(`unexpected error code ${r.error}`);
  return "rejected";
}

describe("ttl and expire_time", () => {
  test.each([
    ["90s", 90e6],
    ["15m", 900e6],
    ["12h", 43_200e6],
    ["7d", 604_800e6],
    ["0s", "invalid_argument"],
    ["1.5h", "invalid_argument"],
    ["-5m", "invalid_argument"],
    ["+5m", "invalid_argument"],
    [" 5m", "invalid_argument"],
    ["5M", "invalid_argument"],
    ["5", "invalid_argument"],
    ["99999d", "invalid_argument"],
  ])("ttl %p → %p", (raw, want) => {
    expect(outcome(() => parseTtl(raw))).toEqual(typeof want === "number" ? { ok: want } : { error: want });
  });

  test.each([
    ["2026-11-21T04:27:22Z", Date.UTC(2026, 10, 21, 4, 27, 22) * 1000],
    ["2026-11-21t06:27:22.5+02:00", Date.UTC(2026, 10, 21, 4, 27, 22, 500) * 1000],
    ["2026-11-21T04:27:22.1234567-00:30", Date.UTC(2026, 10, 21, 4, 57, 22) * 1000 + 123_456],
    ["2024-02-29T00:00:00Z", Date.UTC(2024, 1, 29) * 1000],
    ["2026-02-29T00:00:00Z", "invalid_argument"],
    ["2026-11-21T24:00:00Z", "invalid_argument"],
    ["2026-11-21T23:59:60Z", "invalid_argument"],
    ["2026-11-21 04:27:22Z", "invalid_argument"],
    ["2026-11-21T04:27:22", "invalid_argument"],
    ["2026-11-21T04:27:22+0200", "invalid_argument"],
    ["1700000000", "invalid_argument"],
    ["0050-01-01T00:00:00Z", Date.parse("0050-01-01T00:00:00Z") * 1000],
  ])("RFC 3339 %p → %p", (raw, want) => {
    expect(outcome(() => parseRfc3339(raw))).toEqual(typeof want === "number" ? { ok: want } : { error: want });
  });

  test("parseExpiry: one of the two, in the future; absent is undefined, empty clears only where allowed", () => {
    expect(outcome(() => parseExpiry({}, NOW))).toEqual({ ok: undefined });
    expect(outcome(() => parseExpiry({ expire_time: "" }, NOW))).toEqual({ error: "invalid_argument" });
    expect(outcome(() => parseExpiry({ expire_time: "" }, NOW, { allowClear: true }))).toEqual({ ok: null });
    expect(outcome(() => parseExpiry({ ttl: "1h" }, NOW))).toEqual({ ok: NOW + 3_600e6 });
    expect(outcome(() => parseExpiry({ ttl: "1h", expire_time: "2099-01-01T00:00:00Z" }, NOW))).toEqual({ error: "invalid_argument" });
    expect(outcome(() => parseExpiry({ expire_time: "2026-11-23T11:59:59Z" }, NOW))).toEqual({ error: "invalid_argument" });
    expect(outcome(() => parseExpiry({ expire_time: "2026-11-23T12:00:01Z" }, NOW))).toEqual({ ok: NOW + 1e6 });
    expect(formatExpiry(null)).toBe("");
    expect(formatExpiry(NOW + 1e6)).toBe("2026-11-23T12:00:01Z");
  });

  test("properties: accepted ttls are within 1 s .. the bound; any formatted expiry parses back to itself", () => {
    fc.assert(
      fc.property(fc.oneof(anyString, fc.stringMatching(/^[0-9]{1,14}[smhdSMH ]?$/)), (s) => {
        const r = accepted(() => parseTtl(s));
        if (r !== "rejected") expect(/^\d+[smhd]$/.test(s) && r >= 1e6 && r <= MAX_EXPIRY_MICROS).toBe(true);
        accepted(() => parseRfc3339(s));
        accepted(() => parseExpiry({ ttl: s }, NOW));
        accepted(() => parseExpiry({ expire_time: s }, NOW));
      }),
      RUNS,
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3_000_000_000_000_000 }), (delta) => {
        const at = NOW + delta;
        expect(outcome(() => parseExpiry({ expire_time: formatExpiry(at) }, NOW))).toEqual(delta <= MAX_EXPIRY_MICROS ? { ok: at } : { error: "invalid_argument" });
      }),
      RUNS,
    );
  });
});

describe("tus headers", () => {
  test.each([
    ["0", 0],
    ["007", 7],
    ["9007199254740991", Number.MAX_SAFE_INTEGER],
    ["9007199254740992", "invalid_argument"],
    ["-1", "invalid_argument"],
    ["+1", "invalid_argument"],
    [" 1", "invalid_argument"],
    ["1 ", "invalid_argument"],
    ["1e3", "invalid_argument"],
    ["0x10", "invalid_argument"],
    ["", "invalid_argument"],
    [null, "invalid_argument"],
  ])("Upload-Offset / Upload-Length %p → %p", (raw, want) => {
    const expected = typeof want === "number" ? { ok: want } : { error: want };
    expect([outcome(() => parseUploadOffset(raw)), outcome(() => parseUploadLength(raw))]).toEqual([expected, expected]);
  });

  test.each([
    [null, {}],
    ["filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==,is_confidential", { filename: "world_domination_plan.pdf", is_confidential: "" }],
    ["a YQ==, b Yg==", { a: "a", b: "b" }],
    ["a ", { a: "" }],
    ["a YQ==,a Yg==", "invalid_argument"],
    ["a YQ", "invalid_argument"],
    ["a YR==", "invalid_argument"],
    ["a Y_==", "invalid_argument"],
    [",a YQ==", "invalid_argument"],
    ["a  YQ==", "invalid_argument"],
    ["ké YQ==", "invalid_argument"],
    ["a /w==", "invalid_argument"],
    ["a AA==", "invalid_argument"],
  ])("Upload-Metadata %p → %p", (raw, want) => {
    expect(outcome(() => parseUploadMetadata(raw))).toEqual(typeof want === "string" ? { error: want } : { ok: want });
  });

  test.each([
    [null, undefined],
    ["sha1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=", { algorithm: "sha1", digest: Buffer.from("Kq5sNclPz7QV2+lfQIuc6R7oRu0=", "base64") }],
    ["crc32c 4waSgw==", { algorithm: "crc32c", digest: Buffer.from("4waSgw==", "base64") }],
    ["md5 1B2M2Y8AsgTpgAmY7PhCfg==", "invalid_argument"],
    ["SHA1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=", "invalid_argument"],
    ["crc32c 4waSgw", "invalid_argument"],
    ["crc32c Kq5sNclPz7QV2+lfQIuc6R7oRu0=", "invalid_argument"],
    ["crc32c  4waSgw==", "invalid_argument"],
  ])("Upload-Checksum %p → %p", (raw, want) => {
    const r = outcome(() => parseUploadChecksum(raw));
    if (typeof want === "string") expect(r).toEqual({ error: want });
    else expect("ok" in r && JSON.stringify(r.ok) === JSON.stringify(want)).toBe(true);
  });

  test("properties: integers are digits only and within 2^53 - 1; anything else is invalid_argument", () => {
    fc.assert(
      fc.property(fc.oneof(anyString, fc.bigInt({ min: -10n, max: 2n ** 60n }).map(String)), (s) => {
        const r = accepted(() => parseUploadOffset(s));
        if (r !== "rejected") expect(/^\d+$/.test(s) && Number.isSafeInteger(r) && r >= 0 && r === Number(s)).toBe(true);
        accepted(() => parseUploadLength(s));
        accepted(() => parseUploadChecksum(s));
      }),
      RUNS,
    );
  });

  const key = fc.stringMatching(/^[\x21-\x2B\x2D-\x7E]{1,12}$/);
  const value = fc.string({ unit: "grapheme", maxLength: 40 }).filter((v) => !/[\x00-\x08\x0A-\x1F\x7F]/.test(v));

  test("properties: metadata round-trips through its header form; mangled headers are refused, never thrown past", () => {
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 6 }), (pairs) => {
        const parsed = parseUploadMetadata(formatUploadMetadata(pairs));
        expect(parsed).toEqual({ ...pairs });
      }),
      RUNS,
    );
    fc.assert(
      fc.property(anyString, (s) => {
        const r = accepted(() => parseUploadMetadata(s));
        if (r === "rejected") return;
        for (const [k, v] of Object.entries(r)) {
          expect(/^[\x21-\x2B\x2D-\x7E]+$/.test(k)).toBe(true);
          expect(/[\x00-\x08\x0A-\x1F\x7F]/.test(v)).toBe(false);
        }
      }),
      RUNS,
    );
  });
});

describe("Upload-Concat (tus concatenation)", () => {
  const A = "a".repeat(26);
  const B = "B-_".repeat(8) + "bb";
  test.each([
    [null, undefined],
    ["partial", { kind: "partial" }],
    [`final;/v1/uploads/${A} /v1/uploads/${B}`, { kind: "final", uploadIds: [A, B] }],
    [`final; https://files.example.com/v1/uploads/${A}  http://localhost:8080/prefix/v1/uploads/${B} `, { kind: "final", uploadIds: [A, B] }],
    [`final;/v1/uploads/${A}`, { kind: "final", uploadIds: [A] }],
    ["Partial", "invalid_argument"],
    ["final", "invalid_argument"],
    ["final;", "invalid_argument"],
    [`final;/v1/uploads/${A} /v1/uploads/${A}`, "invalid_argument"],
    [`final;/v1/files/${A}`, "invalid_argument"],
    [`final;/v1/uploads/${A}/x`, "invalid_argument"],
    [`final;/v1/uploads/${A}?x=1`, "invalid_argument"],
    ["final;/v1/uploads/short", "invalid_argument"],
    [`final;v1/uploads/${A}`, "invalid_argument"],
  ])("Upload-Concat %p → %p", (raw, want) => {
    expect(outcome(() => parseUploadConcat(raw))).toEqual(typeof want === "string" ? { error: want } : { ok: want });
  });

  test(`at most ${MAX_CONCAT_PARTS} partial uploads`, () => {
    const ids = (n: number) => Array.from({ length: n }, (_, i) => String(i).padStart(26, "0"));
    expect(parseUploadConcat(formatUploadConcat({ kind: "final", uploadIds: ids(MAX_CONCAT_PARTS) }))).toEqual({ kind: "final", uploadIds: ids(MAX_CONCAT_PARTS) });
    expect(outcome(() => parseUploadConcat(formatUploadConcat({ kind: "final", uploadIds: ids(MAX_CONCAT_PARTS + 1) })))).toEqual({ error: "invalid_argument" });
  });

  test("a final's formatted value parses back to its IDs", () => {
    const concat = { kind: "final" as const, uploadIds: [A, B] };
    expect(parseUploadConcat(formatUploadConcat(concat))).toEqual(concat);
    expect(formatUploadConcat({ kind: "partial" })).toBe("partial");
  });
});

describe("upload link bodies", () => {
  test("properties: any JSON object gives a link or invalid_argument; accepted limits are positive whole numbers", () => {
    const field = fc.oneof(fc.string({ maxLength: 20 }), fc.integer({ min: -5, max: 10 ** 10 }), fc.double(), fc.constant(null), fc.boolean(), fc.constantFrom("7d", "90s", "2099-01-01T00:00:00Z", "private", "public"));
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom("name", "ttl", "expire_time", "max_files", "max_bytes", "visibility", "extra"), field, { maxKeys: 5 }), (body) => {
        const r = accepted(() => parseNewUploadLink(body, NOW));
        if (r === "rejected") return;
        for (const limit of [r.maxFiles, r.maxBytes]) expect(limit === null || (Number.isSafeInteger(limit) && limit >= 1)).toBe(true);
        expect(r.expiresAt === null || r.expiresAt > NOW).toBe(true);
        expect(["private", "internal", "public"]).toContain(r.visibility);
      }),
      RUNS,
    );
  });
});

describe("S3 chunk chains", () => {
  test("the chain from 0 to the length is found among stale and overlapping chunks, or none when a gap remains", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 20 }), fc.array(fc.tuple(fc.nat(400), fc.integer({ min: 1, max: 60 })), { maxLength: 15 }), (sizes, stale) => {
        const chunks = [];
        let at = 0;
        for (const size of sizes) {
          chunks.push({ key: `k${at}`, start: at, size });
          at += size;
        }
        const all = [...chunks, ...stale.map(([start, size], i) => ({ key: `s${i}`, start, size }))];
        const chain = chainOf(all, at)!;
        expect(chain).toBeDefined();
        let pos = 0;
        for (const c of chain) {
          expect(c.start).toBe(pos);
          pos += c.size;
        }
        expect(pos).toBe(at);
        // Without the first real chunk and any stale one at 0, nothing starts the chain.
        expect(chainOf(all.filter((c) => c.start !== 0), at)).toBeUndefined();
      }),
      RUNS,
    );
  });
});
