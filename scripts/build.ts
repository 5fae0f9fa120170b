// Builds one self-contained executable (bun build --compile) with the SQL migrations and the web/
// files embedded: for this machine (dist/cubby, `npm run build`) or for one of Bun's
// cross-compilation targets (scripts/release.ts). Usage: bun scripts/build.ts
import path from "node:path";
import fs from "node:fs";
import type { BunPlugin } from "bun";

const root = path.resolve(import.meta.dir, "..");

/**
 * The release targets and Bun's `--target` name for each. The x64 ones are Bun's `-baseline`
 * runtimes (x86-64 with SSE4.2, no AVX/AVX2: Nehalem and later, Proxmox's `kvm64` and
 * `x86-64-v2-AES` vCPUs, Celeron/Atom/Pentium J-series NAS boards); Bun's default x64 runtime
 * stops with "Illegal instruction" on a CPU without AVX2 (issue 25, item 8). docs/benchmarks.md
 * has the measurement that found the default runtime no faster for cubby, hence no second build.
 */
export const TARGETS = {
  "linux-x64": "bun-linux-x64-baseline",
  "linux-arm64": "bun-linux-arm64",
  "linux-x64-musl": "bun-linux-x64-baseline-musl",
  "linux-arm64-musl": "bun-linux-arm64-musl",
  "darwin-arm64": "bun-darwin-arm64",
} as const;

/** A release target's name, as in `dist/release/cubby-<target>`. */
export type Target = keyof typeof TARGETS;

export interface BuildOptions {
  /** where the executable goes; a `.map` file is written beside it */
  outfile: string;
  /** a cross-compilation target; omitted: this machine's platform, with the x64 runtime baseline */
  target?: Target;
  /**
   * Bun's `--target` name, overriding `target` (for measuring another runtime, e.g.
   * `bun-linux-x64` against the baseline one in scripts/bench); not for releases
   */
  bunTarget?: string;
  /** bundler plugins (scripts/bench/checksum.ts swaps the CRC32C implementation); not for releases */
  plugins?: BunPlugin[];
}

/**
 * Compiles src/main.ts into one executable at `outfile`, with the Bun target name baked in
 * (the `CUBBY_BUILD_TARGET` define) so that `cubby version` names it.
 *
 * Nothing in the executable is written to disk when it runs: no native addon (CRC32C is
 * WebAssembly, src/domain/crc32c.ts), so it starts with TMPDIR on a noexec mount.
 * Bun downloads a target's runtime itself the first time (into its install cache).
 * @returns the executable's size in bytes
 * @throws Error when bundling fails (a target's runtime that cannot be downloaded among them)
 */
export async function buildExecutable({ outfile, target, bunTarget, plugins = [] }: BuildOptions): Promise<number> {
  fs.mkdirSync(path.dirname(outfile), { recursive: true });
  // A machine that is none of the targets (darwin-x64, windows) gets Bun's default runtime.
  const platform = target ?? hostTarget();
  const runtime = bunTarget ?? (platform === undefined ? undefined : TARGETS[platform]);
  const result = await Bun.build({
    entrypoints: [path.join(root, "src/main.ts")],
    compile: runtime === undefined ? { outfile } : { outfile, target: runtime as Bun.Build.CompileTarget },
    minify: true,
    sourcemap: "linked",
    bytecode: true,
    target: "bun",
    plugins,
    define: { CUBBY_BUILD_TARGET: JSON.stringify(runtime ?? `bun-${process.platform}-${process.arch}`) },
  });
  if (!result.success) throw new AggregateError(result.logs, `build of ${runtime ?? "this machine"} failed:\n${result.logs.join("\n")}`);
  return fs.statSync(outfile).size;
}

/** This machine as a release target, or undefined when it is none of them. */
export function hostTarget(): Target | undefined {
  // musl's dynamic loader (Alpine); glibc systems have none.
  const musl = process.platform === "linux" && fs.existsSync(`/lib/ld-musl-${process.arch === "x64" ? "x86_64" : "aarch64"}.so.1`);
  const name = `${process.platform}-${process.arch}${musl ? "-musl" : ""}`;
  return name in TARGETS ? (name as Target) : undefined;
}

if (import.meta.main) {
  const outfile = path.join(root, "dist/cubby");
  const size = await buildExecutable({ outfile });
  console.log(`built ${path.relative(root, outfile)} (${(size / 1024 / 1024).toFixed(1)} MiB)`);
}
