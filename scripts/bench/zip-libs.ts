/**
 * `bun scripts/bench/zip-libs.ts`: the streaming ZIP libraries issue 29 names, measured on the
 * folder it names (docs/folders.md, "Share a folder as a ZIP"): 1 000 small files (1–64 KiB)
 * and one 5 GiB file, read from a real disk blob store (storage/disk-blobs.ts, the reads and
 * buffers a download uses, each chunk copied by serving/zip-stream.ts's blobBytes) and zipped
 * STORED (method 0) into /dev/null. The rows: client-zip as installed (with
 * patches/client-zip+*.patch) and as published (a copy with the patch taken out), zip.js,
 * fflate, and src/serving/zip-stream.ts itself (client-zip inside, as cubby serves it).
 *
 * Each library runs in a child process of its own, so that its memory is its own: the child
 * resets its peak (`/proc/self/clear_refs` 5) once it is idle (library loaded, nothing read),
 * and reports its VmHWM over that idle VmRSS when the archive has been written. MB/s is 10^6
 * bytes of archive a second. The anchor is the same reads written straight to /dev/null with no
 * ZIP at all; rounds alternate the order. Before the timed rounds, each library's archive of the
 * folder, and one of 70 000 entries of a few bytes (the entry count alone needs ZIP64), is
 * written once to a file and checked with `unzip -t`, `7z t` and Python's `zipfile.testzip()`
 * (and each entry's name, size and method); the general purpose bit 3 (data descriptor) of its
 * entries is read from that file.
 *
 * Everything lives in one temporary directory under /tmp/zipbench, removed at the end, also on
 * failure or Ctrl-C, and every child process is stopped by its PID.
 *
 *   bun scripts/bench/zip-libs.ts [--rounds 3] [--small 1000] [--big-mib 5120] [--no-verify]
 *     [--libs client-zip,client-zip-published,zip.js,fflate,zip-stream]
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import type { Subprocess } from "bun";
import { DiskBlobStore } from "../../src/storage/disk-blobs.ts";
import { blobBytes, zipStream } from "../../src/serving/zip-stream.ts";

const { values: flags } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    small: { type: "string", default: "1000" },
    "big-mib": { type: "string", default: "5120" },
    "no-verify": { type: "boolean", default: false },
    libs: { type: "string", default: "client-zip,client-zip-published,zip.js,fflate,zip-stream" },
    // The child's side (the parent passes these).
    child: { type: "string" },
    data: { type: "string" },
    out: { type: "string" },
    published: { type: "string" },
    many: { type: "string" },
  },
});

/** One member of the folder, as the manifest the parent writes lists it. */
interface Member {
  name: string;
  /** The blob's name in the disk store. */
  blob: string;
  size: number;
  /** Unix milliseconds. */
  modified: number;
  /** The member's content, read from the store when the library reaches it. */
  content?: () => AsyncIterable<Uint8Array>;
}

/** What one child reports. */
interface Run {
  lib: string;
  bytes: number;
  seconds: number;
  cpuSeconds: number;
  idleRss: number;
  peakOverIdle: number;
}

/** How a download reads a blob on HTTP/1.1 (server/http1-exchange.ts H1_BUFFERING). */
const READ_PLAN = { chunkBytes: 256 * 1024, buffers: 4 };

