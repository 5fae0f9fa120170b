/**
 * The crash-point walk (issue 5, CONTRACT §6): for create, replace and delete, kill the server
 * with SIGKILL at its Nth `write`, `pwrite64`, `fsync`, `fdatasync`, `rename` and `unlink`
 * (strace `-e inject=SYSCALL:signal=SIGKILL:when=N`), walking N until the operation completes
 * without reaching it; after each kill, restart and check the invariants:
 *
 * - every acknowledged change (a 200 was received) is there, byte for byte;
 * - no visible file is partial: each file's bytes match its own size and CRC32C, and equal one
 *   whole version the client sent (a replaced file is wholly old or wholly new);
 * - after start, DATA_DIR/tmp is empty and every blob on disk is referenced, and vice versa;
 * - `PRAGMA integrity_check` is ok.
 *
 * The operation includes the server's graceful stop (SIGTERM) that follows it, because that is
 * when replaced and deleted blobs are unlinked and the WAL is checkpointed.
 *
 * strace counts `when=N` per system call and per thread, so N walks each thread's calls; the
 * report lists the distinct places (system call × file) the kills landed on.
 *
 *   bun scripts/crash-walk.ts            # the whole walk
 *   bun scripts/crash-walk.ts --short    # N ≤ 2 per system call (CI)
 *
 * Needs strace and permission to ptrace a child (root, or ptrace_scope 0). Exit status 1 when an
 * invariant broke, 2 when the walk cannot run here.
 */
import { Database } from "bun:sqlite";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { checksumOf } from "../src/domain/checksum.ts";
import { startServer, type RunningServer } from "../test/support/server.ts";
import { attach, canStrace } from "../test/support/strace.ts";

/** strace follows and kills the process it attaches to: the server must serve from that one. */
const ONE_PROCESS = { WORKERS: "1" };

const { values: flags } = parseArgs({ options: { short: { type: "boolean", default: false } } });
const SYSCALLS = ["write", "pwrite64", "fsync", "fdatasync", "rename", "renameat", "renameat2", "unlink", "unlinkat"];
const OPERATIONS = ["create", "replace", "delete"] as const;
type Operation = (typeof OPERATIONS)[number];

// Two versions of distinct length and bytes, larger than one write buffer so a blob takes
// several writes.
const V1 = crypto.getRandomValues(new Uint8Array(1_500_000));
const V2 = crypto.getRandomValues(new Uint8Array(1_700_001));

/** What a traced path (relative to DATA_DIR) or descriptor is, first match wins. */
const PLACES: [(rel: string) => boolean, string][] = [
  [(r) => r === "", "data directory"],
  [(r) => r.startsWith("tmp/"), "temporary file"],
  [(r) => r === "blobs", "blob directory"],
  [(r) => r.startsWith("blobs/"), "blob"],
  [(r) => r === "cubby.db-wal", "WAL"],
  [(r) => r === "cubby.db", "database"],
  [(r) => r === "cubby.db-shm", "WAL index"],
  [(r) => r.includes("eventfd"), "eventfd"],
  [(r) => r.startsWith("pipe:"), "log pipe"],
  [(r) => r.startsWith("socket:") || r.startsWith("TCP"), "socket"],
];

interface Template {
  dir: string;
  key: string;
  /** The file replace and delete act on (it holds V1). */
  fileId?: string;
}

interface Trial {
  op: Operation;
  syscall: string;
  n: number;
  killed: boolean;
  acked: boolean;
  site?: string;
  problems: string[];
}

