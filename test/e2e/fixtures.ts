// Support for the browser tests, in plain Node.js (Playwright's runner): builds dist/cubby, and
// starts the binary, the real OpenID provider and nginx through the tests' one launcher
// (test/support/launch.ts) on loopback ports, and stops them.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { expect, type Page } from "@playwright/test";
import { IDP_CLIENT, startIdp, type RunningIdp } from "../support/idp.ts";
import { BUN, launchCubby, ROOT, type Launched } from "../support/launch.ts";
import { startNginx, type RunningNginx } from "../support/nginx.ts";
import { freePort } from "../support/processes.ts";

export { ROOT } from "../support/launch.ts";
export const SCREENSHOTS = path.join(ROOT, "test-results/screenshots");

/** Where the run's global setup ({@link buildBinary} in global-setup.ts) says it built the binary. */
const BUILT_ENV = "CUBBY_E2E_BINARY";

/**
 * dist/cubby, built once per run: by the global setup (global-setup.ts), which passes its path
 * to every test file in the environment; a file run without it builds it here.
 */
export function buildBinary(): string {
  const built = process.env[BUILT_ENV];
  if (built !== undefined && fs.existsSync(built)) return built;
  const r = spawnSync(BUN, ["scripts/build.ts"], { cwd: ROOT, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr}${r.stdout}`);
  const binary = path.join(ROOT, "dist/cubby");
  process.env[BUILT_ENV] = binary;
  return binary;
}

export interface Stack {
  url: string;
  issuer?: string;
  dataDir: string;
  /** Stops every process of the stack (cubby with its workers, the provider, nginx) and removes its files. */
  stop(): Promise<void>;
}

/**
 * Starts the binary (with the OpenID provider when `withIdp`) on fresh ports and a fresh data
 * dir; with `nginx` (directives for its server block, e.g. `client_max_body_size 16m;`), behind
 * a real nginx whose address is then the stack's public URL (HOSTNAME); `env` adds to cubby's
 * environment (e.g. QUOTA_BYTES).
 */
export async function startStack(binary: string, withIdp: boolean, opts: { nginx?: string; env?: Record<string, string> } = {}): Promise<Stack> {
  // The port is chosen first: HOSTNAME and the provider's redirect URI name it.
  const port = await freePort();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-e2e-"));
  const dataDir = path.join(work, "data");
  let nginx: RunningNginx | undefined;
  let idp: RunningIdp | undefined;
  let cubby: Launched | undefined;
  const stop = async () => {
    await Promise.all([cubby?.kill9(), idp?.[Symbol.asyncDispose](), nginx?.[Symbol.asyncDispose]()]);
    fs.rmSync(work, { recursive: true, force: true });
  };
  try {
    let url = `http://localhost:${port}`;
    if (opts.nginx !== undefined) {
      // localhost, not 127.0.0.1: the OpenID provider is on 127.0.0.1, and cookies ignore ports.
      // nginx answers /healthz once cubby is up behind it (502 before): it is started after cubby.
      url = `http://localhost:${await freePort()}`;
    }
    const env: Record<string, string> = { HOSTNAME: url };
    let issuer: string | undefined;
    if (withIdp) {
      idp = await startIdp([`${url}/auth/idp/callback`]);
      issuer = idp.issuer;
      Object.assign(env, { IDP_ISSUER: issuer, ...IDP_CLIENT });
    }
    Object.assign(env, opts.env);
    cubby = (await launchCubby({ executable: binary, port, dataDir, env })).proc;
    if (opts.nginx !== undefined) {
      nginx = await startNginx([port], opts.nginx, { host: "localhost", port: Number(new URL(url).port) });
    }
    return { url, issuer, dataDir, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Signs in through the test OpenID provider as `login`@example.com (any password, then consent). */
export async function signIn(page: Page, stack: Stack, login: string): Promise<void> {
  await page.goto(stack.url);
  await page.getByRole("link", { name: "Sign in" }).click();
  await page.locator("input[name=login]").fill(login);
  await page.locator("input[name=password]").fill("any password");
  await page.locator("button[type=submit]").click();
  await page.locator("button[type=submit]").click(); // consent
  await page.waitForURL(`${stack.url}/`);
}

/**
 * Mints a login link for `email` with the binary's CLI on the stack's data (what an operator
 * runs on the server) and returns the URL it printed.
 */
export function mintLoginLink(binary: string, stack: Stack, email: string): string {
  const r = spawnSync(binary, ["login-link", "--email", email, "--data-dir", stack.dataDir], { encoding: "utf8", env: { ...process.env, HOSTNAME: stack.url } });
  if (r.status !== 0) throw new Error(`cubby login-link failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** What the signed-in dashboard asks to know whether to offer the Admin section (web/app.js askAdmin). */
const ADMIN_PROBE = "/v1/admin/users?page_size=1";

/**
 * Collects console errors and uncaught exceptions of cubby's pages (not the provider's login
 * pages, which are not ours), and requests of cubby's pages leaving its origin (bar the
 * provider, where sign-in goes); a test fails if either list is not empty at its end.
 */
export function watchPage(page: Page, stack: Stack): { errors: string[]; foreign: string[] } {
  const errors: string[] = [];
  const foreign: string[] = [];
  const ours = () => page.url().startsWith(stack.url);
  page.on("console", (m) => {
    // The dashboard asks whether to offer its Admin section (issue 40); the 403 that says "no" is the browser's complaint, not an error.
    const adminProbe = m.text().includes("status of 403") && m.location().url === `${stack.url}${ADMIN_PROBE}`;
    if (m.type() === "error" && ours() && !adminProbe) errors.push(`${m.text()} at ${m.location().url} on ${page.url()}`);
  });
  page.on("pageerror", (e) => ours() && errors.push(e.message));
  page.on("request", (r) => {
    const u = r.url();
    // The provider's login pages are not ours (they load web fonts); only cubby's pages count.
    // Chromium's own PDF viewer (chrome-extension:, chrome:) loads inside a previewed PDF.
    const browserOwn = u.startsWith("chrome-extension:") || u.startsWith("chrome:");
    if (ours() && !browserOwn && !u.startsWith(`${stack.url}/`) && !u.startsWith("data:") && !(stack.issuer && u.startsWith(stack.issuer))) foreign.push(u);
  });
  return { errors, foreign };
}

/** A REST call from inside the signed-in page (its session cookie, its origin): the status and the body as text. */
export async function fetchInPage(page: Page, method: string, url: string, body?: unknown): Promise<{ status: number; text: string }> {
  return page.evaluate(
    async ([method, url, body]) => {
      const res = await fetch(url as string, { method: method as string, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, text: await res.text() };
    },
    [method, url, body] as const,
  );
}

/** {@link fetchInPage} that wants a 200: its JSON body. @throws with the answer otherwise */
export async function apiInPage<T>(page: Page, method: string, url: string, body?: unknown): Promise<T> {
  const answer = await fetchInPage(page, method, url, body);
  if (answer.status !== 200) throw new Error(`${method} ${url}: ${answer.status} ${answer.text}`);
  return JSON.parse(answer.text) as T;
}

/** The screens every page is checked on (CONTRACT §11): a desktop and a phone. */
export const SIZES = { wide: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
export const SCHEMES = ["light", "dark"] as const;
export type Size = keyof typeof SIZES;

/** Runs in the page: what overflows sideways (the document, and any row, card or row's actions). */
function overflowIn(): { document: [number, number]; rows: string[] } {
  // Runs in the browser; the test's TypeScript has no DOM library.
  const doc = (globalThis as any).document;
  const rows: string[] = [];
  for (const node of doc.querySelectorAll("tbody tr, .cards li, .uploads li, td.actions .inline, .cards li .inline, .limits, .bar")) {
    if (node.offsetParent !== null && node.scrollWidth > node.clientWidth) rows.push(`${node.scrollWidth}>${node.clientWidth} ${node.outerHTML.slice(0, 120)}`);
  }
  return { document: [doc.documentElement.scrollWidth, doc.documentElement.clientWidth], rows };
}

/** Runs in the page: visible controls (bar check boxes and radio buttons, whose 44 px labels are the targets) shorter than 44 CSS pixels. */
function smallTargetsIn(): string[] {
  const doc = (globalThis as any).document;
  const small: string[] = [];
  for (const node of doc.querySelectorAll("main button, main select, main input:not([type=checkbox]):not([type=radio]), main .button, header button")) {
    const box = node.getBoundingClientRect();
    if (box.width > 0 && box.height < 44) small.push(`${Math.round(box.height)}px ${node.outerHTML.slice(0, 100)}`);
  }
  return small;
}

/**
 * The checks every page gets at a size and in a scheme: no overflow, no serious or critical axe
 * violation, tap targets on a phone; then a full-page screenshot.
 */
export async function checkPage(page: Page, name: string, size: Size, scheme: (typeof SCHEMES)[number]): Promise<void> {
  const overflow = await page.evaluate(overflowIn);
  expect(overflow.document[0], `${name} ${size} ${scheme}: the page scrolls sideways`).toBeLessThanOrEqual(overflow.document[1]);
  expect(overflow.rows, `${name} ${size} ${scheme}: rows overflowing`).toEqual([]);
  if (size === "phone") expect(await page.evaluate(smallTargetsIn), `${name} ${scheme}: tap targets under 44 px`).toEqual([]);
  const axe = await new AxeBuilder({ page }).analyze();
  const bad = axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  expect(bad, `${name} ${size} ${scheme}: axe`).toEqual([]);
  await page.screenshot({ path: path.join(SCREENSHOTS, `screens-${name}-${size}-${scheme}.png`), fullPage: true });
}

/** Visits `open` at each size and scheme and runs {@link checkPage}. */
export async function everyScreen(page: Page, name: string, open: () => Promise<void>): Promise<void> {
  for (const size of Object.keys(SIZES) as Size[]) {
    for (const scheme of SCHEMES) {
      await page.setViewportSize(SIZES[size]);
      await page.emulateMedia({ colorScheme: scheme });
      await open();
      await checkPage(page, name, size, scheme);
    }
  }
}


/**
 * Opens a section of the signed-in dashboard (issue 40) by its item in the navigation ("Files",
 * "Shares", "Upload links", "Webhooks", "API keys", "Admin") and waits until it is the current one.
 */
export async function openSection(page: Page, name: string): Promise<void> {
  const item = page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name, exact: true });
  await item.click();
  await expect(item).toHaveAttribute("aria-current", "page");
}
