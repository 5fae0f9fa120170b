/**
 * The benchmark's PostgreSQL and S3 store (issue 13): the test harness's own throwaway servers
 * (test/support/postgres.ts, test/support/s3.ts: Debian's PostgreSQL and a one-node Swift with
 * s3api), and the anchors that use the S3 store directly with the client cubby uses
 * (Bun.S3Client), so a row's ratio is what cubby adds on top of the store.
 */
import { S3Client } from "bun";
import fs from "node:fs";
import { haveSwift, startS3 } from "../../test/support/s3.ts";
import { postgresBinDir, startPostgres } from "../../test/support/postgres.ts";

/** True when PostgreSQL and Swift are installed (`.ci/run` installs them). */
export function storesInstalled(): boolean {
  try {
    postgresBinDir();
  } catch {
    return false;
  }
  return haveSwift();
}

/** Running stores: the environment that points cubby at them, and the bucket for Bun.S3Client. */
export interface BenchStores extends AsyncDisposable {
  env: Record<string, string>;
  s3: { endpoint: string; bucket: string; region: string; accessKeyId: string; secretAccessKey: string };
}

/**
 * Starts PostgreSQL and Swift; disposing stops both by PID. cubby gets the prefix `cubby/`; the
 * direct anchors write under `direct/`.
 */
export async function startStores(): Promise<BenchStores> {
  const [pg, s3] = await Promise.all([startPostgres(), startS3()]);
  return {
    env: {
      DATABASE_URL: await pg.createDatabase("bench"),
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: s3.region,
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      S3_PREFIX: "cubby/",
    },
    s3: { endpoint: s3.endpoint, bucket: s3.bucket, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    async [Symbol.asyncDispose]() {
      await Promise.all([pg.stop(), s3.stop()]);
    },
  };
}

const PART_BYTES = 5 * 1024 * 1024;

/**
 * Uploads `file` as cubby's S3 store does: a multipart upload in 5 MiB parts, one part in
 * flight, flushed before the next is read.
 * @returns the object's key
 */
export async function s3DirectUpload(client: S3Client, file: string): Promise<string> {
  const key = `direct/${crypto.randomUUID()}`;
  const writer = client.file(key).writer({ partSize: PART_BYTES, queueSize: 1, retry: 3 });
  let pending = 0;
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 256 * 1024 }) as AsyncIterable<Uint8Array>) {
    writer.write(chunk);
    pending += chunk.byteLength;
    if (pending >= PART_BYTES) {
      await writer.flush();
      pending = 0;
    }
  }
  await writer.end();
  return key;
}

/** Streams the whole object at `key` and drops it: MB/s (10^6 bytes a second). @throws on a short read */
export async function s3DownloadSpeed(client: S3Client, key: string, size: number): Promise<number> {
  const started = performance.now();
  let received = 0;
  for await (const chunk of client.file(key).stream()) received += chunk.byteLength;
  if (received !== size) throw new Error(`S3 GET of ${key} returned ${received} of ${size} bytes`);
  return size / ((performance.now() - started) / 1000) / 1e6;
}

/** GETs the object at `key` whole from `concurrency` loops for `seconds`: requests a second. */
export async function s3GetRate(client: S3Client, key: string, concurrency: number, seconds: number): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await client.file(key).arrayBuffer();
        done++;
      }
    }),
  );
  return done / seconds;
}
