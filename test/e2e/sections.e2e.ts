// The dashboard's sections (issue 40) in Debian's Chromium against the compiled binary: each one
// reached by its item in the navigation and by its own address (the server answers the page at
// /files, /shares, /links, /webhooks, /keys and /admin; other paths stay 404), one at a time,
// Back and Forward between them; the Shares section (what each link holds, downloads of its
// limit, the password marker, the access log after a download, Edit with a refusal beside its
// field, Copy, Revoke); the Users section for an administrator (a quota with units, back to the
// default, disabling, promoting, the server's refusal beside the box), and for anyone else only
// a sentence saying it is for administrators, with no Admin item. Every section at 1280 × 800
// and 390 × 844, light and dark: axe-core, no sideways scrolling, 44 px navigation items.
// Screenshots: test-results/screenshots/screens-section-*.png.
import { expect, test, type Page } from "@playwright/test";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { apiInPage, buildBinary, everyScreen, openSection, SCREENSHOTS, signIn, SIZES, startStack, watchPage, type Stack } from "./fixtures.ts";

test.describe.configure({ mode: "serial" });
// Each test checks several sections on four screens, each with axe-core (a few seconds each).
test.describe.configure({ timeout: 240_000 });

let binary: string;
let stack: Stack;

const GIB = 1024 ** 3;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  binary = buildBinary();
  stack = await startStack(binary, true, { env: { ADMIN_EMAILS: "root@example.com", QUOTA_BYTES: String(GIB) } });
});
test.afterAll(() => stack?.stop());

/** The sections: the navigation item's words, the address, the heading. */
const SECTIONS = [
  ["Files", "/files", "Files"],
  ["Shares", "/shares", "Shares"],
  ["Upload links", "/links", "Upload links"],
  ["Webhooks", "/webhooks", "Webhooks"],
  ["API keys", "/keys", "API keys"],
] as const;

const nav = (page: Page) => page.getByRole("navigation", { name: "Sections" });

