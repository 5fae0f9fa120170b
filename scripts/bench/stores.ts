/**
 * The benchmark's PostgreSQL and S3 store (issue 13): the test harness's own throwaway servers
 * (test/support/postgres.ts, test/support/s3.ts: Debian's PostgreSQL and a one-node Swift with
 * s3api), and the anchors that use the S3 store directly with the client cubby uses
 * (Bun.S3Client), so a row's ratio is what cubby adds on top of the store; and the AWS CLI's
 * `aws s3 cp` (what a user would otherwise run) on the same store.
 */
import { S3Client } from "bun";
import fs from "node:fs";
import path from "node:path";
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
 * Uploads `file` with Bun's own multipart writer, 5 MiB parts, one part in flight, flushed
 * before the next is read (how cubby's S3 store wrote until issue 28).
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

/**
 * The AWS CLI: Debian's `/usr/bin/aws` (`apt-get install awscli`) before any other on PATH (a
 * pyenv shim, say), or undefined when there is none.
 */
export function awsCli(): string | undefined {
  return fs.existsSync("/usr/bin/aws") ? "/usr/bin/aws" : (Bun.which("aws") ?? undefined);
}

/**
 * Runs `aws s3 cp from to` against the store with its default transfer settings (8 MiB parts, 10
 * requests at once); see {@link awsS3}.
 * @returns seconds from the CLI's start to its exit (its start-up included)
 */
export function awsCp(stores: BenchStores, dir: string, from: string, to: string): Promise<number> {
  return awsS3(stores, dir, ["cp", "--only-show-errors", from, to]);
}

/**
 * The CLI's start-up and one request: `aws s3 ls` of a prefix that holds nothing, the time an
 * `aws s3 cp` spends besides its transfer (Python importing botocore, mostly).
 * @returns seconds
 */
export function awsStartup(stores: BenchStores, dir: string): Promise<number> {
  return awsS3(stores, dir, ["ls", `s3://${stores.s3.bucket}/nothing-here/`]);
}

/** `aws s3 ARGS` against the store (see {@link awsS3At}). */
async function awsS3(stores: BenchStores, dir: string, args: string[]): Promise<number> {
  return awsS3At(stores.s3, dir, args);
}

/** An S3 endpoint the AWS CLI is pointed at: the store's, or cubby's own (CONTRACT §16). */
export interface S3Target {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

/**
 * Runs `aws s3 ARGS` (or `aws s3api …` when ARGS start with "s3api") against `target`,
 * configured by environment only: the credentials, the region, path-style addressing (a config
 * file in `dir`), and no checksum trailers (CLIs from 2.23 on send CRCs in aws-chunked bodies by
 * default, which Swift's s3api does not read; older ones ignore it).
 * @returns seconds from the CLI's start to its exit (its start-up included)
 * @throws on a non-zero exit
 */
export async function awsS3At(target: S3Target, dir: string, args: string[]): Promise<number> {
  const config = path.join(dir, "aws-config");
  if (!fs.existsSync(config)) fs.writeFileSync(config, "[default]\ns3 =\n  addressing_style = path\n");
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: dir,
    AWS_ACCESS_KEY_ID: target.accessKeyId,
    AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
    AWS_DEFAULT_REGION: target.region,
    AWS_CONFIG_FILE: config,
    AWS_SHARED_CREDENTIALS_FILE: path.join(dir, "aws-credentials-none"),
    AWS_EC2_METADATA_DISABLED: "true",
    AWS_REQUEST_CHECKSUM_CALCULATION: "when_required",
    AWS_RESPONSE_CHECKSUM_VALIDATION: "when_required",
  };
  const started = performance.now();
  const command = args[0] === "s3api" ? args : ["s3", ...args];
  const proc = Bun.spawn([awsCli()!, "--endpoint-url", target.endpoint, ...command], { env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  // `aws s3 ls` of an empty prefix exits 1: it found nothing, which is what was asked.
  if (code !== 0 && !(args[0] === "ls" && code === 1 && err === "")) throw new Error(`aws ${command.join(" ")} failed (${code}): ${err}${out}`);
  return (performance.now() - started) / 1000;
}
