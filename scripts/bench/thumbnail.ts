/**
 * `bun scripts/bench/thumbnail.ts`: one 320 px WebP thumbnail of a 24-megapixel photo, made by
 * cubby's WebAssembly codec (src/thumbnail/codec.ts, jSquash) against Debian's `vipsthumbnail`
 * (libvips, native, the tool a user would otherwise run; ImageMagick's `convert -thumbnail` when
 * vipsthumbnail is missing), both measured in the same run (issue 41).
 *
 * The source: a 6000 × 4000 JPEG, quality 85, made here with jSquash's MozJPEG encoder from
 * gradients, low-frequency waves and per-pixel noise (like a sensor's), so that it compresses
 * about as badly as a photo does; twice: baseline (as a camera writes it) and progressive
 * (MozJPEG's default, as web tools write it; a progressive decoder keeps every coefficient of the
 * image, 2 bytes a sample, until the last scan).
 *
 * Each thumbnail is made by a fresh child process, as the server will make them (one child a
 * thumbnail, its memory returned when it exits): for cubby `bun` on this file with `--child` (it
 * imports the codec, reads the JPEG, makes one thumbnail, writes it); for the anchor
 * `vipsthumbnail SOURCE -s 320 -o OUT.webp[Q=75,strip]`. Per child: wall time from spawn to exit
 * (start-up and WebAssembly compilation included); CPU time (user + system, all threads); peak
 * RSS, the child's maximum resident set size over its whole life (ru_maxrss), the same measure
 * for both, as GNU time reports it (`/usr/bin/time -f %M`, Debian's `time`). Not Bun's own
 * `resourceUsage().maxRSS`: Linux counts in a process's ru_maxrss the high-water mark of the
 * memory it ran in before exec(), for a child of this bench the bench's own (500 MiB and more
 * while it makes the source); GNU time's is ~2 MiB. cubby's child also reports the time inside
 * makeThumbnail and its own VmHWM (/proc/self/status), as a check of the peak. A child that only
 * imports the codec gives the runtime's own peak, the floor under cubby's figure.
 *
 * One untimed round first (page cache, Bun's transpiler cache), then `--runs` rounds (5)
 * alternating which side goes first; medians; ratios are cubby ÷ anchor. Every output is checked
 * to be a WebP whose longer edge is 320.
 *
 * Everything lives in one temporary directory, removed at the end, also on failure or Ctrl-C;
 * every child is awaited, and killed (by its PID) when the bench stops first or the child runs
 * over `--timeout` seconds.
 *
 *   bun scripts/bench/thumbnail.ts [--runs 5] [--timeout 300]
 */
import type { Subprocess } from "bun";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

const { values: flags } = parseArgs({
  options: {
    runs: { type: "string", default: "5" },
    timeout: { type: "string", default: "300" },
    // The child's side (the parent passes these).
    child: { type: "boolean", default: false },
    idle: { type: "boolean", default: false },
    input: { type: "string" },
    output: { type: "string" },
  },
});

const WIDTH = 6000;
const HEIGHT = 4000;
const MAX_EDGE = 320;
const MiB = 2 ** 20;

/** VmHWM (peak resident set) of this process from /proc/self/status, in bytes. */
function ownPeak(): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) * 1024 : Number.NaN;
}

if (flags.child) {
  // --- a child: one thumbnail (or, with --idle, only the codec imported) ---
  const { makeThumbnail } = await import("../../src/thumbnail/codec.ts");
  if (flags.idle) {
    console.log(JSON.stringify({ peak: ownPeak() }));
  } else {
    const input = await Bun.file(flags.input!).bytes();
    const started = performance.now();
    const out = await makeThumbnail(input, "image/jpeg", { maxEdge: MAX_EDGE, maxPixels: 50_000_000 });
    const ms = performance.now() - started;
    await Bun.write(flags.output!, out.image);
    console.log(JSON.stringify({ ms, peak: ownPeak() }));
  }
  process.exit(0);
}

