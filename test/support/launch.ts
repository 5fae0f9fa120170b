// The tests' one launcher: starts cubby (from source or an executable) and the servers around it
// (the OpenID provider, nginx), waits until each is ready, and stops it with the processes it
// started. Written on node:child_process with no Bun API, so bun test (server.ts, idp.ts,
// nginx.ts) and Playwright's Node.js runner (test/e2e/fixtures.ts) start them the same way.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { childrenOf, waitGone } from "./processes.ts";
import { waitFor } from "./wait.ts";

export const ROOT = path.resolve(import.meta.dirname, "../..");
const MAIN = path.join(ROOT, "src/main.ts");

/** The Bun runtime: this process's own under bun test, the project's under Node.js (Playwright). */
export const BUN = process.versions.bun === undefined ? path.join(ROOT, "node_modules/.bin/bun") : process.execPath;

/** A fresh temporary directory, removed by the returned disposer. */
export function tempDir(prefix = "cubby-test-"): { path: string } & Disposable {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { path: dir, [Symbol.dispose]: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The command line of a cubby command: `bun src/main.ts ARGS` unless `executable` is given (a
 * path, or a command and its arguments, e.g. an emulator and the executable it runs).
 */
export function cubbyCommand(executable: string | string[] | undefined, args: string[]): string[] {
  if (executable === undefined) return [BUN, MAIN, ...args];
  return [...(typeof executable === "string" ? [executable] : executable), ...args];
}

/** This process's environment without cubby's own variables, so a developer's shell cannot leak into tests. */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (/^(PORT|DATA_DIR|HOSTNAME|IDP_|ALLOWED_DOMAINS|MAX_UPLOAD_BYTES|QUOTA_BYTES|RATE_LIMIT_|HEADER_TIMEOUT_|IDLE_TIMEOUT_|TRUSTED_PROXIES|MAX_CONNECTIONS|DATABASE_URL|S3_|AWS_)/.test(k)) continue;
    env[k] = v;
  }
  return env;
}

/** What to start. */
export interface LaunchOptions {
  /** Names the process in errors ("cubby", "the OpenID provider"). */
  name: string;
  /** The program and its arguments. */
  command: string[];
  /** The whole environment of the process. */
  env: Record<string, string>;
  cwd?: string;
  /** A pattern its stdout matches once it is ready; without one, `launch` returns once it is spawned. */
  ready?: RegExp;
  /** How long to wait for `ready`, in milliseconds (default 25 s). */
  readyTimeoutMs?: number;
}

/** A started process: its output so far, waits on it, and the ways to end it. */
export interface Launched {
  readonly pid: number;
  /** The exit code, once it exited by itself; null while it runs or when a signal ended it. */
  readonly exitCode: number | null;
  /** The signal that ended it; null while it runs or when it exited by itself. */
  readonly signalCode: NodeJS.Signals | null;
  /** Resolves once it has exited: its exit code, or 128 + the signal's number (as a shell says). */
  readonly exited: Promise<number>;
  /** The match of `ready` in its stdout (undefined without `ready`). */
  readonly readyMatch: RegExpExecArray | undefined;
  /** Sends `signal` (SIGTERM by default) if it still runs. */
  kill(signal?: NodeJS.Signals): void;
  /** Everything it printed on stdout so far. */
  output(): string;
  /** Everything it printed on stderr so far. */
  errors(): string;
  /**
   * Waits until stdout contains `text` (or matches it).
   * @returns the match (for a string, `[text]`)
   * @throws when stdout closes first, or after `timeoutMs` (default 10 s); the error shows both streams
   */
  waitForOutput(text: string | RegExp, timeoutMs?: number): Promise<string[]>;
  /** As {@link Launched.waitForOutput}, on stderr. */
  waitForErrors(text: string | RegExp, timeoutMs?: number): Promise<string[]>;
  /** Its child processes now (a supervisor's workers, nginx's workers). */
  children(): number[];
  /**
   * SIGTERM, and waits for it to exit; after `graceMs` (default: no limit), {@link Launched.kill9}.
   * @returns its exit code (as `exited`)
   */
  stop(graceMs?: number): Promise<number>;
  /**
   * SIGKILL to it, then to the children it had (known from before: a supervisor would start
   * killed workers again), and waits until all are gone. Not a process group of its own: bun test
   * stops the processes a timed-out test spawned, and one in a session of its own escaped it.
   */
  kill9(): Promise<void>;
}

/**
 * Spawns `command` (stdin ignored, stdout and stderr read as they come, so a chatty process never
 * blocks on a full pipe) and, with `ready`, waits for its stdout to match it.
 * @throws when it exits or stays silent for `readyTimeoutMs` first; it is then killed with its
 *   children before the error goes on
 */
