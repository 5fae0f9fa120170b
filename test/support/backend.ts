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
