// Support for the browser tests, in plain Node.js (Playwright's runner): builds dist/cubby,
// starts the real OpenID provider and the binary on loopback ports, and stops them.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Page } from "@playwright/test";
import { freePort } from "../support/idp.ts";
import { NGINX_FALLBACK, writeNginxConfig } from "../support/nginx-config.ts";

export const ROOT = path.resolve(import.meta.dirname, "../..");
const BUN = path.join(ROOT, "node_modules/.bin/bun");
export const SCREENSHOTS = path.join(ROOT, "test-results/screenshots");

/** Builds dist/cubby once per run. */
export function buildBinary(): string {
  const r = spawnSync(BUN, ["scripts/build.ts"], { cwd: ROOT, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr}${r.stdout}`);
  return path.join(ROOT, "dist/cubby");
}


/** Spawns a process and waits for a line matching `ready` on stdout. */
function spawnReady(cmd: string, args: string[], env: Record<string, string>, ready: RegExp): Promise<{ proc: ChildProcess; match: RegExpExecArray }> {
  // Its own process group (detached): stopping the stack kills cubby's worker processes with it.
  const proc = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  let err = "";
  proc.stderr!.on("data", (c) => (err += c));
  return new Promise((resolve, reject) => {
    proc.stdout!.on("data", (c) => {
      out += c;
      const m = ready.exec(out);
      if (m) resolve({ proc, match: m });
    });
    proc.on("exit", (code) => reject(new Error(`${cmd} exited (${code}): ${out}\n${err}`)));
  });
}

/** SIGKILLs `proc` and, when it leads a process group of its own (spawnReady), everything in it. */
function killGroup(proc: ChildProcess): void {
  if (proc.pid === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
  try {
    process.kill(-proc.pid, "SIGKILL");
  } catch {
    proc.kill("SIGKILL");
  }
}

export interface Stack {
  url: string;
  issuer?: string;
  dataDir: string;
  stop(): void;
}

/**
 * Starts the binary (with the OpenID provider when `withIdp`) on fresh ports and a fresh data
 * dir; with `nginx` (directives for its server block, e.g. `client_max_body_size 16m;`), behind
 * a real nginx whose address is then the stack's public URL (HOSTNAME); `env` adds to cubby's
 * environment (e.g. QUOTA_BYTES).
 */
export async function startStack(binary: string, withIdp: boolean, opts: { nginx?: string; env?: Record<string, string> } = {}): Promise<Stack> {
  const port = await freePort();
  const procs: ChildProcess[] = [];
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-e2e-"));
  const dataDir = path.join(work, "data");
  const stop = () => {
    for (const p of procs) killGroup(p);
    fs.rmSync(work, { recursive: true, force: true });
  };
  try {
    return await start();
  } catch (err) {
    stop();
    throw err;
  }

  async function start(): Promise<Stack> {
    let url = `http://localhost:${port}`;
    if (opts.nginx !== undefined) {
      const nginxPort = await freePort();
      const nginxDir = path.join(work, "nginx");
      fs.mkdirSync(nginxDir);
      const nginx = spawn(fs.existsSync(NGINX_FALLBACK) ? NGINX_FALLBACK : "nginx", writeNginxConfig(nginxDir, nginxPort, [port], opts.nginx), { stdio: "ignore" });
      procs.push(nginx);
      // localhost, not 127.0.0.1: the OpenID provider is on 127.0.0.1, and cookies ignore ports.
      url = `http://localhost:${nginxPort}`;
    }
    const env: Record<string, string> = { HOSTNAME: url, RATE_LIMIT_AUTH_FAILURES: "0", RATE_LIMIT_SIGN_INS: "0" };
    let issuer: string | undefined;
    if (withIdp) {
      const idp = await spawnReady(BUN, ["test/support/idp-server.ts", `${url}/auth/idp/callback`], {}, /issuer=(\S+)/);
      procs.push(idp.proc);
      issuer = idp.match[1]!;
      Object.assign(env, { IDP_ISSUER: issuer, IDP_CLIENT_ID: "cubby", IDP_CLIENT_SECRET: "cubby-test-secret" });
    }
    Object.assign(env, opts.env);
    const cubby = await spawnReady(binary, ["serve", "--port", String(port), "--data-dir", dataDir], env, /listening on port/);
    procs.push(cubby.proc);
    // nginx prints nothing when ready: wait until cubby answers through it.
    for (let i = 0; (await fetch(`${url}/healthz`).then((r) => r.status).catch(() => 0)) !== 200; i++) {
      if (i > 500) throw new Error(`${url} did not answer`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return { url, issuer, dataDir, stop };
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
 * Collects console errors and uncaught exceptions of cubby's pages (not the provider's login
 * pages, which are not ours), and requests of cubby's pages leaving its origin (bar the
 * provider, where sign-in goes); a test fails if either list is not empty at its end.
 */
export function watchPage(page: Page, stack: Stack): { errors: string[]; foreign: string[] } {
  const errors: string[] = [];
  const foreign: string[] = [];
  const ours = () => page.url().startsWith(stack.url);
  page.on("console", (m) => {
    if (m.type() === "error" && ours()) errors.push(`${m.text()} at ${m.location().url} on ${page.url()}`);
  });
  page.on("pageerror", (e) => ours() && errors.push(e.message));
  page.on("request", (r) => {
    const u = r.url();
    // The provider's login pages are not ours (they load web fonts); only cubby's pages count.
    if (ours() && !u.startsWith(`${stack.url}/`) && !u.startsWith("data:") && !(stack.issuer && u.startsWith(stack.issuer))) foreign.push(u);
  });
  return { errors, foreign };
}
