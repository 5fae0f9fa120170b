// Support for the browser tests, in plain Node.js (Playwright's runner): builds dist/cubby,
// starts the real OpenID provider and the binary on loopback ports, and stops them.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../support/idp.ts";

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
  const proc = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
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

export interface Stack {
  url: string;
  issuer?: string;
  dataDir: string;
  stop(): void;
}

/** Starts the binary (with the OpenID provider when `withIdp`) on fresh ports and a fresh data dir. */
export async function startStack(binary: string, withIdp: boolean): Promise<Stack> {
  const port = await freePort();
  const url = `http://localhost:${port}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-e2e-"));
  const procs: ChildProcess[] = [];
  const env: Record<string, string> = { HOSTNAME: url, RATE_LIMIT_AUTH_FAILURES: "0", RATE_LIMIT_SIGN_INS: "0" };
  let issuer: string | undefined;
  if (withIdp) {
    const idp = await spawnReady(BUN, ["test/support/idp-server.ts", `${url}/auth/idp/callback`], {}, /issuer=(\S+)/);
    procs.push(idp.proc);
    issuer = idp.match[1]!;
    Object.assign(env, { IDP_ISSUER: issuer, IDP_CLIENT_ID: "cubby", IDP_CLIENT_SECRET: "cubby-test-secret" });
  }
  const cubby = await spawnReady(binary, ["serve", "--port", String(port), "--data-dir", dataDir], env, /listening on port/);
  procs.push(cubby.proc);
  return {
    url,
    issuer,
    dataDir,
    stop() {
      for (const p of procs) p.kill("SIGKILL");
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
