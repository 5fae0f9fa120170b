// The guest upload page (/u/{token}, CONTRACT §8) in Chromium against the compiled binary:
// opened without signing in, a file picked, progress shown, upload finished through tus into
// the link owner's account; a file larger than the link takes refused before a byte (on every
// screen), and one the server refuses because others used the link meanwhile said in words, the
// limits read anew (CONTRACT §15); no console errors, no request leaves cubby's origin.
import { expect, test } from "@playwright/test";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { buildBinary, checkPage, everyScreen, SCHEMES, SCREENSHOTS, SIZES, startStack, watchPage, type Stack } from "./fixtures.ts";

let binary: string;
let stack: Stack;
let key: string;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  binary = buildBinary();
  stack = await startStack(binary, false);
  const minted = spawnSync(binary, ["keys", "create", "--email", "owner@example.com", "--data-dir", stack.dataDir], { encoding: "utf8" });
  if (minted.status !== 0) throw new Error(`keys create: ${minted.stderr}`);
  key = minted.stdout.trim();
});
test.afterAll(() => stack?.stop());

test("a guest uploads a file through the link's page, with progress, into the owner's account", async ({ page }) => {
  const made = await fetch(`${stack.url}/v1/upload-links`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "Tax documents", max_files: 3 }),
  });
  const link = (await made.json()) as { url: string; id: string };
  const errors: string[] = [];
  const foreign: string[] = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("request", (r) => {
    if (!r.url().startsWith(`${stack.url}/`) && !r.url().startsWith("data:")) foreign.push(r.url());
  });

  await page.goto(link.url);
  await expect(page.getByRole("heading", { name: "Upload files: Tax documents" })).toBeVisible();
  const largest = await page.locator("#largest").textContent();
  const content = Buffer.alloc(12 * 1024 * 1024 + 123, 7);
  await page.locator("#file-input").setInputFiles({ name: "return-2026.pdf", mimeType: "application/pdf", buffer: content });
  const item = page.locator("#uploads li").first();
  await expect(item).toHaveAttribute("data-state", "done", { timeout: 30_000 });
  await expect(item.locator("span").last()).toHaveText("uploaded");
  // No limit in all: each file may still be as large as before; only the files left count down.
  await expect(page.locator("#largest")).toHaveText(largest!);
  await expect(page.locator("#files-left")).toHaveText("2");
  const bar = item.locator("progress");
  expect(await bar.evaluate((p) => [(p as unknown as { value: number }).value, (p as unknown as { max: number }).max])).toEqual([content.byteLength, content.byteLength]);
  await page.screenshot({ path: path.join(SCREENSHOTS, "guest-upload.png"), fullPage: true });

  const files = (await (await fetch(`${stack.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } })).json()) as { files: { name: string; size: string; visibility: string; content_type: string }[] };
  expect(files.files).toEqual([expect.objectContaining({ name: "return-2026.pdf", size: String(content.byteLength), visibility: "private", content_type: "application/pdf" })]);
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

test("a file larger than the link takes is refused before a byte is sent, saying why; the link's allowance stays whole and the next file goes (CONTRACT §15)", async ({ page }) => {
  const MiB = 1024 * 1024;
  const made = await fetch(`${stack.url}/v1/upload-links`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "Photos", max_bytes: 50 * MiB }),
  });
  const link = (await made.json()) as { url: string; id: string };
  const sent: string[] = [];
  page.on("request", (r) => r.url().includes("/v1/uploads") && sent.push(`${r.method()} ${r.url()}`));
  const { errors, foreign } = watchPage(page, stack);

  // Over 50 MB Playwright takes a path, not a buffer.
  const big = path.join(stack.dataDir, "..", "too-big.mov");
  fs.writeFileSync(big, Buffer.alloc(60 * MiB, 1));
  // The refusal on every screen (CONTRACT §11, §15): its sentence fits a phone, light and dark, axe-clean.
  await everyScreen(page, "guest-upload-refused", async () => {
    await page.goto(link.url);
    await expect(page.locator("#largest")).toHaveText("50 MiB");
    await page.locator("#file-input").setInputFiles(big);
    const refused = page.locator("#uploads li").first();
    await expect(refused).toHaveAttribute("data-state", "refused");
    await expect(refused).toContainText("not sent: This file is 60 MiB; this link takes files of at most 50 MiB now.");
  });
  expect(sent).toEqual([]);
  await page.screenshot({ path: path.join(SCREENSHOTS, "guest-upload-refused.png"), fullPage: true });

  // The whole allowance is still there: a 40 MiB file goes (in parts side by side), and the page's limit counts down.
  await page.locator("#file-input").setInputFiles({ name: "fits.mov", mimeType: "video/quicktime", buffer: Buffer.alloc(40 * MiB, 2) });
  const fits = page.locator("#uploads li").nth(1);
  await expect(fits).toHaveAttribute("data-state", "done", { timeout: 60_000 });
  await expect(page.locator("#largest")).toHaveText("10 MiB");
  const links = (await (await fetch(`${stack.url}/v1/upload-links`, { headers: { authorization: `Bearer ${key}` } })).json()) as { upload_links: { id: string; bytes_uploaded: number }[] };
  expect(links.upload_links.find((l) => l.id === link.id)!.bytes_uploaded).toBe(40 * MiB);
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

test("when the server refuses a file because another upload used the link meanwhile, the page says why in words with sizes in units and reads the link's limits anew (CONTRACT §15)", async ({ page }) => {
  const MiB = 1024 * 1024;
  const made = await fetch(`${stack.url}/v1/upload-links`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "Scans", max_bytes: 5 * MiB }),
  });
  const link = (await made.json()) as { url: string; id: string };
  const { errors, foreign } = watchPage(page, stack);
  await page.setViewportSize(SIZES.phone);
  await page.goto(link.url);
  await expect(page.locator("#largest")).toHaveText("5.0 MiB");

  // Another guest (a script, through the link's raw upload) takes 4 MiB after the page was read.
  const other = await fetch(`${link.url}?name=other.bin`, { method: "POST", body: Buffer.alloc(4 * MiB, 3) });
  expect(other.status).toBe(200);
  // The page still says 5 MiB, so it sends a 3 MiB file; the server refuses it at its creation.
  await page.locator("#file-input").setInputFiles({ name: "scan.pdf", mimeType: "application/pdf", buffer: Buffer.alloc(3 * MiB, 4) });
  const refused = page.locator("#uploads li").first();
  await expect(refused).toHaveAttribute("data-state", "refused");
  await expect(refused.locator(".upload-status")).toHaveText("not uploaded: This file is 3.0 MiB, but this link has only 1.0 MiB left now: other uploads used the rest.");
  // No byte counts, no message written for programs.
  await expect(refused).not.toContainText(/\d{5,}|upload link takes at most/);
  // The limits shown are the server's now.
  await expect(page.locator("#largest")).toHaveText("1.0 MiB");
  for (const scheme of SCHEMES) {
    await page.emulateMedia({ colorScheme: scheme });
    await checkPage(page, "guest-upload-server-refused", "phone", scheme);
  }

  // The page checks the next file against them: 2 MiB is refused before a byte; 1 MiB goes, and the limits read anew say nothing is left.
  await page.locator("#file-input").setInputFiles({ name: "two.pdf", mimeType: "application/pdf", buffer: Buffer.alloc(2 * MiB, 5) });
  await expect(page.locator("#uploads li").nth(1)).toContainText("not sent: This file is 2.0 MiB; this link takes files of at most 1.0 MiB now.");
  await page.locator("#file-input").setInputFiles({ name: "one.pdf", mimeType: "application/pdf", buffer: Buffer.alloc(MiB, 6) });
  await expect(page.locator("#uploads li").nth(2)).toHaveAttribute("data-state", "done", { timeout: 30_000 });
  await expect(page.locator("#largest")).toHaveText("0 B");
  const links = (await (await fetch(`${stack.url}/v1/upload-links`, { headers: { authorization: `Bearer ${key}` } })).json()) as { upload_links: { id: string; files_uploaded: number; bytes_uploaded: number }[] };
  expect(links.upload_links.find((l) => l.id === link.id)).toMatchObject({ files_uploaded: 2, bytes_uploaded: 5 * MiB });
  // The browser's own complaints about answers meant so: the refusal's 413, and the 410 of the
  // link's page read anew once the link is full.
  expect(errors.filter((e) => !/status of 413 .* at \S+\/v1\/uploads /.test(e) && !/status of 410 .* at (\S+) on \1$/.test(e))).toEqual([]);
  expect(foreign).toEqual([]);
});

test("a deleted link's page says so with 410", async ({ page }) => {
  const made = await fetch(`${stack.url}/v1/upload-links`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" });
  const link = (await made.json()) as { url: string; id: string };
  await fetch(`${stack.url}/v1/upload-links/${link.id}`, { method: "DELETE", headers: { authorization: `Bearer ${key}` } });
  const res = await page.goto(link.url);
  expect(res?.status()).toBe(410);
  await expect(page.getByRole("heading", { name: "This link no longer takes uploads" })).toBeVisible();
});
