// The Files section's list (issue 40) in Debian's Chromium against the compiled binary: sorted by
// name, size and creation time, each both ways, by the column headers (1280 px) and by the Sort
// select (390 px), over more than one page (the server's order_by and page_token), with the
// order in the address (reload and Back keep it); ten files moved and then deleted at once
// through the selection bar; files and a folder shared by one link whose page lists them. Every
// screen at 1280 × 800 and 390 × 844, light and dark, with axe-core and no sideways scrolling.
// Each step is checked through the REST API too. Screenshots: test-results/screenshots/.
import { expect, test, type Page } from "@playwright/test";
import fs from "node:fs";
import path from "node:path";
import { apiInPage, buildBinary, everyScreen, SCREENSHOTS, signIn, SIZES, startStack, watchPage, type Stack } from "./fixtures.ts";

test.describe.configure({ mode: "serial" });
// Sixty files listed in six orders, and four screens with axe-core each.
test.describe.configure({ timeout: 240_000 });

let stack: Stack;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  stack = await startStack(buildBinary(), true);
});
test.afterAll(() => stack?.stop());

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `file-list-${name}.png`), fullPage: true });

interface Made {
  id: string;
  name: string;
  size: number;
}

/** Signs `login` in and mints an API key in the page (its session): the key. */
async function signInWithKey(page: Page, login: string): Promise<string> {
  await signIn(page, stack, login);
  return (await apiInPage<{ key: string }>(page, "POST", "/auth/keys")).key;
}

/**
 * Uploads `count` small text files through the REST API with `key`, one after another (so their
 * creation order is the order made), into `folder` when given: file i is named by a shuffle of
 * the indexes and sized by another, so that the name, size and creation orders all differ.
 */
