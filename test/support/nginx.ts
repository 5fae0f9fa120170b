/** A real nginx in front of cubby for tests (configured by nginx-config.ts), in a temporary directory. */
import fs from "node:fs";
import path from "node:path";
import { NGINX_FALLBACK, writeNginxConfig } from "./nginx-config.ts";
import { freePort, stopPids } from "./processes.ts";
import { tempDir } from "./server.ts";
import { waitFor } from "./wait.ts";

const NGINX = Bun.which("nginx") ?? NGINX_FALLBACK;

export interface RunningNginx extends AsyncDisposable {
  url: string;
  pid: number;
}

/**
 * Starts nginx proxying to `upstreamPorts` on 127.0.0.1 (round robin), with `serverExtra`
 * directives in its server block (e.g. `client_max_body_size 16m;`), and waits until it answers.
 */
export async function startNginx(upstreamPorts: number[], serverExtra = ""): Promise<RunningNginx> {
  const work = tempDir("cubby-nginx-");
  const port = await freePort();
  const proc = Bun.spawn([NGINX, ...writeNginxConfig(work.path, port, upstreamPorts, serverExtra)], { stderr: "inherit" });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopPids([proc.pid]);
    work[Symbol.dispose]();
  };
  try {
    // nginx prints nothing when ready: poll its port.
    const answers = async () => {
      if (proc.exitCode !== null) throw new Error("nginx exited");
      return (await fetch(`${url}/healthz`).then((r) => r.status).catch(() => 0)) === 200;
    };
    await waitFor(answers, "nginx to answer", 10_000, 10).catch(() => {
      throw new Error(`nginx did not come up: ${fs.readFileSync(path.join(work.path, "error.log"), "utf8")}`);
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, pid: proc.pid, [Symbol.asyncDispose]: stop };
}
