/**
 * The test lists (issue 38 item 6): which integration files run again under another setting than
 * the default run (`WORKERS=1`, SQLite + disk, every unit and integration file). Each integration
 * file says so itself on its first line, `// test-lists: NAME …`, so a new file cannot be
 * forgotten (s3-crash was never listed while the lists were kept by hand in package.json);
 * test/unit/test-lists.test.ts holds every file to having that line.
 *
 * How a list runs (issue 39, CI time): its files in `bun test --parallel` (two processes on two
 * cores, each taking the next file when it is done), then the files whose line also says `alone`
 * one after another in one process. `alone` is for a file that measures the CPU it gets: a stall
 * probe (CONTRACT §14) timing `/healthz` while a big case runs must not share the machine with
 * another test file; the unit test holds every file that imports the stall probe to saying it.
 *
 *   bun scripts/test-lists.ts run default        WORKERS=1, every file (npm test's first run)
 *   bun scripts/test-lists.ts run workers        WORKERS=2, the files that two processes can change
 *   bun scripts/test-lists.ts run postgres-s3    PostgreSQL + S3 (WORKERS=2)
 *   bun scripts/test-lists.ts print NAME         the files, one a line (`alone` ones last)
 *
 * After the list's name, `run` passes what follows to `bun test` (`-t pattern`, `--bail`).
 * `TEST_PARALLEL=1` runs every file one after another (as `bun test` does by default).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** The lists, and the environment each runs its files under. `default` is every file (npm test's first run, WORKERS=1), unit tests too. */
export const TEST_LISTS = {
  default: { WORKERS: "1" },
  workers: { WORKERS: "2" },
  "postgres-s3": { CUBBY_TEST_BACKEND: "postgres-s3", WORKERS: "2" },
} as const satisfies Record<string, Record<string, string>>;
export type TestList = keyof typeof TEST_LISTS;

const ROOT = path.resolve(import.meta.dir, "..");
export const INTEGRATION_DIR = path.join(ROOT, "test", "integration");
export const UNIT_DIR = path.join(ROOT, "test", "unit");
const MARKER = /^\/\/ test-lists: (.+)$/;
/** The word of the first line that makes a file run by itself, after the parallel part. */
const ALONE = "alone";

/** What a test file's first line says: the lists it runs in besides the default, and whether it runs alone. */
export interface FileLine {
  lists: TestList[];
  alone: boolean;
}

/**
 * Reads a test file's first line, `// test-lists: NAME … [alone]`.
 * @returns the lists and the `alone` flag, or an error naming the problem (no such line, an unknown word)
 */
export function listsOf(text: string): FileLine | { error: string } {
  const m = MARKER.exec(text.slice(0, text.indexOf("\n")));
  if (m === null) return { error: 'its first line is not "// test-lists: default|workers|postgres-s3 … [alone]"' };
  const words = m[1]!.trim().split(/\s+/);
  const names = words.filter((w) => w !== ALONE);
  const unknown = names.filter((n) => !(n in TEST_LISTS));
  if (unknown.length > 0) return { error: `unknown list ${unknown.join(", ")} (known: ${Object.keys(TEST_LISTS).join(", ")}, and ${ALONE})` };
  if (names.length === 0) return { error: `it names no list (default, at least)` };
  return { lists: names as TestList[], alone: words.includes(ALONE) };
}

/** A list's files, as paths from the project root, sorted: those that may share the machine, and those that run alone. */
export interface ListFiles {
  parallel: string[];
  alone: string[];
}

/**
 * The files of `list`: for `default` every unit file and every integration file, otherwise the
 * integration files that name it.
 * @throws when an integration file has no valid first line
 */
export function filesOf(list: TestList): ListFiles {
  const out: ListFiles = { parallel: [], alone: [] };
  if (list === "default") out.parallel.push(...testFiles(UNIT_DIR).map((n) => `test/unit/${n}`));
  for (const name of testFiles(INTEGRATION_DIR)) {
    const line = listsOf(fs.readFileSync(path.join(INTEGRATION_DIR, name), "utf8"));
    if ("error" in line) throw new Error(`test/integration/${name}: ${line.error}`);
    if (list === "default" || line.lists.includes(list)) (line.alone ? out.alone : out.parallel).push(`test/integration/${name}`);
  }
  return out;
}

function testFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.endsWith(".test.ts")).sort();
}

/**
 * Runs `bun test` on `files` in the foreground, in this process group (a Ctrl-C or a kill of the
 * group reaches it), with `env` added.
 * @returns its exit code
 */
async function bunTest(args: string[], files: string[], env: Record<string, string>): Promise<number> {
  const proc = Bun.spawn([process.execPath, "test", "--timeout", "30000", ...args, ...files], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["inherit", "inherit", "inherit"],
  });
  const forward = (signal: NodeJS.Signals) => proc.kill(signal);
  process.on("SIGINT", forward).on("SIGTERM", forward);
  try {
    return await proc.exited;
  } finally {
    process.off("SIGINT", forward).off("SIGTERM", forward);
  }
}

if (import.meta.main) {
  const [command, list, ...extra] = process.argv.slice(2) as [string, TestList, ...string[]];
  if (!(list in TEST_LISTS) || (command !== "run" && command !== "print")) {
    console.error("usage: bun scripts/test-lists.ts run|print default|workers|postgres-s3");
    process.exit(2);
  }
  const files = filesOf(list);
  if (files.parallel.length + files.alone.length === 0) {
    console.error(`no integration file names the list ${list}`);
    process.exit(2);
  }
  if (command === "print") console.log([...files.parallel, ...files.alone].join("\n"));
  else {
    const processes = Number(process.env.TEST_PARALLEL ?? Math.min(2, os.availableParallelism()));
    const env = TEST_LISTS[list];
    // Both parts run even when the first fails, so that one run shows every failure; each prints
    // its own summary, and this says which part failed.
    const failed: string[] = [];
    if (processes > 1) {
      // --no-isolate: each process keeps one global across its files, as a plain `bun test` does
      // (and one PostgreSQL + Swift per process for postgres-s3, started by the preload).
      if (files.parallel.length > 0 && (await bunTest([`--parallel=${processes}`, "--no-isolate", ...extra], files.parallel, env)) !== 0) failed.push(`${files.parallel.length} files in ${processes} processes`);
      if (files.alone.length > 0 && (await bunTest(extra, files.alone, env)) !== 0) failed.push(`the ${files.alone.length} files that run alone`);
    } else if ((await bunTest(extra, [...files.parallel, ...files.alone], env)) !== 0) failed.push("its files");
    if (failed.length > 0) console.error(`test list ${list}: failures in ${failed.join(" and ")}`);
    process.exit(failed.length > 0 ? 1 : 0);
  }
}
