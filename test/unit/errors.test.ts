import { expect, test } from "bun:test";
import { AppError, grpcCodeOf, httpStatusOf, toAppError, toRpcStatus, type ErrorCode } from "../../src/errors.ts";

// CONTRACT §2, the error table.
test.each([
  ["invalid_argument", 400, 3],
  ["unsupported_media_type", 415, 3],
  ["unauthenticated", 401, 16],
  ["permission_denied", 403, 7],
  ["not_found", 404, 5],
  ["already_exists", 409, 6],
  ["payload_too_large", 413, 8],
  ["resource_exhausted", 429, 8],
  ["aborted", 409, 10],
  ["gone", 410, 9],
  ["failed_precondition", 412, 9],
  ["checksum_mismatch", 460, 3],
  ["unavailable", 503, 14],
  ["internal", 500, 13],
] as [ErrorCode, number, number][])("%s → HTTP %d, gRPC %d", (code, http, grpc) => {
  expect({ http: httpStatusOf(code), grpc: grpcCodeOf(code) }).toEqual({ http, grpc });
});

test.each([
  ["disk full", Object.assign(new Error("no space"), { code: "ENOSPC" }), "unavailable"],
  ["quota", Object.assign(new Error("quota"), { code: "EDQUOT" }), "unavailable"],
  ["database full", Object.assign(new Error("full"), { code: "SQLITE_FULL" }), "unavailable"],
  ["out of descriptors", Object.assign(new Error("emfile"), { code: "EMFILE" }), "unavailable"],
  ["system out of descriptors", Object.assign(new Error("enfile"), { code: "ENFILE" }), "unavailable"],
  ["database busy", Object.assign(new Error("busy"), { code: "SQLITE_BUSY" }), "unavailable"],
  ["I/O error", Object.assign(new Error("eio"), { code: "EIO" }), "internal"],
  ["a string", "boom", "internal"],
])("%s becomes %s", (_, thrown, code) => {
  const e = toAppError(thrown);
  expect({ code: e.code, cause: e.cause }).toEqual({ code: code as ErrorCode, cause: thrown });
});

test("an internal error tells the client nothing but 'internal error'", () => {
  expect(toRpcStatus(toAppError(new Error("SELECT * FROM secrets failed")))).toEqual({ code: 13, message: "internal error", details: [] });
});

test("AppErrors pass through unchanged", () => {
  const e = new AppError("not_found", "file not found");
  expect(toAppError(e)).toBe(e);
});
