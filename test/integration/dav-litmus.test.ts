// test-lists: default
// Debian's litmus (the WebDAV server test suite) against /dav/ (CONTRACT §12): its basic,
// copymove, props and locks suites pass with no failure and no warning.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { run, which } from "../support/dav.ts";
import { startServer, tempDir, type RunningServer } from "../support/server.ts";
import { testNeeding } from "../support/tools.ts";

const litmusTest = testNeeding("the litmus tests", which("litmus") === null ? ["litmus (apt-get install litmus)"] : []);

let server: RunningServer;
let key: string;

beforeAll(async () => {
  server = await startServer({ checkResponses: false });
  key = await server.mintKey("litmus@example.com");
});
afterAll(() => server[Symbol.asyncDispose]());

describe("litmus", () => {
  litmusTest(
    "basic, copymove, props and locks: every test passes, no warning",
    async () => {
      using cwd = tempDir("cubby-litmus-");
      // litmus speaks HTTP/1.1 through neon; its suites are picked by TESTS.
      const result = await run("litmus", [`http://127.0.0.1:${server.port}/dav/`, "anyuser", key], {
        cwd: cwd.path,
        env: { TESTS: "basic copymove props locks" },
        timeoutMs: 120_000,
      });
      const summaries = result.stdout.split("\n").filter((l) => l.startsWith("<- summary"));
      expect({ code: result.code, summaries, warnings: result.stdout.split("\n").filter((l) => /WARNING|FAIL/.test(l)) }).toEqual({
        code: 0,
        summaries: [
          "<- summary for `basic': of 16 tests run: 16 passed, 0 failed. 100.0%",
          "<- summary for `copymove': of 13 tests run: 13 passed, 0 failed. 100.0%",
          "<- summary for `props': of 30 tests run: 30 passed, 0 failed. 100.0%",
          "<- summary for `locks': of 41 tests run: 41 passed, 0 failed. 100.0%",
        ],
        warnings: [],
      });
    },
    180_000,
  );
});
