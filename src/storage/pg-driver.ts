/**
 * The PostgreSQL driver under drizzle: `postgres` (porsager) through drizzle's `postgres-js`,
 * chosen by a concurrency stress test (docs/design.md, "PostgreSQL driver").
 */
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import type { PgDb, PgDriver } from "./pg-metadata.ts";
import * as schema from "./pg-schema.ts";

/** Connections per process: the pool is shared by every request. */
const POOL_SIZE = 10;

/**
 * Connects to `url` (connections open lazily; the first query reports an unreachable server).
 * Notices are dropped: `CREATE TABLE IF NOT EXISTS` on every start would print one.
 */
export function connectPostgres(url: string): PgDriver {
  const client = postgres(url, { max: POOL_SIZE, onnotice: () => {}, connect_timeout: 10 });
  return {
    db: drizzle({ client, schema }) as unknown as PgDb,
    listen: (channel, onNotify, onListen) => client.listen(channel, onNotify, onListen),
    end: () => client.end({ timeout: 5 }),
  };
}
