/**
 * The test lists (issue 38 item 6): which integration files run again under another setting than
 * the default run (`WORKERS=1 bun test`, SQLite + disk, every file). Each integration file says so
 * itself on its first line, `// test-lists: NAME …`, so a new file cannot be forgotten (s3-crash
 * was never listed while the lists were kept by hand in package.json); test/unit/test-lists.test.ts
 * holds every file to having that line.
 *
 *   bun scripts/test-lists.ts run workers        WORKERS=2, the files that two processes can change
 *   bun scripts/test-lists.ts run postgres-s3    PostgreSQL + S3 (WORKERS=2)
 *   bun scripts/test-lists.ts print NAME         the files, one a line
 *
 * After the list's name, `run` passes what follows to `bun test` (`-t pattern`, `--bail`).
 */
import fs from "node:fs";
import path from "node:path";

/** The lists, and the environment each runs its files under. `default` is every file (npm test's first run, WORKERS=1). */
export const TEST_LISTS = {
  default: { WORKERS: "1" },
  workers: { WORKERS: "2" },
  "postgres-s3": { CUBBY_TEST_BACKEND: "postgres-s3", WORKERS: "2" },
} as const satisfies Record<string, Record<string, string>>;
export type TestList = keyof typeof TEST_LISTS;

const ROOT = path.resolve(import.meta.dir, "..");
export const INTEGRATION_DIR = path.join(ROOT, "test", "integration");
const MARKER = /^\/\/ test-lists: (.+)$/;

/**
 * The lists a test file names on its first line.
 * @returns the names, or an error naming the problem (no such line, an unknown list)
 */
export function listsOf(text: string): TestList[] | { error: string } {
  const m = MARKER.exec(text.slice(0, text.indexOf("\n")));
  if (m === null) return { error: 'its first line is not "// test-lists: default|workers|postgres-s3 …"' };
  const names = m[1]!.trim().split(/\s+/);
  const unknown = names.filter((n) => !(n in TEST_LISTS));
  if (unknown.length > 0) return { error: `unknown list ${unknown.join(", ")} (known: ${Object.keys(TEST_LISTS).join(", ")})` };
  return names as TestList[];
}

/** The integration files (paths from the project root, sorted) that name `list`. @throws when a file has no valid line */
export function filesOf(list: TestList): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync(INTEGRATION_DIR).filter((n) => n.endsWith(".test.ts")).sort()) {
    const lists = listsOf(fs.readFileSync(path.join(INTEGRATION_DIR, name), "utf8"));
    if ("error" in lists) throw new Error(`test/integration/${name}: ${lists.error}`);
    if (list === "default" || lists.includes(list)) out.push(`test/integration/${name}`);
  }
  return out;
}

if (import.meta.main) {
  const [command, list, ...extra] = process.argv.slice(2) as [string, TestList, ...string[]];
  if (!(list in TEST_LISTS) || (command !== "run" && command !== "print")) {
    console.error("usage: bun scripts/test-lists.ts run|print default|workers|postgres-s3");
    process.exit(2);
  }
  const files = filesOf(list);
  if (files.length === 0) {
    console.error(`no integration file names the list ${list}`);
    process.exit(2);
  }
  if (command === "print") console.log(files.join("\n"));
  else {
    // bun test in the foreground, in this process group: a Ctrl-C or a kill of the group reaches it.
    const proc = Bun.spawn([process.execPath, "test", "--timeout", "30000", ...extra, ...files], {
      cwd: ROOT,
      env: { ...process.env, ...TEST_LISTS[list] },
      stdio: ["inherit", "inherit", "inherit"],
    });
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => proc.kill(signal));
    process.exit(await proc.exited);
  }
}
