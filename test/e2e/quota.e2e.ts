// The dashboard's usage line (CONTRACT §9) in Chromium against the compiled binary with
// QUOTA_BYTES set: "Used X of Y" with a meter, moving with uploads and deletions; an upload past
// the quota is refused with the server's message and changes nothing.
// Also the unfinished uploads (CONTRACT §10): a guest's upload through a link shows with its
// progress and holds the quota until the owner ends it or revokes the link.
import { expect, test } from "@playwright/test";
import fs from "node:fs";
import path from "node:path";
import { buildBinary, openSection, SCREENSHOTS, signIn, startStack, watchPage, type Stack } from "./fixtures.ts";

let stack: Stack;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  stack = await startStack(buildBinary(), true, { env: { QUOTA_BYTES: "2048" } });
});
test.afterAll(() => stack?.stop());

test("usage and quota: shown, updated after uploads and deletions; an upload past the quota is refused", async ({ page }) => {
  const watched = watchPage(page, stack);
  await signIn(page, stack, "bob");
  const usage = page.locator("#usage");
  await expect(usage).toHaveText("Used 0 B of 2.0 KiB");
  await expect(page.locator("#usage-meter")).toBeVisible();

  await page.locator("#file-input").setInputFiles({ name: "fits.txt", mimeType: "text/plain", buffer: Buffer.alloc(1500, "a") });
  await expect(page.locator("#files tbody tr").filter({ hasText: "fits.txt" })).toHaveCount(1);
  await expect(usage).toHaveText("Used 1.5 KiB of 2.0 KiB");
  const meter = page.locator("#usage-meter");
  expect([await meter.getAttribute("value"), await meter.getAttribute("max")]).toEqual(["1500", "2048"]);

  await page.locator("#file-input").setInputFiles({ name: "too-big.txt", mimeType: "text/plain", buffer: Buffer.alloc(1000, "b") });
  await expect(page.locator("#uploads")).toContainText("storage quota exceeded: 1500 of 2048 bytes used; this upload needs 1000 more (HTTP 413)");
  await page.screenshot({ path: path.join(SCREENSHOTS, "quota-exceeded.png"), fullPage: true });
  await expect(page.locator("#files tbody tr")).toHaveCount(1);
  await expect(usage).toHaveText("Used 1.5 KiB of 2.0 KiB");

  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete fits.txt" }).click();
  await expect(page.locator("#files-empty")).toBeVisible();
  await expect(usage).toHaveText("Used 0 B of 2.0 KiB");
  // The refused creation is the one console error: the browser reports every 4xx it receives.
  expect(watched.errors.filter((e) => !e.includes("status of 413"))).toEqual([]);
  expect(watched.foreign).toEqual([]);
});

// CONTRACT §10: a guest's unfinished upload through a link shows on the owner's dashboard, with
// what it holds of the quota, and the owner ends it; revoking a link ends its uploads too.
test("unfinished uploads: a guest's shows with its progress and link, holds the quota, and the owner ends it", async ({ page }) => {
  const watched = watchPage(page, stack);
  await signIn(page, stack, "carol");
  await openSection(page, "Upload links");
  await expect(page.locator("#unfinished-empty")).toBeVisible();
  await page.locator("#link-name").fill("Scans");
  await page.locator("#link-max-files").fill("1");
  await page.getByRole("button", { name: "Create upload link" }).click();
  const linkUrl = await page.locator("#links tbody tr").filter({ hasText: "Scans" }).getByRole("link", { name: "Scans" }).getAttribute("href");
  const token = linkUrl!.split("/u/")[1]!;
  const guest = (method: string, url: string, headers: Record<string, string>, body?: string) =>
    fetch(url, { method, headers: { "tus-resumable": "1.0.0", authorization: `Bearer ${token}`, ...headers }, body });
  const tusCreate = () => guest("POST", `${stack.url}/v1/uploads`, { "upload-length": "1000", "upload-metadata": `filename ${Buffer.from("scan-1.pdf").toString("base64")}` });

  // The guest starts an upload and sends 999 of its 1 000 bytes; a second one has no place left.
  const created = await tusCreate();
  expect(created.status).toBe(201);
  const uploadUrl = created.headers.get("location")!;
  expect((await guest("PATCH", uploadUrl, { "content-type": "application/offset+octet-stream", "upload-offset": "0" }, "s".repeat(999))).status).toBe(204);
  expect((await tusCreate()).status).toBe(413);

  await page.getByRole("button", { name: "Refresh" }).click();
  const card = page.locator("#unfinished li").filter({ hasText: "scan-1.pdf" });
  await expect(card).toContainText("999 B of 1000 B (99%)");
  await expect(card).toContainText("Through upload link Scans");
  await expect(page.locator("#links-usage")).toBeVisible();
  await expect(page.locator("#links-usage")).toHaveText("Used 1000 B of 2.0 KiB (1000 B of it reserved by unfinished uploads)");
  await page.setViewportSize({ width: 390, height: 800 });
  await card.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(SCREENSHOTS, "unfinished-uploads-390.png"), fullPage: true });
  // Nothing wider than the phone: every action reachable without sideways scrolling.
  expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
  await page.setViewportSize({ width: 1100, height: 800 });

  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "End upload scan-1.pdf" }).click();
  await expect(page.locator("#unfinished-empty")).toBeVisible();
  await expect(page.locator("#links-usage")).toHaveText("Used 0 B of 2.0 KiB");
  expect((await guest("HEAD", uploadUrl, {})).status).toBe(404);

  // A file sent in parts side by side (each part named, as the guest page names them) shows as one, and ends as one.
  const part = (length: number) => guest("POST", `${stack.url}/v1/uploads`, { "upload-length": String(length), "upload-concat": "partial", "upload-metadata": `filename ${Buffer.from("video.mp4").toString("base64")},group ${Buffer.from("v1").toString("base64")},total ${Buffer.from("600").toString("base64")}` });
  expect((await part(300)).status).toBe(201);
  expect((await part(300)).status).toBe(201);
  await page.getByRole("button", { name: "Refresh" }).click();
  const parts = page.locator("#unfinished li").filter({ hasText: "video.mp4" });
  await expect(parts).toHaveCount(1);
  await expect(parts).toContainText("0 B of 600 B (0%) in 2 parts");
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "End upload video.mp4" }).click();
  await expect(page.locator("#unfinished-empty")).toBeVisible();

  // Its place is free again; revoking the link ends the new upload too.
  expect((await tusCreate()).status).toBe(201);
  await page.getByRole("button", { name: "Refresh" }).click();
  await expect(page.locator("#unfinished li")).toHaveCount(1);
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Revoke upload link Scans" }).click();
  await expect(page.locator("#unfinished-empty")).toBeVisible();
  await expect(page.locator("#links-usage")).toHaveText("Used 0 B of 2.0 KiB");
  // The refused creation and the HEAD of the ended upload are not the page's; the page made no error.
  expect(watched.errors).toEqual([]);
  expect(watched.foreign).toEqual([]);
});
