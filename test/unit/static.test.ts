import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { staticAssets } from "../../src/http/static.ts";

test("every file of web/ is embedded and served", () => {
  const webDir = path.resolve(import.meta.dir, "../../web");
  const onDisk = fs.readdirSync(webDir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(webDir, path.join(e.parentPath, e.name)))
    .sort();
  const embedded = Object.values(staticAssets).map((a) => path.basename(a.file)).sort();
  expect(embedded).toEqual(onDisk.map((f) => path.basename(f)));
});
