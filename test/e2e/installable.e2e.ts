// The installable dashboard in Debian's Chromium against the compiled binary (CONTRACT §15
// "Phones and capture tools", issue 40): the manifest as Chromium reads it (no errors, installable,
// its icons answering with their types); the service worker controls the page and keeps the shell
// and nothing else (no API answer, file, content URL or share link), starts the page offline and
// with cubby down, and does not come between the dashboard and its uploads' progress; a file
// shared into the app through the share target (a multipart form POST navigation, as Android's
// share sheet sends it) lands on /?shared=1, is uploaded through the dashboard's own upload and
// listed, also when shared while signed out (after sign-in); a text alone is said not to be kept;
// without the worker, the server's fallback says the share was lost. The ShareX config of a new
// key: downloaded, every field ShareX reads checked, an upload made the way it says works and its
// {json:url} serves the bytes; the key section with it on every screen. Screenshots:
// test-results/screenshots/installable-*.png.
import { chromium, expect, test, type Page } from "@playwright/test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { apiInPage, buildBinary, checkPage, openSection, ROOT, SCHEMES, SCREENSHOTS, signIn, SIZES, startStack, watchPage, type Size, type Stack } from "./fixtures.ts";

test.describe.configure({ mode: "serial" });

let binary: string;
let stack: Stack;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  binary = buildBinary();
  stack = await startStack(binary, true);
});
test.afterAll(() => stack?.stop());

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `installable-${name}.png`), fullPage: true });

/** A `const NAME = …;` of web/sw.js (a classic worker script: read, not imported). */
const swConstant = (name: string) => JSON.parse(new RegExp(`^const ${name} = ([\\s\\S]*?);$`, "m").exec(fs.readFileSync(path.join(ROOT, "web/sw.js"), "utf8"))![1]!.replace(/,(\s*\])/g, "$1")) as unknown;
/** web/sw.js's SHELL, its cache's name, and the section addresses it answers with the page (PAGES). */
const SHELL = swConstant("SHELL") as string[];
const SHELL_CACHE = swConstant("SHELL_CACHE") as string;
const PAGES = swConstant("PAGES") as string[];

/** A PNG of the system's (the README's example picture). */
const PNG = fs.readFileSync("/usr/share/pixmaps/debian-logo.png");

/** Waits until cubby's service worker (registered by the page itself) controls `page`. */
async function controlled(page: Page): Promise<void> {
  await page.waitForFunction(() => (globalThis as any).navigator.serviceWorker.controller !== null, undefined, { timeout: 20_000 });
}

/** Every cache of the page's origin, by name, with the path (and query) of each entry, from inside the page. */
function cachedPaths(page: Page): Promise<Record<string, string[]>> {
  return page.evaluate(async () => {
    // Runs in the page; the test's TypeScript has no DOM library.
    const caches = (globalThis as any).caches;
    const out: Record<string, string[]> = {};
    for (const name of (await caches.keys()) as string[]) {
      out[name] = ((await (await caches.open(name)).keys()) as { url: string }[]).map((r) => new URL(r.url).pathname + new URL(r.url).search).sort();
    }
    return out;
  });
}

type Shared = { name: string; type: string; base64: string };

/**
 * Shares `files` and `words` into the app as a phone's share sheet does: a `multipart/form-data`
 * form POST navigation to the manifest's share_target action, from the origin's page, its file
 * input filled through a DataTransfer. @returns once the navigation has started
 */
async function shareFromAnotherApp(page: Page, files: Shared[], words: Record<string, string> = {}): Promise<void> {
  await page.evaluate(
    ([files, words]) => {
      const doc = (globalThis as any).document;
      const form = Object.assign(doc.createElement("form"), { id: "another-app", method: "post", action: "/share-target", enctype: "multipart/form-data" });
      const input = Object.assign(doc.createElement("input"), { type: "file", name: "files", multiple: true });
      const dt = new (globalThis as any).DataTransfer();
      for (const f of files) dt.items.add(new File([Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0))], f.name, { type: f.type }));
      input.files = dt.files;
      form.append(input);
      for (const [name, value] of Object.entries(words)) form.append(Object.assign(doc.createElement("input"), { type: "hidden", name, value }));
      form.append(Object.assign(doc.createElement("button"), { type: "submit", textContent: "Share" }));
      doc.body.append(form);
    },
    [files, words] as const,
  );
  await page.locator("#another-app button").click();
}