if (!canStrace()) {
  console.error("crash-walk: strace is missing or may not trace here (apt-get install strace; run as root)");
  process.exit(2);
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-crash-walk-"));
const trials: Trial[] = [];
try {
  for (const op of OPERATIONS) {
    const template = await makeTemplate(op);
    const counts = await dryRun(op, template);
    for (const syscall of SYSCALLS) {
      const most = counts.get(syscall) ?? 0;
      if (most === 0) continue;
      const last = flags.short ? Math.min(most, 2) : Number.POSITIVE_INFINITY;
      for (let n = 1; n <= last; n++) {
        const t = await trial(op, template, syscall, n);
        trials.push(t);
        const mark = t.problems.length > 0 ? "INVARIANT BROKEN" : "ok";
        console.log(`${op} ${syscall}#${n}: ${t.killed ? `killed at ${t.site}` : "not reached"}${t.acked ? ", acknowledged" : ""} → ${mark}`);
        for (const p of t.problems) console.log(`  ${p}`);
        if (!t.killed && n >= most) break;
      }
    }
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}

report(trials);
process.exit(trials.some((t) => t.problems.length > 0) ? 1 : 0);

/** A stopped server's data directory with a key, and for replace/delete one file holding V1. */
async function makeTemplate(op: Operation): Promise<Template> {
  const dir = path.join(work, `template-${op}`);
  await using server = await startServer({ dataDir: dir, env: ONE_PROCESS });
  const key = await server.mintKey("walker@example.com");
  let fileId: string | undefined;
  // Use the key once, so its first-use write is not part of the operation under test.
  await fetch(`${server.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } });
  if (op !== "create") {
    const res = await fetch(`${server.url}/v1/files?name=v.bin`, { method: "POST", body: V1, headers: { authorization: `Bearer ${key}` } });
    if (res.status !== 200) throw new Error(`template upload failed: ${res.status}`);
    fileId = ((await res.json()) as { id: string }).id;
  }
  await server.stop();
  return { dir, key, fileId };
}

/** Runs the operation once under strace without injection; returns each call's per-thread maximum. */
async function dryRun(op: Operation, template: Template): Promise<Map<string, number>> {
  const dir = copyOf(template);
  const traceFile = `${dir}.trace`;
  await using server = await startServer({ dataDir: dir, env: ONE_PROCESS });
  const tracer = await attach(server.proc.pid, ["-e", `trace=${SYSCALLS.join(",")}`], traceFile);
  const { failure } = await runOperation(op, server, template);
  if (failure !== undefined) throw new Error(`the dry run failed: ${failure}`);
  await tracer.exited;
  const perThread = new Map<string, number>();
  for (const line of fs.readFileSync(traceFile, "utf8").split("\n")) {
    const m = /^(\d+)\s+(\w+)\(/.exec(line);
    if (m) perThread.set(`${m[1]} ${m[2]}`, (perThread.get(`${m[1]} ${m[2]}`) ?? 0) + 1);
  }
  const most = new Map<string, number>();
  for (const [k, count] of perThread) {
    const syscall = k.split(" ")[1]!;
    most.set(syscall, Math.max(most.get(syscall) ?? 0, count));
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(traceFile, { force: true });
  return most;
}

function copyOf(template: Template): string {
  const dir = fs.mkdtempSync(path.join(work, "trial-"));
  fs.cpSync(template.dir, dir, { recursive: true });
  return dir;
}

/**
 * The operation under test, then a graceful stop.
 * @returns whether the client got its 200, and the failure when it did not and no kill explains it
 */
async function runOperation(op: Operation, server: RunningServer, template: Template): Promise<{ acked: boolean; failure?: string }> {
  const headers = { authorization: `Bearer ${template.key}` };
  let acked = false;
  let failure: string | undefined;
  try {
    const res =
      op === "create"
        ? await fetch(`${server.url}/v1/files?name=new.bin`, { method: "POST", body: V1, headers })
        : op === "replace"
          ? await fetch(`${server.url}/v1/files/${template.fileId}/content`, { method: "PUT", body: V2, headers })
          : await fetch(`${server.url}/v1/files/${template.fileId}`, { method: "DELETE", headers });
    const text = await res.text();
    acked = res.status === 200;
    if (!acked) failure = `${op} answered ${res.status} ${text}`;
  } catch (err) {
    failure = String(err);
  }
  await server.stop();
  // A request cut short by the kill is expected.
  if (server.proc.signalCode === "SIGKILL" && !acked) failure = undefined;
  return { acked, failure };
}

async function trial(op: Operation, template: Template, syscall: string, n: number): Promise<Trial> {
  const dir = copyOf(template);
  const traceFile = `${dir}.trace`;
  const result: Trial = { op, syscall, n, killed: false, acked: false, problems: [] };
  {
    await using server = await startServer({ dataDir: dir, env: ONE_PROCESS });
    const tracer = await attach(
      server.proc.pid,
      ["-y", "-e", `trace=${syscall}`, "-e", `inject=${syscall}:signal=SIGKILL:when=${n}`],
      traceFile,
    );
    const { acked, failure } = await runOperation(op, server, template);
    result.acked = acked;
    if (failure !== undefined) result.problems.push(`failed without a kill: ${failure}`);
    await tracer.exited;
    result.killed = server.proc.signalCode === "SIGKILL";
    if (result.killed) result.site = siteOf(fs.readFileSync(traceFile, "utf8"), syscall, dir);
  }
  {
    await using server = await startServer({ dataDir: dir, env: ONE_PROCESS });
    result.problems.push(...(await check(op, server, template, result.acked)));
  }
  result.problems.push(...checkDisk(dir));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(traceFile, { force: true });
  return result;
}

/** Where the kill landed: the last call of `syscall` in the trace, and what it touched. */
function siteOf(trace: string, syscall: string, dataDir: string): string {
  const calls = trace.split("\n").filter((l) => new RegExp(`^\\d+\\s+${syscall}\\(`).test(l));
  const line = calls.at(-1) ?? "";
  const target = /\(\d+<([^>]*)>/.exec(line)?.[1] ?? /"([^"]*)"/.exec(line)?.[1] ?? line;
  const rel = target.startsWith(dataDir) ? target.slice(dataDir.length + 1) : target;
  const what = PLACES.find(([matches]) => matches(rel))?.[1] ?? line.trim();
  return `${syscall}(${what})`;
}


/** The invariants visible through the API after restart. @returns the broken ones */
async function check(op: Operation, server: RunningServer, template: Template, acked: boolean): Promise<string[]> {
  const problems: string[] = [];
  const headers = { authorization: `Bearer ${template.key}` };
  const listed = (await (await fetch(`${server.url}/v1/files?page_size=100`, { headers })).json()) as {
    files: { id: string; size: string; checksum: string }[];
  };
  const versions = op === "replace" ? [V1, V2] : [V1];
  for (const f of listed.files) {
    const body = new Uint8Array(await (await fetch(`${server.url}/${f.id}`, { headers })).arrayBuffer());
    if (String(body.byteLength) !== f.size || checksumOf(body) !== f.checksum) {
      problems.push(`${f.id}: ${body.byteLength} bytes read back, metadata says ${f.size} bytes ${f.checksum}`);
    }
    if (!versions.some((v) => v.byteLength === body.byteLength && Buffer.compare(Buffer.from(v), Buffer.from(body)) === 0)) {
      problems.push(`${f.id}: the content is not a whole version the client sent`);
    }
  }
  const ids = listed.files.map((f) => f.id);
  if (op === "create") {
    if (ids.length > 1) problems.push(`create made ${ids.length} files`);
    if (acked && ids.length !== 1) problems.push("an acknowledged create is gone");
  } else if (op === "replace") {
    if (ids.length !== 1 || ids[0] !== template.fileId) problems.push(`the replaced file is gone (${ids})`);
    else if (acked && listed.files[0]!.size !== String(V2.byteLength)) problems.push("an acknowledged replace reads back the old content");
  } else {
    if (ids.length > 1 || (ids.length === 1 && ids[0] !== template.fileId)) problems.push(`unexpected files ${ids}`);
    if (acked && ids.length !== 0) problems.push("an acknowledged delete came back");
  }
  return problems;
}

/** The invariants on disk after a start: no temporaries, blobs and rows match, integrity ok. */
function checkDisk(dir: string): string[] {
  const problems: string[] = [];
  const tmp = fs.readdirSync(path.join(dir, "tmp"));
  if (tmp.length > 0) problems.push(`temporaries left: ${tmp}`);
  const db = new Database(path.join(dir, "cubby.db"), { readonly: true });
  try {
    const integrity = db.query<{ integrity_check: string }, []>("PRAGMA integrity_check").get();
    if (integrity?.integrity_check !== "ok") problems.push(`integrity_check: ${integrity?.integrity_check}`);
    const referenced = new Set(db.query<{ blob: string }, []>("SELECT blob FROM files").all().map((r) => r.blob));
    const onDisk = new Set(fs.readdirSync(path.join(dir, "blobs")));
    for (const b of onDisk) if (!referenced.has(b)) problems.push(`unreferenced blob ${b}`);
    for (const b of referenced) if (!onDisk.has(b)) problems.push(`missing blob ${b}`);
  } finally {
    db.close();
  }
  return problems;
}

function report(all: Trial[]): void {
  console.log("\n| operation | system call | N walked | kills | acknowledged before the kill | places hit | lost |");
  console.log("|---|---|---|---|---|---|---|");
  for (const op of OPERATIONS) {
    for (const syscall of SYSCALLS) {
      const ts = all.filter((t) => t.op === op && t.syscall === syscall);
      if (ts.length === 0) continue;
      const kills = ts.filter((t) => t.killed);
      const sites = [...new Set(kills.map((t) => t.site))].join(", ");
      const lost = ts.filter((t) => t.problems.length > 0).length;
      console.log(
        `| ${op} | ${syscall} | 1–${ts.length} | ${kills.length} | ${kills.filter((t) => t.acked).length} | ${sites} | ${lost === 0 ? "nothing" : `${lost} trial(s)`} |`,
      );
    }
  }
  const kills = all.filter((t) => t.killed).length;
  const lost = all.filter((t) => t.problems.length > 0).length;
  console.log(`\n${all.length} trials, ${kills} kills, ${lost} with a broken invariant`);
}
