// The dashboard in Debian's Chromium against the compiled binary and a real OpenID provider:
// sign in, keys, uploads with progress, visibility, slug, open, delete, sign out; uploaded
// active content cannot run script in cubby's origin; PNG and PDF display inline.
// Any console error on a dashboard page fails the test. Screenshots: test-results/screenshots/.
import { AwsClient } from "aws4fetch";
import { expect, test, type Page } from "@playwright/test";
import fs from "node:fs";
import path from "node:path";
import { apiInPage, buildBinary, mintLoginLink, openSection, SCREENSHOTS, signIn as signInAs, startStack, watchPage, type Stack } from "./fixtures.ts";

test.describe.configure({ mode: "serial" });

let binary: string;
let stack: Stack;

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  binary = buildBinary();
  stack = await startStack(binary, true);
});
test.afterAll(() => stack?.stop());

/** Console errors of cubby's pages (see watchPage). */
const watchErrors = (page: Page) => watchPage(page, stack).errors;

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

async function signIn(page: Page, login: string) {
  await signInAs(page, stack, login);
  await expect(page.locator("#account-email")).toHaveText(`${login}@example.com`);
}

/** A DataTransfer in the page holding one text file, as a drag from the desktop carries it (for a `drop` event). */
function filesToDrop(page: Page, name: string, content: string) {
  return page.evaluateHandle(
    ([name, content]) => {
      // Runs in the page; the test's TypeScript has no DOM library.
      const w = globalThis as unknown as {
        DataTransfer: new () => { items: { add(f: unknown): void } };
        File: new (parts: string[], name: string, opts: { type: string }) => unknown;
      };
      const dt = new w.DataTransfer();
      dt.items.add(new w.File([content], name, { type: "text/plain" }));
      return dt;
    },
    [name, content] as const,
  );
}

