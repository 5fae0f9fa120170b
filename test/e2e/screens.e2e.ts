// Every page people see today (the dashboard signed in, signed out and without a provider, a
// login link's page, the guest upload page and its error page), in Chromium at 1280 × 800 and 390 × 844, light and dark
// (CONTRACT §11 "The dashboard on any screen"): no sideways scrolling of the page or of any row's
// actions, axe-core finds no serious or critical violation, 44 px tap targets on a phone. At
// 390 px every action of a file row is used; a refused slug, download limit or link name shows
// its reason beside its field; a used-up and an expired share are marked and offer no Copy or QR
// code; a revoked upload link keeps its received files listed; uploads show speed and time left;
// the guest page shows the link's limits; every error page a recipient or a guest meets (404, 410,
// 429 of shares, folders and upload links) says what happened in a sentence, offers their way back
// (not the dashboard) and has the same header. Screenshots: test-results/screenshots/screens-*.png.
import { expect, test, type Page } from "@playwright/test";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { apiInPage, buildBinary, checkPage, everyScreen, mintLoginLink, openSection, SCHEMES, SCREENSHOTS, signIn, SIZES, startStack, watchPage, type Size, type Stack } from "./fixtures.ts";

test.describe.configure({ mode: "serial" });

let binary: string;
let stack: Stack;
let plain: Stack;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  binary = buildBinary();
  stack = await startStack(binary, true);
  plain = await startStack(binary, false);
});
test.afterAll(async () => {
  await Promise.all([stack?.stop(), plain?.stop()]);
});

