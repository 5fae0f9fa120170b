// Builds one self-contained executable (bun build --compile) with the SQL migrations, the web/
// files and the CRC32C native addon embedded: for this machine (dist/cubby, `npm run build`) or for
// one of Bun's cross-compilation targets (scripts/release.ts). Usage: bun scripts/build.ts
import path from "node:path";
import fs from "node:fs";
import type { BunPlugin } from "bun";

const root = path.resolve(import.meta.dir, "..");

/**
 * The release targets: Bun's `--target` name and the napi-rs package that holds the CRC32C addon
 * (`@node-rs/crc32`'s per-platform optional dependency) for that platform.
 */
export const TARGETS = {
  "linux-x64": { bun: "bun-linux-x64", addon: "linux-x64-gnu" },
  "linux-arm64": { bun: "bun-linux-arm64", addon: "linux-arm64-gnu" },
  "linux-x64-musl": { bun: "bun-linux-x64-musl", addon: "linux-x64-musl" },
  "linux-arm64-musl": { bun: "bun-linux-arm64-musl", addon: "linux-arm64-musl" },
  "darwin-arm64": { bun: "bun-darwin-arm64", addon: "darwin-arm64" },
} as const;

/** A release target's name, as in `dist/release/cubby-<target>`. */
export type Target = keyof typeof TARGETS;

export interface BuildOptions {
  /** where the executable goes; a `.map` file is written beside it */
  outfile: string;
  /** a cross-compilation target; omitted: this machine's platform (Bun's default) */
  target?: Target;
}

/**
 * Compiles src/main.ts into one executable at `outfile`.
 *
 * The CRC32C addon is a native `.node` file per platform. napi-rs's loader picks it at run time
 * among the optional dependencies npm installed, which are only this machine's; so the build
 * replaces `@node-rs/crc32` by a `require` of the target's `.node` file, which `--compile` embeds.
 * A target's addon not in node_modules is downloaded from the npm registry once into
 * dist/addon-cache and checked against package-lock.json's sha512 integrity.
 * Bun downloads a cross-target's runtime itself (into its install cache).
 * @returns the executable's size in bytes
 * @throws Error when bundling fails, or the addon cannot be fetched or does not match the lockfile
 */
export async function buildExecutable({ outfile, target }: BuildOptions): Promise<number> {
  fs.mkdirSync(path.dirname(outfile), { recursive: true });
  const platform = target ?? hostTarget();
  const addon = platform === undefined ? undefined : await addonFile(TARGETS[platform].addon);
  const result = await Bun.build({
    entrypoints: [path.join(root, "src/main.ts")],
    compile: target === undefined ? { outfile } : { outfile, target: TARGETS[target].bun },
    minify: true,
    sourcemap: "linked",
    bytecode: true,
    target: "bun",
    plugins: addon === undefined ? [] : [crc32AddonPlugin(addon)],
  });
  if (!result.success) throw new AggregateError(result.logs, `build of ${target ?? "this machine"} failed:\n${result.logs.join("\n")}`);
  return fs.statSync(outfile).size;
}

/** This machine as a release target, or undefined when it is none of them (napi-rs's loader then picks the addon). */
function hostTarget(): Target | undefined {
  // musl's dynamic loader (Alpine); glibc systems have none.
  const musl = process.platform === "linux" && fs.existsSync(`/lib/ld-musl-${process.arch === "x64" ? "x86_64" : "aarch64"}.so.1`);
  const name = `${process.platform}-${process.arch}${musl ? "-musl" : ""}`;
  return name in TARGETS ? (name as Target) : undefined;
}

/** Resolves `@node-rs/crc32` to a module that is just `require(<the target's .node file>)`. */
function crc32AddonPlugin(nodeFile: string): BunPlugin {
  return {
    name: "crc32-addon-for-target",
    setup(build) {
      build.onResolve({ filter: /^@node-rs\/crc32$/ }, () => ({ path: "crc32-addon", namespace: "crc32-addon" }));
      build.onLoad({ filter: /.*/, namespace: "crc32-addon" }, () => ({
        contents: `module.exports = require(${JSON.stringify(nodeFile)});`,
        loader: "js",
      }));
    },
  };
}

/**
 * The path of `@node-rs/crc32-<platform>`'s `.node` file, at the version and integrity
 * package-lock.json pins: from node_modules when npm installed it (this machine's platform), else
 * from the cache, else downloaded from the registry (`NPM_CONFIG_REGISTRY`, default npmjs.org).
 */
async function addonFile(platform: string): Promise<string> {
  const name = `@node-rs/crc32-${platform}`;
  const file = `crc32.${platform}.node`;
  const installed = path.join(root, "node_modules", name, file);
  if (fs.existsSync(installed)) return installed;

  const lock = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string; integrity?: string } | undefined>;
  };
  const pinned = lock.packages[`node_modules/${name}`];
  if (pinned?.version === undefined || pinned.integrity === undefined) throw new Error(`package-lock.json pins no version and integrity for ${name}`);
  const dir = path.join(root, "dist/addon-cache", `${platform}-${pinned.version}`);
  const cached = path.join(dir, "package", file);
  if (fs.existsSync(cached)) return cached;

  const registry = (process.env.NPM_CONFIG_REGISTRY ?? process.env.npm_config_registry ?? "https://registry.npmjs.org").replace(/\/$/, "");
  const url = `${registry}/${name}/-/crc32-${platform}-${pinned.version}.tgz`;
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  const tgz = new Uint8Array(await res.arrayBuffer());
  const [algorithm, expected] = pinned.integrity.split("-", 2) as [string, string];
  const actual = new Bun.CryptoHasher(algorithm as "sha512").update(tgz).digest("base64");
  if (actual !== expected) throw new Error(`${url}: ${algorithm} ${actual} is not package-lock.json's ${expected}`);
  const partial = `${dir}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  const tar = Bun.spawnSync(["tar", "-xzf", "-", "-C", partial], { stdin: tgz, stderr: "pipe" });
  if (tar.exitCode !== 0) throw new Error(`tar -xzf ${url}: ${tar.stderr.toString()}`);
  try {
    fs.renameSync(partial, dir); // whole or absent: a build killed mid-extract leaves no half addon
  } catch (e) {
    fs.rmSync(partial, { recursive: true, force: true });
    if (!fs.existsSync(cached)) throw e; // else another build put the same bytes there first
  }
  return cached;
}

if (import.meta.main) {
  const outfile = path.join(root, "dist/cubby");
  const size = await buildExecutable({ outfile });
  console.log(`built ${path.relative(root, outfile)} (${(size / 1024 / 1024).toFixed(1)} MiB)`);
}