/** Runs the cubby CLI on the stack's data, as an operator on the server would; its stdout. */
function cli(...args: string[]): string {
  const r = spawnSync(binary, [...args, "--data-dir", stack.dataDir], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`cubby ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}

/** Expects section `heading` to be the one shown, its item the current one, and no other section visible. */
async function expectShown(page: Page, item: string, heading: string): Promise<void> {
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(heading);
  await expect(nav(page).locator("[aria-current=page]")).toHaveText(item);
  await expect(page.locator("#signed-in > section[data-section]:visible")).toHaveCount(1);
}

/** Runs in the page: navigation items shorter than 44 px or reaching past the window. */
function navProblems(): string[] {
  const g = globalThis as any;
  const out: string[] = [];
  for (const a of g.document.querySelectorAll("#sections a")) {
    const box = a.getBoundingClientRect();
    if (box.width === 0) continue;
    if (box.height < 44 || box.right > g.innerWidth) out.push(`${a.textContent}: ${Math.round(box.height)} px tall, right edge ${Math.round(box.right)}`);
  }
  return out;
}

test("each section by the navigation and by its address, one at a time; Back and Forward; no Admin for others, and /admin says why", async ({ page }) => {
  const { errors, foreign } = watchPage(page, stack);
  await signIn(page, stack, "nora");
  await expectShown(page, "Files", "Files");
  await expect(nav(page).getByRole("link", { name: "Admin" })).toHaveCount(0);

  for (const [item, address, heading] of SECTIONS.slice(1)) {
    await openSection(page, item);
    await expect(page).toHaveURL(`${stack.url}${address}`);
    await expectShown(page, item, heading);
    await expect(page.getByRole("heading", { level: 1 })).toBeFocused();
    await expect(page).toHaveTitle(`${heading} · cubby`);
  }
  await page.goBack();
  await expect(page).toHaveURL(`${stack.url}/webhooks`);
  await expectShown(page, "Webhooks", "Webhooks");
  await page.goBack();
  await expect(page).toHaveURL(`${stack.url}/links`);
  await expectShown(page, "Upload links", "Upload links");
  await page.goForward();
  await expectShown(page, "Webhooks", "Webhooks");
  await openSection(page, "Files");
  await expect(page).toHaveURL(`${stack.url}/files`);
  await expectShown(page, "Files", "Files");

  // By address, on every screen: the page, its section alone, the navigation within reach.
  for (const [item, address, heading] of SECTIONS) {
    await everyScreen(page, `section${address.replace("/", "-")}`, async () => {
      await page.goto(`${stack.url}${address}`);
      await expectShown(page, item, heading);
      expect(await page.evaluate(navProblems)).toEqual([]);
    });
  }

  // /admin for someone who is not an administrator: a sentence, no list, no Admin item.
  await everyScreen(page, "section-admin-refused", async () => {
    await page.goto(`${stack.url}/admin`);
    await expect(page.getByText("This page is for administrators of this cubby.")).toBeVisible();
    await expect(page.locator("#users")).toBeHidden();
    await expect(nav(page).getByRole("link", { name: "Admin" })).toHaveCount(0);
  });

  // The server answers each address with the page; other paths are still not found.
  for (const [, address] of SECTIONS) expect((await fetch(`${stack.url}${address}`)).status).toBe(200);
  for (const path of ["/filez", "/shares/x", "/admin/users"]) expect([path, (await fetch(`${stack.url}${path}`, { headers: { accept: "text/html" } })).status]).toEqual([path, 404]);
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

type ShareJson = { id: string; url: string; max_downloads: number | null; download_count: number };

test("the Shares section: what each holds, downloads of the limit, the password marker, the access log after a download, Edit, Copy, Revoke", async ({ page, context }) => {
  const { errors, foreign } = watchPage(page, stack);
  await signIn(page, stack, "olga");
  const file = await page.evaluate(async () => {
    const res = await fetch("/v1/files?name=report.pdf", { method: "POST", headers: { "content-type": "application/pdf" }, body: "%PDF-1.4\n" });
    return (await res.json()) as { id: string };
  });
  const folder = await apiInPage<{ id: string }>(page, "POST", "/v1/folders", { name: "Trip" });
  const limited = await apiInPage<ShareJson>(page, "POST", `/v1/files/${file.id}/shares`, { max_downloads: 3 });
  const locked = await apiInPage<ShareJson>(page, "POST", `/v1/folders/${folder.id}/shares`, { password: "open sesame", ttl: "7d" });
  const download = await fetch(limited.url);
  expect([download.status, await download.text()]).toEqual([200, "%PDF-1.4\n"]);

  await openSection(page, "Shares");
  const rows = page.locator("#all-shares tbody tr");
  await expect(rows).toHaveCount(2);
  // Newest first: the folder's share, then the file's.
  await expect(rows.nth(0)).toHaveAttribute("data-id", locked.id);
  const folderRow = rows.nth(0);
  const fileRow = rows.nth(1);
  await expect(folderRow.locator(".list-name")).toHaveText("Trip/");
  await expect(folderRow.locator(".badge")).toHaveText("password");
  await expect(folderRow.locator("td[data-label=Downloads]")).toHaveText("0");
  await expect(folderRow.locator("td[data-label='Last download']")).toHaveText("never");
  await expect(fileRow.locator(".list-name")).toHaveText("report.pdf");
  await expect(fileRow.locator("td[data-label=Downloads]")).toHaveText("1 of 3");
  await expect(fileRow.locator("td[data-label='Last download']")).not.toHaveText("never");
  await expect(fileRow.locator(".badge")).toHaveCount(0);

  // The access log, on demand.
  await fileRow.getByRole("button", { name: "Downloads share of report.pdf" }).click();
  await expect(fileRow.locator(".arrivals li")).toHaveCount(1);
  await expect(fileRow.locator(".arrivals li")).toContainText("report.pdf · 9 B · complete · from ");
  await expect(folderRow.getByRole("button", { name: "Downloads share of Trip/" })).toHaveAttribute("aria-expanded", "false");
  await folderRow.getByRole("button", { name: "Downloads share of Trip/" }).click();
  await expect(folderRow.locator(".arrivals li")).toHaveText(["No downloads yet."]);

  // Copy gives the link.
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: stack.url });
  await fileRow.getByRole("button", { name: "Copy share of report.pdf" }).click();
  expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(limited.url);

  // Edit: a refused limit beside its field, kept as typed; then a good one.
  await fileRow.getByRole("button", { name: "Edit share of report.pdf" }).click();
  const max = fileRow.getByLabel("Max downloads", { exact: true });
  await expect(max).toHaveValue("3");
  await max.fill("2000000000");
  await fileRow.getByRole("button", { name: "Save" }).click();
  await expect(max).toHaveAttribute("aria-invalid", "true");
  await expect(page.locator(`#${await max.getAttribute("aria-describedby")}`)).toContainText("max_downloads: a whole number from 1 to 1000000000");
  await expect(max).toHaveValue("2000000000");
  await max.fill("5");
  await fileRow.getByRole("button", { name: "Save" }).click();
  await expect(fileRow.locator("td[data-label=Downloads]")).toHaveText("1 of 5");
  await expect(fileRow.getByLabel("Max downloads", { exact: true })).toHaveCount(0);
  const listed = await apiInPage<{ shares: ShareJson[] }>(page, "GET", "/v1/shares");
  expect(listed.shares.find((s) => s.id === limited.id)?.max_downloads).toBe(5);
  // The password taken away: the marker goes, and the folder's page opens without it.
  await folderRow.getByRole("button", { name: "Edit share of Trip/" }).click();
  await folderRow.getByLabel("Password", { exact: true }).selectOption("remove");
  await folderRow.getByRole("button", { name: "Save" }).click();
  await expect(folderRow.locator(".badge")).toHaveCount(0);
  expect((await fetch(locked.url, { headers: { accept: "text/html" } })).status).toBe(200);

  await everyScreen(page, "section-shares", async () => {
    await page.goto(`${stack.url}/shares`);
    await expect(rows).toHaveCount(2);
    await expect(fileRow.locator(".list-name")).toHaveText("report.pdf");
  });

  // Revoke: the row goes, the link answers 410.
  await page.setViewportSize(SIZES.wide);
  page.once("dialog", (d) => d.accept());
  await fileRow.getByRole("button", { name: "Revoke share of report.pdf" }).click();
  await expect(rows).toHaveCount(1);
  expect((await fetch(limited.url)).status).toBe(410);
  expect(errors.filter((e) => !e.includes("status of 400 (Bad Request)"))).toEqual([]);
  expect(foreign).toEqual([]);
});

