// The test lists come from the test files (issue 38 item 6): every integration file names its
// lists on its first line, and package.json runs the lists through scripts/test-lists.ts.
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { filesOf, INTEGRATION_DIR, listsOf, TEST_LISTS, UNIT_DIR } from "../../scripts/test-lists.ts";

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
  expect(listsOf("// test-lists: workers postgres-s3\n// …")).toEqual({ lists: ["workers", "postgres-s3"], alone: false });
  expect(listsOf("// test-lists: default\n")).toEqual({ lists: ["default"], alone: false });
  expect(listsOf("// test-lists: postgres-s3 alone\n")).toEqual({ lists: ["postgres-s3"], alone: true });
  expect(listsOf("// Something else\n// test-lists: workers\n")).toEqual({ error: expect.stringContaining("first line") });
  expect(listsOf("// test-lists: workers sqlite\n")).toEqual({ error: expect.stringContaining("unknown list sqlite") });
  expect(listsOf("// test-lists: alone\n")).toEqual({ error: expect.stringContaining("no list") });
});

test("a file with a stall probe runs alone: it measures the CPU it gets, which another file running beside it would take", () => {
  const probing = fs
    .readdirSync(INTEGRATION_DIR)
    .filter((n) => n.endsWith(".test.ts") && fs.readFileSync(path.join(INTEGRATION_DIR, n), "utf8").includes("support/stall-probe.ts"));
  expect(probing.length).toBeGreaterThan(0);
  const notAlone = probing.filter((n) => (listsOf(fs.readFileSync(path.join(INTEGRATION_DIR, n), "utf8")) as { alone: boolean }).alone !== true);
  expect(notAlone).toEqual([]);
  // And they are the files of each list's part that runs alone, after the parallel part.
  const { parallel, alone } = filesOf("default");
  expect(alone.map((f) => path.basename(f)).sort()).toEqual(probing.sort());
  expect(parallel.filter((f) => alone.includes(f))).toEqual([]);
});

test("package.json runs each list through the generator, never a list by hand", async () => {
  const { scripts } = (await Bun.file(path.join(INTEGRATION_DIR, "..", "..", "package.json")).json()) as { scripts: Record<string, string> };
  expect({ workers: scripts["test:workers"], pg: scripts["test:postgres-s3"] }).toEqual({
    workers: "bun scripts/test-lists.ts run workers",
    pg: "bun scripts/test-lists.ts run postgres-s3",
  });
  expect(scripts.test).toStartWith("tsc --noEmit && bun scripts/test-lists.ts run default && npm run test:workers && npm run test:postgres-s3 && ");
  expect(Object.values(scripts).filter((s) => s.includes("test/integration/"))).toEqual([]);
  // The lists are not empty, and the default is every unit and integration file, each once.
  const count = (list: keyof typeof TEST_LISTS) => filesOf(list).parallel.length + filesOf(list).alone.length;
  for (const list of Object.keys(TEST_LISTS) as (keyof typeof TEST_LISTS)[]) expect(count(list)).toBeGreaterThan(0);
  const every = [INTEGRATION_DIR, UNIT_DIR].flatMap((dir) => fs.readdirSync(dir).filter((n) => n.endsWith(".test.ts")));
  expect(count("default")).toBe(every.length);
  expect(new Set([...filesOf("default").parallel, ...filesOf("default").alone]).size).toBe(every.length);
});
