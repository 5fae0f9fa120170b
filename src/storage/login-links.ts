/**
 * The login links table (`cubby login-link`, CONTRACT §11) on SQLite and on PostgreSQL. Each
 * method is one statement, so a link is claimed by exactly one of any number of concurrent
 * requests, in any process or instance: the `DELETE … RETURNING` that returns the row is the
 * claim, and the database serialises it (SQLite's single writer, PostgreSQL's row lock).
 */
import { eq, lte } from "drizzle-orm";
import type { Db, WriteRunner } from "./db.ts";
import type { PgDb } from "./pg-metadata.ts";
import * as pg from "./pg-schema.ts";
import type { LoginLinkRow, LoginLinkTable } from "./ports.ts";
import * as sqlite from "./schema.ts";

/** Login links in cubby.db; writes go through the store's write queue (`write`). */
export class SqliteLoginLinks implements LoginLinkTable {
  constructor(private readonly write: WriteRunner) {}

  insert(link: LoginLinkRow): Promise<void> {
    return this.write((db: Db) => void db.insert(sqlite.loginLinks).values({ ...link, tokenHash: Buffer.from(link.tokenHash) }).run());
  }

  take(tokenHash: Uint8Array): Promise<LoginLinkRow | undefined> {
    const links = sqlite.loginLinks;
    return this.write((db: Db) => db.delete(links).where(eq(links.tokenHash, Buffer.from(tokenHash))).returning().get());
  }

  deleteExpired(now: number): Promise<number> {
    const links = sqlite.loginLinks;
    return this.write((db: Db) => db.delete(links).where(lte(links.expiresAt, now)).returning({ email: links.email }).all().length);
  }
}

/** Login links in PostgreSQL (no change notification: nothing caches them). */
export class PgLoginLinks implements LoginLinkTable {
  constructor(private readonly db: PgDb) {}

  async insert(link: LoginLinkRow): Promise<void> {
    await this.db.insert(pg.loginLinks).values({ ...link, tokenHash: Buffer.from(link.tokenHash) });
  }

  async take(tokenHash: Uint8Array): Promise<LoginLinkRow | undefined> {
    const links = pg.loginLinks;
    return (await this.db.delete(links).where(eq(links.tokenHash, Buffer.from(tokenHash))).returning())[0];
  }

  async deleteExpired(now: number): Promise<number> {
    const links = pg.loginLinks;
    return (await this.db.delete(links).where(lte(links.expiresAt, now)).returning({ email: links.email })).length;
  }
}