// --- the parent ---
const RUNS = Number(flags.runs);
const TIMEOUT_MS = Number(flags.timeout) * 1000;
const TIME = "/usr/bin/time";
if (!fs.existsSync(TIME)) throw new Error(`${TIME} is missing: apt-get install -y time`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const work = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-bench-thumbnail-"));
const live = new Set<Subprocess>();
process.on("exit", () => {
  for (const p of live) p.kill("SIGKILL");
  fs.rmSync(work, { recursive: true, force: true });
});
process.on("SIGINT", () => process.exit(130));
process.on("SIGTERM", () => process.exit(143));

/** One child's figures. */
interface Run {
  wallMs: number;
  cpuMs: number;
  peakBytes: number;
  stdout: string;
}

/**
 * Runs `cmd` under GNU time to its end (killed after TIMEOUT_MS): its wall time, CPU time (time's
 * rusage from wait4, which includes the child it waited for) and peak RSS (time's %M, KiB).
 * @throws Error with the child's stderr when it fails
 */
async function measure(cmd: string[]): Promise<Run> {
  const peakFile = path.join(work, "peak.txt");
  const started = performance.now();
  const proc = Bun.spawn([TIME, "-f", "%M", "-o", peakFile, ...cmd], { stdout: "pipe", stderr: "pipe", cwd: work });
  live.add(proc);
  const timer = setTimeout(() => proc.kill("SIGKILL"), TIMEOUT_MS);
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    const wallMs = performance.now() - started;
    if (code !== 0) throw new Error(`${cmd.join(" ")} exited ${code} (signal ${proc.signalCode ?? "none"}): ${stderr.trim()}`);
    const usage = proc.resourceUsage();
    if (usage === undefined) throw new Error(`no resource usage for ${cmd[0]}`);
    const kib = Number(fs.readFileSync(peakFile, "utf8").trim().split("\n").at(-1));
    if (!Number.isFinite(kib)) throw new Error(`GNU time wrote no peak for ${cmd.join(" ")}`);
    return { wallMs, cpuMs: Number(usage.cpuTime.total) / 1000, peakBytes: kib * 1024, stdout };
  } finally {
    clearTimeout(timer);
    live.delete(proc);
  }
}

/** The source's pixels: gradients, waves and noise, RGBA, opaque. */
function photoLike(): Uint8ClampedArray {
  const data = new Uint8ClampedArray(WIDTH * HEIGHT * 4);
  let seed = 0x2545f491;
  for (let y = 0; y < HEIGHT; y++) {
    const wy = Math.sin(y / 190) * 40;
    for (let x = 0; x < WIDTH; x++) {
      // xorshift32: the sensor noise, ±24 on each channel.
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      const noise = (shift: number) => (48 * ((seed >>> shift) & 0xff)) / 255 - 24;
      const wave = wy + Math.sin(x / 230 + y / 410) * 35;
      const at = (y * WIDTH + x) * 4;
      data[at] = (x / WIDTH) * 200 + wave + noise(0) + 20;
      data[at + 1] = (y / HEIGHT) * 180 + wave * 0.6 + noise(8) + 30;
      data[at + 2] = ((x + y) / (WIDTH + HEIGHT)) * 160 - wave * 0.5 + noise(16) + 50;
      data[at + 3] = 255;
    }
  }
  return data;
}

/** The anchor's command for `input` → `output`, and its name with version. */
function anchor(input: string, output: string): { name: string; cmd: string[] } {
  if (Bun.which("vipsthumbnail") !== null) {
    const version = Bun.spawnSync(["vipsthumbnail", "--vips-version"]).stdout.toString().trim();
    return { name: `vipsthumbnail (${version})`, cmd: ["vipsthumbnail", input, "-s", String(MAX_EDGE), "-o", `${output}[Q=75,strip]`] };
  }
  if (Bun.which("convert") !== null) {
    const version = /ImageMagick [^ ]+/.exec(Bun.spawnSync(["convert", "-version"]).stdout.toString())?.[0] ?? "ImageMagick";
    return { name: `convert -thumbnail (${version})`, cmd: ["convert", input, "-thumbnail", `${MAX_EDGE}x${MAX_EDGE}`, "-quality", "75", "-strip", output] };
  }
  throw new Error("neither vipsthumbnail nor convert is installed: apt-get install -y libvips-tools");
}

console.log(`Making the ${WIDTH} × ${HEIGHT} source JPEGs (quality 85) …`);
const sources: { kind: string; file: string; bytes: number }[] = [];
{
  const { default: encodeJpeg } = await import("@jsquash/jpeg/encode");
  const image = { data: photoLike(), width: WIDTH, height: HEIGHT } as unknown as Parameters<typeof encodeJpeg>[0];
  for (const progressive of [false, true]) {
    const kind = progressive ? "progressive" : "baseline";
    const bytes = new Uint8Array(await encodeJpeg(image, { quality: 85, progressive }));
    const file = path.join(work, `source-${kind}.jpg`);
    await Bun.write(file, bytes);
    sources.push({ kind, file, bytes: bytes.length });
    console.log(`  ${kind}: ${(bytes.length / MiB).toFixed(1)} MiB`);
  }
}

