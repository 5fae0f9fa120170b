/**
 * `bun scripts/bench/checksum.ts`: CRC32C as cubby computes it (WebAssembly slicing-by-16,
 * src/domain/crc32c.ts) against the `@node-rs/crc32` native addon it replaced (issue 25, item 7:
 * a compiled executable writes the addon into TMPDIR to load it, which a noexec TMPDIR refuses).
 * The addon stays a devDependency for this anchor (and the tests' tus client). Both are
 * measured in the same run, rounds alternating which goes first:
 *
 *  1. the checksum alone, MB/s (10^6 bytes/s) over 1 MiB buffers: the addon, ours, and a pure
 *     TypeScript slicing-by-16 (the other candidate without a file at run time);
 *  2. a 1 GiB upload (curl -T, POST /v1/files, WORKERS=1) to two executables built from the same
 *     sources by scripts/build.ts: "before" with the addon in place of src/domain/crc32c.ts,
 *     "after" as shipped; MB/s and the server's CPU seconds (utime + stime) per upload.
 *
 * Prints medians and the ratios to the addon. Writes nothing outside a temporary directory.
 *
 *   bun scripts/bench/checksum.ts [--rounds 5] [--seconds 1] [--upload-rounds 3] [--upload-mib 1024] [--no-upload]
 */
import type { BunPlugin, Subprocess } from "bun";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { crc32c as addon } from "@node-rs/crc32";
import { crc32c as wasm } from "../../src/domain/crc32c.ts";
import { buildExecutable } from "../build.ts";

const { values: flags } = parseArgs({
  options: {
    rounds: { type: "string", default: "5" },
    seconds: { type: "string", default: "1" },
    "upload-rounds": { type: "string", default: "3" },
    "upload-mib": { type: "string", default: "1024" },
    "no-upload": { type: "boolean", default: false },
  },
});
const ROUNDS = Number(flags.rounds);
const SECONDS = Number(flags.seconds);
const UPLOAD_ROUNDS = Number(flags["upload-rounds"]);
const UPLOAD_BYTES = Number(flags["upload-mib"]) * 2 ** 20;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(2));

// --- 1. the checksum alone ---
const POLY = 0x82f63b78;
const T = new Int32Array(16 * 256);
for (let i = 0; i < 256; i++) {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
  T[i] = c;
}
for (let k = 1; k < 16; k++) for (let i = 0; i < 256; i++) T[k * 256 + i] = (T[(k - 1) * 256 + i]! >>> 8) ^ T[T[(k - 1) * 256 + i]! & 0xff]!;

