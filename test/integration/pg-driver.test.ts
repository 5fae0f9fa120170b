// test-lists: default
// The PostgreSQL driver cubby uses under drizzle (porsager's `postgres`, drizzle-orm/postgres-js),
// kept honest under concurrency: a short run of scripts/pg-driver-stress.ts, where every result
// of many parallel prepared selects, IN lists, raw SQL, updates, deletes and transactions is
// checked against what was written (rows, bytea contents, JavaScript types). The full run and
// the comparison with Bun.sql: `bun scripts/pg-driver-stress.ts`.
import { expect, test } from "bun:test";
import { createTable, openDb, runStress } from "../../scripts/pg-driver-stress.ts";
import { startPostgres } from "../support/postgres.ts";

test("postgres-js through drizzle: 1,500 mixed operations from 64 concurrent workers, every result as written", async () => {
  await using pg = await startPostgres();
  const { db, close } = openDb({ name: "postgres-js", driver: "postgres-js", max: 10 }, pg.url);
  try {
    await createTable(db);
    const r = await runStress(db, { ops: 1_500, workers: 64, seed: 7, opTimeoutMs: 10_000 });
    expect({ ops: r.ops, failures: r.failures, samples: r.samples }).toEqual({ ops: 1_500, failures: {}, samples: {} });
  } finally {
    await close();
  }
}, 20_000);
