import { describe, expect, test } from "bun:test";
import {
  encodePageToken,
  parseFileId,
  parseMediaType,
  parseName,
  parseNameQuery,
  parsePageSize,
  parsePageToken,
  parseSlug,
  parseVisibility,
} from "../../src/domain/params.ts";
import { containsPattern } from "../../src/storage/paging.ts";
import { outcome } from "../support/outcome.ts";

describe("parseSlug", () => {
  test.each([
    ["empty clears", "", { ok: "" }],
    ["all allowed characters", "Az09._~-", { ok: "Az09._~-" }],
    ["128 characters", "a".repeat(128), { ok: "a".repeat(128) }],
    ["129 characters", "a".repeat(129), { error: "invalid_argument" }],
    ["slash", "a/b", { error: "invalid_argument" }],
    ["space", "a b", { error: "invalid_argument" }],
    ["percent", "a%2f", { error: "invalid_argument" }],
    ["non-ASCII", "café", { error: "invalid_argument" }],
    ["dot segment", ".", { error: "invalid_argument" }],
    ["dot-dot segment", "..", { error: "invalid_argument" }],
    ["dots inside", "report..v2", { ok: "report..v2" }],
  ])("%s", (_, input, want) => expect(outcome(() => parseSlug(input))).toEqual(want));
});

describe("parseName", () => {
  test.each([
    ["empty", "", { ok: "" }],
    ["spaces and unicode", "Résumé 2026 📄.pdf", { ok: "Résumé 2026 📄.pdf" }],
    ["255 code points (astral)", "📄".repeat(255), { ok: "📄".repeat(255) }],
    ["256 characters", "a".repeat(256), { error: "invalid_argument" }],
    ["slash", "a/b.txt", { error: "invalid_argument" }],
    ["NUL", "a\x00b", { error: "invalid_argument" }],
    ["newline", "a\nb", { error: "invalid_argument" }],
    ["DEL", "a\x7fb", { error: "invalid_argument" }],
    ["lone surrogate", "a\uD800b", { error: "invalid_argument" }],
    ["backslash and quotes", 'a\\"b', { ok: 'a\\"b' }],
  ])("%s", (_, input, want) => expect(outcome(() => parseName(input))).toEqual(want));
});

describe("parseNameQuery", () => {
  test.each([
    ["empty: no filter", "", { ok: "" }],
    ["slash, newline and LIKE wildcards", "a/b\n%_\\", { ok: "a/b\n%_\\" }],
    ["256 code points (astral)", "📄".repeat(256), { ok: "📄".repeat(256) }],
    ["257 characters", "a".repeat(257), { error: "invalid_argument" }],
  ])("%s", (_, input, want) => expect(outcome(() => parseNameQuery(input))).toEqual(want));
});

describe("containsPattern (LIKE … ESCAPE '\\')", () => {
  test.each([
    ["plain text, ASCII lower-cased", "Report", "%report%"],
    ["percent", "100%", "%100\\%%"],
    ["underscore", "a_b", "%a\\_b%"],
    ["backslash", "a\\b", "%a\\\\b%"],
    ["non-ASCII kept as it is", "ÉTÉ", "%ÉtÉ%"],
  ])("%s", (_, input, want) => expect(containsPattern(input)).toBe(want));
});

describe("parseVisibility", () => {
  test.each([
    ["private", { ok: "private" }],
    ["internal", { ok: "internal" }],
    ["public", { ok: "public" }],
    ["Public", { error: "invalid_argument" }],
    ["secret", { error: "invalid_argument" }],
    ["", { error: "invalid_argument" }],
  ])("%p", (input, want) => expect(outcome(() => parseVisibility(input))).toEqual(want));
});

describe("parseFileId", () => {
  test.each([
    ["V1StGXR8_Z5jdHi6B-myT", { ok: "V1StGXR8_Z5jdHi6B-myT" }],
    ["V1StGXR8_Z5jdHi6B-my", { error: "invalid_argument" }],
    ["V1StGXR8_Z5jdHi6B-myTT", { error: "invalid_argument" }],
    ["V1StGXR8_Z5jdHi6B.myT", { error: "invalid_argument" }],
    ["../../../../etc/passwd", { error: "invalid_argument" }],
  ])("%p", (input, want) => expect(outcome(() => parseFileId(input))).toEqual(want));
});

describe("parsePageSize", () => {
  test.each([
    ["1", { ok: 1 }],
    ["50", { ok: 50 }],
    ["1000", { ok: 1000 }],
    ["0", { error: "invalid_argument" }],
    ["1001", { error: "invalid_argument" }],
    ["-1", { error: "invalid_argument" }],
    ["1.5", { error: "invalid_argument" }],
    ["abc", { error: "invalid_argument" }],
    ["", { error: "invalid_argument" }],
    ["+5", { error: "invalid_argument" }],
    ["01", { error: "invalid_argument" }],
  ])("%p", (input, want) => expect(outcome(() => parsePageSize(input))).toEqual(want));
});

describe("page tokens", () => {
  test("round trip", () => {
    const cursor = { createdAt: 1795235165452123, id: "V1StGXR8_Z5jdHi6B-myT" };
    expect(parsePageToken(encodePageToken(cursor))).toEqual(cursor);
  });
  test.each([
    ["empty is the first page", "", { ok: undefined }],
    ["garbage", "not a token!", { error: "invalid_argument" }],
    ["base64 of garbage", Buffer.from("hello").toString("base64url"), { error: "invalid_argument" }],
  ])("%s", (_, input, want) => expect(outcome(() => parsePageToken(input))).toEqual(want));
});

describe("parseMediaType", () => {
  test.each([
    ["absent", null, { ok: "application/octet-stream" }],
    ["empty", "", { ok: "application/octet-stream" }],
    ["simple", "image/png", { ok: "image/png" }],
    ["kept with parameters", "text/plain; charset=utf-8", { ok: "text/plain; charset=utf-8" }],
    ["quoted parameter", 'multipart/mixed; boundary="a b;c"', { ok: 'multipart/mixed; boundary="a b;c"' }],
    ["vendor type", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", {
      ok: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    }],
    ["trimmed", "  image/png  ", { ok: "image/png" }],
    ["no subtype", "image", { error: "invalid_argument" }],
    ["two slashes", "image/png/x", { error: "invalid_argument" }],
    ["space in type", "ima ge/png", { error: "invalid_argument" }],
    ["parameter without value", "text/plain; charset", { error: "invalid_argument" }],
    ["CR LF injection", "text/plain\r\nX-Evil: 1", { error: "invalid_argument" }],
    ["unterminated quote", 'text/plain; a="b', { error: "invalid_argument" }],
  ])("%s", (_, input, want) => expect(outcome(() => parseMediaType(input))).toEqual(want));
});
