/**
 * Test support for bun test: runs the real `cubby` (from source, or a given executable) on port 0
 * with a temporary data directory through the one launcher (launch.ts), on this run's stores
 * (backend.ts), checks its responses against /openapi.json, and mints API keys through the real CLI.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { FileJson } from "../../src/domain/file.ts";
import type { TappedResponse } from "../../src/server/response-tap.ts";
import { backendEnv } from "./backend.ts";
import { cleanEnv, cubbyCommand, launchCubby, ROOT, type Launched } from "./launch.ts";
import { checkResponseLog, readResponseLog } from "./openapi-check.ts";

export { ROOT, tempDir } from "./launch.ts";

export interface ServerOptions {
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Reuse a data directory (restart tests); a fresh temporary one otherwise. */
  dataDir?: string;
  /** A fixed port (sign-in tests need the redirect URI before start); 0 otherwise. */
  port?: number;
  /** Run this executable (or command, e.g. an emulator and the executable) instead of `bun src/main.ts`. */
  executable?: string | string[];
  cwd?: string;
  /** How long to wait for the server to listen, in milliseconds (default 25 s). */
  readyTimeoutMs?: number;
  /**
   * Whether disposing the server checks every response it sent against /openapi.json
   * (test/support/openapi-check.ts; CONTRACT §9); true unless a test says otherwise.
   */
  checkResponses?: boolean;
}

export interface RunningServer extends AsyncDisposable {
  url: string;
  port: number;
  dataDir: string;
  /** The `cubby serve` process (the supervisor when WORKERS > 1). */
  proc: Launched;
  /** Everything the server printed on stdout so far. */
  output(): string;
  /** Everything the server printed on stderr so far. */
  errors(): string;
  /** Waits until stdout contains `text` (or throws after `timeoutMs`, default 10 s). @returns the match */
  waitForOutput(text: string | RegExp, timeoutMs?: number): Promise<string[]>;
  /** Waits until stderr contains `text` (or throws after `timeoutMs`, default 10 s). @returns the match */
  waitForErrors(text: string | RegExp, timeoutMs?: number): Promise<string[]>;
  /** A new key for `email` (`cubby keys create`), with `args` such as ["--scope", "files.read", "--ttl", "1h"]. */
  mintKey(email: string, ...args: string[]): Promise<string>;
  /**
   * A dashboard session for `email`, as a person gets one: a login link (`cubby login-link`),
   * then its page's Sign in POST (CONTRACT §11). @returns the `Cookie` header value
   * (`cubby_session=…`), to send with `Origin: server.url` on API calls that change anything
   */
  signIn(email: string): Promise<string>;
  /**
   * The processes that serve connections: the workers when the server runs several (WORKERS > 1,
   * children of the supervisor), else the server's own process.
   */
  servingPids(): number[];
  /** SIGTERM and wait for exit. @returns the exit code */
  stop(): Promise<number | null>;
  /** SIGKILL, workers and all, and wait until they are gone (launch.ts). */
  kill9(): Promise<void>;
  /**
   * Problems of the responses sent so far against /openapi.json (openapi-check.ts); disposing
   * the server throws when there are any.
   */
  responseProblems(): string[];
  /** The responses sent so far, as the response tap recorded them (none with `checkResponses: false`). */
  responses(): TappedResponse[];
}

