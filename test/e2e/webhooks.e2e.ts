// Webhooks in the dashboard (CONTRACT §13), in Debian's Chromium against the compiled binary: add
// one (a refused target is shown beside the URL field), its secret shown once, a delivery to a
// real receiver on loopback (allowed by WEBHOOK_ALLOWED_HOSTS) that verifies the signature with
// that secret, the recent deliveries, delete. No console errors, no request leaves cubby's origin.
import { expect, test, type Page } from "@playwright/test";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import { openSection, buildBinary, SCREENSHOTS, signIn, startStack, watchPage, type Stack } from "./fixtures.ts";

let stack: Stack;
let receiver: http.Server;
let receiverUrl: string;
/** Deliveries as received: type, and whether the signature verified with the secret the page showed. */
const received: { type: string; verified: boolean }[] = [];
let secret = "";

test.beforeAll(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let verified = false;
      try {
        new Webhook(secret).verify(body, req.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      received.push({ type: (JSON.parse(body) as { type: string }).type, verified });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  stack = await startStack(buildBinary(), true, { env: { WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" } });
});
test.afterAll(async () => {
  await stack?.stop();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

test("add a webhook (its secret once), see its deliveries, delete it", async ({ page }) => {
  const watch = watchPage(page, stack);
  await signIn(page, stack, "ivan");
  await openSection(page, "Webhooks");
  const section = page.locator("section", { has: page.getByRole("heading", { name: "Webhooks" }) });
  await expect(section.getByText("No webhooks.")).toBeVisible();

  // A target that is not allowed: the server's message beside the URL field, nothing added.
  await section.getByLabel("URL").fill("http://10.0.0.1/hook");
  await section.getByRole("button", { name: "Add webhook" }).click();
  await expect(section.getByText("url: 10.0.0.1 is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it")).toBeVisible();
  await expect(section.getByLabel("URL")).toHaveAttribute("aria-invalid", "true");

  // Created and deleted files only.
  await section.getByLabel("URL").fill(receiverUrl);
  await section.getByLabel("replaced").uncheck();
  await section.getByLabel("share downloaded").uncheck();
  await section.getByLabel("folder shared").uncheck();
  await section.getByRole("button", { name: "Add webhook" }).click();
  const shown = section.getByLabel("New webhook secret");
  await expect(shown).toHaveValue(/^whsec_/);
  secret = await shown.inputValue();
  const card = section.locator("#hooks li").filter({ hasText: receiverUrl });
  await expect(card).toContainText("file.created, file.deleted");
  await shot(page, "webhooks");

  // A file uploaded in the dashboard arrives at the receiver, signed with that secret.
  await openSection(page, "Files");
  await page.locator("#file-input").setInputFiles({ name: "hello.txt", mimeType: "text/plain", buffer: Buffer.from("hello") });
  await expect(page.locator("#files tbody tr").filter({ hasText: "hello.txt" })).toBeVisible();
  await expect.poll(() => received.map((r) => [r.type, r.verified]), { timeout: 15_000 }).toEqual([["file.created", true]]);
  await openSection(page, "Webhooks");
  await card.getByRole("button", { name: /Recent deliveries/ }).click();
  await expect(card.locator(".arrivals li").first()).toContainText("file.created · delivered (204)");

  // The secret is not shown again after a reload; the webhook is.
  await page.reload();
  await expect(section.getByLabel("New webhook secret")).toBeHidden();
  page.once("dialog", (d) => d.accept());
  await section.locator("#hooks li").filter({ hasText: receiverUrl }).getByRole("button", { name: /Delete webhook/ }).click();
  await expect(section.getByText("No webhooks.")).toBeVisible();
  // The one error the console shows is the refused target's 400, which the page showed beside the field.
  expect({ errors: watch.errors.filter((e) => !e.includes("status of 400 (Bad Request) at http://localhost")), foreign: watch.foreign }).toEqual({ errors: [], foreign: [] });
  expect(watch.errors).toHaveLength(1);
});
