/**
 * Rate-limit windows shared by every process and instance (CONTRACT §10, "Many processes are
 * one"): one row per limited key (`auth:<address>`, `sign-in:<address>`) with the count of its
 * current fixed window and when that window ends.
 *
 * The windows are kept apart from the metadata tables on purpose:
 * - on SQLite in their own database file, DATA_DIR/rate-limits.db: a write to cubby.db moves the
 *   version every read cache trusts (change-watch.ts), so counting an attacker's guesses there
 *   would empty every worker's caches at each guess;
 * - on PostgreSQL in an UNLOGGED table outside the migrations, with no change trigger: counts are
 *   worth nothing after a crash (PostgreSQL empties an unlogged table then), and nothing else
 *   reads them.
 * Neither is exported, backed up or migrated: losing them costs an attacker's window at most.
 *
 * Both answer with one statement (an upsert that returns the new count), so concurrent charges
 * from any number of processes are counted exactly once each.
 */
import type { Database } from "bun:sqlite";
import path from "node:path";
import { sql } from "drizzle-orm";
import { openSqliteFile } from "./db.ts";
import type { PgDb } from "./pg-metadata.ts";
import type { RateLimitTable, WindowCount } from "./ports.ts";

/** {@link RateLimitTable} in DATA_DIR/rate-limits.db, opened (and created) at first use. */
export class SqliteRateLimits implements RateLimitTable {
  private db: Database | undefined;

  constructor(private readonly dataDir: string) {}

  private open(): Database {
    if (this.db !== undefined) return this.db;
    // A count lost to a power cut only gives an attacker part of one window back.
    const db = openSqliteFile(path.join(this.dataDir, "rate-limits.db"), "NORMAL");
    db.exec("CREATE TABLE IF NOT EXISTS rate_limits (key TEXT PRIMARY KEY, reset_at INTEGER NOT NULL, count INTEGER NOT NULL) WITHOUT ROWID");
    this.db = db;
    return db;
  }

  async charge(key: string, now: number, windowMicros: number): Promise<WindowCount> {
    const row = this.open()
      .query<{ count: number; reset_at: number }, [string, number, number]>(
        `INSERT INTO rate_limits (key, reset_at, count) VALUES (?1, ?2 + ?3, 1)
         ON CONFLICT (key) DO UPDATE SET
           count = CASE WHEN reset_at <= ?2 THEN 1 ELSE count + 1 END,
           reset_at = CASE WHEN reset_at <= ?2 THEN excluded.reset_at ELSE reset_at END
         RETURNING count, reset_at`,
      )
      .get(key, now, windowMicros)!;
    return { count: row.count, resetAt: row.reset_at };
  }

  async peek(key: string, now: number): Promise<WindowCount | undefined> {
    const row = this.open().query<{ count: number; reset_at: number }, [string, number]>("SELECT count, reset_at FROM rate_limits WHERE key = ?1 AND reset_at > ?2").get(key, now);
    return row === null ? undefined : { count: row.count, resetAt: row.reset_at };
  }

  async refund(key: string, resetAt: number): Promise<void> {
    this.open().query("UPDATE rate_limits SET count = count - 1 WHERE key = ?1 AND reset_at = ?2 AND count > 0").run(key, resetAt);
  }

  async prune(now: number): Promise<number> {
    if (this.db === undefined) return 0;
    return this.db.query("DELETE FROM rate_limits WHERE reset_at <= ?1").run(now).changes;
  }

  async close(): Promise<void> {
    this.db?.close();
    this.db = undefined;
  }
}

/** pg_advisory_xact_lock key for creating the table: instances starting together create it once. */
const CREATE_LOCK = 0x63756272; // "cubr"

/** {@link RateLimitTable} in PostgreSQL's UNLOGGED table cubby_rate_limits, created at the first charge. */
export class PgRateLimits implements RateLimitTable {
  private ready: Promise<void> | undefined;

  constructor(private readonly db: PgDb) {}

  private table(): Promise<void> {
    this.ready ??= this.db
      .transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(${CREATE_LOCK})`);
        await tx.execute(sql`CREATE UNLOGGED TABLE IF NOT EXISTS cubby_rate_limits (key text PRIMARY KEY, reset_at bigint NOT NULL, count integer NOT NULL)`);
      })
      .catch((err: unknown) => {
        this.ready = undefined;
        throw err;
      });
    return this.ready;
  }

  async charge(key: string, now: number, windowMicros: number): Promise<WindowCount> {
    await this.table();
    const rows = (await this.db.execute(sql`
      INSERT INTO cubby_rate_limits AS w (key, reset_at, count) VALUES (${key}, ${now + windowMicros}, 1)
      ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN w.reset_at <= ${now} THEN 1 ELSE w.count + 1 END,
        reset_at = CASE WHEN w.reset_at <= ${now} THEN excluded.reset_at ELSE w.reset_at END
      RETURNING count, reset_at`)) as unknown as { count: number | string; reset_at: number | string }[];
    const row = rows[0]!;
    return { count: Number(row.count), resetAt: Number(row.reset_at) };
  }

  async peek(key: string, now: number): Promise<WindowCount | undefined> {
    await this.table();
    const rows = (await this.db.execute(sql`SELECT count, reset_at FROM cubby_rate_limits WHERE key = ${key} AND reset_at > ${now}`)) as unknown as { count: number | string; reset_at: number | string }[];
    const row = rows[0];
    return row === undefined ? undefined : { count: Number(row.count), resetAt: Number(row.reset_at) };
  }

  async refund(key: string, resetAt: number): Promise<void> {
    await this.table();
    await this.db.execute(sql`UPDATE cubby_rate_limits SET count = count - 1 WHERE key = ${key} AND reset_at = ${resetAt} AND count > 0`);
  }

  async prune(now: number): Promise<number> {
    if (this.ready === undefined) return 0;
    await this.ready;
    const rows = (await this.db.execute(sql`DELETE FROM cubby_rate_limits WHERE reset_at <= ${now} RETURNING key`)) as unknown as unknown[];
    return rows.length;
  }

  async close(): Promise<void> {
    // The store's connections are the metadata store's; it closes them.
  }
}
