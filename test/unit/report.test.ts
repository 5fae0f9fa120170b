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

test("an error report of a login link's request never prints its token, whatever the path's spelling (text and JSON)", async () => {
  const { AccessLog } = await import("../../src/serving/access-log.ts");
  const { setLogFormat } = await import("../../src/log.ts");
  const token = "3JqK9mZ_x-0aBcDeFgHiJkLmNoPqRsTuVwXyZ012345";
  const log = new AccessLog(() => {}, new Set());
  try {
    for (const format of ["text", "json"] as const) {
      setLogFormat(format);
      for (const path of [`/auth/link/${token}`, `/auth/./link/${token}`, `/auth%2Flink/${token}`, `//auth/link/${token}`, `/auth/link/../link/${token}`, `/auth/%6Cink/${token}`]) {
        report(new Error(`store down while serving ${path.length} bytes`), log.begin("GET", path, "192.0.2.1", null, "req-2"));
      }
    }
  } finally {
    setLogFormat("text");
  }
  const printed = logged.mock.calls.map((c) => String(c[0]));
  expect(printed).toHaveLength(12);
  for (const line of printed) {
    expect(line).not.toContain(token);
    expect(line).toMatch(/path"?[=:]"\/auth\/link\/…"/);
  }
});
