import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { FILE_ID_PATTERN } from "../../src/domain/ids.ts";
import { routeOf } from "../../src/server/dispatch.ts";
import { DASHBOARD_SECTIONS, dashboardPages, serveStatic, staticAssets } from "../../src/http/static.ts";

test("every file of web/ is embedded and served", () => {
  const webDir = path.resolve(import.meta.dir, "../../web");
  const onDisk = fs.readdirSync(webDir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(webDir, path.join(e.parentPath, e.name)))
    .sort();
  const embedded = Object.values(staticAssets).map((a) => path.basename(a.file)).sort();
  expect(embedded).toEqual(onDisk.map((f) => path.basename(f)));
});

test("each section's address is the dashboard's page, and none can be read as a content URL or another route", async () => {
  expect(Object.keys(dashboardPages).sort()).toEqual(["/", ...DASHBOARD_SECTIONS].sort());
  const page = await serveStatic("/")!.text();
  for (const section of DASHBOARD_SECTIONS) {
    const answer = serveStatic(section)!;
    expect([section, answer.status, answer.headers.get("content-type"), await answer.text() === page]).toEqual([section, 200, "text/html; charset=utf-8", true]);
    expect(FILE_ID_PATTERN.test(section.slice(1))).toBe(false);
    for (const method of ["GET", "HEAD"]) expect(routeOf(method, `${section}?folder=x`, new Set())).toEqual({ kind: "app", pathname: section });
    expect(Object.keys(staticAssets)).not.toContain(section);
  }
  expect(serveStatic("/files/")).toBeUndefined();
  expect(serveStatic("/nothing")).toBeUndefined();
});
