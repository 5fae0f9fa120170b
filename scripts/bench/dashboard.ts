/**
 * `bun scripts/bench/dashboard.ts`: what the dashboard costs a browser (issue 40): the bytes a
 * first visit loads (each file as sent, gzip when the browser takes it, and as on disk), and the
 * time from navigating to `/files` to a usable list of 1 000 files (the first page of 50 rows
 * with their expiries filled in, no "…" left), then to all 1 000 rows by "Load more".
 *
 * The server is `dist/cubby` (built by `bun scripts/build.ts` when missing; `--binary PATH` for
 * another), WORKERS=1, on a fresh data directory, SQLite + disk; the browser Debian's Chromium,
 * headless, one fresh profile (a first visit: no HTTP cache, no service worker yet), signed in
 * with a login link (`cubby login-link`). The 1 000 files are made over REST before the clock
 * starts. Rounds: `--runs` (5) fresh pages of the same profile after the first visit (the
 * service worker then serves the shell, as on a person's second visit); medians.
 *
 * Everything lives in one temporary directory, removed at the end; the server and the browser
 * are stopped by their PIDs at the end, also on failure or Ctrl-C.
 *
 *   bun scripts/bench/dashboard.ts [--files 1000] [--runs 5] [--binary dist/cubby]
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import { chromium, type Page } from "@playwright/test";
import { launchCubby, ROOT } from "../../test/support/launch.ts";

const { values } = parseArgs({ options: { files: { type: "string", default: "1000" }, runs: { type: "string", default: "5" }, binary: { type: "string" } } });
const FILES = Number(values.files);
const RUNS = Number(values.runs);
const binary = values.binary ?? path.join(ROOT, "dist/cubby");
if (values.binary === undefined && !fs.existsSync(binary)) {
  const built = spawnSync(process.execPath, ["scripts/build.ts"], { cwd: ROOT, stdio: "inherit" });
  if (built.status !== 0) process.exit(1);
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-bench-dashboard-"));
const cubby = await launchCubby({ executable: binary, dataDir: path.join(scratch, "data"), env: { WORKERS: "1" } });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
});
const stop = async () => {
  await browser.close().catch(() => {});
  await cubby.proc.stop().catch(() => {});
  fs.rmSync(scratch, { recursive: true, force: true });
};
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => void stop().then(() => process.exit(130)));

try {
  const login = spawnSync(binary, ["login-link", "--email", "bench@example.com", "--data-dir", path.join(scratch, "data")], { encoding: "utf8", env: { ...process.env, HOSTNAME: cubby.url } });
  if (login.status !== 0) throw new Error(`cubby login-link: ${login.stderr}`);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(login.stdout.trim());
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${cubby.url}/`);
  const { key } = (await page.evaluate(async () => (await fetch("/auth/keys", { method: "POST" })).json())) as { key: string };
  for (let i = 0; i < FILES; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, FILES - i) }, (_, j) =>
        fetch(`${cubby.url}/v1/files?name=file-${String(i + j).padStart(4, "0")}.txt`, { method: "POST", body: "x".repeat(i + j), headers: { authorization: `Bearer ${key}`, "content-type": "text/plain" } }).then((r) => {
          if (r.status !== 200) throw new Error(`upload: ${r.status}`);
        }),
      ),
    );
  }

  // The first visit: a page of the fresh profile, no cache, no service worker yet.
  const first = await context.newPage();
  const sent = new Map<string, { encoded: number; decoded: number }>();
  const firstTimes = await timeList(first);
  // What the browser fetched, as Resource Timing saw it: bytes over the wire (encoded) and as used.
  type Entry = { name: string; encodedBodySize: number; decodedBodySize: number; duration: number };
  const entries = await first.evaluate(() => {
    const perf = (globalThis as unknown as { performance: { getEntriesByType(t: string): Entry[] } }).performance;
    return [...perf.getEntriesByType("navigation"), ...perf.getEntriesByType("resource")].map((e) => ({ name: e.name, encodedBodySize: e.encodedBodySize, decodedBodySize: e.decodedBodySize, duration: e.duration }));
  });
  for (const e of entries) {
    const url = new URL(e.name);
    if (url.origin === cubby.url && /\.(m?js|css)$|^\/(files)?$/.test(url.pathname)) sent.set(url.pathname, { encoded: e.encodedBodySize, decoded: e.decodedBodySize });
  }
  const api = entries.filter((e) => new URL(e.name).pathname.startsWith("/v1/"));
  if (process.env.BENCH_VERBOSE) for (const e of api) console.log(`  ${e.duration.toFixed(0).padStart(5)} ms ${new URL(e.name).pathname}${new URL(e.name).search.slice(0, 40)}`);
  await first.close();
  const rounds: { usable: number; all: number }[] = [];
  for (let i = 0; i < RUNS; i++) {
    const again = await context.newPage();
    rounds.push(await timeList(again));
    await again.close();
  }

  const js = [...sent].filter(([p]) => /\.m?js$/.test(p));
  const sum = (list: [string, { encoded: number; decoded: number }][], k: "encoded" | "decoded") => list.reduce((n, [, s]) => n + s[k], 0);
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`first visit, files loaded (as sent / as on disk):`);
  for (const [p, s] of [...sent].sort()) console.log(`  ${p.padEnd(28)} ${kib(s.encoded).padStart(10)} ${kib(s.decoded).padStart(10)}`);
  console.log(`  JavaScript: ${kib(sum(js, "encoded"))} sent, ${kib(sum(js, "decoded"))} on disk; everything: ${kib(sum([...sent], "encoded"))} sent, ${kib(sum([...sent], "decoded"))}`);
  console.log(`${FILES} files, first visit: usable list (50 rows, expiries in) ${firstTimes.usable.toFixed(0)} ms, all ${FILES} rows ${firstTimes.all.toFixed(0)} ms`);
  console.log(`${FILES} files, later visits (median of ${RUNS}): usable list ${median(rounds.map((r) => r.usable)).toFixed(0)} ms, all rows ${median(rounds.map((r) => r.all)).toFixed(0)} ms`);
} finally {
  await stop();
}

/** What the in-page functions use of the page's document. */
type PageDocument = { querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }> };

/** Navigates `page` to /files and times the first page of rows (expiries filled in), then every row by Load more. */
async function timeList(page: Page): Promise<{ usable: number; all: number }> {
  const start = performance.now();
  await page.goto(`${cubby.url}/files`);
  const rows = page.locator("#files tbody tr");
  await rows.nth(49).waitFor();
  // These functions run in the page (whose DOM types this file does not load; a string would be
  // an eval, which the dashboard's CSP refuses).
  await page.waitForFunction(() => !Array.from((globalThis as unknown as { document: PageDocument }).document.querySelectorAll("#files tbody tr .expires-at")).some((o) => o.textContent === "…"));
  const usable = performance.now() - start;
  const more = page.getByRole("button", { name: "Load more" });
  while (await more.isVisible()) {
    const count = await rows.count();
    await more.click();
    await page.waitForFunction((n) => (globalThis as unknown as { document: PageDocument }).document.querySelectorAll("#files tbody tr").length > n, count);
  }
  if ((await rows.count()) !== FILES) throw new Error(`the list shows ${await rows.count()} rows, not ${FILES}`);
  return { usable, all: performance.now() - start };
}
