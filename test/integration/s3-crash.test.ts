// test-lists: postgres-s3
// Crash safety on PostgreSQL + S3 (CONTRACT §6, §7; issue 13): a server SIGKILLed between an
// object's upload and the commit of its row, and between a replace's commit and the deletion of
// the replaced object, loses nothing acknowledged and shows nothing partial after a restart.
// The first kill is placed exactly: a test connection holds a lock on the files table, so the
// server's INSERT waits with its object already complete in the bucket. And an upload that
// fails while its parts are in flight (issue 28: several at once) leaves neither an object nor
// an unfinished multipart upload, as the store's own listing (ListMultipartUploads) shows.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { AwsClient } from "aws4fetch";
import postgres from "postgres";
import { checksumToBase64 } from "../../src/domain/checksum.ts";
import { RawHttp } from "../support/raw-http.ts";
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

/** The keys of the bucket's unfinished multipart uploads (S3 ListMultipartUploads), sorted. */
async function multipartUploads(): Promise<string[]> {
  const aws = new AwsClient({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, region: s3.region, service: "s3", retries: 0 });
  const res = await aws.fetch(`${s3.endpoint}/${s3.bucket}?uploads`);
  const xml = await res.text();
  if (res.status !== 200) throw new Error(`ListMultipartUploads: HTTP ${res.status} ${xml}`);
  return [...xml.matchAll(/<Upload>[\s\S]*?<Key>([^<]*)<\/Key>[\s\S]*?<\/Upload>/g)].map((m) => m[1]!).sort();
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
  // The bucket's key is {S3_PREFIX}blobs/{name}; fsck names the blob.
  expect(fsck.stdout).toContain(`orphan\tblob ${orphans[0]!.replace(/^.*blobs\//, "")}\t`);
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

const MiB = 1024 * 1024;

test("a client that disconnects while parts are in flight leaves no object and no unfinished multipart upload", async () => {
  await using server = await startServer({ dataDir: data.path, env });
  const key = await server.mintKey("gone@example.com");
  const before = await objects();
  expect(await multipartUploads()).toEqual([]);
  await using conn = await RawHttp.connect(Number(new URL(server.url).port));
  const total = 64 * MiB;
  conn.write(`POST /v1/files?name=gone.bin HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-length: ${total}\r\n\r\n`);
  // More than one part, so the multipart upload exists and parts are being sent when we leave.
  const part = crypto.getRandomValues(new Uint8Array(MiB));
  for (let i = 0; i < 24; i++) conn.write(part);
  await waitFor(async () => (await multipartUploads()).length > 0, "the upload's multipart upload in the store", 20_000, 20);
  conn.socket.destroy();
  await waitFor(async () => (await multipartUploads()).length === 0, "the multipart upload to be aborted", 20_000, 50);
  expect(await objects()).toEqual(before);
  expect(await files(server, key)).toEqual([]);
}, 60_000);

test("a multipart upload whose declared CRC32C does not match is answered 400 and aborted on the store", async () => {
  await using server = await startServer({ dataDir: data.path, env });
  const key = await server.mintKey("mismatch@example.com");
  const before = await objects();
  const body = crypto.getRandomValues(new Uint8Array(MiB)).map((b, i) => b ^ i);
  const big = new Uint8Array(23 * MiB);
  for (let at = 0; at < big.byteLength; at += MiB) big.set(body, at);
  const res = await client(server, key).fetch("/v1/files?name=wrong.bin", {
    method: "POST",
    body: big,
    headers: { "x-goog-hash": `crc32c=${checksumToBase64(0x12345678)}` },
  });
  expect(res.status).toBe(400);
  expect(await multipartUploads()).toEqual([]);
  expect(await objects()).toEqual(before);
  expect(await files(server, key)).toEqual([]);
}, 60_000);
