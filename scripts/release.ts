// Builds the release executables, dist/release/cubby-<target> for each of Bun's cross-compilation
// targets in scripts/build.ts, the container images dist/release/cubby-oci-{amd64,arm64}.tar from
// the linux-x64 and linux-arm64 ones (scripts/image.ts: buildah, root, and for the other
// architecture's libraries qemu-user-static with libc6-arm64-cross), and dist/release/SHA256SUMS
// in sha256sum's format
// (`cd dist/release && sha256sum -c SHA256SUMS`). Source maps go to dist/release-maps, outside
// the published directory. Usage: bun scripts/release.ts [target …] (default: all of them, into
// an emptied dist/release; naming targets rebuilds only those, and SHA256SUMS then covers every
// cubby-* the directory holds)
import fs from "node:fs";
import path from "node:path";
import { buildExecutable, TARGETS, type Target } from "./build.ts";
import { buildImage, IMAGE_ARCHES, type ImageArch } from "./image.ts";

const root = path.resolve(import.meta.dir, "..");

/** Where `npm run release` puts the executables and SHA256SUMS. */
export const RELEASE_DIR = path.join(root, "dist/release");

/**
 * Builds `cubby-<target>` into `dir` (its `.map` into `dir`-maps) with scripts/build.ts's one
 * build function.
 * @returns the executable's path and size in bytes
 */
export async function buildRelease(target: Target, dir = RELEASE_DIR): Promise<{ file: string; bytes: number }> {
  const maps = `${dir}-maps`;
  const file = path.join(dir, `cubby-${target}`);
  const bytes = await buildExecutable({ outfile: file, target });
  fs.mkdirSync(maps, { recursive: true });
  fs.renameSync(`${file}.map`, path.join(maps, `cubby-${target}.map`));
  return { file, bytes };
}

/**
 * Writes `dir/SHA256SUMS` for every `cubby-*` executable in `dir`: one line per file,
 * `<hex sha256><two spaces><file name>`, sorted by name (GNU coreutils' sha256sum text format, so
 * `sha256sum -c SHA256SUMS` checks it).
 * @returns the file's contents
 */
export function writeChecksums(dir = RELEASE_DIR): string {
  const names = fs
    .readdirSync(dir)
    .filter((n) => n.startsWith("cubby-"))
    .sort();
  const lines = names.map((n) => `${new Bun.CryptoHasher("sha256").update(fs.readFileSync(path.join(dir, n))).digest("hex")}  ${n}\n`);
  fs.writeFileSync(path.join(dir, "SHA256SUMS"), lines.join(""));
  return lines.join("");
}

if (import.meta.main) {
  const asked = process.argv.slice(2);
  for (const t of asked) if (!(t in TARGETS)) throw new Error(`unknown target ${t}; targets: ${Object.keys(TARGETS).join(", ")}`);
  const targets = asked.length > 0 ? (asked as Target[]) : (Object.keys(TARGETS) as Target[]);
  // A partial run leaves no stale executable from an older build under a fresh SHA256SUMS.
  if (asked.length === 0) fs.rmSync(RELEASE_DIR, { recursive: true, force: true });
  for (const target of targets) {
    const started = performance.now();
    const { file, bytes } = await buildRelease(target);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`built ${path.relative(root, file)}: ${bytes} bytes (${(bytes / 1024 / 1024).toFixed(1)} MiB) in ${seconds} s`);
  }
  // The container image of each architecture whose executable was built in this run.
  for (const [arch, { target }] of Object.entries(IMAGE_ARCHES) as [ImageArch, (typeof IMAGE_ARCHES)[ImageArch]][]) {
    if (!targets.includes(target)) continue;
    const started = performance.now();
    const image = await buildImage({ arch, executable: path.join(RELEASE_DIR, `cubby-${target}`), out: path.join(RELEASE_DIR, `cubby-oci-${arch}.tar`) });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`built ${path.relative(root, image.file)} (${image.ref}, image ID ${image.id.slice(0, 12)}): ${(image.bytes / 1024 / 1024).toFixed(1)} MiB in ${seconds} s`);
  }
  writeChecksums();
  console.log(`wrote ${path.relative(root, path.join(RELEASE_DIR, "SHA256SUMS"))}`);
}
