/**
 * A real nginx in front of cubby for tests: one process (`master_process off`), so stopping it
 * by its PID leaves no worker behind, with its files in a temporary directory.
 */
import fs from "node:fs";
import path from "node:path";
import { freePort, stopPids } from "./processes.ts";
import { tempDir } from "./server.ts";

const NGINX = Bun.which("nginx") ?? "/usr/sbin/nginx";

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
  const user = process.getuid?.() === 0 ? "user root root;" : "";
  fs.writeFileSync(
    path.join(work.path, "nginx.conf"),
    `${user}
master_process off;
worker_processes 1;
pid ${work.path}/nginx.pid;
error_log ${work.path}/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${work.path}/body;
  proxy_temp_path ${work.path}/proxy;
  fastcgi_temp_path ${work.path}/fastcgi;
  uwsgi_temp_path ${work.path}/uwsgi;
  scgi_temp_path ${work.path}/scgi;
  upstream cubby { ${upstreamPorts.map((p) => `server 127.0.0.1:${p};`).join(" ")} }
  server {
    listen 127.0.0.1:${port};
    proxy_request_buffering off;
    proxy_buffering off;
    ${serverExtra}
    location / { proxy_pass http://cubby; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $host; }
  }
}
`,
  );
  const proc = Bun.spawn([NGINX, "-c", path.join(work.path, "nginx.conf"), "-p", work.path, "-g", "daemon off;"], { stderr: "inherit" });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopPids([proc.pid]);
    work[Symbol.dispose]();
  };
  try {
    for (let i = 0; (await fetch(`${url}/healthz`).then((r) => r.status).catch(() => 0)) !== 200; i++) {
      if (i > 500 || proc.exitCode !== null) throw new Error(`nginx did not come up: ${fs.readFileSync(path.join(work.path, "error.log"), "utf8")}`);
      await Bun.sleep(10); // nginx prints nothing when ready: poll its port
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, pid: proc.pid, [Symbol.asyncDispose]: stop };
}