/** Runs a CLI command to completion. */
export async function runCli(
  args: string[],
  opts: { executable?: string | string[]; env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const dataDir = args[args.indexOf("--data-dir") + 1];
  const stores = args.includes("--data-dir") && dataDir !== undefined ? await backendEnv(dataDir) : {};
  const proc = Bun.spawn(cubbyCommand(opts.executable, args), {
    cwd: opts.cwd ?? ROOT,
    env: { ...cleanEnv(), ...stores, ...opts.env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

/**
 * Starts a server (test/support/launch.ts's launchCubby) on this run's stores (backend.ts) and
 * waits until it listens; unless `checkResponses` is false, it records every response for the
 * check against /openapi.json that disposing it runs.
 */
export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const ownDir = opts.dataDir === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), "cubby-data-")) : undefined;
  const dataDir = opts.dataDir ?? ownDir!;
  // Outside the data directory: tests reuse and inspect that one.
  const responseLog = opts.checkResponses === false ? undefined : path.join(fs.mkdtempSync(path.join(os.tmpdir(), "cubby-responses-")), "responses.jsonl");
  const removeResponseLog = () => responseLog !== undefined && fs.rmSync(path.dirname(responseLog), { recursive: true, force: true });
  let started: Awaited<ReturnType<typeof launchCubby>>;
  try {
    started = await launchCubby({
      dataDir,
      port: opts.port,
      executable: opts.executable,
      cwd: opts.cwd,
      readyTimeoutMs: opts.readyTimeoutMs,
      env: { ...(await backendEnv(dataDir)), ...(responseLog === undefined ? {} : { CUBBY_TEST_RESPONSE_LOG: responseLog }), ...opts.env },
    });
  } catch (err) {
    if (ownDir !== undefined) fs.rmSync(ownDir, { recursive: true, force: true });
    removeResponseLog();
    throw err;
  }
  const { url, port, proc } = started;

  const server: RunningServer = {
    url,
    port,
    dataDir,
    proc,
    output: proc.output,
    errors: proc.errors,
    waitForOutput: proc.waitForOutput,
    waitForErrors: proc.waitForErrors,
    async mintKey(email: string, ...args: string[]) {
      const r = await runCli(["keys", "create", "--email", email, ...args, "--data-dir", dataDir], {
        executable: opts.executable,
        cwd: opts.cwd,
        env: opts.env,
      });
      if (r.code !== 0) throw new Error(`keys create failed: ${r.stderr}`);
      return r.stdout.trim();
    },
    async signIn(email: string) {
      const r = await runCli(["login-link", "--email", email, "--data-dir", dataDir], { executable: opts.executable, cwd: opts.cwd, env: { ...opts.env, HOSTNAME: url } });
      if (r.code !== 0) throw new Error(`login-link failed: ${r.stderr}`);
      const token = r.stdout.trim().split("/").pop()!;
      const posted = await fetch(`${url}/auth/link`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin", origin: "null" },
        body: new URLSearchParams({ token }).toString(),
      });
      const cookie = posted.headers.getSetCookie().find((c) => c.startsWith("cubby_session="));
      if (posted.status !== 303 || cookie === undefined) throw new Error(`sign-in by link answered ${posted.status}: ${await posted.text()}`);
      return cookie.split(";")[0]!;
    },
    servingPids() {
      const workers = proc.children();
      return workers.length > 0 ? workers : [proc.pid];
    },
    stop: () => proc.stop(),
    kill9: () => proc.kill9(),
    responseProblems: () => (responseLog === undefined ? [] : checkResponseLog(responseLog)),
    responses: () => (responseLog === undefined ? [] : readResponseLog(responseLog)),
    async [Symbol.asyncDispose]() {
      await server.kill9();
      if (ownDir !== undefined) fs.rmSync(ownDir, { recursive: true, force: true });
      const problems = server.responseProblems();
      removeResponseLog();
      if (problems.length > 0) {
        throw new Error(`responses that do not follow /openapi.json (src/http/openapi.ts):\n${problems.slice(0, 30).join("\n")}`);
      }
    },
  };
  return server;
}

/** A client bound to one server and one API key. */
export function client(server: { url: string }, key?: string) {
  const auth: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  return {
    fetch(pathAndQuery: string, init: RequestInit = {}) {
      return fetch(server.url + pathAndQuery, { ...init, headers: { ...auth, ...(init.headers as Record<string, string>) } });
    },
    async upload(body: ConstructorParameters<typeof Response>[0], query = "", headers: Record<string, string> = {}) {
      const res = await fetch(`${server.url}/v1/files${query}`, { method: "POST", body, headers: { ...auth, ...headers } });
      if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${await res.text()}`);
      return (await res.json()) as FileJson;
    },
  };
}

export type { FileJson } from "../../src/domain/file.ts";
