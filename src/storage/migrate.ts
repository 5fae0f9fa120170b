/**
 * Applies the SQL migrations embedded from drizzle/ (see scripts/db-generate.ts), using
 * drizzle's own bookkeeping table so drizzle-kit and cubby agree on what has run. Idempotent:
 * applied migrations are skipped; all pending ones run in one transaction.
 */
import { createHash } from "node:crypto";
import { migrations } from "../../drizzle/index.ts";
import type { Db } from "./db.ts";

/**
 * Runs every pending migration of `list` (all embedded migrations by default).
 * @returns how many were applied
 */
export function migrate(db: Db, list = migrations): number {
  const client = db.$client;
  client.exec(
    `CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`,
  );
  const last = client
    .query<{ created_at: number }, []>(`SELECT created_at FROM "__drizzle_migrations" ORDER BY created_at DESC LIMIT 1`)
    .get();
  const pending = list.filter((m) => last === null || Number(last.created_at) < m.when);
  if (pending.length === 0) return 0;
  client.transaction(() => {
    for (const m of pending) {
      for (const stmt of m.sql.split("--> statement-breakpoint")) {
        if (stmt.trim() !== "") client.exec(stmt);
      }
      client
        .query(`INSERT INTO "__drizzle_migrations" ("hash", "created_at") VALUES (?, ?)`)
        .run(createHash("sha256").update(m.sql).digest("hex"), m.when);
    }
  }).immediate();
  return pending.length;
}
