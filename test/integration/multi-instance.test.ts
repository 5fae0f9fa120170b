// Three `cubby serve` processes on one PostgreSQL and one S3 store behind a real nginx (round
// robin) behave as one server (CONTRACT §7, issue 13): what one instance commits, every other
// serves on the next request; a key revoked through the CLI is refused everywhere; an instance
// killed mid-upload leaves nothing visible and the others keep serving.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "../support/processes.ts";
import { startPostgres } from "../support/postgres.ts";
import { startS3 } from "../support/s3.ts";
import { client, runCli, startServer, tempDir, type FileJson, type RunningServer } from "../support/server.ts";

const NGINX = Bun.which("nginx") ?? "/usr/sbin/nginx";

let pg: Awaited<ReturnType<typeof startPostgres>>;
let s3: Awaited<ReturnType<typeof startS3>>;
let env: Record<string, string>;
let instances: RunningServer[];
let nginx: Subprocess;
let work: { path: string } & Disposable;
let balancer: string;

beforeAll(async () => {
  [pg, s3] = await Promise.all([startPostgres(), startS3()]);
  env = {
    DATABASE_URL: await pg.createDatabase("multi"),
    S3_BUCKET: s3.bucket,
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: s3.region,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
  // Started together: the migrations run once under their advisory lock.
  instances = await Promise.all([0, 1, 2].map(() => startServer({ env })));
  work = tempDir("cubby-nginx-");
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
  upstream cubby { ${instances.map((s) => `server 127.0.0.1:${s.port};`).join(" ")} }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;
    proxy_request_buffering off;
    proxy_buffering off;
    location / { proxy_pass http://cubby; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $host; }
  }
}
`,
  );
  nginx = Bun.spawn([NGINX, "-c", path.join(work.path, "nginx.conf"), "-p", work.path, "-g", "daemon off;"], { stderr: "inherit" });
  balancer = `http://127.0.0.1:${port}`;
  for (let i = 0; (await fetch(`${balancer}/healthz`).then((r) => r.status).catch(() => 0)) !== 200; i++) {
    if (i > 500) throw new Error("nginx did not come up");
    await Bun.sleep(10); // nginx prints nothing when ready: poll its port
  }
}, 120_000);

afterAll(async () => {
  nginx?.kill(); // one process (master_process off): nothing of nginx outlives it
  await nginx?.exited;
  await Promise.all((instances ?? []).map((s) => s[Symbol.asyncDispose]()));
  await Promise.all([pg?.stop(), s3?.stop()]);
  work?.[Symbol.dispose]();
});

test("a file created through one instance is served by all, at once and through nginx", async () => {
  const key = await instances[0]!.mintKey("multi@example.com");
  const file = await client(instances[1]!, key).upload("shared bytes", "?visibility=public&name=shared.txt");
  // Every instance, directly, on its very next request.
  for (const s of instances) expect(await (await fetch(`${s.url}/${file.id}`)).text()).toBe("shared bytes");
  // Round robin spreads 30 requests over all three.
  const bodies = await Promise.all(Array.from({ length: 30 }, async () => (await fetch(`${balancer}/${file.id}`)).text()));
  expect(new Set(bodies)).toEqual(new Set(["shared bytes"]));
  // A replace through one is what every other serves next.
  expect((await client(instances[2]!, key).fetch(`/v1/files/${file.id}/content`, { method: "PUT", body: "new bytes" })).status).toBe(200);
  for (const s of instances) expect(await (await fetch(`${s.url}/${file.id}`)).text()).toBe("new bytes");
  const listed = (await (await client({ url: balancer }, key).fetch("/v1/files")).json()) as { files: FileJson[] };
  expect(listed.files.map((f) => f.id)).toEqual([file.id]);
});

test("a key revoked through the CLI is refused by every instance on its next request", async () => {
  const key = await instances[0]!.mintKey("revoked@example.com");
  // Every instance has the key cached as valid.
  for (const s of instances) expect((await client(s, key).fetch("/v1/files")).status).toBe(200);
  const listed = await runCli(["keys", "list", "--email", "revoked@example.com", "--data-dir", instances[0]!.dataDir], { env });
  const id = listed.stdout.split("\n")[1]!.split("\t")[0]!;
  expect((await runCli(["keys", "revoke", id, "--data-dir", instances[0]!.dataDir], { env })).code).toBe(0);
  for (const s of instances) expect((await client(s, key).fetch("/v1/files")).status).toBe(401);
});

test("an instance killed mid-upload leaves nothing visible; the others keep serving", async () => {
  const key = await instances[0]!.mintKey("killed@example.com");
  const kept = await client(instances[0]!, key).upload("kept", "?visibility=public");
  const victim = instances[2]!;
  let sent = 0;
  let killed = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= 12 * 1024 * 1024 && !killed) {
        killed = true;
        await victim.kill9();
      }
      if (sent >= 64 * 1024 * 1024) return controller.close();
      controller.enqueue(new Uint8Array(256 * 1024));
      sent += 256 * 1024;
    },
  });
  const outcome = await fetch(`${victim.url}/v1/files`, { method: "POST", body, duplex: "half", headers: { authorization: `Bearer ${key}` } } as RequestInit).then(
    (r) => r.status,
    () => "connection lost",
  );
  expect(killed).toBe(true);
  expect(outcome).toBe("connection lost");
  for (const s of instances.slice(0, 2)) {
    expect(await (await fetch(`${s.url}/${kept.id}`)).text()).toBe("kept");
    const files = ((await (await client(s, key).fetch("/v1/files")).json()) as { files: FileJson[] }).files;
    expect(files.map((f) => f.id)).toEqual([kept.id]);
  }
  // nginx passes over the dead instance.
  const statuses = await Promise.all(Array.from({ length: 12 }, async () => (await fetch(`${balancer}/${kept.id}`)).status));
  expect(new Set(statuses)).toEqual(new Set([200]));
}, 60_000);
