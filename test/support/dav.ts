/**
 * Test support for WebDAV (CONTRACT §12): Basic credentials for an API key, a raw request to
 * /dav/, and running a Debian client (litmus, rclone) as a child process that is killed when
 * the test ends, whatever its outcome.
 */
import { spawn } from "node:child_process";

/** `Authorization: Basic` for any user name and an API key as the password (RFC 7617). */
export function basicAuth(key: string, user = "anyone"): string {
  return `Basic ${Buffer.from(`${user}:${key}`).toString("base64")}`;
}

/** A request to the server with Basic credentials for `key` (none when undefined). */
export function davFetch(base: string, key: string | undefined, path: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<Response> {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (key !== undefined) headers.authorization = basicAuth(key);
  return fetch(`${base}${path}`, { ...init, headers });
}

/** What a child process printed and how it ended. */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` with `args` to its end, or kills it (SIGKILL) after `timeoutMs`: it never outlives the call. */
export function run(command: string, args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 120_000);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The path of `name` on PATH, or null. */
export function which(name: string): string | null {
  return Bun.which(name);
}