test("without a provider: the dashboard says how to get a sign-in link, and the link from cubby login-link shows whom it signs in and signs in once with its button", async ({ page }) => {
  const plain = await startStack(binary, false);
  try {
    const errors = watchErrors(page);
    await page.goto(plain.url);
    await expect(page.getByRole("heading", { name: "Sign in with a link" })).toBeVisible();
    await expect(page.getByText("cubby login-link --email you@example.com")).toBeVisible();
    await shot(page, "01-not-configured");
    // The provider's and the API's instructions are one click away.
    await page.getByText("Sign in with Google, Authelia").click();
    await expect(page.locator("#redirect-uri")).toHaveText(`${plain.url}/auth/idp/callback`);
    await page.getByText("Use the API from a script").click();
    await expect(page.getByText("cubby keys create --email")).toBeVisible();

    // What the README's first sign-in does: the CLI on the server prints one URL.
    const link = mintLoginLink(binary, plain, "first@example.com");
    expect(link).toMatch(new RegExp(`^${plain.url}/auth/link/[A-Za-z0-9_-]{43}$`));
    // Opening it shows whom it signs in and one button; no request of the page says where it came from.
    const referers: string[] = [];
    page.on("request", (r) => {
      const referer = r.headers()["referer"];
      if (referer !== undefined && referer.includes("/auth/link/")) referers.push(`${r.url()} ← ${referer}`);
    });
    await page.goto(link);
    await expect(page.getByRole("heading", { name: "Sign in to cubby" })).toBeVisible();
    await expect(page.getByText("first@example.com")).toBeVisible();
    await expect(page.getByRole("button")).toHaveCount(1);
    await shot(page, "01a-login-link-page");
    // Opened again (as a chat preview would), it still works: opening uses nothing up.
    await page.reload();
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${plain.url}/`);
    await expect(page.locator("#account-email")).toHaveText("first@example.com");
    await shot(page, "01b-signed-in-by-link");
    expect(referers).toEqual([]);
    // Used once: opened again it is a page saying so, with the same 404.
    const again = await page.goto(link);
    expect(again?.status()).toBe(404);
    await expect(page.getByText("signs in once")).toBeVisible();
    expect(errors).toEqual([]);
  } finally {
    await plain.stop();
  }
});

test("sign in, mint a key and use it, revoke it, manage files, sign out", async ({ page, context }) => {
  const errors = watchErrors(page);
  await page.goto(stack.url);
  await expect(page.getByRole("link", { name: "Sign in" })).toBeVisible();
  await shot(page, "02-signed-out");
  await page.getByRole("link", { name: "Sign in" }).click();
  await page.locator("input[name=login]").fill("alice");
  await page.locator("input[name=password]").fill("any password");
  await shot(page, "03-provider-login");
  await page.locator("button[type=submit]").click();
  await page.locator("button[type=submit]").click();
  await page.waitForURL(`${stack.url}/`);
  await expect(page.locator("#account-email")).toHaveText("alice@example.com");
  await expect(page.locator("#files-empty")).toBeVisible();
  await shot(page, "04-signed-in-empty");

  // Keys: mint (shown once), use from the test, revoke.
  await openSection(page, "API keys");
  await page.locator("#key-name").fill("e2e script");
  await page.getByRole("button", { name: "Create key" }).click();
  const keyBox = page.getByLabel("New API key");
  await expect(keyBox).toHaveValue(/^cubby_[A-Za-z0-9_-]{43}$/);
  const key = await keyBox.inputValue();
  await expect(page.locator("#keys tbody tr")).toHaveCount(1);
  await shot(page, "05-key-minted");
  const withKey = () => fetch(`${stack.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } });
  expect((await withKey()).status).toBe(200);
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Revoke key e2e script" }).click();
  await expect(page.locator("#keys-empty")).toBeVisible();
  await expect(keyBox).toBeHidden();
  expect((await withKey()).status).toBe(401);

  // An S3 access key (CONTRACT §16): the two lines an env file takes, and a signed ListBuckets works.
  await page.locator("#key-name").fill("e2e s3");
  await page.locator("#key-kind").selectOption("s3");
  await page.getByRole("button", { name: "Create key" }).click();
  const s3Box = page.getByLabel("New S3 access key");
  await expect(s3Box).toHaveValue(/^AWS_ACCESS_KEY_ID=CUBBY[0-9A-Z]{16}\nAWS_SECRET_ACCESS_KEY=[0-9A-Za-z]{40}$/);
  const [, accessKeyId, secretAccessKey] = /^AWS_ACCESS_KEY_ID=(\S+)\nAWS_SECRET_ACCESS_KEY=(\S+)$/.exec(await s3Box.inputValue())!;
  await expect(page.locator("#keys tbody tr")).toContainText(`S3 ${accessKeyId}`);
  const s3 = new AwsClient({ accessKeyId: accessKeyId!, secretAccessKey: secretAccessKey!, service: "s3", region: "us-east-1" });
  const buckets = await s3.fetch(`${stack.url}/`);
  expect(buckets.status).toBe(200);
  expect(await buckets.text()).toContain("<ListAllMyBucketsResult");
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Revoke key e2e s3" }).click();
  await expect(page.locator("#keys-empty")).toBeVisible();

  // Upload through the file picker with a visible progress bar (upload throttled to see it move).
  await openSection(page, "Files");
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 1024 * 1024 });
  const content = Buffer.alloc(3 * 1024 * 1024, "cubby ");
  await page.locator("#file-input").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: content });
  const bar = page.getByLabel("Uploading notes.txt");
  await expect.poll(async () => Number(await bar.getAttribute("value").catch(() => "0")), { timeout: 10_000 }).toBeGreaterThan(0);
  await shot(page, "06-uploading");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  const row = page.locator("#files tbody tr").filter({ hasText: "notes.txt" });
  await expect(row).toHaveCount(1, { timeout: 15_000 });
  await expect(row).toContainText("3.0 MiB");
  await expect(page.getByRole("button", { name: "Load more" })).toBeHidden();
  const id = await row.getAttribute("data-id");

  // Visibility and slug.
  await page.getByLabel("Visibility of notes.txt").selectOption("public");
  await expect.poll(async () => (await fetch(`${stack.url}/${id}`)).status).toBe(200);
  await page.getByLabel("Slug of notes.txt", { exact: true }).fill("my-notes");
  await page.getByRole("button", { name: "Set slug of notes.txt" }).click();
  await expect(page.getByRole("link", { name: "notes.txt" })).toHaveAttribute("href", `${stack.url}/${id}/my-notes`);
  await shot(page, "07-file-public-with-slug");

  // Open the link.
  const [opened] = await Promise.all([context.waitForEvent("page"), page.getByRole("link", { name: "notes.txt" }).click()]);
  await opened.waitForLoadState();
  expect(opened.url()).toBe(`${stack.url}/${id}/my-notes`);
  expect((await opened.locator("body").innerText()).startsWith("cubby cubby")).toBe(true);
  await opened.close();

  // Delete.
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete notes.txt" }).click();
  await expect(row).toHaveCount(0);
  expect((await fetch(`${stack.url}/${id}`)).status).toBe(404);

  // Drag and drop.
  const dropped = await filesToDrop(page, "dropped.txt", "dropped content");
  await page.dispatchEvent("#drop", "drop", { dataTransfer: dropped });
  await expect(page.locator("#files tbody tr").filter({ hasText: "dropped.txt" })).toHaveCount(1);
  // Anywhere on the page, not only on the box; the page stays the dashboard.
  const droppedElsewhere = await filesToDrop(page, "anywhere.txt", "dropped on the heading");
  const dashboardUrl = page.url();
  await page.dispatchEvent("#files-title", "drop", { dataTransfer: droppedElsewhere });
  await expect(page.locator("#files tbody tr").filter({ hasText: "anywhere.txt" })).toHaveCount(1);
  expect(page.url()).toBe(dashboardUrl);

  // The upload box's visibility and expiry are remembered for the next visit.
  await page.locator("#upload-visibility").selectOption("public");
  await page.locator("#upload-expiry").selectOption("1d");
  await page.reload();
  await expect(page.locator("#upload-visibility")).toHaveValue("public");
  await expect(page.locator("#upload-expiry")).toHaveValue("1d");
  await page.locator("#file-input").setInputFiles({ name: "remembered.txt", mimeType: "text/plain", buffer: Buffer.from("remembered") });
  const rememberedRow = page.locator("#files tbody tr").filter({ hasText: "remembered.txt" });
  await expect(rememberedRow).toHaveCount(1);
  const remembered = await apiInPage<{ files: { id: string; name: string; visibility: string }[] }>(page, "GET", "/v1/files?q=remembered");
  expect(remembered.files.map((f) => [f.name, f.visibility])).toEqual([["remembered.txt", "public"]]);
  const expiry = await apiInPage<{ expire_time: string | null }>(page, "GET", `/v1/files/${remembered.files[0]!.id}/expiry`);
  expect(Date.parse(expiry.expire_time ?? "") - Date.now()).toBeGreaterThan(23 * 3600_000);
  await page.locator("#upload-visibility").selectOption("internal");
  await page.locator("#upload-expiry").selectOption("");

  // A bad slug shows the API's message.
  await page.locator("#file-input").setInputFiles({ name: "b.txt", mimeType: "text/plain", buffer: Buffer.from("b") });
  await page.getByLabel("Slug of b.txt", { exact: true }).fill("no spaces allowed");
  await page.getByRole("button", { name: "Set slug of b.txt" }).click();
  await expect(page.getByRole("alert")).toContainText("slug: only A-Z a-z 0-9 . _ ~ - are allowed");
  await shot(page, "08-error-message");

  // Phone width.
  await page.setViewportSize({ width: 375, height: 740 });
  await shot(page, "09-phone");
  await page.setViewportSize({ width: 1100, height: 800 });

  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("link", { name: "Sign in" })).toBeVisible();
  await shot(page, "10-signed-out-again");
  // The API's 400 for the bad slug is a console error by design of the browser; nothing else.
  expect(errors.filter((e) => !e.includes("400 (Bad Request)"))).toEqual([]);
});

