/**
 * The login links table (`cubby login-link`, CONTRACT §11) on SQLite and on PostgreSQL. Each
 * method is one statement, so a link is claimed by exactly one of any number of concurrent
 * requests, in any process or instance: the `DELETE … RETURNING` that returns the row is the
 * claim, and the database serialises it (SQLite's single writer, PostgreSQL's row lock). The
 * claim takes only an unexpired link; an expired one stays, so that it answers 410, until the
 * sweep deletes it (service/login-links.ts decides when).
 */
import { and, eq, gt, inArray, lte, sql } from "drizzle-orm";
import type { Db, WriteRunner } from "./db.ts";
import type { PgDb } from "./pg-metadata.ts";
import * as pg from "./pg-schema.ts";
import type { LoginLinkRow, LoginLinkTable } from "./ports.ts";
import * as sqlite from "./schema.ts";

/** Login links in cubby.db; writes go through the store's write queue (`write`), reads through `read`. */
export class SqliteLoginLinks implements LoginLinkTable {
  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {}

  insert(link: LoginLinkRow): Promise<void> {
    return this.write((db: Db) => void db.insert(sqlite.loginLinks).values({ ...link, tokenHash: Buffer.from(link.tokenHash) }).run());
  }

  async find(tokenHash: Uint8Array): Promise<LoginLinkRow | undefined> {
    const links = sqlite.loginLinks;
    return this.db.select().from(links).where(eq(links.tokenHash, Buffer.from(tokenHash))).get();
  }

  take(tokenHash: Uint8Array, now: number): Promise<LoginLinkRow | undefined> {
    const links = sqlite.loginLinks;
    return this.write((db: Db) =>
      db
        .delete(links)
        .where(and(eq(links.tokenHash, Buffer.from(tokenHash)), gt(links.expiresAt, now)))
        .returning()
        .get(),
    );
  }

  deleteExpiredBefore(before: number, limit: number): Promise<number> {
    const links = sqlite.loginLinks;
    return this.write((db: Db) => {
      const due = db.select({ tokenHash: links.tokenHash }).from(links).where(lte(links.expiresAt, before)).orderBy(links.expiresAt).limit(limit);
      return db.delete(links).where(inArray(links.tokenHash, due)).returning({ email: links.email }).all().length;
    });
  }
}

/** Login links in PostgreSQL (no change notification: nothing caches them). */
export class PgLoginLinks implements LoginLinkTable {
  constructor(private readonly db: PgDb) {}

  async insert(link: LoginLinkRow): Promise<void> {
    await this.db.insert(pg.loginLinks).values({ ...link, tokenHash: Buffer.from(link.tokenHash) });
  }

  async find(tokenHash: Uint8Array): Promise<LoginLinkRow | undefined> {
    const links = pg.loginLinks;
    return (await this.db.select().from(links).where(eq(links.tokenHash, Buffer.from(tokenHash))))[0];
  }

  async take(tokenHash: Uint8Array, now: number): Promise<LoginLinkRow | undefined> {
    const links = pg.loginLinks;
    return (await this.db.delete(links).where(and(eq(links.tokenHash, Buffer.from(tokenHash)), gt(links.expiresAt, now))).returning())[0];
  }

  async deleteExpiredBefore(before: number, limit: number): Promise<number> {
    const links = pg.loginLinks;
    const due = this.db.select({ tokenHash: links.tokenHash }).from(links).where(lte(links.expiresAt, before)).orderBy(links.expiresAt).limit(limit);
    // `= ANY(ARRAY(…))`, not `IN (…)`: PostgreSQL then finds the batch through login_links_expires_idx
    // and deletes it through the primary key, where IN made it hash-join the whole table.
    return (await this.db.delete(links).where(sql`${links.tokenHash} = ANY(ARRAY(${due}))`).returning({ email: links.email })).length;
  }
}
