/**
 * Test support: runs the real `cubby` (from source, or a given executable) as a child process
 * on port 0 with a temporary data directory, and mints API keys through the real CLI.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Subprocess } from "bun";
import type { FileJson } from "../../src/domain/file.ts";
import type { TappedResponse } from "../../src/server/response-tap.ts";
import { backendEnv } from "./backend.ts";
import { checkResponseLog, readResponseLog } from "./openapi-check.ts";
import { childrenOf, waitGone } from "./processes.ts";

export const ROOT = path.resolve(import.meta.dir, "../..");
const MAIN = path.join(ROOT, "src/main.ts");

export interface ServerOptions {
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Reuse a data directory (restart tests); a fresh temporary one otherwise. */
  dataDir?: string;
  /** A fixed port (sign-in tests need the redirect URI before start); 0 otherwise. */
  port?: number;
  /** Run this executable instead of `bun src/main.ts`. */
  executable?: string;
  cwd?: string;
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
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Everything the server printed on stdout so far. */
  output(): string;
  /** Everything the server printed on stderr so far. */
  errors(): string;
  /** Waits until stdout contains `text` (or throws after `timeoutMs`). */
  waitForOutput(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Waits until stderr contains `text` (or throws after `timeoutMs`). */
  waitForErrors(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Mints an API key for `email` through `cubby keys create`. */
  /** A new key for `email` (`cubby keys create`), with `args` such as ["--scope", "files.read", "--ttl", "1h"]. */
  mintKey(email: string, ...args: string[]): Promise<string>;
  /**
   * The processes that serve connections: the workers when the server runs several (WORKERS > 1,
   * children of the supervisor), else the server's own process.
   */
  servingPids(): number[];
  /** SIGTERM and wait for exit. @returns the exit code */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill9(): Promise<void>;
  /**
   * Problems of the responses sent so far against /openapi.json (openapi-check.ts); disposing
   * the server throws when there are any.
   */
  responseProblems(): string[];
  /** The responses sent so far, as the response tap recorded them (none with `checkResponses: false`). */
  responses(): TappedResponse[];
}

/** A fresh temporary directory, removed by the returned disposer. */
export function tempDir(prefix = "cubby-test-"): { path: string } & Disposable {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { path: dir, [Symbol.dispose]: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

function command(executable: string | undefined, args: string[]): string[] {
  return executable === undefined ? [process.execPath, MAIN, ...args] : [executable, ...args];
}

/** Runs a CLI command to completion. */
export async function runCli(
  args: string[],
  opts: { executable?: string; env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const dataDir = args[args.indexOf("--data-dir") + 1];
  const stores = args.includes("--data-dir") && dataDir !== undefined ? await backendEnv(dataDir) : {};
  const proc = Bun.spawn(command(opts.executable, args), {
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

/** The environment without cubby's own variables, so a developer's shell cannot leak into tests. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (/^(PORT|DATA_DIR|HOSTNAME|IDP_|ALLOWED_DOMAINS|MAX_UPLOAD_BYTES|QUOTA_BYTES|RATE_LIMIT_|HEADER_TIMEOUT_|IDLE_TIMEOUT_|TRUSTED_PROXIES|MAX_CONNECTIONS|DATABASE_URL|S3_|AWS_)/.test(k)) continue;
    env[k] = v;
  }
  return env;
}

/** Starts a server and waits until it listens. */
export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const ownDir = opts.dataDir === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), "cubby-data-")) : undefined;
  const dataDir = opts.dataDir ?? ownDir!;
  // Outside the data directory: tests reuse and inspect that one.
  const responseLog = opts.checkResponses === false ? undefined : path.join(fs.mkdtempSync(path.join(os.tmpdir(), "cubby-responses-")), "responses.jsonl");
  const proc = Bun.spawn(command(opts.executable, ["serve", "--port", String(opts.port ?? 0), "--data-dir", dataDir]), {
    cwd: opts.cwd ?? ROOT,
    // Tests fail authentication on purpose, many times, from one address: no limits unless a
    // test sets them.
    env: { ...cleanEnv(), ...(await backendEnv(dataDir)), RATE_LIMIT_AUTH_FAILURES: "0", RATE_LIMIT_SIGN_INS: "0", ...(responseLog === undefined ? {} : { CUBBY_TEST_RESPONSE_LOG: responseLog }), ...opts.env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  let err = "";
  const waiters: (() => void)[] = [];
  const pump = async (stream: ReadableStream<Uint8Array>, onText: (t: string) => void) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      onText(decoder.decode(chunk, { stream: true }));
      for (const w of waiters.splice(0)) w();
    }
    for (const w of waiters.splice(0)) w();
  };
  void pump(proc.stdout, (t) => (out += t));
  void pump(proc.stderr, (t) => (err += t));

  const waitFor = async (stream: () => string, text: string | RegExp, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    const has = () => (typeof text === "string" ? stream().includes(text) : text.test(stream()));
    while (!has()) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`server exited (${proc.exitCode ?? proc.signalCode}) before printing ${text}\n${out}\n${err}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${text}\nstdout:\n${out}\nstderr:\n${err}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  };
  const waitForOutput = (text: string | RegExp, timeoutMs?: number) => waitFor(() => out, text, timeoutMs);
  const waitForErrors = (text: string | RegExp, timeoutMs?: number) => waitFor(() => err, text, timeoutMs);
  // A supervisor starts its workers before it says so (WORKERS > 1): slower on a busy machine.
  // A server that does not come up is stopped, workers and all, before the error goes on.
  await waitForOutput(/listening on port \d+/, 25_000).catch(async (err: unknown) => {
    const workers = childrenOf(proc.pid);
    proc.kill("SIGKILL");
    for (const pid of workers) killPid(pid);
    await proc.exited;
    throw err;
  });
  const port = Number(/listening on port (\d+)/.exec(out)![1]);
  const url = `http://localhost:${port}`;

  const server: RunningServer = {
    url,
    port,
    dataDir,
    proc,
    output: () => out,
    errors: () => err,
    waitForOutput,
    waitForErrors,
    async mintKey(email: string, ...args: string[]) {
      const r = await runCli(["keys", "create", "--email", email, ...args, "--data-dir", dataDir], {
        executable: opts.executable,
        cwd: opts.cwd,
        env: opts.env,
      });
      if (r.code !== 0) throw new Error(`keys create failed: ${r.stderr}`);
      return r.stdout.trim();
    },
    servingPids() {
      const workers = childrenOf(proc.pid);
      return workers.length > 0 ? workers : [proc.pid];
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      return await proc.exited;
    },
    async kill9() {
      // The supervisor first (it would start killed workers again), then its workers (WORKERS >
      // 1), known from before. Not a process group of its own: bun test stops the processes a
      // timed-out test spawned, and one in a session of its own escaped it (a worker left alone
      // also stops by itself once its supervisor's IPC channel closes).
      const workers = childrenOf(proc.pid);
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
      for (const pid of workers) killPid(pid);
      await proc.exited;
      await waitGone(workers, 5000);
    },
    responseProblems: () => (responseLog === undefined ? [] : checkResponseLog(responseLog)),
    responses: () => (responseLog === undefined ? [] : readResponseLog(responseLog)),
    async [Symbol.asyncDispose]() {
      await server.kill9();
      if (ownDir !== undefined) fs.rmSync(ownDir, { recursive: true, force: true });
      const problems = server.responseProblems();
      if (responseLog !== undefined) fs.rmSync(path.dirname(responseLog), { recursive: true, force: true });
      if (problems.length > 0) {
        throw new Error(`responses that do not follow /openapi.json (src/http/openapi.ts):\n${problems.slice(0, 30).join("\n")}`);
      }
    },
  };
  return server;
}

/** SIGKILLs `pid`, if it still runs. */
function killPid(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Gone already.
  }
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
