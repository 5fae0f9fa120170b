/**
 * A real nginx in front of cubby for tests (configured by nginx-config.ts, or by a test's own
 * configuration), in a temporary directory, started through launch.ts. Plain Node.js as well as
 * Bun: the browser tests put it in front of the binary too.
 */
import fs from "node:fs";
import path from "node:path";
import { cleanEnv, launch, tempDir, type Launched } from "./launch.ts";
import { NGINX_FALLBACK, writeNginxConfig } from "./nginx-config.ts";
import { freePort } from "./processes.ts";
import { waitFor } from "./wait.ts";

/** The nginx executable: the first on PATH, else where Debian installs it. */
export const NGINX =
  (process.env.PATH ?? "")
    .split(path.delimiter)
    .map((dir) => path.join(dir, "nginx"))
    .find((file) => fs.existsSync(file)) ?? NGINX_FALLBACK;

export interface RunningNginx extends AsyncDisposable {
  url: string;
  pid: number;
}

/**
 * Starts nginx with `args` (after the executable) and waits until `healthUrl` answers 200 through
 * it (nginx prints nothing when ready), fetched with `init` (e.g. a CA for TLS).
 * @param errorLog nginx's error log, shown when it does not come up
 * @throws when nginx exits or does not answer within 10 s (it is killed first)
 */
export async function launchNginx(args: string[], healthUrl: string, errorLog: string, init: RequestInit = {}): Promise<Launched> {
  const proc = await launch({ name: "nginx", command: [NGINX, ...args], env: cleanEnv() });
  const answers = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`nginx exited (${proc.exitCode ?? proc.signalCode})`);
    return (await fetch(healthUrl, init).then((r) => r.status).catch(() => 0)) === 200;
  };
  try {
    await waitFor(answers, `nginx to answer ${healthUrl}`, { timeoutMs: 10_000, pollMs: 10 });
  } catch (err) {
    await proc.kill9();
    const log = fs.existsSync(errorLog) ? fs.readFileSync(errorLog, "utf8") : "(no error log)";
    throw new Error(`nginx did not come up: ${(err as Error).message}\n${proc.errors()}${log}`);
  }
  return proc;
}

/**
 * Starts nginx proxying to `upstreamPorts` on 127.0.0.1 (round robin), with `serverExtra`
 * directives in its server block (e.g. `client_max_body_size 16m;`), and waits until it answers.
 * @param at the host name of its URL (127.0.0.1 unless given; the browser tests use localhost) and
 *   its port (a free one unless given: the browser tests tell cubby its public URL before)
 */
export async function startNginx(upstreamPorts: number[], serverExtra = "", at: { host?: string; port?: number } = {}): Promise<RunningNginx> {
  const work = tempDir("cubby-nginx-");
  const host = at.host ?? "127.0.0.1";
  const port = at.port ?? (await freePort());
  const url = `http://${host}:${port}`;
  let proc: Launched;
  try {
    proc = await launchNginx(writeNginxConfig(work.path, port, upstreamPorts, serverExtra), `${url}/healthz`, path.join(work.path, "error.log"));
  } catch (err) {
    work[Symbol.dispose]();
    throw err;
  }
  return {
    url,
    pid: proc.pid,
    async [Symbol.asyncDispose]() {
      await proc.kill9();
      work[Symbol.dispose]();
    },
  };
}