async function makeFiles(key: string, count: number, prefix: string, folder?: string): Promise<Made[]> {
  const made: Made[] = [];
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${String((i * 37) % count).padStart(2, "0")}.txt`;
    const size = ((i * 17) % count) * 10 + 1;
    const query = new URLSearchParams({ name, ...(folder ? { folder_id: folder } : {}) });
    const res = await fetch(`${stack.url}/v1/files?${query}`, { method: "POST", body: "x".repeat(size), headers: { authorization: `Bearer ${key}`, "content-type": "text/plain" } });
    expect(res.status, await res.clone().text()).toBe(200);
    made.push({ id: ((await res.json()) as { id: string }).id, name, size });
  }
  return made;
}

const rows = (page: Page) => page.locator("#files tbody tr");
const names = (page: Page) => page.locator("#files tbody tr .file-name");

/** Expects the list to show `expected` names in order: the first page of 50, then all after Load more. */
async function expectPaged(page: Page, expected: string[]): Promise<void> {
  await expect(names(page)).toHaveText(expected.slice(0, 50));
  await expect(page.locator("#files-count")).toHaveText("50 shown, more below");
  await page.getByRole("button", { name: "Load more" }).click();
  await expect(names(page)).toHaveText(expected);
  await expect(page.getByRole("button", { name: "Load more" })).toBeHidden();
}

/** The orders offered, with the expected names (`made` in creation order) and what the address and header say. */
function orders(made: Made[]) {
  const byName = [...made].sort((a, b) => (a.name < b.name ? -1 : 1)).map((f) => f.name);
  const bySize = [...made].sort((a, b) => a.size - b.size).map((f) => f.name);
  const byCreation = made.map((f) => f.name);
  return [
    // [column, order_by, aria-sort, phone's choice, expected]
    ["Name", "name", "ascending", "name, A to Z", byName],
    ["Name", "name desc", "descending", "name, Z to A", [...byName].reverse()],
    ["Size", "size desc", "descending", "largest first", [...bySize].reverse()],
    ["Size", "size", "ascending", "smallest first", bySize],
    ["Created", "create_time desc", "descending", "newest first", [...byCreation].reverse()],
    ["Created", "create_time", "ascending", "oldest first", byCreation],
  ] as const;
}

test("sort by name, size and creation time, each both ways, by the column headers over two pages; the address keeps the order", async ({ page }) => {
  const watch = watchPage(page, stack);
  const key = await signInWithKey(page, "dana");
  const made = await makeFiles(key, 60, "wide");
  // No request per row: a page's expiries come in one GET /v1/expiries (the File has no expiry).
  const asked: string[] = [];
  page.on("request", (r) => void (/\/v1\/(expiries|files\/[^/]+\/expiry)/.test(new URL(r.url()).pathname) && asked.push(new URL(r.url()).pathname)));
  await page.goto(`${stack.url}/files`);
  // Newest first by default: the Created header says so.
  const header = (name: string) => page.getByRole("columnheader", { name });
  await expect(header("Created")).toHaveAttribute("aria-sort", "descending");
  await expectPaged(page, made.map((f) => f.name).reverse());
  await expect(page.locator("#files tbody tr .expires-at").first()).toHaveText("never");
  await expect(page.locator("#files tbody tr .expires-at", { hasText: "…" })).toHaveCount(0);
  expect(asked.length).toBeGreaterThan(0);
  expect(asked.filter((p) => p !== "/v1/expiries")).toEqual([]);

  for (const [column, orderBy, ariaSort, , expected] of orders(made)) {
    // A column chosen anew starts A to Z (Name), largest first (Size), newest first (Created); a second click turns it.
    await header(column).getByRole("button").click();
    await expect(header(column)).toHaveAttribute("aria-sort", ariaSort);
    await expect(page.locator("#files th[aria-sort]")).toHaveCount(1);
    const query = orderBy === "create_time desc" ? "" : `?order_by=${encodeURIComponent(orderBy).replaceAll("%20", "+")}`;
    await expect(page).toHaveURL(`${stack.url}/files${query}`);
    await expectPaged(page, expected);
    if (orderBy === "size desc") await shot(page, "sorted-size-wide");
  }

  // The address keeps the order across a reload, and Back returns to the one before.
  await page.reload();
  await expect(header("Created")).toHaveAttribute("aria-sort", "ascending");
  await expect(names(page)).toHaveText(made.map((f) => f.name).slice(0, 50));
  await page.goBack();
  await expect(page).toHaveURL(`${stack.url}/files`);
  await expect(header("Created")).toHaveAttribute("aria-sort", "descending");
  await expect(names(page).first()).toHaveText(made.at(-1)!.name);
  // A keyboard sorts too: the header is a button.
  await header("Name").getByRole("button").focus();
  await page.keyboard.press("Enter");
  await expect(header("Name")).toHaveAttribute("aria-sort", "ascending");
  await expect(names(page).first()).toHaveText(orders(made)[0][4][0]!);

  // A name too long for its column stays on one line, ellipsised, with the whole name in its title.
  const long = `${"a-very-long-file-name-".repeat(8)}end.txt`;
  await fetch(`${stack.url}/v1/files?name=${long}`, { method: "POST", body: "x", headers: { authorization: `Bearer ${key}`, "content-type": "text/plain" } });
  await page.goto(`${stack.url}/files?order_by=name`);
  const longLink = page.getByRole("link", { name: long });
  await expect(longLink).toHaveAttribute("title", long);
  const box = await longLink.evaluate((a: any) => ({ lines: Math.round(a.getBoundingClientRect().height / parseFloat((globalThis as any).getComputedStyle(a).lineHeight)), clipped: a.scrollWidth > a.clientWidth }));
  expect(box).toEqual({ lines: 1, clipped: true });
  // The creation date is a column of its own, in the browser's locale.
  await expect(rows(page).first().locator("td.created time")).toHaveAttribute("datetime", /^\d{4}-\d\d-\d\dT/);

  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("on a phone the Sort select orders the list, both ways for each field, over two pages", async ({ page }) => {
  const watch = watchPage(page, stack);
  await page.setViewportSize(SIZES.phone);
  const key = await signInWithKey(page, "erin");
  const made = await makeFiles(key, 55, "phone");
  await page.goto(`${stack.url}/files`);
  const sort = page.getByLabel("Sort by");
  await expect(sort).toBeVisible();
  await expect(sort).toHaveValue("create_time desc");
  for (const [, orderBy, , choice, expected] of orders(made)) {
    await sort.selectOption({ label: choice });
    await expect(sort).toHaveValue(orderBy);
    await expect(rows(page)).toHaveCount(50);
    await expectPaged(page, expected);
  }
  await shot(page, "sorted-phone");
  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

for (const size of ["wide", "phone"] as const) {
  test(`ten files moved to a folder and then deleted at once through the selection bar (${size})`, async ({ page }) => {
    const watch = watchPage(page, stack);
    await page.setViewportSize(SIZES[size]);
    const key = await signInWithKey(page, size === "wide" ? "frank" : "gina");
    const archive = await apiInPage<{ id: string }>(page, "POST", "/v1/folders", { name: "Archive" });
    const made = await makeFiles(key, 12, "bulk");
    await page.goto(`${stack.url}/files?order_by=name`);
    await expect(rows(page)).toHaveCount(12);
    const bar = page.getByRole("group", { name: /selected/ });
    await expect(bar).toBeHidden();

    // Ten ticked one by one (the first ten by name); the bar counts them.
    const ten = [...made].sort((a, b) => (a.name < b.name ? -1 : 1)).slice(0, 10);
    for (const f of ten) await page.getByLabel(`Select ${f.name}`, { exact: true }).check();
    await expect(bar).toBeVisible();
    await expect(page.locator("#selection-count")).toHaveText("10 files selected");
    await expect(page.getByLabel("Select all shown")).not.toBeChecked();
    await shot(page, `selection-${size}`);

    // Move 10 selected → Archive: one dialog, ten moves, one line saying so.
    await page.getByRole("button", { name: "Move 10 selected" }).click();
    const dialog = page.getByRole("dialog", { name: "Move 10 selected" });
    await expect(dialog.getByRole("radio", { name: "Home (here)" })).toBeDisabled();
    await dialog.getByRole("radio", { name: "Archive" }).check();
    await dialog.getByRole("button", { name: "Move here" }).click();
    await expect(dialog).toBeHidden();
    await expect(page.locator("#files-note")).toHaveText("Moved to Archive: 10 items.");
    await expect(rows(page)).toHaveCount(2);
    await expect(bar).toBeHidden();
    const inArchive = await apiInPage<{ files: { id: string }[] }>(page, "GET", `/v1/folders/${archive.id}/files?page_size=100`);
    expect(inArchive.files.map((f) => f.id).sort()).toEqual(ten.map((f) => f.id).sort());

    // In Archive: Select all shown takes the ten; one question, then ten deletes.
    await page.getByRole("link", { name: "Archive" }).click();
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Archive");
    await expect(rows(page)).toHaveCount(10);
    await page.getByLabel("Select all shown").check();
    await expect(page.locator("#selection-count")).toHaveText("10 files selected");
    let question = "";
    page.once("dialog", (d) => {
      question = d.message();
      void d.accept();
    });
    await page.getByRole("button", { name: "Delete 10 selected" }).click();
    await expect(page.locator("#files-note")).toHaveText("Deleted 10 items.");
    expect(question).toBe("Delete 10 files? This cannot be undone.");
    await expect(rows(page)).toHaveCount(0);
    await expect(bar).toBeHidden();
    await expect(page.getByRole("heading", { level: 1 })).toBeFocused();
    for (const f of ten) expect((await apiInPage<{ files: { id: string }[] }>(page, "GET", "/v1/files?page_size=100")).files.map((g) => g.id)).not.toContain(f.id);
    expect((await apiInPage<{ files: unknown[] }>(page, "GET", `/v1/folders/${archive.id}/files`)).files).toEqual([]);

    expect(watch.errors).toEqual([]);
    expect(watch.foreign).toEqual([]);
  });
}

test("a failed item of a bulk move is named with its reason and stays selected; the others move", async ({ page }) => {
  const watch = watchPage(page, stack);
  const key = await signInWithKey(page, "hana");
  const box = await apiInPage<{ id: string }>(page, "POST", "/v1/folders", { name: "Box" });
  await makeFiles(key, 1, "same", box.id); // Box holds same-00.txt
  await makeFiles(key, 3, "same"); // same-00, same-01, same-02 at the top
  await page.goto(`${stack.url}/files`);
  await expect(rows(page)).toHaveCount(3);
  await page.getByLabel("Select all shown").check();
  await page.getByRole("button", { name: "Move 3 selected" }).click();
  await page.getByRole("dialog").getByRole("radio", { name: "Box" }).check();
  await page.getByRole("dialog").getByRole("button", { name: "Move here" }).click();
  await expect(page.locator("#files-note")).toHaveText("Moved to Box: 2 of 3 items. Not moved: same-00.txt (Box already has one of that name).");
  await expect(rows(page)).toHaveCount(1);
  await expect(page.locator("#selection-count")).toHaveText("1 file selected");
  await expect(page.getByLabel("Select same-00.txt")).toBeChecked();
  expect(watch.errors.filter((e) => !/status of 409 /.test(e))).toEqual([]);
});

test("files and a folder selected are shared by one link, whose page lists them; the list and its selection bar are axe-clean on every screen", async ({ page, browser }) => {
  const watch = watchPage(page, stack);
  const key = await signInWithKey(page, "ivan");
  const trip = await apiInPage<{ id: string }>(page, "POST", "/v1/folders", { name: "Trip" });
  await makeFiles(key, 2, "inside", trip.id);
  await makeFiles(key, 3, "photo");
  await page.goto(`${stack.url}/files?order_by=name`);
  await page.getByLabel("Select folder Trip").check();
  await page.getByLabel("Select photo-00.txt").check();
  await page.getByLabel("Select photo-01.txt").check();
  await expect(page.locator("#selection-count")).toHaveText("3 selected (2 files, 1 folder)");

  // The list, sorted by name, with the selection bar, on every screen.
  await everyScreen(page, "file-list-selection", async () => {
    await expect(page.getByRole("group", { name: /selected/ })).toBeVisible();
    // From the top: on a wide screen the bar sticks to the window's top as the list scrolls.
    await page.evaluate(() => (globalThis as any).scrollTo(0, 0));
  });

  await page.setViewportSize(SIZES.wide);
  await page.getByRole("button", { name: "Share 3 selected" }).click();
  const dialog = page.getByRole("dialog", { name: /^Share 3 selected/ });
  await dialog.getByRole("button", { name: "Create share link" }).click();
  const url = await dialog.locator("#shares li").getByLabel("Share link", { exact: true }).inputValue();
  await dialog.getByRole("button", { name: "Close" }).click();

  const guestContext = await browser.newContext();
  try {
    const guest = await guestContext.newPage();
    const guestWatch = watchPage(guest, stack);
    await everyScreen(guest, "file-list-shared-selection", async () => {
      expect((await guest.goto(url))?.status()).toBe(200);
      await expect(guest.getByRole("heading", { level: 1 })).toHaveText("2 files and 1 folder");
      await expect(guest.locator(".shared-folder-name")).toHaveText(["Trip/"]);
      await expect(guest.locator(".shared-file-name")).toHaveText(["photo-00.txt", "photo-01.txt"]);
    });
    expect(guestWatch.errors).toEqual([]);
  } finally {
    await guestContext.close();
  }
  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});

test("the Grid view shows files as tiles with their thumbnails, keeps sorting and selection, and is remembered; every screen", async ({ page }) => {
  const watch = watchPage(page, stack);
  const key = await signInWithKey(page, "kate");
  // A picture drawn in the page, whose thumbnail the server makes, and two text files (type squares).
  const png = Buffer.from(
    await page.evaluate(async () => {
      const g = globalThis as any;
      const canvas = g.document.createElement("canvas");
      canvas.width = 320;
      canvas.height = 240;
      const ctx = canvas.getContext("2d");
      ctx.fillStyle = "#2a7";
      ctx.fillRect(0, 0, 320, 240);
      ctx.fillStyle = "#fc3";
      ctx.fillRect(40, 40, 120, 90);
      const blob: any = await new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
      return g.btoa(String.fromCharCode(...new Uint8Array(await blob.arrayBuffer())));
    }),
    "base64",
  );
  const res = await fetch(`${stack.url}/v1/files?name=meadow.png`, { method: "POST", body: png, headers: { authorization: `Bearer ${key}`, "content-type": "image/png" } });
  expect(res.status).toBe(200);
  await makeFiles(key, 2, "note");
  await page.goto(`${stack.url}/files?order_by=name`);
  const toggle = page.getByRole("button", { name: "Grid" });
  await expect(toggle).toHaveAttribute("aria-pressed", "false");
  await toggle.click();
  await expect(toggle).toHaveAttribute("aria-pressed", "true");
  await expect(page.locator("#files")).toHaveClass(/\bgrid\b/);
  // Tiles side by side, sorted by name, the picture's thumbnail loaded; sorting by the Sort select.
  await expect(names(page)).toHaveText(["meadow.png", "note-00.txt", "note-01.txt"]);
  await expect(rows(page).first().locator("img.thumb")).toHaveJSProperty("complete", true);
  const [a, b] = [await rows(page).nth(0).boundingBox(), await rows(page).nth(1).boundingBox()];
  expect(b!.y).toBe(a!.y);
  expect(b!.x).toBeGreaterThan(a!.x);
  await page.getByLabel("Sort by").selectOption({ label: "name, Z to A" });
  await expect(names(page)).toHaveText(["note-01.txt", "note-00.txt", "meadow.png"]);
  await expect(page).toHaveURL(`${stack.url}/files?order_by=name+desc`);
  await page.getByLabel("Select meadow.png").check();
  await expect(page.locator("#selection-count")).toHaveText("1 file selected");

  // Remembered by the browser: a reload shows the grid again.
  await page.reload();
  await expect(page.getByRole("button", { name: "Grid" })).toHaveAttribute("aria-pressed", "true");
  await expect(page.locator("#files")).toHaveClass(/\bgrid\b/);
  await everyScreen(page, "file-list-grid", async () => {
    await expect(names(page)).toHaveCount(3);
    await expect(rows(page).last().locator("img.thumb")).toHaveJSProperty("complete", true);
    await page.evaluate(() => (globalThis as any).scrollTo(0, 0));
  });
  // Back to the list, remembered too (the header row shows on a wide screen).
  await page.setViewportSize(SIZES.wide);
  await page.getByRole("button", { name: "Grid" }).click();
  await page.reload();
  await expect(page.getByRole("button", { name: "Grid" })).toHaveAttribute("aria-pressed", "false");
  await expect(page.getByRole("columnheader", { name: "Name" })).toBeVisible();
  expect(watch.errors).toEqual([]);
  expect(watch.foreign).toEqual([]);
});
