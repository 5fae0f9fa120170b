// Builds dist/cubby: one self-contained executable (bun build --compile) with the SQL
// migrations, the web/ files and the CRC32C native addon embedded. Usage: bun scripts/build.ts
import path from "node:path";
import fs from "node:fs";

const root = path.resolve(import.meta.dir, "..");
const outfile = path.join(root, "dist/cubby");
fs.mkdirSync(path.dirname(outfile), { recursive: true });

const result = await Bun.build({
  entrypoints: [path.join(root, "src/main.ts")],
  compile: { outfile },
  minify: true,
  sourcemap: "linked",
  bytecode: true,
  target: "bun",
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
const size = fs.statSync(outfile).size;
console.log(`built ${path.relative(root, outfile)} (${(size / 1024 / 1024).toFixed(1)} MiB)`);
