// test-lists: default
// CONTRACT §10, small memory: at the defaults, on a machine (or cgroup) with 1 GiB of memory and
// 4 cores, all of cubby's processes together idle at ≤ 128 MiB RSS; WORKERS set explicitly wins.
// This machine has other figures: the memory probe's test-only override (CUBBY_TEST_MEMORY_BYTES,
// CUBBY_TEST_CPUS, src/config.ts) stands in for the 1 GiB, 4-core NAS. The RSS is read from /proc.
import { expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { childrenOf } from "../support/processes.ts";
import { ROOT, startServer } from "../support/server.ts";

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
/** The 1 GiB, 4-core NAS; WORKERS empty counts as unset, whatever the test run's WORKERS is. */
const NAS = { CUBBY_TEST_MEMORY_BYTES: String(GiB), CUBBY_TEST_CPUS: "4", WORKERS: "" };

/** `pid` and every process under it. */
function tree(pid: number): number[] {
  return [pid, ...childrenOf(pid).flatMap(tree)];
}

/** A process's resident set size (VmRSS of /proc/PID/status), bytes. */
function rss(pid: number): number {
  const kB = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  if (kB === null) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kB[1]) * 1024;
}

test("1 GiB and 4 cores, WORKERS unset: every process together idles at ≤ 128 MiB RSS", async () => {
  await using server = await startServer({ env: NAS });
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  const pids = tree(server.proc.pid);
  const each = pids.map(rss);
  const total = each.reduce((a, b) => a + b, 0);
  console.log(`idle RSS at 1 GiB / 4 cores, defaults: ${(total / MiB).toFixed(1)} MiB in ${pids.length} process(es) [${each.map((b) => (b / MiB).toFixed(1)).join(", ")}]`);
  expect(total).toBeLessThanOrEqual(128 * MiB);
});

test("1 GiB and 4 cores, WORKERS=2 set: the setting wins, two serving processes", async () => {
  await using server = await startServer({ env: { ...NAS, WORKERS: "2" } });
  expect(server.servingPids()).toHaveLength(2);
  expect(server.output()).toContain("2 worker processes");
});

/**
 * A new cgroup v1 memory group under this process's own, limited to `bytes`; undefined where
 * there is none to make (cgroup v2 only, not root, a read-only cgroup file system). Removed by
 * its disposer once no process is left in it.
 */
function memoryGroup(bytes: number): ({ path: string } & Disposable) | undefined {
  const own = /^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(.*)$/m.exec(fs.readFileSync("/proc/self/cgroup", "utf8"))?.[1];
  const mount = "/sys/fs/cgroup/memory";
  if (own === undefined || !fs.existsSync(`${mount}/cgroup.procs`)) return undefined;
  const dir = `${mount}${own === "/" ? "" : own}/cubby-test-${process.pid}-${Date.now()}`;
  try {
    fs.mkdirSync(dir);
  } catch {
    return undefined;
  }
  fs.writeFileSync(`${dir}/memory.limit_in_bytes`, String(bytes));
  return { path: dir, [Symbol.dispose]: () => fs.rmdirSync(dir) };
}

test("in a real cgroup limited to 1 GiB (cgroup v1 here), WORKERS unset: one process, ≤ 128 MiB RSS", async () => {
  using group = memoryGroup(GiB);
  if (group === undefined) {
    console.warn("skipped: no cgroup v1 memory controller to make a group in (the override tests above cover the rule)");
    return;
  }
  // The server's process joins the group before it execs the runtime, so it reads its limit at start.
  const dir = fs.mkdtempSync(`${os.tmpdir()}/cubby-cgroup-`);
  try {
    const wrapper = path.join(dir, "cubby-in-group");
    fs.writeFileSync(wrapper, `#!/bin/sh\necho $$ > '${group.path}/cgroup.procs'\nexec '${process.execPath}' '${path.join(ROOT, "src/main.ts")}' "$@"\n`, { mode: 0o755 });
    {
      await using server = await startServer({ executable: wrapper, env: { CUBBY_TEST_CPUS: "4", WORKERS: "" } });
      const pids = tree(server.proc.pid);
      const total = pids.map(rss).reduce((a, b) => a + b, 0);
      console.log(`idle RSS in a 1 GiB cgroup, 4 cores, defaults: ${(total / MiB).toFixed(1)} MiB in ${pids.length} process(es)`);
      expect(fs.readFileSync(`${group.path}/cgroup.procs`, "utf8").trim().split("\n").map(Number)).toEqual(pids);
      expect(pids).toHaveLength(1);
      expect(total).toBeLessThanOrEqual(128 * MiB);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
