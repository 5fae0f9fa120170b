// Where an internal error is logged: report(), once, with the request's method, path and ID.
import { afterAll, afterEach, expect, spyOn, test } from "bun:test";
import { report } from "../../src/context/report.ts";
import { createRequestContext } from "../../src/context/request-context.ts";
import { AppError } from "../../src/errors.ts";

const context = createRequestContext({ method: "GET", path: "/v1/files", peer: "192.0.2.1", forwardedFor: null, requestId: "req-1" }, new Set());
const logged = spyOn(console, "error").mockImplementation(() => {});
afterEach(() => logged.mockClear());
afterAll(() => logged.mockRestore());

test("an internal error is logged once with its cause; the caller gets 'internal error'", () => {
  const cause = new Error("disk on fire");
  const first = report(cause, context);
  const second = report(cause, context);
  expect({ code: first.code, message: first.message, again: second.code, calls: logged.mock.calls.length }).toEqual({
    code: "internal",
    message: "internal error",
    again: "internal",
    calls: 1,
  });
  expect(String(logged.mock.calls[0]![0])).toMatch(/^method=GET path="\/v1\/files" request_id=req-1 error=internal cause="Error: disk on fire/);
});

test("errors meant for the caller are not logged", () => {
  const error = new AppError("not_found", "file not found");
  expect({ same: report(error, context) === error, calls: logged.mock.calls.length }).toEqual({ same: true, calls: 0 });
});

test("outside a request the ID is '-'", () => {
  report(Object.assign(new Error("busy"), { code: "SQLITE_BUSY" }), undefined);
  expect(String(logged.mock.calls[0]![0])).toMatch(/^request_id=- error=unavailable cause=/);
});
