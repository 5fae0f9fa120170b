// Generates src/gen/ from proto/ with buf and the local protoc-gen-es (proto/buf.gen.yaml).
// Usage: bun scripts/gen-proto.ts          regenerate src/gen/
//        bun scripts/gen-proto.ts --check  exit 1 if src/gen/ differs from what buf would write
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dir, "..");
const buf = path.join(root, "node_modules/.bin/buf");

/** Runs `buf generate` from proto/; `base` relocates the output (buf's --output flag). */
function generate(base?: string): void {
  const args = [buf, "generate", ...(base === undefined ? [] : ["--output", base])];
  const proc = Bun.spawnSync(args, { cwd: path.join(root, "proto"), stdout: "inherit", stderr: "inherit" });
  if (proc.exitCode !== 0) process.exit(proc.exitCode ?? 1);
}

/** Every file under `dir`, relative path → contents. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!fs.existsSync(dir)) return out;
  for (const rel of fs.readdirSync(dir, { recursive: true }).map(String).sort()) {
    const full = path.join(dir, rel);
    if (fs.statSync(full).isFile()) out[rel] = fs.readFileSync(full, "utf8");
  }
  return out;
}

if (process.argv.includes("--check")) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-gen-"));
  // buf resolves `out: ../src/gen` against --output, so generate under tmp/x.
  generate(path.join(tmp, "x"));
  const fresh = snapshot(path.join(tmp, "src/gen"));
  const committed = snapshot(path.join(root, "src/gen"));
  fs.rmSync(tmp, { recursive: true, force: true });
  if (JSON.stringify(fresh) !== JSON.stringify(committed)) {
    console.error("src/gen is stale: run `npm run generate`");
    process.exit(1);
  }
  console.log("src/gen is up to date");
} else {
  generate();
  console.log("generated src/gen");
}
