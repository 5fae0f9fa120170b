/**
 * Which stores the tests run against. `CUBBY_TEST_BACKEND=postgres-s3` runs every server and CLI
 * command a test starts on PostgreSQL and an S3 store (Swift + s3api), both real and started
 * here once per test process; unset, they use SQLite and files in their data directory.
 *
 * Each data directory gets its own database and its own key prefix in one shared bucket, so a
 * test that restarts a server on the same data directory finds its data again, and tests do not
 * see each other's. The shared servers are stopped after the last test (test/support/preload.ts)
 * and, should the process end otherwise, by the harness's exit handlers.
 */
import { Database } from "bun:sqlite";
import { S3Client } from "bun";
import postgres from "postgres";
import fs from "node:fs";
import path from "node:path";
import { startPostgres } from "./postgres.ts";
import { startS3 } from "./s3.ts";

export type Backend = "sqlite-disk" | "postgres-s3";

/** The stores of this test run. */
export const BACKEND: Backend = process.env.CUBBY_TEST_BACKEND === "postgres-s3" ? "postgres-s3" : "sqlite-disk";

type Shared = { pg: Awaited<ReturnType<typeof startPostgres>>; s3: Awaited<ReturnType<typeof startS3>> };
let shared: Promise<Shared> | undefined;
const envByDataDir = new Map<string, Promise<Record<string, string>>>();
let databases = 0;

/**
 * The environment that points cubby at this run's stores for `dataDir`: empty on SQLite and
 * disk; on PostgreSQL and S3 a fresh database and key prefix the first time a data directory is
 * seen, the same ones after.
 */
export function backendEnv(dataDir: string): Promise<Record<string, string>> {
  if (BACKEND === "sqlite-disk") return Promise.resolve({});
  let env = envByDataDir.get(dataDir);
  if (env === undefined) {
    env = (async () => {
      const { pg, s3 } = await (shared ??= startShared());
      const n = ++databases;
      return {
        DATABASE_URL: await pg.createDatabase(`t${n}`),
        S3_BUCKET: s3.bucket,
        S3_ENDPOINT: s3.endpoint,
        S3_REGION: s3.region,
        S3_ACCESS_KEY_ID: s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
        S3_PREFIX: `t${n}/`,
      };
    })();
    envByDataDir.set(dataDir, env);
  }
  return env;
}

/** Starts the shared servers now (the preload does, before the first file, with time to spare). */
export async function startBackend(): Promise<void> {
  if (BACKEND === "postgres-s3") await (shared ??= startShared());
}

async function startShared(): Promise<Shared> {
  const [pg, s3] = await Promise.all([startPostgres(), startS3()]);
  return { pg, s3 };
}

/** Stops the shared servers, if any were started. */
export async function stopBackend(): Promise<void> {
  if (shared === undefined) return;
  const { pg, s3 } = await shared;
  shared = undefined;
  envByDataDir.clear();
  await Promise.all([pg.stop(), s3.stop()]);
}

/**
 * Every blob the stores of `dataDir` hold, finished or not, sorted: on disk the files under
 * blobs/, tmp/ (as `tmp/NAME`) and the partial bytes of resumable uploads (`uploads/ID`), on S3
 * the keys under the data directory's prefix. A request that failed must leave this unchanged.
 */
export async function blobNames(dataDir: string): Promise<string[]> {
  if (BACKEND === "sqlite-disk") {
    const list = (dir: string) => (fs.existsSync(path.join(dataDir, dir)) ? fs.readdirSync(path.join(dataDir, dir)) : []);
    return [...list("blobs"), ...list("tmp").map((n) => `tmp/${n}`), ...list("uploads").map((n) => `uploads/${n}`)].sort();
  }
  const env = await backendEnv(dataDir);
  const client = new S3Client({ bucket: env.S3_BUCKET, endpoint: env.S3_ENDPOINT, region: env.S3_REGION, accessKeyId: env.S3_ACCESS_KEY_ID, secretAccessKey: env.S3_SECRET_ACCESS_KEY });
  const keys: string[] = [];
  let continuationToken: string | undefined;
  do {
    const page = await client.list({ prefix: env.S3_PREFIX, continuationToken });
    for (const o of page.contents ?? []) keys.push(o.key.slice(env.S3_PREFIX!.length));
    continuationToken = page.isTruncated ? page.nextContinuationToken : undefined;
  } while (continuationToken !== undefined);
  return keys.sort();
}

/**
 * Runs one SQL statement on the metadata store of `dataDir` from this test process (another
 * connection than the server's): SQLite's `cubby.db`, or the data directory's PostgreSQL
 * database. Write `?` for parameters; they become `$1`, `$2`… on PostgreSQL.
 * @returns the rows, with the columns as SQL named them
 */
export async function runSql<Row = Record<string, unknown>>(dataDir: string, query: string, ...params: (string | number)[]): Promise<Row[]> {
  if (BACKEND === "sqlite-disk") {
    const db = new Database(path.join(dataDir, "cubby.db"));
    try {
      db.exec("PRAGMA busy_timeout = 5000");
      return db.query<Row, (string | number)[]>(query).all(...params);
    } finally {
      db.close();
    }
  }
  let n = 0;
  const sql = postgres((await backendEnv(dataDir)).DATABASE_URL!, { max: 1, onnotice: () => {} });
  try {
    return (await sql.unsafe(query.replace(/\?/g, () => `$${++n}`), params)) as unknown as Row[];
  } finally {
    await sql.end();
  }
}