/** Uploads `content` as `name` from inside the signed-in page. */
async function uploadInPage(page: Page, name: string, type: string, base64: string): Promise<{ id: string; url: string }> {
  return page.evaluate(
    async ([name, type, base64]) => {
      const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      const res = await fetch(`/v1/files?name=${encodeURIComponent(name)}&visibility=public`, { method: "POST", headers: { "content-type": type }, body: bytes });
      if (res.status !== 200) throw new Error(`upload ${name}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string; url: string };
    },
    [name, type, base64] as const,
  );
}

const LONG_NAME = "quarterly-report-final-final-v3-with-all-the-appendices-and-scans-2026.pdf";
const SPACED_NAME = "Holiday photos from the long trip to the mountains in September.png";

test("signed out: every screen, with the icon", async ({ page }) => {
  const { errors, foreign } = watchPage(page, stack);
  await everyScreen(page, "signed-out", async () => {
    await page.goto(stack.url);
    await expect(page.getByRole("link", { name: "Sign in" })).toBeVisible();
    await expect(page.locator("link[rel=icon]")).toHaveAttribute("href", "/assets/icon.svg");
    await expect(page.locator("header .brand img")).toHaveAttribute("src", "/assets/icon.svg");
  });
  const icon = await fetch(`${stack.url}/assets/icon.svg`);
  expect([icon.status, icon.headers.get("content-type"), (await icon.text()).startsWith("<svg")]).toEqual([200, "image/svg+xml", true]);
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

test("without a provider: every screen", async ({ page }) => {
  const { errors, foreign } = watchPage(page, plain);
  await everyScreen(page, "not-configured", async () => {
    await page.goto(plain.url);
    await expect(page.getByRole("heading", { name: "Sign in with a link" })).toBeVisible();
  });
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

test("a login link's page (who it signs in, one Sign in button) on every screen; opening it uses nothing up", async ({ page }) => {
  const { errors, foreign } = watchPage(page, plain);
  const email = "a.person.with.a.rather-long-address@subdomain.example.com";
  const link = mintLoginLink(binary, plain, email);
  await everyScreen(page, "login-link", async () => {
    await page.goto(link);
    await expect(page.getByText(email)).toBeVisible();
    await expect(page.getByRole("button", { name: "Sign in" })).toBeVisible();
  });
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${plain.url}/`);
  await expect(page.locator("#account-email")).toHaveText(email);
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

test("the signed-in dashboard on every screen: cards on a phone, dead shares marked, revoked links' files listed", async ({ page }) => {
  const { errors, foreign } = watchPage(page, stack);
  await page.setViewportSize(SIZES.phone);
  await signIn(page, stack, "alice");
  const png = fs.readFileSync("/usr/share/pixmaps/debian-logo.png").toString("base64");
  const report = await uploadInPage(page, LONG_NAME, "application/pdf", Buffer.from("%PDF-1.4\n").toString("base64"));
  await uploadInPage(page, SPACED_NAME, "image/png", png);
  await uploadInPage(page, "notes.txt", "text/plain", Buffer.from("notes\n").toString("base64"));

  // Shares: one working, one used up (its one download done), one expired (a 1 s TTL).
  await apiInPage(page, "POST", `/v1/files/${report.id}/shares`, {});
  const once = await apiInPage<{ url: string }>(page, "POST", `/v1/files/${report.id}/shares`, { max_downloads: 1 });
  expect((await fetch(once.url)).status).toBe(200);
  await apiInPage(page, "POST", `/v1/files/${report.id}/shares`, { ttl: "1s" });

  // An upload link that received a file and was then revoked, and one still open.
  const link = await apiInPage<{ id: string; url: string }>(page, "POST", "/v1/upload-links", { name: "Scans from the accountant", max_files: 5 });
  expect((await fetch(`${link.url}?name=scan-001.pdf`, { method: "POST", body: "%PDF-1.4\n", headers: { "content-type": "application/pdf" } })).status).toBe(200);
  await apiInPage(page, "DELETE", `/v1/upload-links/${link.id}`);
  await apiInPage(page, "POST", "/v1/upload-links", { name: "Holiday photos", ttl: "7d" });
  await apiInPage(page, "POST", "/auth/keys", { name: "backup script", scopes: ["files.read"] });

  await everyScreen(page, "dashboard", async () => {
    await page.goto(stack.url);
    await expect(page.locator("#files tbody tr")).toHaveCount(4); // three, and the one from the link
  });
  await page.setViewportSize(SIZES.phone);
  await page.locator("#files").screenshot({ path: path.join(SCREENSHOTS, "screens-dashboard-files-phone-dark.png") });
  await everyScreen(page, "upload-links", async () => {
    await page.goto(`${stack.url}/links`);
    await expect(page.locator("#links tbody tr")).toHaveCount(2);
  });

  // The revoked link stays, marked, with its received file listed; it offers no Copy or Revoke.
  await page.setViewportSize(SIZES.phone);
  const revoked = page.locator("#links tbody tr").filter({ hasText: "Scans from the accountant" });
  await expect(revoked).toHaveAttribute("data-state", "revoked");
  await expect(revoked.locator(".badge")).toHaveText("revoked");
  await expect(revoked.getByRole("button")).toHaveText(["Show files"]);
  await revoked.getByRole("button", { name: "Show files of upload link Scans from the accountant" }).click();
  await expect(revoked.getByRole("link", { name: "scan-001.pdf" })).toBeVisible();
  await openSection(page, "Files");

  // The share dialog: the working link offers Copy and QR; the used-up and expired ones are marked and do not.
  for (const scheme of SCHEMES) {
    for (const size of Object.keys(SIZES) as Size[]) {
      await page.setViewportSize(SIZES[size]);
      await page.emulateMedia({ colorScheme: scheme });
      await page.getByRole("button", { name: `Share ${LONG_NAME}` }).click();
      const cards = page.locator("#shares li");
      await expect(cards).toHaveCount(3);
      await checkPage(page, "share-dialog", size, scheme);
      await page.getByRole("button", { name: "Close" }).click();
    }
  }
  await page.getByRole("button", { name: `Share ${LONG_NAME}` }).click();
  const usedUp = page.locator('#shares li[data-state="used up"]');
  await expect(usedUp.locator(".badge")).toHaveText("used up");
  await expect(usedUp).toContainText("1 of 1 downloads");
  const expired = page.locator('#shares li[data-state="expired"]');
  await expect(expired.locator(".badge")).toHaveText("expired");
  for (const dead of [usedUp, expired]) {
    await expect(dead.getByRole("button", { name: "Copy share link" })).toHaveCount(0);
    await expect(dead.getByRole("button", { name: "Show QR code" })).toHaveCount(0);
    await expect(dead.getByRole("button", { name: "Revoke share link" })).toBeVisible();
  }
  const working = page.locator("#shares li:not([data-state])");
  await expect(working.getByRole("button", { name: "Copy share link" })).toBeVisible();
  await expect(working.getByRole("button", { name: "Show QR code" })).toBeVisible();
  await page.getByRole("button", { name: "Close" }).click();
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

test("a folder on every screen: breadcrumbs and Share folder, its sub-folders above its files, the Move to… dialog, the folder's share dialog", async ({ page }) => {
  const { errors, foreign } = watchPage(page, stack);
  await signIn(page, stack, "erin");
  type Folder = { id: string };
  const outer = await apiInPage<Folder>(page, "POST", "/v1/folders", { name: "Clients and their long-running projects" });
  const inner = await apiInPage<Folder>(page, "POST", "/v1/folders", { name: "Acme Corporation — quarterly reports 2026", parent_id: outer.id });
  await apiInPage(page, "POST", "/v1/folders", { name: "Drafts", parent_id: inner.id });
  await apiInPage(page, "POST", "/v1/folders", { name: "Invoices", parent_id: inner.id });
  const png = fs.readFileSync("/usr/share/pixmaps/debian-logo.png").toString("base64");
  for (const [name, type, body] of [
    [LONG_NAME, "application/pdf", Buffer.from("%PDF-1.4\n").toString("base64")],
    [SPACED_NAME, "image/png", png],
  ] as const) {
    const file = await uploadInPage(page, name, type, body);
    await apiInPage(page, "PUT", `/v1/folders/${inner.id}/files/${file.id}`);
  }
  await everyScreen(page, "folder", async () => {
    await page.goto(`${stack.url}/?folder=${inner.id}`);
    await expect(page.getByRole("navigation", { name: "Folder path" }).getByRole("link")).toHaveCount(3);
    await expect(page.locator("#folders tbody tr")).toHaveCount(2);
    await expect(page.locator("#files tbody tr")).toHaveCount(2);
  });
  for (const scheme of SCHEMES) {
    for (const size of Object.keys(SIZES) as Size[]) {
      await page.setViewportSize(SIZES[size]);
      await page.emulateMedia({ colorScheme: scheme });
      await page.getByRole("button", { name: `Move to… ${LONG_NAME}` }).click();
      await expect(page.getByRole("dialog").getByRole("radio")).toHaveCount(5);
      await checkPage(page, "move-dialog", size, scheme);
      await page.getByRole("button", { name: "Cancel" }).click();
    }
  }

  // The folder's share dialog (the file's, given the folder): one working link with a password, one used up.
  await apiInPage(page, "POST", `/v1/folders/${inner.id}/shares`, { ttl: "7d", password: "open sesame" });
  const once = await apiInPage<{ url: string }>(page, "POST", `/v1/folders/${inner.id}/shares`, { max_downloads: 1 });
  const zip = await fetch(`${once.url}?download=zip`);
  expect(zip.status).toBe(200);
  await zip.arrayBuffer();
  for (const scheme of SCHEMES) {
    for (const size of Object.keys(SIZES) as Size[]) {
      await page.setViewportSize(SIZES[size]);
      await page.emulateMedia({ colorScheme: scheme });
      await page.getByRole("button", { name: "Share folder Acme Corporation — quarterly reports 2026" }).click();
      const dialog = page.getByRole("dialog", { name: "Share links of folder Acme Corporation — quarterly reports 2026" });
      await expect(dialog.locator("#shares li")).toHaveCount(2);
      await expect(dialog.locator('#shares li[data-state="used up"]')).toContainText("1 of 1 downloads");
      await checkPage(page, "folder-share-dialog", size, scheme);
      await dialog.getByRole("button", { name: "Close" }).click();
    }
  }
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

test("at 390 px every action of a file row works, and a refused slug is explained beside its field", async ({ page, context }) => {
  const { errors } = watchPage(page, stack);
  await page.setViewportSize(SIZES.phone);
  await signIn(page, stack, "bob");
  const file = await uploadInPage(page, "notes.txt", "text/plain", Buffer.from("phone notes\n").toString("base64"));
  await page.reload();
  const row = page.locator(`#files tr[data-id="${file.id}"]`);
  await expect(row).toBeVisible();
  // A card: the name (with type and size) on its own line, visibility and expiry on the next, the actions below, all inside the screen.
  const box = async (name: string) => (await row.locator(`td.${name}`).boundingBox())!;
  await expect(row.locator("td.name")).toContainText("text/plain · 12 B");
  expect((await box("visibility")).y).toBeGreaterThanOrEqual((await box("name")).y + (await box("name")).height);
  expect(Math.abs((await box("visibility")).y - (await box("expires")).y)).toBeLessThan(2);
  expect((await box("actions")).y).toBeGreaterThanOrEqual((await box("expires")).y + (await box("expires")).height);
  expect((await box("actions")).x + (await box("actions")).width).toBeLessThanOrEqual(390);

  // Copy link.
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: stack.url });
  await row.getByRole("button", { name: "Copy link of notes.txt" }).click();
  expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(file.url);

  // Visibility and expiry.
  await row.getByLabel("Visibility of notes.txt").selectOption("private");
  await expect.poll(async () => (await fetch(file.url, { redirect: "manual" })).status).not.toBe(200);
  await page.locator(`#files tr[data-id="${file.id}"]`).getByLabel("Expiry of notes.txt").selectOption("1d");
  await expect(row.locator(".expires-at")).not.toHaveText(/never|…/);

  // A refused slug: the reason beside the field, which keeps what was typed, marked invalid; Esc puts the saved one back.
  const slug = row.getByLabel("Slug of notes.txt", { exact: true });
  await slug.fill("no spaces allowed");
  await row.getByRole("button", { name: "Set slug of notes.txt" }).click();
  await expect(slug).toHaveAttribute("aria-invalid", "true");
  const note = page.locator(`#${await slug.getAttribute("aria-describedby")}`);
  await expect(note).toContainText("slug: only A-Z a-z 0-9 . _ ~ - are allowed");
  await expect(note).toContainText("the file still has no slug");
  await expect(slug).toHaveValue("no spaces allowed");
  const [fieldBox, noteBox] = [(await slug.boundingBox())!, (await note.boundingBox())!];
  expect(noteBox.y - (fieldBox.y + fieldBox.height)).toBeLessThan(60); // right under the field, not a banner far away
  await expect(page.locator("#error")).toBeHidden();
  for (const scheme of SCHEMES) {
    await page.emulateMedia({ colorScheme: scheme });
    await checkPage(page, "slug-error", "phone", scheme);
  }
  await slug.press("Escape");
  await expect(slug).toHaveValue("");
  await expect(slug).not.toHaveAttribute("aria-invalid", "true");
  await expect(note).toHaveCount(0);
  await slug.fill("phone-notes");
  await row.getByRole("button", { name: "Set slug of notes.txt" }).click();
  await expect(page.locator(`#files tr[data-id="${file.id}"]`).getByRole("link", { name: "notes.txt" })).toHaveAttribute("href", `${file.url}/phone-notes`);

  // Share: the dialog opens; a refused download limit is explained beside its field, in the dialog; a link is made.
  await page.getByRole("button", { name: "Share notes.txt" }).click();
  const max = page.locator("#share-max");
  await max.fill("2000000000");
  await page.getByRole("button", { name: "Create share link" }).click();
  await expect(max).toHaveAttribute("aria-invalid", "true");
  await expect(page.locator(`#share-dialog #${await max.getAttribute("aria-describedby")}`)).toContainText("max_downloads: a whole number from 1 to 1000000000");
  await expect(max).toHaveValue("2000000000");
  await expect(page.locator("#shares li")).toHaveCount(0);
  await max.fill("3");
  await page.getByRole("button", { name: "Create share link" }).click();
  await expect(page.locator("#shares li")).toHaveCount(1);
  await expect(max).not.toHaveAttribute("aria-invalid", "true");
  await page.getByRole("button", { name: "Close" }).click();

  // A refused upload link name is explained beside its field.
  await openSection(page, "Upload links");
  await page.locator("#link-name").fill("a/b");
  await page.getByRole("button", { name: "Create upload link" }).click();
  await expect(page.locator("#link-name")).toHaveAttribute("aria-invalid", "true");
  await expect(page.locator(`#${await page.locator("#link-name").getAttribute("aria-describedby")}`)).toContainText('name: "/" and control characters are not allowed');

  // Delete.
  await openSection(page, "Files");
  page.once("dialog", (d) => d.accept());
  await page.locator(`#files tr[data-id="${file.id}"]`).getByRole("button", { name: "Delete notes.txt" }).click();
  await expect(page.locator(`#files tr[data-id="${file.id}"]`)).toHaveCount(0);
  expect((await fetch(file.url)).status).toBe(404);
  // The three refusals above are the browser's only complaints.
  expect(errors.filter((e) => !e.includes("status of 400 (Bad Request)"))).toEqual([]);
});

test("uploads show speed and time left, on the dashboard", async ({ page, context }) => {
  await page.setViewportSize(SIZES.phone);
  await signIn(page, stack, "dana");
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 512 * 1024 });
  try {
    await page.locator("#file-input").setInputFiles({ name: "big.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(6 * 1024 * 1024, "cubby ") });
    const status = page.locator("#uploads li").filter({ hasText: "big.bin" }).locator(".upload-status");
    await expect(status).toHaveText(/^[\d.]+ (B|KiB|MiB) of 6\.0 MiB · [\d.]+ (KiB|MiB)\/s · (\d+ s|\d+ min( \d+ s)?) left$/, { timeout: 15_000 });
    await page.screenshot({ path: path.join(SCREENSHOTS, "screens-dashboard-uploading-phone.png") });
  } finally {
    await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  }
  await expect(page.locator("#files tbody tr").filter({ hasText: "big.bin" })).toHaveCount(1, { timeout: 30_000 });
});

test("the guest upload page: the link's limits, speed and time left, and its error page, on every screen", async ({ page, context }) => {
  const minted = spawnSync(binary, ["keys", "create", "--email", "owner@example.com", "--data-dir", plain.dataDir], { encoding: "utf8" });
  if (minted.status !== 0) throw new Error(`keys create: ${minted.stderr}`);
  const key = minted.stdout.trim();
  const makeLink = async (body: Record<string, unknown>) => {
    const res = await fetch(`${plain.url}/v1/upload-links`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    return (await res.json()) as { id: string; url: string; expire_time: string };
  };
  const link = await makeLink({ name: "Tax documents for the year 2026 from the accountant", max_files: 3, max_bytes: 20 * 1024 * 1024, ttl: "7d" });
  const { errors, foreign } = watchPage(page, plain);

  await everyScreen(page, "guest-upload", async () => {
    await page.goto(link.url);
    const limits = page.getByRole("list", { name: "What this link takes" });
    await expect(limits).toContainText("Files left: 3 of 3");
    await expect(limits).toContainText("Largest file: 20 MiB (of 20 MiB in all)");
    await expect(limits.locator("time")).toHaveAttribute("datetime", link.expire_time);
    // Shown in the guest's own time zone, the zone named (the server wrote "2026-12-06 07:24 UTC").
    await expect(limits.locator("time")).not.toHaveText(`${link.expire_time.slice(0, 16).replace("T", " ")} UTC`);
    await expect(limits.locator("time")).toHaveText(/ (UTC|GMT[+-]?[\d:]*|[A-Z]{3,5})$/);
  });

  // An upload shows speed and time left, and the files left count down when it arrives.
  await page.setViewportSize(SIZES.phone);
  await page.goto(link.url);
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 512 * 1024 });
  try {
    await page.locator("#file-input").setInputFiles({ name: "scan.pdf", mimeType: "application/pdf", buffer: Buffer.alloc(4 * 1024 * 1024, "%PDF ") });
    const status = page.locator("#uploads li .upload-status");
    await expect(status).toHaveText(/ of 4\.0 MiB · [\d.]+ (KiB|MiB)\/s · (\d+ s|\d+ min( \d+ s)?) left$/, { timeout: 15_000 });
    for (const scheme of SCHEMES) {
      await page.emulateMedia({ colorScheme: scheme });
      await checkPage(page, "guest-uploading", "phone", scheme);
    }
  } finally {
    await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  }
  await expect(page.locator("#uploads li")).toHaveAttribute("data-state", "done", { timeout: 30_000 });
  await expect(page.locator("#files-left")).toHaveText("2");

  // The error pages: a revoked link and an unknown one.
  const gone = await makeLink({ name: "old" });
  await fetch(`${plain.url}/v1/upload-links/${gone.id}`, { method: "DELETE", headers: { authorization: `Bearer ${key}` } });
  await everyScreen(page, "guest-error", async () => {
    const res = await page.goto(gone.url);
    expect(res?.status()).toBe(410);
    await expect(page.getByRole("heading", { name: "This link no longer takes uploads" })).toBeVisible();
  });
  const unknown = await page.goto(`${plain.url}/u/${"x".repeat(32)}`);
  expect(unknown?.status()).toBe(404);
  expect(errors.filter((e) => !e.includes("status of 410") && !e.includes("status of 404"))).toEqual([]);
  expect(foreign).toEqual([]);
});

/** Runs in the page: half a second of a canvas recorded by MediaRecorder (WebM), as base64. */
async function recordWebm(): Promise<string> {
  const doc = (globalThis as any).document;
  const canvas = doc.createElement("canvas");
  canvas.width = 160;
  canvas.height = 120;
  const g = canvas.getContext("2d");
  const recorder = new (globalThis as any).MediaRecorder(canvas.captureStream(25), { mimeType: "video/webm" });
  const chunks: any[] = [];
  recorder.ondataavailable = (e: any) => chunks.push(e.data);
  const stopped = new Promise((resolve) => (recorder.onstop = resolve));
  recorder.start();
  for (let frame = 0; frame < 12; frame++) {
    g.fillStyle = `hsl(${frame * 30}, 80%, 50%)`;
    g.fillRect(0, 0, 160, 120);
    await new Promise((r) => setTimeout(r, 40));
  }
  recorder.stop();
  await stopped;
  const bytes = new Uint8Array(await new (globalThis as any).Blob(chunks).arrayBuffer());
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return (globalThis as any).btoa(binary);
}

test("the share page: preview and Download of an image, a PDF and a video; the password form and error pages; every screen", async ({ page }) => {
  // Seven pages on four screens each, with media: about a minute on this 2-core machine.
  test.setTimeout(150_000);
  const minted = spawnSync(binary, ["keys", "create", "--email", "sharer@example.com", "--data-dir", plain.dataDir], { encoding: "utf8" });
  if (minted.status !== 0) throw new Error(`keys create: ${minted.stderr}`);
  const key = minted.stdout.trim();
  const api = async <T>(pathAndQuery: string, init: RequestInit = {}): Promise<T> => {
    const res = await fetch(`${plain.url}${pathAndQuery}`, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } });
    if (res.status !== 200) throw new Error(`${pathAndQuery}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const upload = (name: string, type: string, body: Uint8Array) => api<{ id: string }>(`/v1/files?name=${encodeURIComponent(name)}&visibility=private`, { method: "POST", headers: { "content-type": type }, body });
  const share = (id: string, body: Record<string, unknown> = {}) =>
    api<{ id: string; url: string; download_count: number }>(`/v1/files/${id}/shares`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const countOf = async (fileId: string, shareId: string) => (await api<{ shares: { id: string; download_count: number }[] }>(`/v1/files/${fileId}/shares`)).shares.find((s) => s.id === shareId)!.download_count;

  await page.goto(plain.url);
  const webm = Buffer.from(await page.evaluate(recordWebm), "base64");
  const png = fs.readFileSync("/usr/share/pixmaps/debian-logo.png");
  const pdf = fs.readFileSync("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf");
  const image = await upload(SPACED_NAME, "image/png", png);
  const paper = await upload("shared-mime-info-spec.pdf", "application/pdf", pdf);
  const clip = await upload("colours.webm", "video/webm", webm);
  const imageShare = await share(image.id, { ttl: "7d" });
  const paperShare = await share(paper.id);
  const clipShare = await share(clip.id);
  const { errors, foreign } = watchPage(page, plain);

  await everyScreen(page, "share-image", async () => {
    await page.goto(imageShare.url);
    await expect(page.getByRole("heading", { name: SPACED_NAME })).toBeVisible();
    await expect(page.locator(".facts div", { hasText: "Shared by" }).locator("dd")).toHaveText("sharer");
    await expect(page.locator(".facts")).not.toContainText("sharer@example.com");
    await expect.poll(() => page.locator(".preview-media").evaluate((img: any) => img.naturalWidth)).toBeGreaterThan(0);
  });
  // The Download button saves the file's bytes under its name.
  const [saved] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: /^Download/ }).click()]);
  expect(saved.suggestedFilename()).toBe(SPACED_NAME);
  expect(fs.readFileSync((await saved.path())!).equals(png)).toBe(true);

  await everyScreen(page, "share-pdf", async () => {
    const frame = page.waitForResponse((r) => r.url().endsWith("?download=0"));
    await page.goto(paperShare.url);
    const response = await frame;
    expect({ status: response.status(), type: response.headers()["content-type"] }).toEqual({ status: 200, type: "application/pdf" });
  });
  const [savedPdf] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: /^Download/ }).click()]);
  expect(fs.readFileSync((await savedPdf.path())!).equals(pdf)).toBe(true);

  await everyScreen(page, "share-video", async () => {
    await page.goto(clipShare.url);
    // HAVE_METADATA or more: the player read the WebM through the share link.
    await expect.poll(() => page.locator("video").evaluate((v: any) => v.readyState)).toBeGreaterThanOrEqual(1);
  });
  const [savedClip] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: /^Download/ }).click()]);
  expect(fs.readFileSync((await savedClip.path())!).equals(webm)).toBe(true);

  // The password form, without the file's name; the right password opens the page.
  const locked = await share(image.id, { password: "open sesame" });
  await everyScreen(page, "share-password", async () => {
    await page.goto(locked.url);
    await expect(page.getByRole("heading", { name: "Password needed" })).toBeVisible();
    expect(await page.content()).not.toContain("Holiday photos");
  });
  await page.getByLabel("Password").fill("open sesame");
  await page.getByRole("button", { name: "Open" }).click();
  await expect(page.getByRole("heading", { name: SPACED_NAME })).toBeVisible();

  // Error pages: a used-up share (410), an unknown path (404), with the same status a program gets.
  const usedUp = await share(paper.id, { max_downloads: 1 });
  expect((await fetch(usedUp.url)).status).toBe(200);
  await everyScreen(page, "error-410", async () => {
    const response = await page.goto(usedUp.url);
    expect(response?.status()).toBe(410);
    await expect(page.getByRole("heading", { name: "This link no longer works" })).toBeVisible();
    await expect(page.getByText("This share link has reached its download limit.")).toBeVisible();
    // A recipient has no dashboard here: the way back is whoever sent the link.
    await expect(page.getByText("ask whoever sent you the link for a new one")).toBeVisible();
    await expect(page.getByRole("link", { name: "Back to cubby" })).toHaveCount(0);
  });
  await everyScreen(page, "error-404", async () => {
    const response = await page.goto(`${plain.url}/no/such/page`);
    expect(response?.status()).toBe(404);
    await expect(page.getByRole("link", { name: "Back to cubby" })).toBeVisible();
  });
  // The password form's 401 and the error pages' own statuses are what the browser was meant to get.
  expect(errors.filter((e) => !/status of (401|404|410) .* at (\S+) on \2$/.test(e))).toEqual([]);
  expect(foreign).toEqual([]);
  expect(await countOf(image.id, imageShare.id)).toBeGreaterThan(0);
});

/**
 * What every error page a recipient or a guest meets shows (CONTRACT §15): its status, its title,
 * the sentence a person reads, their way back (whoever sent the link: never the admin dashboard),
 * under the header every page for people has.
 */
async function expectRecipientError(page: Page, status: number, got: number | undefined, title: string, said: string | RegExp): Promise<void> {
  expect(got).toBe(status);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(title);
  await expect(page.locator("main [role=alert]")).toHaveText(said);
  await expect(page.getByText("ask whoever sent you the link for a new one")).toBeVisible();
  await expect(page.getByRole("link", { name: "Back to cubby" })).toHaveCount(0);
  await expect(page.locator('a[href="/"]')).toHaveCount(0);
  await expect(page.locator("header.bar .brand")).toHaveText("cubby");
  await expect(page.locator("header.bar .brand img")).toHaveAttribute("src", "/assets/icon.svg");
}

test("every error page a recipient or a guest can meet, on every screen: a sentence a person reads, the way back theirs, the same header", async ({ page }) => {
  test.setTimeout(150_000);
  const minted = spawnSync(binary, ["keys", "create", "--email", "errors@example.com", "--data-dir", plain.dataDir], { encoding: "utf8" });
  if (minted.status !== 0) throw new Error(`keys create: ${minted.stderr}`);
  const key = minted.stdout.trim();
  const api = async <T>(method: string, pathAndQuery: string, body?: unknown): Promise<T> => {
    const init: RequestInit = { method, headers: { authorization: `Bearer ${key}` } };
    if (typeof body === "string") Object.assign(init, { body, headers: { authorization: `Bearer ${key}`, "content-type": "text/plain" } });
    else if (body !== undefined) Object.assign(init, { body: JSON.stringify(body), headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });
    const res = await fetch(`${plain.url}${pathAndQuery}`, init);
    if (res.status !== 200) throw new Error(`${method} ${pathAndQuery}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const upload = (name: string) => api<{ id: string }>("POST", `/v1/files?name=${name}&visibility=private`, `content of ${name}`);
  const { errors, foreign } = watchPage(page, plain);

  // An unknown share (404).
  await everyScreen(page, "recipient-error-unknown-share", async () => {
    const res = await page.goto(`${plain.url}/s/${"n".repeat(32)}`);
    await expectRecipientError(page, 404, res?.status(), "Nothing here", "No such share link. The link may be mistyped or cut short.");
  });

  // A revoked share (410).
  const report = await upload("report.pdf");
  const revoked = await api<{ id: string; url: string }>("POST", `/v1/files/${report.id}/shares`, {});
  await api("DELETE", `/v1/shares/${revoked.id}`);
  await everyScreen(page, "recipient-error-revoked", async () => {
    const res = await page.goto(revoked.url);
    await expectRecipientError(page, 410, res?.status(), "This link no longer works", "This share link was deleted.");
  });

  // A share of several items, all of them deleted since (410).
  const [one, two] = [await upload("one.txt"), await upload("two.txt")];
  const several = await api<{ url: string }>("POST", "/v1/shares", { items: [{ file_id: one.id }, { file_id: two.id }] });
  for (const f of [one, two]) await api("DELETE", `/v1/files/${f.id}`);
  await everyScreen(page, "recipient-error-items-deleted", async () => {
    const res = await page.goto(several.url);
    await expectRecipientError(page, 410, res?.status(), "This link no longer works", "Everything this link shared was deleted.");
  });

  // A folder the share does not hold, asked for through a folder's share (404).
  const shared = await api<{ id: string }>("POST", "/v1/folders", { name: "Shared photos" });
  const elsewhere = await api<{ id: string }>("POST", "/v1/folders", { name: "Private papers" });
  const folderShare = await api<{ url: string }>("POST", `/v1/folders/${shared.id}/shares`, {});
  await everyScreen(page, "recipient-error-folder-not-shared", async () => {
    const res = await page.goto(`${folderShare.url}?folder=${elsewhere.id}`);
    await expectRecipientError(page, 404, res?.status(), "Nothing here", "No such folder in this shared folder. The link may be mistyped or cut short.");
    await expect(page.locator("main")).not.toContainText("Private papers");
  });

  // An unknown guest upload link (404).
  await everyScreen(page, "guest-error-unknown", async () => {
    const res = await page.goto(`${plain.url}/u/${"x".repeat(32)}`);
    await expectRecipientError(page, 404, res?.status(), "This upload link does not work", "It may be mistyped, or its owner deleted it.");
  });
  expect(errors.filter((e) => !/status of (404|410) .* at (\S+) on \2$/.test(e))).toEqual([]);
  expect(foreign).toEqual([]);
});

test("a recipient who tries too many wrong passwords on a share's form gets a page saying how long to wait, on every screen (429)", async ({ page }) => {
  test.setTimeout(120_000);
  // A server of its own: the limit (2 wrong passwords a minute here) holds for every request from this address.
  const limited = await startStack(binary, false, { env: { RATE_LIMIT_AUTH_FAILURES: "2" } });
  try {
    const minted = spawnSync(binary, ["keys", "create", "--email", "limits@example.com", "--data-dir", limited.dataDir], { encoding: "utf8" });
    if (minted.status !== 0) throw new Error(`keys create: ${minted.stderr}`);
    const auth = { authorization: `Bearer ${minted.stdout.trim()}` };
    const file = (await (await fetch(`${limited.url}/v1/files?name=plans.pdf&visibility=private`, { method: "POST", headers: auth, body: "%PDF-1.4\n" })).json()) as { id: string };
    const s = (await (await fetch(`${limited.url}/v1/files/${file.id}/shares`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ password: "open sesame" }) })).json()) as { url: string };
    const { errors, foreign } = watchPage(page, limited);
    /** Sends a wrong password through the share's form, as a person does: the answer's status. */
    const wrongPassword = async () => {
      await page.goto(s.url);
      await page.getByLabel("Password").fill("not it");
      const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.getByRole("button", { name: "Open" }).click()]);
      await page.waitForLoadState();
      return answer.status();
    };
    // The first two are wrong passwords (the form again); from the third on the address waits.
    expect([await wrongPassword(), await wrongPassword()]).toEqual([401, 401]);
    await everyScreen(page, "recipient-error-429", async () => {
      const status = await wrongPassword();
      await expectRecipientError(page, 429, status, "Too many requests", /^Too many wrong passwords came from your address\. Wait \d+ seconds, then try again\.$/);
    });
    expect(errors.filter((e) => !/status of (401|429) .* at (\S+) on \2$/.test(e))).toEqual([]);
    expect(foreign).toEqual([]);
  } finally {
    await limited.stop();
  }
});