/** Pure TypeScript slicing-by-16, the candidate WebAssembly beat (same tables, same order). */
function typescript16(b: Uint8Array, state = 0): number {
  let crc = ~state;
  let i = 0;
  for (; i + 16 <= b.length; i += 16) {
    const w = (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) ^ crc;
    crc =
      T[3840 + (w & 0xff)]! ^ T[3584 + ((w >>> 8) & 0xff)]! ^ T[3328 + ((w >>> 16) & 0xff)]! ^ T[3072 + (w >>> 24)]! ^
      T[2816 + b[i + 4]!]! ^ T[2560 + b[i + 5]!]! ^ T[2304 + b[i + 6]!]! ^ T[2048 + b[i + 7]!]! ^
      T[1792 + b[i + 8]!]! ^ T[1536 + b[i + 9]!]! ^ T[1280 + b[i + 10]!]! ^ T[1024 + b[i + 11]!]! ^
      T[768 + b[i + 12]!]! ^ T[512 + b[i + 13]!]! ^ T[256 + b[i + 14]!]! ^ T[b[i + 15]!]!;
  }
  for (; i < b.length; i++) crc = T[(crc ^ b[i]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}

const buffer = crypto.getRandomValues(new Uint8Array(2 ** 20));
const candidates: [string, (b: Uint8Array) => number][] = [
  ["@node-rs/crc32 addon (anchor)", (b) => addon(b, 0)],
  ["WebAssembly slicing-by-16 (src/domain/crc32c.ts)", (b) => wasm(b, 0)],
  ["TypeScript slicing-by-16", (b) => typescript16(b, 0)],
];
const want = addon(buffer, 0);
for (const [name, f] of candidates) if (f(buffer) !== want) throw new Error(`${name} disagrees with the addon`);

/** MB/s of `f` over `buffer`, run for SECONDS. */
function speed(f: (b: Uint8Array) => number): number {
  const started = performance.now();
  let n = 0;
  while (performance.now() - started < SECONDS * 1000) {
    f(buffer);
    n++;
  }
  return (n * buffer.byteLength) / ((performance.now() - started) / 1000) / 1e6;
}
const alone = candidates.map(() => [] as number[]);
for (let round = 0; round < ROUNDS; round++) {
  const order = candidates.map((_, i) => i);
  if (round % 2 === 1) order.reverse();
  for (const i of order) alone[i]!.push(speed(candidates[i]![1]));
}
const anchorAlone = median(alone[0]!);
console.log(`CRC32C alone, 1 MiB buffers, median of ${ROUNDS} rounds of ${SECONDS} s:`);
for (const [i, [name]] of candidates.entries()) {
  const m = median(alone[i]!);
  console.log(`  ${name}: ${fmt(m)} MB/s, ${(m / anchorAlone).toFixed(2)}× the addon`);
}

// --- 2. a large upload, before and after ---
if (!flags["no-upload"]) {
  if (Bun.which("curl") === null) throw new Error("curl is missing (apt-get install curl)");
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-bench-checksum-"));
  const servers: Subprocess[] = [];
  process.on("exit", () => {
    for (const s of servers) s.kill("SIGKILL");
    fs.rmSync(work, { recursive: true, force: true });
  });
  process.on("SIGINT", () => process.exit(130));
  process.on("SIGTERM", () => process.exit(143));

  const root = path.resolve(import.meta.dir, "../..");
  const musl = process.platform === "linux" && fs.existsSync(`/lib/ld-musl-${process.arch === "x64" ? "x86_64" : "aarch64"}.so.1`);
  const platform = `${process.platform}-${process.arch}${process.platform === "linux" ? (musl ? "-musl" : "-gnu") : ""}`;
  const nodeFile = path.join(path.dirname(Bun.resolveSync(`@node-rs/crc32-${platform}/package.json`, root)), `crc32.${platform}.node`);
  /** Resolves src/domain/crc32c.ts to a module exporting the addon's crc32c (the build before issue 25). */
  const addonInstead: BunPlugin = {
    name: "crc32c-addon",
    setup(build) {
      build.onResolve({ filter: /\/crc32c\.ts$/ }, () => ({ path: "crc32c-addon", namespace: "crc32c-addon" }));
      build.onLoad({ filter: /.*/, namespace: "crc32c-addon" }, () => ({
        contents: `module.exports = { crc32c: require(${JSON.stringify(nodeFile)}).crc32c };`,
        loader: "js",
      }));
    },
  };
  console.error("building the executables before (addon) and after (WebAssembly)");
  const before = path.join(work, "cubby-before");
  const after = path.join(work, "cubby-after");
  await buildExecutable({ outfile: before, plugins: [addonInstead] });
  await buildExecutable({ outfile: after });

  const source = path.join(work, "upload.bin");
  const block = crypto.getRandomValues(new Uint8Array(16 * 2 ** 20));
  const fd = fs.openSync(source, "w");
  for (let off = 0; off < UPLOAD_BYTES; off += block.byteLength) fs.writeSync(fd, block, 0, Math.min(block.byteLength, UPLOAD_BYTES - off));
  fs.closeSync(fd);

  /** Starts `bin` on a fresh data directory with an API key. */
  const start = async (bin: string, name: string) => {
    const dataDir = path.join(work, `data-${name}`);
    const env = { ...process.env, WORKERS: "1", RATE_LIMIT_AUTH_FAILURES: "0" };
    const keys = Bun.spawnSync([bin, "keys", "create", "--email", "bench@example.com", "--data-dir", dataDir], { env, stderr: "pipe" });
    if (keys.exitCode !== 0) throw new Error(`${name}: keys create failed: ${keys.stderr.toString()}`);
    const proc = Bun.spawn([bin, "serve", "--port", "0", "--data-dir", dataDir], { env, stdout: "pipe", stderr: "inherit" });
    servers.push(proc);
    let seen = "";
    const decoder = new TextDecoder();
    const reader = proc.stdout.getReader();
    let port: string | undefined;
    while (port === undefined) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`${name} exited before listening: ${seen}`);
      seen += decoder.decode(value, { stream: true });
      port = /listening on port (\d+)/.exec(seen)?.[1];
    }
    void (async () => {
      while (!(await reader.read()).done); // the access log: read to its end, or cubby blocks on a full pipe
    })();
    return { proc, url: `http://127.0.0.1:${port}`, key: keys.stdout.toString().trim() };
  };
  /** utime + stime of a process in seconds, from /proc/<pid>/stat (fields 14 and 15; proc(5)); NaN off Linux. */
  const cpuSeconds = (pid: number) => {
    try {
      const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on every Linux ABI Bun runs on
    } catch {
      return NaN;
    }
  };
  const sides = [await start(before, "before"), await start(after, "after")];
  const upload = async (side: (typeof sides)[number]) => {
    const cpu = cpuSeconds(side.proc.pid);
    const curl = Bun.spawn(["curl", "-sS", "--fail", "-X", "POST", "-T", source, "-H", `authorization: Bearer ${side.key}`, "-w", "\n%{speed_upload}", `${side.url}/v1/files`], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(curl.stdout).text(), new Response(curl.stderr).text(), curl.exited]);
    if (code !== 0) throw new Error(`curl failed (${code}): ${err}`);
    const used = cpuSeconds(side.proc.pid) - cpu;
    const [json, rate] = out.split("\n");
    const file = JSON.parse(json!) as { id: string; checksum: string };
    await fetch(`${side.url}/v1/files/${file.id}`, { method: "DELETE", headers: { authorization: `Bearer ${side.key}` } });
    return { mbs: Number(rate) / 1e6, cpu: used, checksum: file.checksum };
  };
  const results = sides.map(() => [] as { mbs: number; cpu: number; checksum: string }[]);
  for (let round = 0; round < UPLOAD_ROUNDS; round++) {
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) results[i]!.push(await upload(sides[i]!));
  }
  if (new Set(results.flat().map((r) => r.checksum)).size !== 1) throw new Error(`the two builds disagree on the CRC32C: ${JSON.stringify(results)}`);
  const [b, a] = results.map((rs) => ({ mbs: median(rs.map((r) => r.mbs)), cpu: median(rs.map((r) => r.cpu)) })) as [{ mbs: number; cpu: number }, { mbs: number; cpu: number }];
  const mib = UPLOAD_BYTES / 2 ** 20;
  console.log(`upload of ${mib} MiB (curl -T, POST /v1/files, WORKERS=1), median of ${UPLOAD_ROUNDS} rounds:`);
  console.log(`  before (addon, anchor): ${fmt(b.mbs)} MB/s, server CPU ${b.cpu.toFixed(2)} s`);
  console.log(`  after (WebAssembly): ${fmt(a.mbs)} MB/s, ${(a.mbs / b.mbs).toFixed(2)}× the addon; server CPU ${a.cpu.toFixed(2)} s, ${(a.cpu / b.cpu).toFixed(2)}× the addon's`);
  for (const s of servers) s.kill("SIGTERM");
  await Promise.all(servers.map((s) => s.exited));
}
