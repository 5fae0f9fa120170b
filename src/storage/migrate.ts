/**
 * Applies the SQL migrations embedded from drizzle/ (see scripts/db-generate.ts), using
 * drizzle's own bookkeeping table so drizzle-kit and cubby agree on what has run. Idempotent:
 * applied migrations are skipped; all pending ones run in one transaction.
 */
import { createHash } from "node:crypto";
import { migrations } from "../../drizzle/index.ts";
import type { Db } from "./db.ts";

/**
 * Runs every pending migration of `list` (all embedded migrations by default). Which are pending
 * is read again inside the write transaction (BEGIN IMMEDIATE), so two processes opening a new
 * database at once (a server and a CLI command, or two instances) apply each migration once: the
 * second waits for the first's lock, then finds nothing left to do. When nothing is pending (every
 * start but the first after an upgrade) no write lock is taken.
 * @returns how many were applied
 */
export function migrate(db: Db, list = migrations): number {
  const client = db.$client;
  client.exec(
    `CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`,
  );
  const pendingNow = () => {
    const last = client
      .query<{ created_at: number }, []>(`SELECT created_at FROM "__drizzle_migrations" ORDER BY created_at DESC LIMIT 1`)
      .get();
    return list.filter((m) => last === null || Number(last.created_at) < m.when);
  };
  if (pendingNow().length === 0) return 0;
  return client
    .transaction(() => {
      const pending = pendingNow();
      for (const m of pending) {
        for (const stmt of m.sql.split("--> statement-breakpoint")) {
          if (stmt.trim() !== "") client.exec(stmt);
        }
        client
          .query(`INSERT INTO "__drizzle_migrations" ("hash", "created_at") VALUES (?, ?)`)
          .run(createHash("sha256").update(m.sql).digest("hex"), m.when);
      }
      return pending.length;
    })
    .immediate();
}