/** The candidates: each turns members (read one at a time, in order) into the archive's bytes. */
const LIBRARIES: Record<string, { version: () => string; zip: (members: AsyncIterable<Member>) => Promise<AsyncIterable<Uint8Array>> }> = {
  "client-zip": {
    version: () => `${packageVersion("client-zip")} with patches/`,
    zip: async (members) => clientZip(await import("client-zip"), members),
  },
  "client-zip-published": {
    version: () => `${packageVersion("client-zip")} as published`,
    // The parent's copy of node_modules/client-zip with patches/client-zip+*.patch taken out.
    zip: async (members) => clientZip((await import(path.join(flags.published!, "index.js"))) as typeof import("client-zip"), members),
  },
  "zip.js": {
    version: () => packageVersion("@zip.js/zip.js"),
    async zip(members) {
      const { ZipWriter, configure } = await import("@zip.js/zip.js");
      configure({ useWebWorkers: false, useCompressionStream: false });
      const pipe = new TransformStream<Uint8Array, Uint8Array>();
      const writer = new ZipWriter(pipe.writable, { level: 0, keepOrder: true, bufferedWrite: false, extendedTimestamp: false });
      void (async () => {
        for await (const m of members) {
          await writer.add(m.name, streamOf(m.content!()), { uncompressedSize: m.size, lastModDate: new Date(m.modified) });
        }
        await writer.close();
      })().catch((err: unknown) => void pipe.writable.abort(err).catch(() => {}));
      return pipe.readable;
    },
  },
  fflate: {
    version: () => packageVersion("fflate"),
    async zip(members) {
      const { Zip, ZipPassThrough } = await import("fflate");
      // fflate pushes: its callback runs synchronously inside push(), so each push's output is
      // queued and yielded before the next chunk is read (the generator's pause is the backpressure).
      async function* archive(): AsyncIterable<Uint8Array> {
        const out: Uint8Array[] = [];
        let failure: Error | null = null;
        const zip = new Zip((err, data) => {
          if (err) failure = err;
          else out.push(data);
        });
        const drain = function* () {
          if (failure) throw failure;
          yield* out.splice(0);
        };
        for await (const m of members) {
          const entry = new ZipPassThrough(m.name);
          entry.mtime = m.modified;
          zip.add(entry);
          yield* drain();
          for await (const chunk of m.content!()) {
            entry.push(chunk);
            yield* drain();
          }
          entry.push(new Uint8Array(0), true);
          yield* drain();
        }
        zip.end();
        yield* drain();
      }
      return archive();
    },
  },
  /** What cubby serves: the chosen library inside src/serving/zip-stream.ts. */
  "zip-stream": {
    version: () => `(src/serving/zip-stream.ts: client-zip ${packageVersion("client-zip")} with patches/)`,
    async zip(members) {
      async function* zipMembers() {
        for await (const m of members) yield { name: m.name, size: m.size, modified: m.modified * 1000, content: m.content! };
      }
      return zipStream(zipMembers());
    },
  },
  /** The anchor: the same reads, no ZIP. */
  none: {
    version: () => "",
    async zip(members) {
      return (async function* () {
        for await (const m of members) yield* m.content!();
      })();
    },
  },
};

/** client-zip (`lib`: as installed, or the copy as published) over the members. */
function clientZip(lib: typeof import("client-zip"), members: AsyncIterable<Member>): AsyncIterable<Uint8Array> {
  async function* inputs() {
    for await (const m of members) yield { name: m.name, size: m.size, lastModified: new Date(m.modified), input: m.content!() };
  }
  return lib.makeZip(inputs(), { buffersAreUTF8: true });
}

/** An async iterable as a ReadableStream (Bun has ReadableStream.from, its types do not). */
function streamOf(source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const it = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await it.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel(reason) {
      await it.return?.(reason);
    },
  });
}

/** The version of an installed package, from its package.json. */
function packageVersion(name: string): string {
  return (JSON.parse(fs.readFileSync(path.join(import.meta.dir, "../../node_modules", name, "package.json"), "utf8")) as { version: string }).version;
}

/** Reads a status line of /proc/self/status, in bytes. */
function procStatus(field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(fs.readFileSync("/proc/self/status", "utf8"));
  if (!m) throw new Error(`no ${field} in /proc/self/status`);
  return Number(m[1]) * 1024;
}

// --- the child: one library, one archive ---

/** `count` members of a few bytes each, from memory: the archive's entry count alone needs ZIP64 past 65 534. */
function manyMembers(count: number): Member[] {
  return Array.from({ length: count }, (_, i) => {
    const bytes = new TextEncoder().encode(`member ${i}\n`);
    return {
      name: `many/${i}.txt`,
      blob: "",
      size: bytes.byteLength,
      modified: Date.UTC(2026, 0, 2),
      content: async function* () {
        yield bytes;
      },
    };
  });
}

