// The test lists come from the test files (issue 38 item 6): every integration file names its
// lists on its first line, and package.json runs the lists through scripts/test-lists.ts.
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { filesOf, INTEGRATION_DIR, listsOf, TEST_LISTS } from "../../scripts/test-lists.ts";

test("every integration file names its lists on its first line, only known ones", () => {
  const problems = fs
    .readdirSync(INTEGRATION_DIR)
    .filter((n) => n.endsWith(".test.ts"))
    .map((n) => [n, listsOf(fs.readFileSync(path.join(INTEGRATION_DIR, n), "utf8"))] as const)
    .filter(([, lists]) => "error" in lists)
    .map(([n, lists]) => `${n}: ${(lists as { error: string }).error}`);
  expect(problems).toEqual([]);
});

test("the line is read as written; a missing or unknown one is named", () => {
  expect(listsOf("// test-lists: workers postgres-s3\n// …")).toEqual(["workers", "postgres-s3"]);
  expect(listsOf("// test-lists: default\n")).toEqual(["default"]);
  expect(listsOf("// Something else\n// test-lists: workers\n")).toEqual({ error: expect.stringContaining("first line") });
  expect(listsOf("// test-lists: workers sqlite\n")).toEqual({ error: expect.stringContaining("unknown list sqlite") });
});

test("package.json runs each list through the generator, never a list by hand", async () => {
  const { scripts } = (await Bun.file(path.join(INTEGRATION_DIR, "..", "..", "package.json")).json()) as { scripts: Record<string, string> };
  expect({ workers: scripts["test:workers"], pg: scripts["test:postgres-s3"] }).toEqual({
    workers: "bun scripts/test-lists.ts run workers",
    pg: "bun scripts/test-lists.ts run postgres-s3",
  });
  expect(Object.values(scripts).filter((s) => s.includes("test/integration/"))).toEqual([]);
  // The lists are not empty, and the default is every file.
  for (const list of Object.keys(TEST_LISTS) as (keyof typeof TEST_LISTS)[]) expect(filesOf(list).length).toBeGreaterThan(0);
  expect(filesOf("default").length).toBe(fs.readdirSync(INTEGRATION_DIR).filter((n) => n.endsWith(".test.ts")).length);
});
