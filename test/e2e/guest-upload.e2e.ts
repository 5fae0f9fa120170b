// The guest upload page (/u/{token}, CONTRACT §8) in Chromium against the compiled binary:
// opened without signing in, a file picked, progress shown, upload finished through tus into
// the link owner's account; no console errors, no request leaves cubby's origin.
import { expect, test } from "@playwright/test";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { buildBinary, SCREENSHOTS, startStack, type Stack } from "./fixtures.ts";

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
  const content = Buffer.alloc(12 * 1024 * 1024 + 123, 7);
  await page.locator("#file-input").setInputFiles({ name: "return-2026.pdf", mimeType: "application/pdf", buffer: content });
  const item = page.locator("#uploads li").first();
  await expect(item).toHaveAttribute("data-state", "done", { timeout: 30_000 });
  await expect(item.locator("span").last()).toHaveText("uploaded");
  const bar = item.locator("progress");
  expect(await bar.evaluate((p) => [(p as unknown as { value: number }).value, (p as unknown as { max: number }).max])).toEqual([content.byteLength, content.byteLength]);
  await page.screenshot({ path: path.join(SCREENSHOTS, "guest-upload.png"), fullPage: true });

  const files = (await (await fetch(`${stack.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } })).json()) as { files: { name: string; size: string; visibility: string; content_type: string }[] };
  expect(files.files).toEqual([expect.objectContaining({ name: "return-2026.pdf", size: String(content.byteLength), visibility: "private", content_type: "application/pdf" })]);
  expect(errors).toEqual([]);
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