async function child(lib: string, dataDir: string, out: string): Promise<void> {
  const library = LIBRARIES[lib];
  if (!library) throw new Error(`unknown library ${lib}`);
  const manifest = flags.many ? manyMembers(Number(flags.many)) : (JSON.parse(fs.readFileSync(path.join(dataDir, "manifest.json"), "utf8")) as Member[]);
  await using store = new DiskBlobStore(dataDir);
  // Loaded and idle: the library's code is in, nothing is read yet.
  for await (const _ of await library.zip((async function* () {})()));
  Bun.gc(true);
  const idleRss = procStatus("VmRSS");
  fs.writeFileSync("/proc/self/clear_refs", "5");
  const cpu = process.cpuUsage();
  const started = performance.now();
  async function* members(): AsyncIterable<Member> {
    for (const m of manifest) {
      yield { ...m, content: m.content ?? (() => blobBytes(store.read(m.blob, { start: 0, length: m.size }, READ_PLAN))) };
    }
  }
  const file = await fsp.open(out, "w");
  let bytes = 0;
  try {
    for await (const chunk of await library.zip(members())) {
      bytes += chunk.byteLength;
      await file.write(chunk);
    }
  } finally {
    await file.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const run: Run = { lib, bytes, seconds, cpuSeconds: (used.user + used.system) / 1e6, idleRss, peakOverIdle: procStatus("VmHWM") - idleRss };
  console.log(JSON.stringify(run));
}

// --- the parent: the folder, the checks, the rounds, the table ---

const running = new Set<Subprocess>();
let workDir: string | undefined;

/** Stops what is still running (by PID) and removes the directory: on success, failure and signals alike. */
function cleanUp(): void {
  for (const p of running) p.kill("SIGKILL");
  running.clear();
  if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
  workDir = undefined;
  try {
    fs.rmdirSync("/tmp/zipbench"); // only when no other run is using it
  } catch {}
}

/** Runs a command to its end: exit code and output (stdout + stderr, the last 2 000 characters). */
async function run(cmd: string[]): Promise<{ code: number; output: string }> {
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  running.add(p);
  try {
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, output: (out + err).slice(-2000) };
  } finally {
    running.delete(p);
  }
}