/** The bytes at `url`, fetched by the page (its session), as base64. */
function bytesInPage(page: Page, url: string): Promise<string> {
  return page.evaluate(async (url) => {
    const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
    let s = "";
    for (const b of bytes) s += String.fromCharCode(b);
    return btoa(s);
  }, url);
}

type FileJson = { id: string; name: string; url: string; content_type: string };

test("the manifest as Chromium reads it: no errors, installable, every icon answering with its type", async ({ page, context }) => {
  const { errors, foreign } = watchPage(page, stack);
  await page.goto(stack.url);
  await controlled(page);
  const cdp = await context.newCDPSession(page);
  const manifest = (await cdp.send("Page.getAppManifest")) as { url: string; errors: { message: string }[]; data: string };
  expect({ url: manifest.url, errors: manifest.errors }).toEqual({ url: `${stack.url}/manifest.webmanifest`, errors: [] });
  const data = JSON.parse(manifest.data) as { name: string; start_url: string; scope: string; display: string; icons: { src: string; type: string; sizes: string }[]; share_target: unknown };
  expect({ name: data.name, start_url: data.start_url, scope: data.scope, display: data.display }).toEqual({ name: "cubby", start_url: "/", scope: "/", display: "standalone" });
  expect(data.share_target).toEqual({
    action: "/share-target",
    method: "POST",
    enctype: "multipart/form-data",
    params: { title: "title", text: "text", url: "url", files: [{ name: "files", accept: ["*/*"] }] },
  });
  expect(data.icons.length).toBeGreaterThan(0);
  for (const icon of data.icons) {
    const res = await fetch(new URL(icon.src, stack.url));
    expect({ src: icon.src, status: res.status, type: res.headers.get("content-type"), sizes: icon.sizes }).toEqual({ src: icon.src, status: 200, type: icon.type, sizes: "any" });
  }
  await expect(page.locator('link[rel="manifest"]')).toHaveAttribute("href", "/manifest.webmanifest");
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);

  // Installable: asked in a profile of its own, since Playwright's contexts are incognito ones,
  // where Chromium installs nothing and says only that.
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-e2e-profile-"));
  const persistent = await chromium.launchPersistentContext(profile, { ...test.info().project.use.launchOptions });
  try {
    const installing = persistent.pages()[0] ?? (await persistent.newPage());
    await installing.goto(stack.url);
    await controlled(installing);
    const session = await persistent.newCDPSession(installing);
    const installable = (await session.send("Page.getInstallabilityErrors")) as { installabilityErrors: { errorId: string }[] };
    expect(installable.installabilityErrors).toEqual([]);
  } finally {
    await persistent.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
});