test("a signed-out recipient of a private file's link learns it needs a sign-in, not the server's configuration; every screen", async ({ page }) => {
  const minted = spawnSync(binary, ["keys", "create", "--email", "owner@example.com", "--data-dir", plain.dataDir], { encoding: "utf8" });
  if (minted.status !== 0) throw new Error(`keys create: ${minted.stderr}`);
  const res = await fetch(`${plain.url}/v1/files?name=secret.txt&visibility=private`, { method: "POST", headers: { authorization: `Bearer ${minted.stdout.trim()}` }, body: "secret" });
  const file = (await res.json()) as { url: string };
  const { errors, foreign } = watchPage(page, plain);
  await everyScreen(page, "recipient-sign-in", async () => {
    await page.goto(file.url);
    await expect(page.getByRole("heading", { name: "This file needs you to sign in" })).toBeVisible();
    await expect(page.locator("main")).not.toContainText("IDP_");
    await expect(page.getByRole("link", { name: "Back to cubby" })).toHaveCount(0);
  });
  expect(errors.filter((e) => !/status of 401 .* at (\S+) on \1$/.test(e))).toEqual([]);
  expect(foreign).toEqual([]);
});

test("a limited share stays exact with the page open in 10 tabs and 20 script downloads at once; its preview costs nothing until opened", async ({ context }) => {
  const minted = spawnSync(binary, ["keys", "create", "--email", "limits@example.com", "--data-dir", plain.dataDir], { encoding: "utf8" });
  const key = minted.stdout.trim();
  const auth = { authorization: `Bearer ${key}` };
  const png = fs.readFileSync("/usr/share/pixmaps/debian-logo.png");
  const file = (await (await fetch(`${plain.url}/v1/files?name=logo.png&visibility=private`, { method: "POST", headers: { ...auth, "content-type": "image/png" }, body: png })).json()) as { id: string };
  const s = (await (await fetch(`${plain.url}/v1/files/${file.id}/shares`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ max_downloads: 5 }) })).json()) as { id: string; url: string };
  const count = async () => ((await (await fetch(`${plain.url}/v1/files/${file.id}/shares`, { headers: auth })).json()) as { shares: { id: string; download_count: number }[] }).shares.find((x) => x.id === s.id)!.download_count;

  const tabs = await Promise.all(Array.from({ length: 10 }, () => context.newPage()));
  const [statuses] = await Promise.all([
    Promise.all(Array.from({ length: 20 }, async () => (await fetch(s.url)).status)),
    Promise.all(tabs.map((tab) => tab.goto(s.url))),
  ]);
  expect(statuses.filter((status) => status === 200).length).toBe(5);
  expect(statuses.filter((status) => status === 410).length).toBe(15);
  expect(await count()).toBe(5);
  for (const tab of tabs) await tab.close();

  // A fresh limited share: the page and its closed preview count nothing; opening the preview counts one.
  const fresh = (await (await fetch(`${plain.url}/v1/files/${file.id}/shares`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ max_downloads: 3 }) })).json()) as { id: string; url: string };
  const freshCount = async () => ((await (await fetch(`${plain.url}/v1/files/${file.id}/shares`, { headers: auth })).json()) as { shares: { id: string; download_count: number }[] }).shares.find((x) => x.id === fresh.id)!.download_count;
  const page = await context.newPage();
  await page.goto(fresh.url);
  await expect(page.locator(".facts")).toContainText("3 of 3");
  await page.waitForLoadState("networkidle");
  expect(await freshCount()).toBe(0);
  await page.getByText("Preview (opening it uses one download)").click();
  await expect.poll(() => page.locator(".preview-media").evaluate((img: any) => img.naturalWidth)).toBeGreaterThan(0);
  expect(await freshCount()).toBe(1);
});
