// The service worker's shell (web/sw.js, CONTRACT §15) is what the dashboard loads at start and
// nothing else: the page, what index.html names, every module app.js imports (and theirs), the
// manifest and its icons; each one an embedded file of http/static.ts, so no API path, content
// URL or share link can be in it. The inbox the worker fills is the one the page reads.
// test/e2e/installable.e2e.ts checks the worker itself in Chromium.
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { DASHBOARD_SECTIONS, staticAssets, vendoredAssets } from "../../src/http/static.ts";
// @ts-ignore: a browser module in plain JavaScript (web/ is not type-checked).
import { INBOX_CACHE } from "../../web/share-inbox.js";

const WEB = path.resolve(import.meta.dir, "../../web");
const SW = fs.readFileSync(path.join(WEB, "sw.js"), "utf8");
const assets = { ...staticAssets, ...vendoredAssets };

/** The `const NAME = …;` of sw.js, read as JSON (the worker is a classic script, not importable here). */
function swConstant(name: string): unknown {
  const m = new RegExp(`^const ${name} = ([\\s\\S]*?);$`, "m").exec(SW);
  if (m === null) throw new Error(`sw.js has no const ${name}`);
  return JSON.parse(m[1]!.replace(/,(\s*\])/g, "$1"));
}

/** The text of the embedded file served at `urlPath`. */
const served = (urlPath: string) => fs.readFileSync(assets[urlPath]!.file, "utf8");

/** The paths a module imports statically (`import … from "/…"`, `import "/…"`); a dynamic import() is loaded later, not at start. */
function importsOf(source: string): string[] {
  return [...source.matchAll(/^\s*import\s+(?:[^"';]*?\s+from\s+)?["'](\/[^"']+)["'];?\s*$/gm)].map((m) => m[1]!);
}

/** What the dashboard loads at start: its page, what the page names, the modules app.js imports, one level after another, and the manifest's icons. */
function loadedAtStart(): string[] {
  const html = served("/");
  const named = [...html.matchAll(/<(?:script|link|img)\b[^>]*?\b(?:src|href)="(\/[^"]*)"/g)].map((m) => m[1]!);
  const found = new Set(["/", ...named]);
  const modules = [...html.matchAll(/<script type="module" src="(\/[^"]+)"/g)].map((m) => m[1]!);
  for (let next = modules; next.length > 0; ) {
    next = next.flatMap((m) => importsOf(served(m))).filter((m) => !found.has(m));
    for (const m of next) found.add(m);
  }
  const manifest = JSON.parse(served("/manifest.webmanifest")) as { icons: { src: string }[] };
  for (const icon of manifest.icons) found.add(icon.src);
  return [...found].sort();
}

test("the shell is what the dashboard loads at start, each an embedded file", () => {
  const shell = swConstant("SHELL") as string[];
  expect([...shell].sort()).toEqual(loadedAtStart());
  expect(shell.filter((p) => assets[p] === undefined)).toEqual([]);
  expect(shell.filter((p) => /^\/(v1|auth|dav|s|u)\//.test(p))).toEqual([]);
  // pdf.js is imported only for a PDF's thumbnail: too big to keep for every start.
  expect(shell).not.toContain("/assets/pdf.min.mjs");
});

test("the worker answers every section's address with the page it keeps as /", () => {
  expect(swConstant("PAGES")).toEqual([...DASHBOARD_SECTIONS]);
});

test("the import scan finds static imports only", () => {
  expect(importsOf(`import a from "/x.js";\nimport { b, c } from "/y.js";\nimport "/z.js";\nconst m = await import("/late.js");\n// import nothing from "/comment.js" here`)).toEqual(["/x.js", "/y.js", "/z.js"]);
});

test("the worker fills the inbox the page reads, and keeps the shell apart from it", () => {
  expect(swConstant("INBOX_CACHE")).toBe(INBOX_CACHE);
  const shellCache = swConstant("SHELL_CACHE") as string;
  expect(shellCache).toMatch(/^cubby-shell-v\d+$/);
  // Activation deletes older shells by this prefix: the inbox must not share it.
  expect(INBOX_CACHE.startsWith("cubby-shell-")).toBe(false);
});