/** A PRNG with a seed, so every run zips the same folder (xorshift32). */
function prng(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Writes the folder into `dataDir`'s blob directory and its manifest (big member in the middle: offsets cross 4 GiB). */
async function makeFolder(dataDir: string, small: number, bigBytes: number): Promise<Member[]> {
  const blobs = path.join(dataDir, "blobs");
  fs.mkdirSync(blobs, { recursive: true });
  const random = prng(29);
  const members: Member[] = [];
  const modified = Date.UTC(2026, 0, 2, 3, 4, 6);
  for (let i = 0; i < small; i++) {
    const size = 1024 + Math.floor(random() * 63 * 1024);
    const bytes = crypto.getRandomValues(new Uint8Array(size));
    const blob = `small-${i}`;
    fs.writeFileSync(path.join(blobs, blob), bytes);
    members.push({ name: `small/${String(i).padStart(4, "0")}.bin`, blob, size, modified });
    if (i === Math.floor(small / 2)) members.push({ name: "big.bin", blob: "big", size: bigBytes, modified });
  }
  if (small === 0) members.push({ name: "big.bin", blob: "big", size: bigBytes, modified });
  // The big file: 1 MiB of random bytes, each MiB stamped with its index.
  const block = crypto.getRandomValues(new Uint8Array(1024 * 1024));
  const file = await fsp.open(path.join(blobs, "big"), "w");
  try {
    for (let at = 0; at < bigBytes; at += block.byteLength) {
      new DataView(block.buffer).setFloat64(0, at);
      await file.write(block, 0, Math.min(block.byteLength, bigBytes - at));
    }
  } finally {
    await file.close();
  }
  fs.writeFileSync(path.join(dataDir, "manifest.json"), JSON.stringify(members));
  return members;
}

/** One child: `lib` zips the folder (or `many` tiny members) into `out`. */
async function measure(lib: string, dataDir: string, out: string, many?: number): Promise<Run> {
  const published = path.join(path.dirname(dataDir), "published", "node_modules", "client-zip");
  const cmd = [process.execPath, import.meta.path, "--child", lib, "--data", dataDir, "--out", out, "--published", published];
  const { code, output } = await run(many === undefined ? cmd : [...cmd, "--many", String(many)]);
  if (code !== 0) throw new Error(`${lib} failed (exit ${code}): ${output}`);
  return JSON.parse(output.trim().split("\n").at(-1)!) as Run;
}

/** Whether each tool accepts the archive: "ok" or the reason it gave. */
async function verify(zip: string, members: { name: string; size: number }[]): Promise<Record<"unzip" | "7z" | "python", string>> {
  const verdict = async (cmd: string[], ok: (r: { code: number; output: string }) => boolean) => {
    const r = await run(cmd);
    return ok(r) ? "ok" : `FAIL (exit ${r.code}): ${r.output.trim().split("\n").slice(-3).join(" / ")}`;
  };
  const expected = `${zip}.expected.json`;
  fs.writeFileSync(expected, JSON.stringify(members.map((m) => [m.name, m.size])));
  const python = [
    "import json, sys, zipfile",
    "z = zipfile.ZipFile(sys.argv[1])",
    "bad = z.testzip()",
    "if bad: sys.exit('bad CRC or header: ' + bad)",
    "got = [[i.filename, i.file_size] for i in z.infolist()]",
    "if got != json.load(open(sys.argv[2])): sys.exit('entries differ from the folder')",
    "if any(i.compress_type != 0 for i in z.infolist()): sys.exit('an entry is not STORED')",
  ].join("\n");
  return {
    unzip: await verdict(["unzip", "-t", "-qq", zip], (r) => r.code === 0),
    "7z": await verdict(["7z", "t", zip], (r) => r.code === 0 && r.output.includes("Everything is Ok")),
    python: await verdict(["python3", "-c", python, zip, expected], (r) => r.code === 0).finally(() => fs.rmSync(expected)),
  };
}

/** The general purpose bit 3 (data descriptor) of the archive's first local header. */
async function dataDescriptorBit(zip: string): Promise<boolean> {
  const head = Buffer.alloc(30);
  const file = await fsp.open(zip, "r");
  try {
    await file.read(head, 0, 30, 0);
  } finally {
    await file.close();
  }
  if (head.readUInt32LE(0) !== 0x04034b50) throw new Error(`${zip} does not start with a local file header`);
  return (head.readUInt16LE(6) & 0x0008) !== 0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** Whether each library, by its documentation and source, can take a CRC-32 it did not compute. */
const CRC_UP_FRONT: Record<string, string> = {
  "client-zip": "no: computes it (patched: Bun.hash.crc32)",
  "client-zip-published": "no: computes it, no option to pass one",
  "zip.js": "no: computes it; takes one only with passThrough",
  "zip-stream": "no (client-zip's)",
  fflate: "no: ZipPassThrough computes it",
};

/** Entries in the archive that checks the ZIP64 end records an entry count alone calls for. */
const MANY = 70_000;

/** Copies node_modules/client-zip into `dir`/node_modules and takes our patch out of the copy. */
async function publishedClientZip(dir: string): Promise<void> {
  const root = path.join(import.meta.dir, "../..");
  const patch = fs.readdirSync(path.join(root, "patches")).find((f) => f.startsWith("client-zip+"));
  fs.cpSync(path.join(root, "node_modules/client-zip"), path.join(dir, "node_modules/client-zip"), { recursive: true });
  if (patch === undefined) return;
  const { code, output } = await run(["patch", "-R", "-p1", "-d", dir, "-i", path.join(root, "patches", patch)]);
  if (code !== 0) throw new Error(`patch -R ${patch}: ${output}`);
}

/** Makes one archive with `lib`, checks it with the three tools, removes it. */
async function check(lib: string, dataDir: string, members: { name: string; size: number }[], many?: number) {
  const out = path.join(path.dirname(dataDir), `${lib}.zip`);
  try {
    await measure(lib, dataDir, out, many);
    return { ...(await verify(out, members)), descriptor: await dataDescriptorBit(out) };
  } catch (err) {
    return { unzip: `not made: ${(err as Error).message.slice(0, 300)}`, "7z": "-", python: "-", descriptor: undefined };
  } finally {
    fs.rmSync(out, { force: true });
  }
}

async function parent(): Promise<void> {
  const rounds = Number(flags.rounds);
  const small = Number(flags.small);
  const bigBytes = Number(flags["big-mib"]) * 2 ** 20;
  const libs = flags.libs.split(",");
  for (const lib of libs) if (!LIBRARIES[lib] || lib === "none") throw new Error(`unknown library ${lib}; known: ${Object.keys(LIBRARIES).filter((l) => l !== "none").join(", ")}`);
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => (cleanUp(), process.exit(130)));
  fs.mkdirSync("/tmp/zipbench", { recursive: true });
  workDir = fs.mkdtempSync("/tmp/zipbench/run-");
  const dataDir = path.join(workDir, "data");
  await publishedClientZip(path.join(workDir, "published"));
  console.log(`folder: ${small} files of 1–64 KiB and one of ${mib(bigBytes)} MiB, in ${dataDir}`);
  const members = await makeFolder(dataDir, small, bigBytes);
  const total = members.reduce((sum, m) => sum + m.size, 0);
  console.log(`content: ${mib(total)} MiB in ${members.length} members; Bun ${Bun.version}; ${rounds} rounds\n`);

  const checks = new Map<string, Awaited<ReturnType<typeof check>>>();
  const manyChecks = new Map<string, Awaited<ReturnType<typeof check>>>();
  if (!flags["no-verify"]) {
    const many = manyMembers(MANY);
    for (const lib of libs) {
      checks.set(lib, await check(lib, dataDir, members));
      manyChecks.set(lib, await check(lib, dataDir, many, MANY));
      console.log(`checked ${lib}: the folder ${JSON.stringify(checks.get(lib))}; ${MANY} entries ${JSON.stringify(manyChecks.get(lib))}`);
    }
  }

  const runs = new Map<string, Run[]>();
  const order = ["none", ...libs];
  for (let round = 0; round < rounds; round++) {
    const shift = round % order.length;
    for (const lib of [...order.slice(shift), ...order.slice(0, shift)]) {
      try {
        const r = await measure(lib, dataDir, "/dev/null");
        runs.set(lib, [...(runs.get(lib) ?? []), r]);
        console.log(`round ${round + 1} ${lib}: ${(r.bytes / r.seconds / 1e6).toFixed(0)} MB/s, peak ${mib(r.peakOverIdle)} MiB over idle`);
      } catch (err) {
        console.log(`round ${round + 1} ${lib}: ${(err as Error).message.slice(0, 300)}`);
      }
    }
  }

  const anchor = runs.get("none");
  const anchorSpeed = anchor ? median(anchor.map((r) => r.bytes / r.seconds)) : NaN;
  const verdicts = (c: Awaited<ReturnType<typeof check>> | undefined) => (c ? [c.unzip, c["7z"], c.python].map((v) => (v === "ok" ? "ok" : v.slice(0, 120))).join(" / ") : "-");
  console.log(`\nMB/s: archive bytes a second (median of ${rounds}); RSS: the child's VmHWM over its idle VmRSS (max of ${rounds}); CPU: user + system seconds (median).`);
  console.log(`Tools: unzip -t / 7z t / python zipfile.testzip() (+ names, sizes, STORED).\n`);
  console.log(`| library | MB/s | × anchor | CPU s | peak RSS over idle | bit 3 (data descriptor) | CRC-32 up front | the folder | ${MANY} entries |`);
  console.log(`|---|---|---|---|---|---|---|---|---|`);
  for (const lib of order) {
    const rs = runs.get(lib) ?? [];
    const speed = rs.length ? median(rs.map((r) => r.bytes / r.seconds)) : NaN;
    const c = checks.get(lib);
    const cells = [
      lib === "none" ? "anchor: the reads, no ZIP" : lib === "zip-stream" ? `zipStream ${LIBRARIES[lib]!.version()}` : `${lib.replace("-published", "")} ${LIBRARIES[lib]!.version()}`,
      (speed / 1e6).toFixed(0),
      (speed / anchorSpeed).toFixed(2),
      rs.length ? median(rs.map((r) => r.cpuSeconds)).toFixed(1) : "-",
      rs.length ? `${mib(Math.max(...rs.map((r) => r.peakOverIdle)))} MiB` : "-",
      lib === "none" || c?.descriptor === undefined ? "-" : c.descriptor ? "yes" : "no",
      CRC_UP_FRONT[lib] ?? "-",
      lib === "none" ? "-" : verdicts(c),
      lib === "none" ? "-" : verdicts(manyChecks.get(lib)),
    ];
    console.log(`| ${cells.join(" | ")} |`);
  }
}

if (flags.child !== undefined) {
  await child(flags.child, flags.data!, flags.out!);
} else {
  try {
    await parent();
  } finally {
    cleanUp();
  }
}
