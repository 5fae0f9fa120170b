// The content of an MCP upload_file call (src/mcp/upload-content.ts): one row per case that
// matters, and a fast-check property that any base64 Buffer makes decodes to the same bytes and
// any other string gives invalid_argument, never another exception.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { decodeUploadContent, MAX_MCP_REQUEST_BYTES, maxInlineBytes } from "../../src/mcp/upload-content.ts";
import { outcome } from "../support/outcome.ts";

/** The bytes (as latin-1 text, to compare) and media type, or the AppError code. */
function decode(args: Parameters<typeof decodeUploadContent>[0], max = 100): { bytes: string; contentType: string } | { error: string } {
  const r = outcome(() => decodeUploadContent(args, max));
  if (!("ok" in r)) return r;
  const { bytes, contentType } = r.ok as ReturnType<typeof decodeUploadContent>;
  return { bytes: Buffer.from(bytes).toString("latin1"), contentType };
}

describe("decodeUploadContent", () => {
  test.each([
    ["text, default type", { content: "hé" }, { bytes: "h\xc3\xa9", contentType: "text/plain; charset=utf-8" }],
    ["text, empty", { content: "" }, { bytes: "", contentType: "text/plain; charset=utf-8" }],
    ["text, own type", { content: "# hi", content_type: "text/markdown" }, { bytes: "# hi", contentType: "text/markdown" }],
    ["text, blank type is the default", { content: "x", content_type: " " }, { bytes: "x", contentType: "text/plain; charset=utf-8" }],
    ["base64, default type", { content_base64: "AAH/" }, { bytes: "\x00\x01\xff", contentType: "application/octet-stream" }],
    ["base64, padded", { content_base64: "YQ==" }, { bytes: "a", contentType: "application/octet-stream" }],
    ["base64, unpadded", { content_base64: "YQ" }, { bytes: "a", contentType: "application/octet-stream" }],
    ["base64, line breaks", { content_base64: "YW\r\nJj\n", content_type: "image/png" }, { bytes: "abc", contentType: "image/png" }],
    ["base64, empty", { content_base64: "" }, { bytes: "", contentType: "application/octet-stream" }],
    ["neither", {}, { error: "invalid_argument" }],
    ["both", { content: "a", content_base64: "YQ==" }, { error: "invalid_argument" }],
    ["lone surrogate", { content: "a\udc00" }, { error: "invalid_argument" }],
    ["base64url alphabet", { content_base64: "-_-_" }, { error: "invalid_argument" }],
    ["base64, a stray character", { content_base64: "YQ=!" }, { error: "invalid_argument" }],
    ["base64, padding in the middle", { content_base64: "YQ==YQ==" }, { error: "invalid_argument" }],
    ["base64, padded to a wrong length", { content_base64: "YQ=" }, { error: "invalid_argument" }],
    ["base64, one character too many", { content_base64: "YWJjZ" }, { error: "invalid_argument" }],
    ["bad media type", { content: "a", content_type: "text" }, { error: "invalid_argument" }],
    ["text over the limit (bytes, not characters)", { content: "é".repeat(51) }, { error: "payload_too_large" }],
    ["base64 over the limit", { content_base64: Buffer.alloc(101).toString("base64") }, { error: "payload_too_large" }],
    ["exactly the limit", { content: "x".repeat(100) }, { bytes: "x".repeat(100), contentType: "text/plain; charset=utf-8" }],
  ] as const)("%s", (_, args, expected) => {
    expect(decode(args)).toEqual(expected);
  });

  test("base64 of any bytes decodes to them; any other string is invalid_argument or decodes as Buffer does", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        expect(decode({ content_base64: Buffer.from(bytes).toString("base64") }, 1000)).toEqual({ bytes: Buffer.from(bytes).toString("latin1"), contentType: "application/octet-stream" });
      }),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        const r = decode({ content_base64: s }, 1000);
        if ("error" in r) expect(r.error).toBe("invalid_argument");
        else expect(r).toEqual({ contentType: "application/octet-stream", bytes: Buffer.from(s.replace(/\s/g, ""), "base64").toString("latin1") });
      }),
      { numRuns: 2000 },
    );
  });
});

test("maxInlineBytes: MAX_UPLOAD_BYTES, or what base64 in one request can carry", () => {
  expect(maxInlineBytes(1000)).toBe(1000);
  const inline = maxInlineBytes(10 * 1024 ** 3);
  expect(inline).toBeLessThan(MAX_MCP_REQUEST_BYTES);
  expect(Math.ceil(inline / 3) * 4).toBeLessThanOrEqual(MAX_MCP_REQUEST_BYTES - 64 * 1024);
});
