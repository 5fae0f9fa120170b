// The dashboard's usage line (CONTRACT §9) in Chromium against the compiled binary with
// QUOTA_BYTES set: "Used X of Y" with a meter, moving with uploads and deletions; an upload past
// the quota is refused with the server's message and changes nothing.
import { expect, test } from "@playwright/test";
import fs from "node:fs";
import path from "node:path";
import { buildBinary, SCREENSHOTS, signIn, startStack, watchPage, type Stack } from "./fixtures.ts";

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