type AdminUser = { id: string; email: string; quota_bytes: number | null; quota_source: string; disabled: boolean; admin: boolean };

test("an administrator's Users section: a quota with units and back to the default, disabling, promoting, a refusal beside its box", async ({ page }) => {
  const { errors, foreign } = watchPage(page, stack);
  const patKey = cli("keys", "create", "--email", "pat@example.com");
  cli("keys", "create", "--email", "quinn@example.com");
  await signIn(page, stack, "root");
  await expect(nav(page).getByRole("link", { name: "Admin" })).toBeVisible();
  await openSection(page, "Admin");
  await expect(page).toHaveURL(`${stack.url}/admin`);
  await expectShown(page, "Admin", "Users");
  const users = async () => new Map((await apiInPage<{ users: AdminUser[] }>(page, "GET", "/v1/admin/users")).users.map((u) => [u.email, u]));
  const pat = page.locator("#users tbody tr").filter({ hasText: "pat@example.com" });
  await expect(pat.locator("td.quota .muted")).toHaveText("the default: 1.0 GiB");
  const quota = pat.getByLabel("Quota of pat@example.com", { exact: true });
  await expect(quota).toHaveValue("");

  // Units: 5G, then 500MiB by Enter; the field shows what is saved.
  await quota.fill("5G");
  await pat.getByRole("button", { name: "Set quota of pat@example.com" }).click();
  await expect(pat.locator("td.quota .muted")).toHaveText("5.0 GiB, set for them");
  await expect(quota).toHaveValue("5 GiB");
  expect((await users()).get("pat@example.com")).toMatchObject({ quota_bytes: 5 * GIB, quota_source: "own" });
  await quota.fill("500MiB");
  await quota.press("Enter");
  await expect(pat.locator("td.quota .muted")).toHaveText("500 MiB, set for them");
  expect((await users()).get("pat@example.com")).toMatchObject({ quota_bytes: 500 * 1024 ** 2, quota_source: "own" });

  // Not a size: said beside the field, which keeps it; nothing changed.
  await quota.fill("lots");
  await quota.press("Enter");
  await expect(quota).toHaveAttribute("aria-invalid", "true");
  await expect(page.locator(`#${await quota.getAttribute("aria-describedby")}`)).toContainText('"lots" is not a size');
  await expect(quota).toHaveValue("lots");
  expect((await users()).get("pat@example.com")?.quota_bytes).toBe(500 * 1024 ** 2);

  // Empty: the default again.
  await quota.fill("");
  await quota.press("Enter");
  await expect(pat.locator("td.quota .muted")).toHaveText("the default: 1.0 GiB");
  await expect(quota).not.toHaveAttribute("aria-invalid", "true");
  expect((await users()).get("pat@example.com")).toMatchObject({ quota_bytes: GIB, quota_source: "default" });

  // Disabled: the badge, and pat's key stops working; enabled again, it works.
  const asPat = () => fetch(`${stack.url}/v1/files`, { headers: { authorization: `Bearer ${patKey}` } }).then((r) => r.status);
  expect(await asPat()).toBe(200);
  await pat.getByLabel("Disabled: pat@example.com").click();
  await expect(pat.locator(".badge.dead")).toHaveText("disabled");
  expect((await users()).get("pat@example.com")?.disabled).toBe(true);
  await expect.poll(asPat).not.toBe(200);
  await pat.getByLabel("Disabled: pat@example.com").click();
  await expect(pat.locator(".badge.dead")).toHaveCount(0);
  await expect.poll(asPat).toBe(200);

  // Administrator.
  await pat.getByLabel("Administrator: pat@example.com").click();
  await expect(pat.locator(".badge:not(.dead)")).toHaveText("admin");
  expect((await users()).get("pat@example.com")?.admin).toBe(true);

  await everyScreen(page, "section-admin", async () => {
    await page.goto(`${stack.url}/admin`);
    await expect(pat.locator(".badge:not(.dead)")).toHaveText("admin");
  });

  // The server's refusal (quinn was deleted meanwhile) beside the box, which goes back.
  await page.setViewportSize(SIZES.wide);
  cli("users", "delete", "quinn@example.com", "--yes");
  const quinn = page.locator("#users tbody tr").filter({ hasText: "quinn@example.com" });
  const box = quinn.getByLabel("Disabled: quinn@example.com");
  await box.click();
  await expect(box).toHaveAttribute("aria-invalid", "true");
  await expect(page.locator(`#${await box.getAttribute("aria-describedby")}`)).toHaveText("Not changed: no such user");
  await expect(box).not.toBeChecked();
  expect(errors.filter((e) => !e.includes("status of 404 (Not Found)"))).toEqual([]);
  expect(foreign).toEqual([]);
});
