// test-lists: default
// Three `cubby serve` processes on one PostgreSQL and one S3 store behind a real nginx (round
// robin) behave as one server (CONTRACT §7, issue 13): what one instance commits, every other
// serves on the next request; a key revoked through the CLI is refused everywhere; an instance
// killed mid-upload leaves nothing visible and the others keep serving; an S3 multipart upload's
// parts may go to different instances.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { AwsClient } from "aws4fetch";
import { startNginx, type RunningNginx } from "../support/nginx.ts";
import { startPostgres } from "../support/postgres.ts";
import { startS3 } from "../support/s3.ts";
import { client, runCli, startServer, type FileJson, type RunningServer } from "../support/server.ts";

let pg: Awaited<ReturnType<typeof startPostgres>>;
let s3: Awaited<ReturnType<typeof startS3>>;
let env: Record<string, string>;
let instances: RunningServer[];
let nginx: RunningNginx;
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
    // The default limit (test servers turn it off): one test counts failures across instances.
    RATE_LIMIT_AUTH_FAILURES: "20",
  };
  // Started together: the migrations run once under their advisory lock.
  instances = await Promise.all([0, 1, 2].map(() => startServer({ env })));
  // Bodies of any size: the test kills an instance mid-upload.
  nginx = await startNginx(instances.map((s) => s.port), "client_max_body_size 0;");
  balancer = nginx.url;
}, 120_000);

afterAll(async () => {
  await nginx?.[Symbol.asyncDispose](); // one process (master_process off): nothing of nginx outlives it
  await Promise.all((instances ?? []).map((s) => s[Symbol.asyncDispose]()));
  await Promise.all([pg?.stop(), s3?.stop()]);
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

test("S3 (CONTRACT §16): a multipart upload's parts sent to three instances, completed through a fourth door, read from each; a revoked key refused by all", async () => {
  const [id, secret] = (await instances[0]!.mintKey("s3multi@example.com", "--s3")).split("\n").map((l) => l.slice(l.indexOf("=") + 1)) as [string, string];
  const s3 = new AwsClient({ accessKeyId: id, secretAccessKey: secret, service: "s3", region: "us-east-1", retries: 0 });
  expect((await s3.fetch(`${instances[1]!.url}/multi`, { method: "PUT" })).status).toBe(200);
  const made = await s3.fetch(`${instances[2]!.url}/multi/big/joined.bin?uploads`, { method: "POST" });
  const uploadId = /<UploadId>([^<]*)</.exec(await made.text())![1]!;
  const parts = [0, 1, 2].map((i) => Buffer.alloc(i === 2 ? 1000 : 5 * 1024 * 1024, 65 + i));
  const etags = await Promise.all(
    parts.map(async (body, i) => {
      const res = await s3.fetch(`${instances[i]!.url}/multi/big/joined.bin?partNumber=${i + 1}&uploadId=${uploadId}`, { method: "PUT", body });
      expect(res.status).toBe(200);
      return res.headers.get("etag")!;
    }),
  );
  const complete = `<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join("")}</CompleteMultipartUpload>`;
  expect((await s3.fetch(`${balancer}/multi/big/joined.bin?uploadId=${uploadId}`, { method: "POST", body: complete })).status).toBe(200);
  for (const s of instances) expect(Buffer.from(await (await s3.fetch(`${s.url}/multi/big/joined.bin`)).arrayBuffer()).equals(Buffer.concat(parts))).toBe(true);
  expect((await runCli(["keys", "revoke", id, "--data-dir", instances[0]!.dataDir], { env })).code).toBe(0);
  for (const s of instances) expect((await s3.fetch(`${s.url}/multi?list-type=2`)).status).toBe(403);
});

test("a login link opened through every instance and used at once through all three signs in exactly once", async () => {
  for (let round = 0; round < 4; round++) {
    const minted = await runCli(["login-link", "--email", `multi-link${round}@example.com`, "--data-dir", instances[0]!.dataDir], { env });
    expect(minted.code).toBe(0);
    const url = new URL(minted.stdout.trim());
    // Opening it (its page) uses nothing up, on any instance.
    expect(await Promise.all(instances.map(async (s) => (await fetch(`${s.url}${url.pathname}`, { redirect: "manual" })).status))).toEqual([200, 200, 200]);
    const token = url.pathname.split("/").pop()!;
    const use = async (i: number) =>
      (
        await fetch(`${instances[i % 3]!.url}/auth/link`, {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
          body: `token=${token}`,
        })
      ).status;
    const statuses = await Promise.all(Array.from({ length: 24 }, (_, i) => use(i)));
    expect(statuses.sort()).toEqual([303, ...Array<number>(23).fill(404)]);
  }
});

test("failed authentications are counted once across the instances: 30 wrong keys at once over three, limit 20: 20 checked", async () => {
  // From 127.0.0.2, so the other tests' address keeps its budget.
  const from = (s: RunningServer) => `http://127.0.0.2:${s.port}`;
  const guess = async (s: RunningServer, i: number) =>
    (await fetch(`${from(s)}/v1/files`, { headers: { authorization: `Bearer cubby_wrong${String(i).padStart(40, "0")}` } })).status;
  const statuses = await Promise.all(Array.from({ length: 30 }, (_, i) => guess(instances[i % 3]!, i)));
  expect({ checked: statuses.filter((s) => s === 401).length, limited: statuses.filter((s) => s === 429).length }).toEqual({ checked: 20, limited: 10 });
  expect(await Promise.all(instances.map((s, i) => guess(s, 100 + i)))).toEqual([429, 429, 429]);
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