test("the service worker keeps the shell and nothing else, starts the page offline and with cubby down, and leaves uploads' progress alone", async ({ page, context }) => {
  const { errors, foreign } = watchPage(page, stack);
  await signIn(page, stack, "dana");
  await controlled(page);
  await page.reload();
  await expect(page.locator("#account-email")).toHaveText("dana@example.com");

  // API answers, a file's content URL and a share link, asked by the controlled page, opened by it.
  const file = await page.evaluate(async () => {
    const res = await fetch("/v1/files?name=report.txt&visibility=public", { method: "POST", headers: { "content-type": "text/plain" }, body: "report" });
    return (await res.json()) as { id: string; url: string };
  });
  const share = await apiInPage<{ url: string }>(page, "POST", `/v1/files/${file.id}/shares`, {});
  for (const url of ["/v1/files", "/v1/usage", "/auth/session", "/auth/keys", file.url, share.url]) expect((await page.evaluate((u) => fetch(u).then((r) => r.status), url)) as number).toBe(200);
  await page.goto(file.url);
  await page.goto(stack.url);
  await expect(page.locator("#files tbody tr")).toHaveCount(1);
  const cached = await cachedPaths(page);
  expect(cached).toEqual({ [SHELL_CACHE]: [...SHELL].sort() });
  expect(Object.values(cached).flat().filter((p) => /^\/(v1|auth|dav|s)\//.test(p) || p.startsWith(`/${file.id}`))).toEqual([]);

  // Chromium's static routes: the shell and the share target go to the worker, everything else
  // straight to the network (the worker does not start for the API), so an upload's progress
  // moves while the worker controls the page.
  const cdp = await context.newCDPSession(page);
  const versions: { routerRules?: string; status: string }[] = [];
  cdp.on("ServiceWorker.workerVersionUpdated", (e) => versions.push(...(e.versions as { routerRules?: string; status: string }[])));
  await cdp.send("ServiceWorker.enable");
  await expect.poll(() => versions.some((v) => v.status === "activated" && v.routerRules !== undefined)).toBe(true);
  const rules = JSON.parse(versions.find((v) => v.status === "activated" && v.routerRules !== undefined)!.routerRules!) as { condition: { urlPattern: { pathname: string } }; source: string[] }[];
  expect(rules.map((r) => [r.condition.urlPattern.pathname, r.source.join()])).toEqual([
    ["/share-target", "fetch-event"],
    ...[...SHELL, ...PAGES].map((p) => [p, "fetch-event"]),
    ["/*", "network"],
  ]);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 1024 * 1024 });
  const size = 3 * 1024 * 1024;
  await page.locator("#file-input").setInputFiles({ name: "big.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(size, 7) });
  const bar = page.getByLabel("Uploading big.bin");
  await expect.poll(async () => Number(await bar.getAttribute("value").catch(() => "0")), { timeout: 10_000 }).toBeGreaterThan(0);
  expect(Number(await bar.getAttribute("value"))).toBeLessThan(size);
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await expect(page.locator("#files tbody tr").filter({ hasText: "big.bin" })).toHaveCount(1, { timeout: 15_000 });

  // Offline: the shell from the cache, and the page says why there is nothing else.
  await context.setOffline(true);
  await page.reload();
  await expect(page.locator("header .brand")).toBeVisible();
  // "This device is offline, so cubby cannot be reached" where navigator.onLine follows the
  // network; Chromium's emulated offline leaves it true, so the page says the server does not answer.
  await expect(page.locator("#error")).toContainText("cubby cannot be reached");
  await expect(page.locator("#loading")).toBeHidden();
  await shot(page, "offline");
  await context.setOffline(false);
  await page.reload();
  await expect(page.locator("#account-email")).toHaveText("dana@example.com");

  // cubby itself down (the device online): the same shell, and the page says the server does not answer.
  const down = await startStack(binary, false);
  try {
    await page.goto(down.url);
    await controlled(page);
    await expect(page.getByRole("heading", { name: "Sign in with a link" })).toBeVisible();
  } finally {
    await down.stop();
  }
  await page.reload();
  await expect(page.locator("header .brand")).toBeVisible();
  await expect(page.locator("#error")).toContainText("cubby cannot be reached");
  await shot(page, "server-down");
  // What failed to load while offline or with cubby down is the browser's console error, by design;
  // so is the favicon Chromium asks for beside the text file it showed.
  expect(errors.filter((e) => !/ERR_INTERNET_DISCONNECTED|ERR_CONNECTION_REFUSED|\/favicon\.ico /.test(e))).toEqual([]);
  expect(foreign.filter((u) => !u.startsWith(`${down.url}/`))).toEqual([]);
});

test("a file shared into the web app through the share target is uploaded and listed; a text alone is not kept", async ({ page }) => {
  const { errors, foreign } = watchPage(page, stack);
  await signIn(page, stack, "erin");
  await controlled(page);
  const text = Buffer.from("shared from the phone\n");
  const shared: Shared[] = [
    { name: "from phone.txt", type: "text/plain", base64: text.toString("base64") },
    { name: "photo.png", type: "image/png", base64: PNG.toString("base64") },
  ];
  // The line saying what is uploading may be gone before a check could see it (two small files
  // upload in milliseconds): every text it shows is recorded from the page's start.
  await page.addInitScript(() => {
    const g = globalThis as any;
    const seen: string[] = [];
    g.filesNotes = seen;
    new g.MutationObserver(() => {
      const text: string = g.document.getElementById("files-note")?.textContent ?? "";
      if (text !== "" && seen.at(-1) !== text) seen.push(text);
    }).observe(g.document, { subtree: true, childList: true, characterData: true });
  });
  await shareFromAnotherApp(page, shared, { title: "Holiday", text: "two files" });
  for (const f of shared) await expect(page.locator("#files tbody tr").filter({ hasText: f.name })).toHaveCount(1, { timeout: 15_000 });
  expect(await page.evaluate(() => (globalThis as any).filesNotes as string[])).toContain("Uploading 2 files shared from another app.");
  // ?shared=1 is taken out of the address; the inbox is empty.
  expect(page.url()).toBe(`${stack.url}/`);
  expect((await cachedPaths(page))["cubby-share-inbox"]).toEqual([]);
  await shot(page, "shared-uploaded");
  // The API has them, byte for byte, with their types.
  const { files } = await apiInPage<{ files: FileJson[] }>(page, "GET", "/v1/files");
  const byName = new Map(files.map((f) => [f.name, f]));
  for (const f of shared) {
    expect(byName.get(f.name)?.content_type).toBe(f.type);
    expect(await bytesInPage(page, byName.get(f.name)!.url)).toBe(f.base64);
  }

  // A text or link alone: nothing to upload, and the page says so.
  await shareFromAnotherApp(page, [], { title: "A page", url: "https://example.com/article" });
  await expect(page.locator("#files-note")).toContainText("the text or link shared from another app was not kept");
  expect(page.url()).toBe(`${stack.url}/`);
  expect((await apiInPage<{ files: FileJson[] }>(page, "GET", "/v1/files")).files).toHaveLength(2);
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

test("a file shared while signed out waits, said so, and is uploaded after sign-in; without the worker the server says the share was lost", async ({ page, browser }) => {
  const { errors, foreign } = watchPage(page, stack);
  await page.goto(stack.url);
  await controlled(page);
  await shareFromAnotherApp(page, [{ name: "scan.pdf", type: "application/pdf", base64: Buffer.from("%PDF-1.4\n").toString("base64") }]);
  await expect(page.locator("#shared-note")).toHaveText("A file shared from another app waits here: it is uploaded once you sign in.");
  await expect(page.getByRole("link", { name: "Sign in" })).toBeVisible();
  expect(page.url()).toBe(`${stack.url}/`);
  await shot(page, "shared-signed-out");
  await signIn(page, stack, "frank");
  await expect(page.locator("#files tbody tr").filter({ hasText: "scan.pdf" })).toHaveCount(1, { timeout: 15_000 });
  await expect(page.locator("#files-note")).toHaveText("Uploading scan.pdf, shared from another app.");
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);

  // A browser without the worker (a share before it was installed): the server's 303 to /?shared=0.
  const bare = await browser.newContext({ serviceWorkers: "block" });
  try {
    const other = await bare.newPage();
    await other.goto(stack.url);
    await shareFromAnotherApp(other, [{ name: "lost.txt", type: "text/plain", base64: Buffer.from("lost").toString("base64") }]);
    await expect(other.locator("#shared-note")).toHaveText("The share reached cubby before this browser had cubby's app ready, so nothing was kept: share it again.");
    expect(other.url()).toBe(`${stack.url}/`);
  } finally {
    await bare.close();
  }
});

test("the ShareX config of a new key: every field ShareX reads, and an upload made the way it says works and its URL serves the bytes", async ({ page }) => {
  const { errors, foreign } = watchPage(page, stack);
  await signIn(page, stack, "gina");
  await openSection(page, "API keys");
  await page.locator("#key-name").fill("ShareX");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByLabel("New API key")).toHaveValue(/^cubby_[A-Za-z0-9_-]{43}$/);
  const key = await page.getByLabel("New API key").inputValue();
  const offer = page.getByRole("link", { name: "Download ShareX config" });
  await expect(offer).toBeVisible();
  await shot(page, "sharex-offered");

  const downloadConfig = async () => {
    const [download] = await Promise.all([page.waitForEvent("download"), offer.click()]);
    expect(download.suggestedFilename()).toBe("cubby.sxcu");
    return JSON.parse(fs.readFileSync((await download.path())!, "utf8")) as Record<string, any>;
  };
  const config = await downloadConfig();
  const host = new URL(stack.url).host;
  expect(config).toEqual({
    Version: expect.stringMatching(/^\d+\.\d+\.\d+$/),
    Name: `cubby (${host})`,
    DestinationType: "ImageUploader, TextUploader, FileUploader",
    RequestMethod: "POST",
    RequestURL: `${stack.url}/v1/files`,
    Parameters: { name: "{filename}", visibility: "public" },
    Headers: { Authorization: `Bearer ${key}` },
    Body: "Binary",
    URL: "{json:url}",
    ErrorMessage: "{json:message}",
  });

  // What ShareX does with it (CustomUploaderItem.GetRequestURL, GetHeaders; Body Binary: the
  // file as the body, its Content-Type from its name): parameters URL-encoded with + for spaces.
  const fileName = "Screenshot 2026-11-29 at 04.12.png";
  const asShareX = (cfg: Record<string, any>, bytes: Uint8Array, name: string, type: string) => {
    const query = new URLSearchParams(Object.entries(cfg.Parameters as Record<string, string>).map(([k, v]): [string, string] => [k, v.replaceAll("{filename}", name)]));
    return fetch(`${cfg.RequestURL}?${query}`, { method: cfg.RequestMethod, headers: { ...cfg.Headers, "content-type": type }, body: bytes });
  };
  /** A `{json:field}` of ShareX's syntax, read from a JSON answer. */
  const jsonField = (syntax: string, answer: Record<string, unknown>) => answer[/^\{json:([a-z_]+)\}$/.exec(syntax)![1]!];
  const res = await asShareX(config, PNG, fileName, "image/png");
  expect(res.status).toBe(200);
  const answer = (await res.json()) as Record<string, unknown>;
  expect(answer.name).toBe(fileName);
  const url = jsonField(config.URL, answer) as string;
  expect(url).toBe(`${stack.url}/${answer.id}`);
  const opened = await fetch(url); // public: anyone with the link, as ShareX's users paste it
  expect({ status: opened.status, type: opened.headers.get("content-type"), same: Buffer.compare(Buffer.from(await opened.arrayBuffer()), PNG) === 0 }).toEqual({ status: 200, type: "image/png", same: true });
  // A refusal: ShareX shows {json:message}.
  const refused = await asShareX({ ...config, Headers: { Authorization: "Bearer cubby_not-a-key" } }, PNG, fileName, "image/png");
  expect(refused.status).toBe(401);
  expect(jsonField(config.ErrorMessage, (await refused.json()) as Record<string, unknown>)).toEqual(expect.stringMatching(/\S/));

  // Another visibility for its uploads: a new file with it.
  await page.getByLabel("ShareX uploads are").selectOption("private");
  const privateConfig = await downloadConfig();
  expect(privateConfig.Parameters).toEqual({ name: "{filename}", visibility: "private" });
  const hidden = (await (await asShareX(privateConfig, new TextEncoder().encode("note"), "note.txt", "text/plain")).json()) as { url: string; visibility: string };
  expect(hidden.visibility).toBe("private");
  expect([401, 404]).toContain((await fetch(hidden.url)).status);

  // The key section with the offer, on every screen.
  for (const scheme of SCHEMES) {
    for (const size of Object.keys(SIZES) as Size[]) {
      await page.setViewportSize(SIZES[size]);
      await page.emulateMedia({ colorScheme: scheme });
      await checkPage(page, "new-key-sharex", size, scheme);
    }
  }

  // Only for a key that can upload: not for a read-only key, not for an S3 key.
  await page.locator("#key-write").uncheck();
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByLabel("New API key")).not.toHaveValue(key);
  await expect(offer).toBeHidden();
  await page.locator("#key-kind").selectOption("s3");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByLabel("New S3 access key")).toBeVisible();
  await expect(offer).toBeHidden();
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});