const { imageSize } = await import("../../src/thumbnail/codec.ts");
const bun = process.execPath;
const cubbyOut = path.join(work, "cubby.webp");
const anchorOut = path.join(work, "anchor.webp");
const CUBBY = "cubby (codec.ts in `bun`)";
let anchorName = "";
type Side = "cubby" | "anchor";

interface Row {
  kind: string;
  bytes: number;
  runs: Record<Side, Run[]>;
  inside: { ms: number; peak: number }[];
}
const rows: Row[] = [];
for (const source of sources) {
  const other = anchor(source.file, anchorOut);
  anchorName = other.name;
  const sides: Record<Side, { cmd: string[]; out: string }> = {
    cubby: { cmd: [bun, import.meta.path, "--child", "--input", source.file, "--output", cubbyOut], out: cubbyOut },
    anchor: { cmd: other.cmd, out: anchorOut },
  };
  const row: Row = { kind: source.kind, bytes: source.bytes, runs: { cubby: [], anchor: [] }, inside: [] };
  console.log(`${source.kind}:`);
  for (let round = 0; round <= RUNS; round++) {
    const order: Side[] = round % 2 === 0 ? ["cubby", "anchor"] : ["anchor", "cubby"];
    for (const side of order) {
      fs.rmSync(sides[side].out, { force: true });
      const run = await measure(sides[side].cmd);
      const size = imageSize(fs.readFileSync(sides[side].out), "image/webp");
      if (Math.max(size.width, size.height) !== MAX_EDGE) throw new Error(`${side} made ${size.width} × ${size.height}`);
      if (round === 0) {
        console.log(`  ${side}: ${size.width} × ${size.height}, ${fs.statSync(sides[side].out).size} bytes (untimed round)`);
        continue;
      }
      row.runs[side].push(run);
      if (side === "cubby") row.inside.push(JSON.parse(run.stdout.trim().split("\n").at(-1)!) as { ms: number; peak: number });
      console.log(`  round ${round} ${side}: ${(run.wallMs / 1000).toFixed(2)} s, CPU ${(run.cpuMs / 1000).toFixed(2)} s, peak RSS ${(run.peakBytes / MiB).toFixed(0)} MiB`);
    }
  }
  rows.push(row);
}
const idle: Run[] = [];
for (let i = 0; i < 3; i++) idle.push(await measure([bun, import.meta.path, "--child", "--idle"]));

const stat = (runs: Run[]) => ({
  wall: median(runs.map((r) => r.wallMs)) / 1000,
  cpu: median(runs.map((r) => r.cpuMs)) / 1000,
  peak: median(runs.map((r) => r.peakBytes)) / MiB,
});
console.log();
console.log(`One ${MAX_EDGE} px WebP of a ${WIDTH} × ${HEIGHT} JPEG (q85), a fresh process each, median of ${RUNS}; ${os.cpus().length} cores, ${new Date().toISOString().slice(0, 10)}`);
console.log();
console.log("| source | | wall time | CPU time | peak RSS |");
console.log("|---|---|---|---|---|");
for (const row of rows) {
  const [c, a] = [stat(row.runs.cubby), stat(row.runs.anchor)];
  const label = `${row.kind}, ${(row.bytes / MiB).toFixed(1)} MiB`;
  console.log(`| ${label} | ${CUBBY} | ${c.wall.toFixed(2)} s | ${c.cpu.toFixed(2)} s | ${c.peak.toFixed(0)} MiB |`);
  console.log(`| ${label} | ${anchorName} | ${a.wall.toFixed(2)} s | ${a.cpu.toFixed(2)} s | ${a.peak.toFixed(0)} MiB |`);
  console.log(`| ${label} | cubby ÷ anchor | ${(c.wall / a.wall).toFixed(2)}× | ${(c.cpu / a.cpu).toFixed(2)}× | ${(c.peak / a.peak).toFixed(2)}× |`);
}
console.log();
for (const row of rows) {
  console.log(
    `${row.kind}: makeThumbnail itself ${(median(row.inside.map((r) => r.ms)) / 1000).toFixed(2)} s in cubby's child (the rest is start-up and reading); its own VmHWM ${(median(row.inside.map((r) => r.peak)) / MiB).toFixed(0)} MiB`,
  );
}
console.log(`the same child with the codec imported and no thumbnail made: peak RSS ${stat(idle).peak.toFixed(0)} MiB, ${stat(idle).wall.toFixed(2)} s`);
