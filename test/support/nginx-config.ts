/**
 * The nginx configuration tests put in front of cubby (started by nginx.ts, for the Bun tests
 * and the browser tests alike): one process (`master_process off`), so stopping it by its PID
 * leaves no worker behind, with every file under `dir`.
 */
import fs from "node:fs";
import path from "node:path";

/**
 * Writes `dir/nginx.conf`: nginx on 127.0.0.1:`port` proxying to `upstreamPorts` on 127.0.0.1
 * (round robin), streaming bodies both ways, with `serverExtra` directives in its server block
 * (e.g. `client_max_body_size 16m;`).
 * @returns the arguments to start nginx with (after the executable)
 */
export function writeNginxConfig(dir: string, port: number, upstreamPorts: number[], serverExtra = ""): string[] {
  const user = process.getuid?.() === 0 ? "user root root;" : "";
  const conf = path.join(dir, "nginx.conf");
  fs.writeFileSync(
    conf,
    `${user}
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream cubby { ${upstreamPorts.map((p) => `server 127.0.0.1:${p};`).join(" ")} }
  server {
    listen 127.0.0.1:${port};
    proxy_request_buffering off;
    proxy_buffering off;
    ${serverExtra}
    location / { proxy_pass http://cubby; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $http_host; }
  }
}
`,
  );
  return ["-c", conf, "-p", dir, "-g", "daemon off;"];
}

/** Where Debian installs nginx when it is not on PATH. */
export const NGINX_FALLBACK = "/usr/sbin/nginx";
