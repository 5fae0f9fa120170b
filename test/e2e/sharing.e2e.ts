// Sharing in the dashboard (CONTRACT §8), in Debian's Chromium against the compiled binary behind
// a real nginx that caps request bodies at 16 MiB (the Cloudflare Tunnel situation): uploads go
// through tus in 8 MiB chunks, with pause/resume and a resume by themselves after the connection
// drops; a 256 MiB file passes where one request of it gets nginx's 413. Per file: thumbnail,
// expiry, share links (limit, password, copy, QR code, count, revoke); search and pagination;
// guest upload links (create, what arrived, revoke); scoped and expiring keys. No console
// errors, no request leaves cubby's origin. Screenshots: test-results/screenshots/.
import { expect, test, type CDPSession, type Page } from "@playwright/test";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomFile } from "../support/tus.ts";
import { openSection, buildBinary, SCREENSHOTS, signIn, startStack, watchPage, type Stack } from "./fixtures.ts";

test.describe.configure({ mode: "serial" });

let stack: Stack;
let scratch: string;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-e2e-files-"));
  stack = await startStack(buildBinary(), true, { nginx: "client_max_body_size 16m;" });
});
test.afterAll(async () => {
  await stack?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

/** A key of the signed-in user, minted through the page's session, for setting things up over REST. */
async function mintKey(page: Page): Promise<string> {
  return page.evaluate(async () => ((await (await fetch("/auth/keys", { method: "POST" })).json()) as { key: string }).key);
}

async function rest<T>(key: string, pathname: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${stack.url}${pathname}`, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers ?? {}) } });
  if (!res.ok) throw new Error(`${pathname}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Upload speed limit in bytes per second (-1: none) and online state, through DevTools. */
function network(cdp: CDPSession, uploadThroughput: number, offline = false) {
  return cdp.send("Network.emulateNetworkConditions", { offline, latency: 0, downloadThroughput: -1, uploadThroughput });
}

test("uploads go through tus: pause and resume, resume by themselves after the connection drops", async ({ page, context }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "dana");
  const key = await mintKey(page);
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");

  // 24 MiB at 4 MiB/s: three chunks, time enough to pause and to drop the connection.
  const source = randomFile(scratch, "video.bin", 24 * 1024 * 1024);
  await network(cdp, 4 * 1024 * 1024);
  await page.locator("#file-input").setInputFiles(source.path);
  const item = page.locator("#uploads li").filter({ hasText: "video.bin" });
  const bar = page.getByLabel("Uploading video.bin");
  await expect.poll(async () => Number(await bar.getAttribute("value")), { timeout: 15_000 }).toBeGreaterThan(0);
  await page.getByRole("button", { name: "Pause video.bin" }).click();
  await expect(item).toHaveAttribute("data-state", "paused");
  await expect(item).toContainText("paused at");
  await shot(page, "20-upload-paused");
  await page.getByRole("button", { name: "Resume video.bin" }).click();
  await expect(item).toHaveAttribute("data-state", "uploading");

  // The connection drops mid-upload: the upload waits, then resumes by itself when it is back.
  await expect.poll(async () => Number(await bar.getAttribute("value")), { timeout: 15_000 }).toBeGreaterThan(9 * 1024 * 1024);
  await network(cdp, 4 * 1024 * 1024, true);
  await expect(item).toHaveAttribute("data-state", "waiting", { timeout: 15_000 });
  await shot(page, "21-upload-waiting");
  await network(cdp, -1, false);
  await expect(item).toHaveAttribute("data-state", "done", { timeout: 30_000 });
  const row = page.locator("#files tbody tr").filter({ hasText: "video.bin" });
  await expect(row).toHaveCount(1);
  const id = await row.getAttribute("data-id");
  const file = await rest<{ checksum: string; size: string; visibility: string }>(key, `/v1/files/${id}`);
  expect(file).toMatchObject({ checksum: source.checksum, size: String(24 * 1024 * 1024), visibility: "internal" });

  // The browser logs the request the dropped connection failed; nothing else may appear.
  expect(watch.errors.filter((e) => !e.includes("net::ERR_INTERNET_DISCONNECTED"))).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("a 256 MiB file uploads through nginx's 16 MiB body limit; one request of it gets nginx's 413", async ({ page }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "erin");
  const key = await mintKey(page);
  const source = randomFile(scratch, "big.bin", 256 * 1024 * 1024);
  // curl sends Content-Length, so nginx answers 413 before reading the body.
  const single = spawnSync("curl", ["-s", "-o", "/dev/null", "-D", "-", "-T", source.path, "-H", `authorization: Bearer ${key}`, `${stack.url}/v1/files?name=big.bin`], { encoding: "utf8" });
  expect(single.stdout).toMatch(/^HTTP\/1\.1 413 .*\r\nServer: nginx/s);

  await page.locator("#file-input").setInputFiles(source.path);
  const item = page.locator("#uploads li").filter({ hasText: "big.bin" });
  await expect(item).toHaveAttribute("data-state", "done", { timeout: 120_000 });
  const { files } = await rest<{ files: { name: string; checksum: string; size: string }[] }>(key, "/v1/files");
  expect(files).toEqual([expect.objectContaining({ name: "big.bin", checksum: source.checksum, size: String(256 * 1024 * 1024) })]);
  fs.rmSync(source.path);
  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("per file: thumbnail, expiry, share links with limit and password, QR code, revoke", async ({ page, context }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "frank");
  const png = fs.readFileSync("/usr/share/pixmaps/debian-logo.png");
  await page.locator("#file-input").setInputFiles([
    { name: "logo.png", mimeType: "image/png", buffer: png },
    { name: "report.txt", mimeType: "text/plain", buffer: Buffer.from("quarterly numbers\n") },
  ]);
  const logo = page.locator("#files tbody tr").filter({ hasText: "logo.png" });
  const report = page.locator("#files tbody tr").filter({ hasText: "report.txt" });
  await expect(logo).toHaveCount(1);
  await expect(report).toHaveCount(1);

  // Thumbnails only for images (and videos, PDFs), lazy-loaded: the server's WebP, not the original.
  const thumb = logo.locator("img");
  await expect(thumb).toHaveAttribute("loading", "lazy");
  await expect(thumb).toHaveAttribute("src", /^\/v1\/files\/[A-Za-z0-9_-]+\/thumbnail$/);
  await expect.poll(() => thumb.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
  await expect(report.locator("img")).toHaveCount(0);

  // Expiry: never, then in a day, then never again.
  const expires = report.locator(".expires-at");
  await expect(expires).toContainText("never");
  await page.getByLabel("Expiry of report.txt").selectOption("1d");
  await expect(expires).not.toContainText("never");
  const id = await report.getAttribute("data-id");
  const expiry = await page.evaluate(async (fileId) => (await (await fetch(`/v1/files/${fileId}/expiry`)).json()) as { expire_time: string }, id);
  const due = Date.parse(expiry.expire_time) - Date.now();
  expect(due > 23 * 3600e3 && due <= 24 * 3600e3).toBe(true);
  await shot(page, "22-thumbnail-and-expiry");

  // A share link with two downloads and a password; the report is private.
  await page.getByLabel("Visibility of report.txt").selectOption("private");
  await expect.poll(() => page.evaluate(async (fileId) => ((await (await fetch(`/v1/files/${fileId}`)).json()) as { visibility: string }).visibility, id)).toBe("private");
  expect((await fetch(`${stack.url}/${id}`)).status).toBe(401);
  await page.getByRole("button", { name: "Share report.txt" }).click();
  const dialog = page.locator("#share-dialog");
  await expect(dialog).toBeVisible();
  await expect(dialog.locator("#shares-empty")).toBeVisible();
  await dialog.getByLabel("Max downloads").fill("2");
  await dialog.getByLabel("Password").fill("open sesame");
  await dialog.getByLabel("Expires").selectOption("7d");
  await dialog.getByRole("button", { name: "Create share link" }).click();
  const card = dialog.locator("#shares li");
  await expect(card).toHaveCount(1);
  await expect(card).toContainText("0 of 2 downloads");
  await expect(card).toContainText("password");
  const shareUrl = await card.getByLabel("Share link", { exact: true }).inputValue();
  expect(shareUrl).toMatch(new RegExp(`^${stack.url}/s/[A-Za-z0-9_-]{22,}$`));
  await card.getByRole("button", { name: "Show QR code" }).click();
  const qr = card.getByAltText(`QR code of ${shareUrl}`);
  await expect(qr).toBeVisible();
  expect(await qr.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(20);
  await shot(page, "23-share-dialog");

  // Anyone with the link and the password downloads it; the count shows when the dialog reopens.
  const basic = { authorization: `Basic ${Buffer.from(`x:open sesame`).toString("base64")}` };
  expect((await fetch(shareUrl)).status).toBe(401);
  const got = await fetch(shareUrl, { headers: basic });
  expect({ status: got.status, body: await got.text() }).toEqual({ status: 200, body: "quarterly numbers\n" });
  await dialog.getByRole("button", { name: "Close" }).click();
  await page.getByRole("button", { name: "Share report.txt" }).click();
  await expect(card).toContainText("1 of 2 downloads");

  // Revoked: the link answers 410 at once.
  page.once("dialog", (d) => d.accept());
  await card.getByRole("button", { name: "Revoke share link" }).click();
  await expect(dialog.locator("#shares-empty")).toBeVisible();
  expect((await fetch(shareUrl, { headers: basic })).status).toBe(410);
  await dialog.getByRole("button", { name: "Close" }).click();

  // Copy link puts the file's URL on the clipboard.
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: stack.url });
  await page.getByRole("button", { name: "Copy link of logo.png" }).click();
  const logoId = await logo.getAttribute("data-id");
  // Runs in the page; the test's TypeScript has no DOM library.
  const clipboard = () => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText();
  expect(await page.evaluate(clipboard)).toBe(`${stack.url}/${logoId}`);

  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("search by name and pagination over 60 files", async ({ page }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "gina");
  const key = await mintKey(page);
  for (let i = 0; i < 60; i++) {
    const name = i % 10 === 3 ? `Holiday-${i}.jpg` : `scan-${String(i).padStart(2, "0")}.pdf`;
    await rest(key, `/v1/files?name=${name}`, { method: "POST", body: `file ${i}`, headers: { "content-type": "application/octet-stream" } });
  }
  await page.reload();
  const rows = page.locator("#files tbody tr");
  await expect(rows).toHaveCount(50);
  await page.getByRole("button", { name: "Load more" }).click();
  await expect(rows).toHaveCount(60);
  await expect(page.getByRole("button", { name: "Load more" })).toBeHidden();

  await page.getByLabel("Search by name").fill("holiday");
  await expect(rows).toHaveCount(6);
  for (const name of await rows.locator("td.name a").allTextContents()) expect(name).toMatch(/^Holiday-\d+\.jpg$/);
  await shot(page, "24-search");
  await page.getByLabel("Search by name").fill("no such thing");
  await expect(page.locator("#files-empty")).toHaveText('No file name contains "no such thing".');
  await page.getByLabel("Search by name").fill("");
  await expect(rows).toHaveCount(50);
  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("guest upload links: create, a guest uploads, see what arrived, revoke (what arrived stays listed)", async ({ page, browser }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "hana");
  await openSection(page, "Upload links");
  const links = page.locator("#links tbody tr");
  await expect(page.locator("#links-empty")).toBeVisible();
  await page.locator("#link-name").fill("Wedding photos");
  await page.getByLabel("Max files").fill("2");
  await page.locator("#link-expiry").selectOption("7d");
  await page.getByRole("button", { name: "Create upload link" }).click();
  await expect(links).toHaveCount(1);
  await expect(links).toContainText("0 of 2 files");
  const url = await links.getByRole("link", { name: "Wedding photos" }).getAttribute("href");
  expect(url).toMatch(new RegExp(`^${stack.url}/u/`));

  // A guest, in a browser without cubby's cookies, uploads a photo through the link's page.
  const guestContext = await browser.newContext();
  const guest = await guestContext.newPage();
  await guest.goto(url!);
  await guest.locator("#file-input").setInputFiles({ name: "first-dance.png", mimeType: "image/png", buffer: fs.readFileSync("/usr/share/pixmaps/debian-logo.png") });
  await expect(guest.locator("#uploads li").first()).toHaveAttribute("data-state", "done", { timeout: 30_000 });
  await guestContext.close();

  await page.reload();
  await expect(links).toContainText("1 of 2 files");
  await page.getByRole("button", { name: "Show files of upload link Wedding photos" }).click();
  await expect(links.locator(".arrivals li")).toHaveText([/^first-dance\.png/]);
  await shot(page, "25-upload-links");
  await openSection(page, "Files");
  await expect(page.locator("#files tbody tr").filter({ hasText: "first-dance.png" }).getByLabel("Visibility of first-dance.png")).toHaveValue("private");
  await openSection(page, "Upload links");

  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Revoke upload link Wedding photos" }).click();
  // The row stays, marked revoked, and what arrived through it is still listed.
  await expect(links).toHaveAttribute("data-state", "revoked");
  await expect(links.getByRole("button", { name: "Revoke upload link Wedding photos" })).toHaveCount(0);
  await page.getByRole("button", { name: "Show files of upload link Wedding photos" }).click();
  await expect(links.locator(".arrivals li")).toHaveText([/^first-dance\.png/]);
  expect((await fetch(url!)).status).toBe(410);
  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("API keys with scopes and an expiry", async ({ page }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "ivan");
  await openSection(page, "API keys");
  await page.locator("#key-name").fill("read-only backup");
  await page.getByLabel("write", { exact: true }).uncheck();
  await page.locator("#key-expiry").selectOption("30d");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByLabel("New API key")).toHaveValue(/^cubby_/);
  const key = await page.getByLabel("New API key").inputValue();
  const row = page.locator("#keys tbody tr").filter({ hasText: "read-only backup" });
  await expect(row).toContainText("files.read");
  await expect(row).not.toContainText("files.write");
  await expect(row.locator("td").nth(4)).not.toHaveText("never");
  await shot(page, "26-scoped-key");
  expect((await fetch(`${stack.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
  const write = await fetch(`${stack.url}/v1/files?name=x`, { method: "POST", body: "x", headers: { authorization: `Bearer ${key}` } });
  expect({ status: write.status, message: ((await write.json()) as { message: string }).message }).toEqual({ status: 403, message: "this key lacks files.write" });
  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});