test("uploaded HTML and SVG cannot run script in cubby's origin; PNG and PDF display inline", async ({ page, context }) => {
  await signIn(page, "bob");
  const mint = await page.evaluate(async () => {
    const r = await fetch("/auth/keys", { method: "POST" });
    return ((await r.json()) as { key: string }).key;
  });
  const upload = async (body: Buffer | string, type: string) => {
    const r = await fetch(`${stack.url}/v1/files?visibility=public`, { method: "POST", body, headers: { authorization: `Bearer ${mint}`, "content-type": type } });
    return (await r.json()) as { id: string; url: string };
  };
  // If this script ran in cubby's origin it would use the viewer's session to mint a key,
  // and leave marks in localStorage and the title.
  const evil = `localStorage.setItem('pwned','1'); document.title='pwned'; fetch('/auth/keys',{method:'POST'}).then(()=>localStorage.setItem('minted','1'));`;
  const html = await upload(`<!doctype html><title>evil</title><script>${evil}</script><p>hello</p>`, "text/html");
  const svg = await upload(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>${evil}</script><rect width="10" height="10"/></svg>`, "image/svg+xml");
  const keysBefore = await page.evaluate(async () => ((await (await fetch("/auth/keys")).json()) as { keys: unknown[] }).keys.length);

  for (const f of [html, svg]) {
    const viewer = await context.newPage();
    await viewer.goto(f.url);
    await viewer.waitForLoadState("load");
    expect(await viewer.title()).not.toBe("pwned");
    await viewer.close();
  }
  await shot(page, "11-after-evil-uploads");
  expect(await page.evaluate(() => [localStorage.getItem("pwned"), localStorage.getItem("minted")])).toEqual([null, null]);
  expect(await page.evaluate(async () => ((await (await fetch("/auth/keys")).json()) as { keys: unknown[] }).keys.length)).toBe(keysBefore);

  // A PNG renders as an image; a PDF opens in the browser's viewer (inline, not downloaded).
  const png = await upload(fs.readFileSync("/usr/share/pixmaps/debian-logo.png"), "image/png");
  const imagePage = await context.newPage();
  await imagePage.goto(png.url);
  expect(await imagePage.locator("img").evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
  await imagePage.screenshot({ path: path.join(SCREENSHOTS, "12-png-inline.png") });
  await imagePage.close();

  const pdfBytes = fs.readFileSync("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf");
  const pdf = await upload(pdfBytes, "application/pdf");
  const pdfPage = await context.newPage();
  let downloaded = false;
  pdfPage.on("download", () => (downloaded = true));
  const response = await pdfPage.goto(pdf.url);
  expect({
    status: response?.status(),
    type: response?.headers()["content-type"],
    disposition: response?.headers()["content-disposition"],
    csp: response?.headers()["content-security-policy"],
  }).toEqual({ status: 200, type: "application/pdf", disposition: "inline", csp: undefined });
  await pdfPage.waitForLoadState("load");
  expect(downloaded).toBe(false);
  await pdfPage.screenshot({ path: path.join(SCREENSHOTS, "13-pdf-inline.png") });
  await pdfPage.close();
});