export async function launch(opts: LaunchOptions): Promise<Launched> {
  const [program, ...args] = opts.command;
  const child = spawn(program!, args, { cwd: opts.cwd ?? ROOT, env: opts.env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  let streamsClosed = false;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const l of listeners) l();
  };
  child.stdout!.setEncoding("utf8").on("data", (t: string) => ((out += t), notify()));
  child.stderr!.setEncoding("utf8").on("data", (t: string) => ((err += t), notify()));
  child.once("close", () => ((streamsClosed = true), notify()));
  const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));
  let failed: Error | undefined;
  void spawnError.then((e) => ((failed = e), notify()));
  const exited = new Promise<number>((resolve) => {
    child.once("exit", (code, signal) => resolve(code ?? 128 + (signal === null ? 0 : os.constants.signals[signal])));
    // Never spawned (e.g. ENOENT): no "exit" comes; 127 as a shell says for a command not found.
    void spawnError.then(() => child.pid === undefined && resolve(127));
  });

  const waitOn = async (stream: () => string, text: string | RegExp, timeoutMs = 10_000): Promise<string[]> => {
    const find = (): string[] | undefined => {
      if (typeof text !== "string") return text.exec(stream()) ?? undefined;
      return stream().includes(text) ? [text] : undefined;
    };
    const streams = () => `stdout:\n${out}\nstderr:\n${err}`;
    return await waitFor(
      () => {
        const found = find();
        if (found !== undefined) return found;
        if (failed !== undefined) throw new Error(`${opts.name} did not start (${failed.message})`);
        if (streamsClosed) throw new Error(`${opts.name} exited (${child.exitCode ?? child.signalCode}) before printing ${text}\n${streams()}`);
        return undefined;
      },
      `${opts.name} to print ${text}`,
      { timeoutMs, pollMs: Infinity, wake: (recheck) => (listeners.add(recheck), () => listeners.delete(recheck)), detail: streams },
    );
  };

  const launched: Launched = {
    get pid() {
      return child.pid ?? -1;
    },
    get exitCode() {
      return child.exitCode;
    },
    get signalCode() {
      return child.signalCode;
    },
    exited,
    readyMatch: undefined,
    kill(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    output: () => out,
    errors: () => err,
    waitForOutput: (text, timeoutMs) => waitOn(() => out, text, timeoutMs),
    waitForErrors: (text, timeoutMs) => waitOn(() => err, text, timeoutMs),
    children: () => (child.pid === undefined ? [] : childrenOf(child.pid)),
    async stop(graceMs = Infinity) {
      launched.kill("SIGTERM");
      if (graceMs !== Infinity) await waitFor(() => launched.exitCode !== null || launched.signalCode !== null, `${opts.name} to exit`, graceMs).catch(() => launched.kill9());
      return await exited;
    },
    async kill9() {
      if (child.pid === undefined) return;
      const children = childrenOf(child.pid);
      launched.kill("SIGKILL");
      for (const pid of children) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone already.
        }
      }
      await exited;
      await waitGone(children, 5_000);
    },
  };
  if (opts.ready === undefined) {
    // A program that cannot be spawned (ENOENT) says so on "error", before or instead of "exit".
    const e = await Promise.race([spawnError, new Promise<undefined>((r) => child.once("spawn", () => r(undefined)))]);
    if (e !== undefined) throw new Error(`${opts.name} did not start (${e.message})`);
    return launched;
  }
  try {
    const match = (await waitOn(() => out, opts.ready, opts.readyTimeoutMs ?? 25_000)) as RegExpExecArray;
    return Object.assign(launched, { readyMatch: match });
  } catch (e) {
    await launched.kill9();
    throw e;
  }
}

/** How to start cubby. */
export interface CubbyOptions {
  /** The data directory. */
  dataDir: string;
  /** A fixed port (when a redirect URI or HOSTNAME must be known before start); 0 otherwise. */
  port?: number;
  /** Run this executable (or command) instead of `bun src/main.ts`. */
  executable?: string | string[];
  /** Environment variables over the clean environment and the test defaults. */
  env?: Record<string, string>;
  cwd?: string;
  /** How long to wait for "listening on port N" (default 25 s). */
  readyTimeoutMs?: number;
}

/** A started `cubby serve`. */
export interface LaunchedCubby {
  url: string;
  port: number;
  proc: Launched;
}

/**
 * Starts `cubby serve` on `port` (0: the kernel's choice) and waits until it says it listens.
 * Its environment is this one without cubby's variables (cleanEnv), rate limits off (tests fail
 * authentication on purpose, many times, from one address), then `env`.
 * @returns its URL (http://localhost:PORT) and the process
 * @throws when it exits first or does not listen within `readyTimeoutMs` (it is killed, workers and all)
 */
export async function launchCubby(opts: CubbyOptions): Promise<LaunchedCubby> {
  const proc = await launch({
    name: "cubby",
    command: cubbyCommand(opts.executable, ["serve", "--port", String(opts.port ?? 0), "--data-dir", opts.dataDir]),
    cwd: opts.cwd,
    env: { ...cleanEnv(), RATE_LIMIT_AUTH_FAILURES: "0", RATE_LIMIT_SIGN_INS: "0", ...opts.env },
    // A supervisor starts its workers before it says so (WORKERS > 1): slower on a busy machine.
    ready: /listening on port (\d+)/,
    readyTimeoutMs: opts.readyTimeoutMs,
  });
  const port = Number(proc.readyMatch![1]);
  return { url: `http://localhost:${port}`, port, proc };
}
