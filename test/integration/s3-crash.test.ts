// Crash safety on PostgreSQL + S3 (CONTRACT §6, §7; issue 13): a server SIGKILLed between an
// object's upload and the commit of its row, and between a replace's commit and the deletion of
// the replaced object, loses nothing acknowledged and shows nothing partial after a restart.
// The first kill is placed exactly: a test connection holds a lock on the files table, so the
// server's INSERT waits with its object already complete in the bucket.
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { startPostgres } from "../support/postgres.ts";
import { startS3 } from "../support/s3.ts";
import { client, runCli, startServer, tempDir, type FileJson } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";

let pg: Awaited<ReturnType<typeof startPostgres>>;
let s3: Awaited<ReturnType<typeof startS3>>;
let env: Record<string, string>;
let data: { path: string } & Disposable;

beforeAll(async () => {
  [pg, s3] = await Promise.all([startPostgres(), startS3()]);
  env = {
    DATABASE_URL: await pg.createDatabase("crash"),
    S3_BUCKET: s3.bucket,
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: s3.region,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
  data = tempDir();
}, 120_000);
afterAll(async () => {
  await Promise.all([pg?.stop(), s3?.stop()]);
  data?.[Symbol.dispose]();
});

/** Every object key in the bucket, sorted. */
async function objects(): Promise<string[]> {
  const c = new Bun.S3Client({ bucket: s3.bucket, endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey });
  return ((await c.list({})).contents ?? []).map((o) => o.key).sort();
}

async function files(server: { url: string }, key: string): Promise<FileJson[]> {
  return ((await (await client(server, key).fetch("/v1/files")).json()) as { files: FileJson[] }).files;
}

test("SIGKILL between the object's upload and the commit: no file, the object is an orphan fsck reports", async () => {
  const first = await startServer({ dataDir: data.path, env });
  const key = await first.mintKey("crash@example.com");
  const before = await objects();
  const sql = postgres(env.DATABASE_URL!, { max: 1, onnotice: () => {} });
  try {
    const locked = sql.begin(async (tx) => {
      await tx`LOCK TABLE files IN EXCLUSIVE MODE`;
      const upload = client(first, key).fetch("/v1/files?name=never.txt", { method: "POST", body: new Uint8Array(6 * 1024 * 1024) }).catch(() => "connection lost");
      // The object is complete in the bucket; the row's INSERT waits for the lock.
      await waitFor(async () => (await objects()).length !== before.length, "the upload's object in the bucket", 10_000, 10);
      await first.kill9();
      expect(await upload).toBe("connection lost");
    });
    await locked;
  } finally {
    await sql.end();
  }
  await using second = await startServer({ dataDir: data.path, env });
  expect(await files(second, key)).toEqual([]);
  const orphans = (await objects()).filter((k) => !before.includes(k));
  expect(orphans.length).toBe(1);
  // Younger than an hour: kept (it could be another instance's upload), and reported.
  const fsck = await runCli(["fsck", "--repair", "--data-dir", data.path], { env });
  expect(fsck.stdout).toContain(`orphan\tblob ${orphans[0]!.replace(/^blobs\//, "")}\t`);
  expect((await objects()).filter((k) => !before.includes(k))).toEqual(orphans);
}, 60_000);

test("SIGKILL between a replace's commit and the deletion of the old object: the new content is served, the old object is only an orphan", async () => {
  const first = await startServer({ dataDir: data.path, env });
  const key = await first.mintKey("replace@example.com");
  const file = await client(first, key).upload("old content", "?visibility=public");
  const withOld = await objects();
  const res = await client(first, key).fetch(`/v1/files/${file.id}/content`, { method: "PUT", body: "new content" });
  expect(res.status).toBe(200);
  // The old object is deleted 30 s after the commit (readers' grace): killed well before.
  await first.kill9();
  await using second = await startServer({ dataDir: data.path, env });
  expect(await (await fetch(`${second.url}/${file.id}`)).text()).toBe("new content");
  const now = await objects();
  expect(now.length).toBe(withOld.length + 1);
  expect(now.filter((k) => withOld.includes(k))).toEqual(withOld);
  const fsck = await runCli(["fsck", "--data-dir", data.path], { env });
  expect(fsck.code).toBe(0);
  expect(fsck.stdout).toContain("all well");
}, 60_000);
