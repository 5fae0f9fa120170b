// Sharing a folder from the dashboard (CONTRACT §12), in Debian's Chromium against the compiled
// binary: the share dialog of a file, opened for a folder from its row and from beside the
// breadcrumbs of the folder viewed; a link with a download limit is made, shown and copied; a
// browser without a session opens it and gets the folder's page listing its files and its
// sub-folder's, and "Download all" gives one ZIP that Python's zipfile reads; the owner sees the
// download counted; revoked, the link answers 410 with a page saying so. Each step is checked
// through the REST API too. And a selection of a file and a folder shared by one link (CONTRACT
// §15): its page on every screen (fixtures.ts everyScreen: 390 and 1280 px, both schemes,
// axe-clean, no overflow), and its ZIP. Screenshots: test-results/screenshots/folder-share-*.png
// and screens-folder-share-selection-page-*.png.
import { expect, test, type Page } from "@playwright/test";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { apiInPage, buildBinary, everyScreen, SCREENSHOTS, signIn, startStack, watchPage, type Stack } from "./fixtures.ts";

test.describe.configure({ mode: "serial" });

let stack: Stack;
let scratch: string;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-e2e-zip-"));
  stack = await startStack(buildBinary(), true);
});
test.afterAll(async () => {
  await stack?.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `folder-share-${name}.png`), fullPage: true });

/** Uploads a text file into a folder from inside the signed-in page. */
async function uploadInto(page: Page, folderId: string, name: string, text: string): Promise<void> {
  await page.evaluate(
    async ([folderId, name, text]) => {
      const res = await fetch(`/v1/files?name=${encodeURIComponent(name)}&folder_id=${folderId}`, { method: "POST", headers: { "content-type": "text/plain" }, body: text });
      if (res.status !== 200) throw new Error(`upload ${name}: ${res.status} ${await res.text()}`);
    },
    [folderId, name, text] as const,
  );
}

