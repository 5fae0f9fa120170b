// Expiry parsing (CONTRACT §8): ttl and expire_time, examples and properties.
import { expect, test } from "bun:test";
import fc from "fast-check";
import { outcome } from "../support/outcome.ts";
import { formatExpiry, MAX_EXPIRY_MICROS, parseExpiry, parseRfc3339, parseTtl } from "../../src/domain/expiry.ts";

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0) * 1000;
const code = (f: () => unknown) => {
  const r = outcome(f);
  return "ok" in r ? r.ok : r.error;
};

test("ttl: the four units, and refusals", () => {
  expect([parseTtl("90s"), parseTtl("15m"), parseTtl("12h"), parseTtl("7d")]).toEqual([90e6, 900e6, 12 * 3600e6, 7 * 86400e6]);
  for (const bad of ["", "0s", "1", "s", "1w", "1.5h", "-1d", " 1d", "1d ", "01d", "1D", "3700d", "1d1h"]) expect({ bad, r: code(() => parseTtl(bad)) }).toEqual({ bad, r: "invalid_argument" });
});

test("expire_time: RFC 3339 with Z, offsets and fractions; impossible dates refused", () => {
  expect(parseRfc3339("2030-01-31T12:00:00Z")).toBe(Date.UTC(2030, 0, 31, 12) * 1000);
  expect(parseRfc3339("2030-01-31T14:30:00+02:30")).toBe(Date.UTC(2030, 0, 31, 12) * 1000);
  expect(parseRfc3339("2030-01-31t12:00:00.123456789z")).toBe(Date.UTC(2030, 0, 31, 12) * 1000 + 123456);
  for (const bad of ["2030-02-30T00:00:00Z", "2030-01-31 12:00:00Z", "2030-01-31T24:00:00Z", "2030-01-31T12:00:00", "2030-1-31T12:00:00Z", "2030-01-31T12:00:60Z", "tomorrow", "2030-01-31T12:00:00+24:00"]) {
    expect({ bad, r: code(() => parseRfc3339(bad)) }).toEqual({ bad, r: "invalid_argument" });
  }
});

test("parseExpiry: one of the two, in the future, within ten years; \"\" clears only where allowed", () => {
  expect(parseExpiry({}, NOW)).toBeUndefined();
  expect(parseExpiry({ ttl: "1h" }, NOW)).toBe(NOW + 3600e6);
  expect(parseExpiry({ expire_time: "2030-01-01T00:00:00Z" }, NOW)).toBe(Date.UTC(2030, 0, 1) * 1000);
  expect(parseExpiry({ expire_time: "" }, NOW, { allowClear: true })).toBeNull();
  expect(code(() => parseExpiry({ expire_time: "" }, NOW))).toBe("invalid_argument");
  expect(code(() => parseExpiry({ expire_time: "2020-01-01T00:00:00Z" }, NOW))).toBe("invalid_argument");
  expect(code(() => parseExpiry({ expire_time: "2040-01-01T00:00:00Z" }, NOW))).toBe("invalid_argument");
  expect(code(() => parseExpiry({ expire_time: "2030-01-01T00:00:00Z", ttl: "1h" }, NOW))).toBe("invalid_argument");
  expect([formatExpiry(null), formatExpiry(Date.UTC(2030, 0, 1) * 1000)]).toEqual(["", "2030-01-01T00:00:00Z"]);
});

test("property: any ttl or expire_time gives a time in (now, now + 10 years] or invalid_argument, never another error", () => {
  const anyString = fc.oneof(fc.string({ maxLength: 40 }), fc.stringMatching(/^\d{1,11}[smhdSMHD ]?$/), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));
  fc.assert(
    fc.property(fc.option(anyString, { nil: undefined }), fc.option(anyString, { nil: undefined }), (at, ttl) => {
      const r = outcome(() => parseExpiry({ expire_time: at, ttl }, NOW));
      if ("error" in r) return r.error === "invalid_argument";
      const v = r.ok as number | undefined;
      if (at === undefined && ttl === undefined) return v === undefined;
      return typeof v === "number" && v > NOW && v <= NOW + MAX_EXPIRY_MICROS;
    }),
    { numRuns: 3000 },
  );
});

test("property: formatExpiry and parseRfc3339 round-trip every microsecond time", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: Date.UTC(9999, 0, 1) * 1000 }), (micros) => parseRfc3339(formatExpiry(micros)) === micros),
    { numRuns: 3000 },
  );
});
