import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { FILE_ID_PATTERN } from "../../src/domain/ids.ts";
import { routeOf } from "../../src/server/dispatch.ts";
import { gunzipSync } from "node:zlib";
import { acceptsGzip, DASHBOARD_SECTIONS, dashboardPages, serveStatic, staticAssets, vendoredAssets } from "../../src/http/static.ts";

const none = new Headers();

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
  const page = await (await serveStatic("/", none))!.text();
  for (const section of DASHBOARD_SECTIONS) {
    const answer = (await serveStatic(section, none))!;
    expect([section, answer.status, answer.headers.get("content-type"), await answer.text() === page]).toEqual([section, 200, "text/html; charset=utf-8", true]);
    expect(FILE_ID_PATTERN.test(section.slice(1))).toBe(false);
    for (const method of ["GET", "HEAD"]) expect(routeOf(method, `${section}?folder=x`, new Set())).toEqual({ kind: "app", pathname: section });
    expect(Object.keys(staticAssets)).not.toContain(section);
  }
  expect(await serveStatic("/files/", none)).toBeUndefined();
  expect(await serveStatic("/nothing", none)).toBeUndefined();
});

test("an asset is gzipped for a client that takes gzip, plain otherwise, each with its own ETag; a revalidation with it is 304", async () => {
  const plain = (await serveStatic("/app.js", none))!;
  const bytes = new Uint8Array(await plain.arrayBuffer());
  expect(plain.headers.get("content-encoding")).toBeNull();
  expect(plain.headers.get("vary")).toBe("Accept-Encoding");
  expect(bytes).toEqual(new Uint8Array(fs.readFileSync(staticAssets["/app.js"]!.file)));
  const zipped = (await serveStatic("/app.js", new Headers({ "accept-encoding": "gzip, deflate, br, zstd" })))!;
  expect(zipped.headers.get("content-encoding")).toBe("gzip");
  const gz = new Uint8Array(await zipped.arrayBuffer());
  expect(new Uint8Array(gunzipSync(gz))).toEqual(bytes);
  expect(gz.byteLength).toBeLessThan(bytes.byteLength / 2);
  expect(zipped.headers.get("etag")).not.toBe(plain.headers.get("etag"));
  for (const [etag, encoding] of [[plain.headers.get("etag")!, ""], [zipped.headers.get("etag")!, "gzip"]] as const) {
    const again = (await serveStatic("/app.js", new Headers({ "if-none-match": `W/"x", ${etag}`, "accept-encoding": encoding })))!;
    expect([again.status, again.headers.get("etag"), (await again.arrayBuffer()).byteLength]).toEqual([304, etag, 0]);
  }
  // Another representation's tag is not a match: the body comes.
  const other = (await serveStatic("/app.js", new Headers({ "if-none-match": plain.headers.get("etag")!, "accept-encoding": "gzip" })))!;
  expect(other.status).toBe(200);
  // The vendored files too (pdf.js's worker, the largest, compressed off the event loop).
  expect((await serveStatic("/assets/pdf.worker.min.mjs", new Headers({ "accept-encoding": "gzip" })))!.headers.get("content-encoding")).toBe("gzip");
  expect(Object.keys(vendoredAssets)).toContain("/assets/pdf.worker.min.mjs");
});

test("Accept-Encoding is read as RFC 9110 says: gzip or * with a weight other than 0", () => {
  expect([null, "", "identity", "br", "gzip;q=0", "gzip; q=0.0", "*;q=0", "br, *;q=0"].map(acceptsGzip)).toEqual(Array(8).fill(false));
  expect(["gzip", "GZIP", "deflate, gzip;q=0.5", "x-gzip", "*", "br;q=1, *;q=0.1", "gzip;q=1.0, *;q=0"].map(acceptsGzip)).toEqual(Array(7).fill(true));
});