/** The file entries of a ZIP (directories left out) with their sizes, as Python's zipfile reads them. */
function zipEntries(file: string): { name: string; size: number }[] {
  const script = "import json, sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nassert z.testzip() is None\nprint(json.dumps([{'name': i.filename, 'size': i.file_size} for i in z.infolist() if not i.is_dir()]))";
  const r = spawnSync("python3", ["-c", script, file], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`zipfile: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { name: string; size: number }[]).sort((a, b) => a.name.localeCompare(b.name));
}

type Share = { id: string; url: string; folder_id: string; file_id: string; max_downloads: number | null; download_count: number; has_password: boolean };

test("share a folder: from its row, with a download limit; the link is copied, opened without a session, downloaded as one ZIP, counted, and revoked", async ({ page, context, browser }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "alice");
  const trip = await apiInPage<{ id: string }>(page, "POST", "/v1/folders", { name: "Trip" });
  const sub = await apiInPage<{ id: string }>(page, "POST", "/v1/folders", { name: "sub", parent_id: trip.id });
  await uploadInto(page, trip.id, "notes.txt", "packing list\n");
  await uploadInto(page, sub.id, "map.txt", "turn left at the lake\n");
  await page.reload();

  // The folder row offers Share; its dialog is the file's, saying what a folder's link gives.
  const row = page.locator("#folders tbody tr").filter({ hasText: "Trip" });
  const shareButton = row.getByRole("button", { name: "Share folder Trip" });
  await shareButton.click();
  const dialog = page.getByRole("dialog", { name: "Share links of folder Trip" });
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText("all as one ZIP");
  await expect(dialog.getByText("No share links for this folder.")).toBeVisible();

  // A link with a limit of 2: shown, focused on its Copy button, and made on the folder.
  await dialog.getByLabel("Max downloads").fill("2");
  await dialog.getByRole("button", { name: "Create share link" }).click();
  const card = dialog.locator("#shares li");
  await expect(card).toHaveCount(1);
  await expect(card).toContainText("0 of 2 downloads");
  await expect(card).toContainText("no password");
  await expect(card.getByRole("button", { name: "Copy share link" })).toBeFocused();
  const url = await card.getByLabel("Share link", { exact: true }).inputValue();
  expect(url).toMatch(new RegExp(`^${stack.url}/s/[A-Za-z0-9_-]{22,}$`));
  const { shares } = await apiInPage<{ shares: Share[] }>(page, "GET", `/v1/folders/${trip.id}/shares`);
  expect(shares).toEqual([expect.objectContaining({ url, folder_id: trip.id, file_id: "", max_downloads: 2, download_count: 0, has_password: false })]);

  // Copy puts the link on the clipboard.
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: stack.url });
  await card.getByRole("button", { name: "Copy share link" }).click();
  await expect(card.getByRole("button", { name: "Copy share link" })).toHaveText("Copied");
  const clipboard = () => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText();
  expect(await page.evaluate(clipboard)).toBe(url);
  await shot(page, "dialog");

  // Closed, focus goes back to the row's Share button.
  await dialog.getByRole("button", { name: "Close" }).click();
  await expect(dialog).toBeHidden();
  await expect(shareButton).toBeFocused();

  // Someone without a session opens the link: the folder's page lists its sub-folder (a link into it) and its file.
  const guestContext = await browser.newContext();
  try {
    const guest = await guestContext.newPage();
    const guestWatch = watchPage(guest, stack);
    const opened = await guest.goto(url);
    expect(opened?.status()).toBe(200);
    await expect(guest.getByRole("heading", { level: 1 })).toHaveText("Trip");
    await expect(guest.locator(".shared-folder-name")).toHaveText(["sub/"]);
    await expect(guest.locator(".shared-file-name")).toHaveText(["notes.txt"]);
    await guest.getByRole("link", { name: "sub/" }).click();
    await expect(guest.locator(".shared-file-name")).toHaveText(["map.txt"]);
    await guest.getByRole("navigation", { name: "Folders" }).getByRole("link", { name: "Trip" }).click();
    await expect(guest.locator(".shared-file-name")).toHaveText(["notes.txt"]);
    await expect(guest.locator(".facts")).toContainText("2 of 2");
    await shot(guest, "page");

    // Download all: one ZIP named after the folder, holding both files.
    const [download] = await Promise.all([guest.waitForEvent("download"), guest.getByRole("link", { name: /Download all/ }).click()]);
    expect(download.suggestedFilename()).toBe("Trip.zip");
    const saved = path.join(scratch, "Trip.zip");
    await download.saveAs(saved);
    expect(zipEntries(saved)).toEqual([
      { name: "notes.txt", size: "packing list\n".length },
      { name: "sub/map.txt", size: "turn left at the lake\n".length },
    ]);

    // The owner sees the download counted, from the folder's own page this time (beside the breadcrumbs).
    await row.getByRole("link", { name: "Trip" }).click();
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Trip");
    const viewedShare = page.getByRole("button", { name: "Share folder Trip" });
    await expect(viewedShare).toHaveText("Share folder");
    await viewedShare.click();
    await expect(card).toContainText("1 of 2 downloads");
    expect((await apiInPage<{ shares: Share[] }>(page, "GET", `/v1/folders/${trip.id}/shares`)).shares[0]!.download_count).toBe(1);
    await shot(page, "counted");

    // Revoked: gone from the list, and the link answers 410 with a page that says so.
    page.once("dialog", (d) => void d.accept());
    await card.getByRole("button", { name: "Revoke share link" }).click();
    await expect(dialog.getByText("No share links for this folder.")).toBeVisible();
    await expect(dialog.getByLabel("Expires")).toBeFocused();
    expect((await apiInPage<{ shares: Share[] }>(page, "GET", `/v1/folders/${trip.id}/shares`)).shares).toEqual([]);
    await dialog.getByRole("button", { name: "Close" }).click();
    await expect(viewedShare).toBeFocused();
    const gone = await guest.goto(url);
    expect(gone?.status()).toBe(410);
    await expect(guest.getByRole("heading", { level: 1 })).toHaveText("This link no longer works");
    expect((await fetch(`${url}?download=zip`)).status).toBe(410);
    expect(guestWatch.errors.filter((e) => !/status of 410 /.test(e))).toEqual([]);
    expect(guestWatch.foreign).toEqual([]);
  } finally {
    await guestContext.close();
  }

  // At the top there is no folder viewed, so no Share folder beside the (hidden) breadcrumbs.
  await page.getByRole("navigation", { name: "Folder path" }).getByRole("link", { name: "Home" }).click();
  await expect(page.locator("#share-folder")).toBeHidden();
  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("a file's share dialog still shares the file, and a refused limit shows beside its field", async ({ page }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "bob");
  const folder = await apiInPage<{ id: string }>(page, "POST", "/v1/folders", { name: "Docs" });
  await uploadInto(page, folder.id, "plan.txt", "the plan\n");
  await page.goto(`${stack.url}/?folder=${folder.id}`);
  const fileRow = page.locator("#files tbody tr").filter({ hasText: "plan.txt" });
  const fileId = (await fileRow.getAttribute("data-id"))!;

  // The folder's dialog first, then the file's: each lists and makes its own links.
  await page.getByRole("button", { name: "Share folder Docs" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Create share link" }).click();
  await expect(page.locator("#shares li")).toHaveCount(1);
  await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();

  await fileRow.getByRole("button", { name: "Share plan.txt" }).click();
  const dialog = page.getByRole("dialog", { name: "Share links of plan.txt" });
  await expect(dialog).toContainText("can download the file");
  await expect(dialog.getByText("No share links for this file.")).toBeVisible();
  await dialog.getByLabel("Max downloads").fill("0");
  // The browser's own check would stop 0 (min=1): send it anyway, to see the API's refusal placed.
  await dialog.getByLabel("Max downloads").evaluate((input) => input.removeAttribute("min"));
  await dialog.getByRole("button", { name: "Create share link" }).click();
  await expect(dialog.getByLabel("Max downloads")).toHaveAttribute("aria-invalid", "true");
  await expect(dialog.getByRole("alert")).toContainText("max_downloads");
  await dialog.getByLabel("Max downloads").fill("3");
  await dialog.getByRole("button", { name: "Create share link" }).click();
  await expect(dialog.locator("#shares li")).toHaveCount(1);
  await expect(dialog.locator("#shares li")).toContainText("0 of 3 downloads");
  await expect(dialog.getByLabel("Max downloads")).not.toHaveAttribute("aria-invalid", "true");
  const fileShares = (await apiInPage<{ shares: Share[] }>(page, "GET", `/v1/files/${fileId}/shares`)).shares;
  expect(fileShares).toEqual([expect.objectContaining({ file_id: fileId, folder_id: "", max_downloads: 3 })]);
  expect((await apiInPage<{ shares: Share[] }>(page, "GET", `/v1/folders/${folder.id}/shares`)).shares).toEqual([expect.objectContaining({ max_downloads: null })]);
  expect(watch.errors.filter((e) => !/status of 400 /.test(e))).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("share a selection (CONTRACT §15): a file at the top and a folder ticked, one link for both; its page lists them, axe-clean at 390 and 1280 px in light and dark; Download all is one ZIP", async ({ page, browser }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "carol");
  const album = await apiInPage<{ id: string }>(page, "POST", "/v1/folders", { name: "Album" });
  await uploadInto(page, album.id, "cover.txt", "a cover\n");
  const readme = await apiInPage<{ id: string }>(page, "POST", "/v1/files?name=readme.txt", undefined);
  await page.reload();

  // Nothing selected: no Share selected button. Tick the file and the folder.
  await expect(page.getByRole("button", { name: /^Share \d+ selected$/ })).toBeHidden();
  await page.getByLabel("Select readme.txt").check();
  await page.getByLabel("Select folder Album").check();
  const shareSelected = page.getByRole("button", { name: "Share 2 selected" });
  await shareSelected.click();
  const dialog = page.getByRole("dialog", { name: "Share 2 selected: readme.txt, Album" });
  await expect(dialog).toContainText("One link for everything selected");
  await expect(dialog.getByText("No link made for this selection yet.")).toBeVisible();
  await dialog.getByRole("button", { name: "Create share link" }).click();
  const card = dialog.locator("#shares li");
  await expect(card).toHaveCount(1);
  const url = await card.getByLabel("Share link", { exact: true }).inputValue();
  const { shares } = await apiInPage<{ shares: (Share & { items: unknown[] })[] }>(page, "GET", "/v1/shares");
  expect(shares.find((s) => s.url === url)?.items).toEqual([{ file_id: readme.id }, { folder_id: album.id }]);
  await shot(page, "selection-dialog");
  await dialog.getByRole("button", { name: "Close" }).click();
  await expect(shareSelected).toBeFocused();
  await page.getByRole("button", { name: "Clear selection" }).click();
  await expect(shareSelected).toBeHidden();
  await expect(page.getByLabel("Select readme.txt")).not.toBeChecked();

  const guestContext = await browser.newContext();
  try {
    const guest = await guestContext.newPage();
    const guestWatch = watchPage(guest, stack);
    await everyScreen(guest, "folder-share-selection-page", async () => {
      expect((await guest.goto(url))?.status()).toBe(200);
      await expect(guest.getByRole("heading", { level: 1 })).toHaveText("1 file and 1 folder");
      await expect(guest.locator(".shared-folder-name")).toHaveText(["Album/"]);
      await expect(guest.locator(".shared-file-name")).toHaveText(["readme.txt"]);
    });
    await guest.getByRole("link", { name: "Album/" }).click();
    await expect(guest.locator(".shared-file-name")).toHaveText(["cover.txt"]);
    await expect(guest.getByRole("navigation", { name: "Folders" }).getByRole("link", { name: "1 file and 1 folder" })).toBeVisible();
    const [download] = await Promise.all([guest.waitForEvent("download"), guest.getByRole("link", { name: /Download all/ }).click()]);
    expect(download.suggestedFilename()).toBe("shared-files.zip");
    const saved = path.join(scratch, "shared-files.zip");
    await download.saveAs(saved);
    expect(zipEntries(saved)).toEqual([
      { name: "Album/cover.txt", size: "a cover\n".length },
      { name: "readme.txt", size: 0 },
    ]);
    expect(guestWatch.errors).toEqual([]);
    expect(guestWatch.foreign).toEqual([]);
  } finally {
    await guestContext.close();
  }
  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("a share page's Downloads left follows downloads without a reload: its own Download, then one made elsewhere; used up, its links go (CONTRACT §15)", async ({ page, browser }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "kate");
  const file = await apiInPage<{ id: string }>(page, "POST", "/v1/files?name=plan.txt", undefined);
  const share = await apiInPage<Share>(page, "POST", `/v1/files/${file.id}/shares`, { max_downloads: 2 });
  const guestContext = await browser.newContext();
  try {
    const guest = await guestContext.newPage();
    const guestWatch = watchPage(guest, stack);
    await guest.goto(share.url);
    const left = guest.locator("[data-downloads-left]");
    await expect(left).toHaveText("2 of 2");
    const [download] = await Promise.all([guest.waitForEvent("download"), guest.getByRole("link", { name: /^Download/ }).click()]);
    await download.path();
    await expect(left).toHaveText("1 of 2");
    // Someone else uses the last one; the page learns of it when it is looked at again.
    expect((await fetch(share.url)).status).toBe(200);
    await guest.evaluate(() => (globalThis as any).document.dispatchEvent(new Event("visibilitychange")));
    await expect(left).toHaveText("None: this link is used up");
    await expect(guest.getByRole("link", { name: /^Download/ })).toHaveCount(0);
    expect(guestWatch.errors.filter((e) => !/status of 410 /.test(e))).toEqual([]);
    expect(guestWatch.foreign).toEqual([]);
  } finally {
    await guestContext.close();
  }
  expect(watch.errors).toEqual([]);
});
