/** The shares table (CONTRACT §8) on PostgreSQL: the {@link ShareTable} part of the PostgreSQL metadata store. */
import { and, asc, desc, eq, gt, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { PgDb } from "./pg-metadata.ts";
import { inIdOrder, newestFirstAfter, PAGE_ROWS } from "./paging.ts";
import type { PageCursor } from "../domain/params.ts";
import type { ShareDownloadRow, ShareRow } from "../domain/share.ts";
import type { ShareTable } from "./ports.ts";
import { shareDownloads, shares } from "./pg-schema.ts";

/** Share rows on PostgreSQL, on the pool or inside a transaction (whichever `db` is). */
export class PgShares implements ShareTable {
  constructor(private readonly db: PgDb) {}

  async insert(share: ShareRow): Promise<void> {
    await this.db.insert(shares).values(share);
  }

  async byToken(token: string): Promise<ShareRow | undefined> {
    return (await this.db.select().from(shares).where(eq(shares.token, token)))[0];
  }

  async byId(id: string): Promise<ShareRow | undefined> {
    return (await this.db.select().from(shares).where(eq(shares.id, id)))[0];
  }

  async listByFile(fileId: string, limit: number, after: PageCursor | undefined): Promise<ShareRow[]> {
    const where = and(eq(shares.fileId, fileId), isNull(shares.deletedAt), newestFirstAfter(shares, after));
    return this.db.select().from(shares).where(where).orderBy(desc(shares.createdAt), desc(shares.id)).limit(limit);
  }

  async listByFolder(folderId: string, limit: number, after: PageCursor | undefined): Promise<ShareRow[]> {
    const where = and(eq(shares.folderId, folderId), isNull(shares.deletedAt), newestFirstAfter(shares, after));
    return this.db.select().from(shares).where(where).orderBy(desc(shares.createdAt), desc(shares.id)).limit(limit);
  }

  async listByOwner(ownerId: string, limit: number, after: PageCursor | undefined): Promise<ShareRow[]> {
    const where = and(eq(shares.ownerId, ownerId), isNull(shares.deletedAt), newestFirstAfter(shares, after));
    return this.db.select().from(shares).where(where).orderBy(desc(shares.createdAt), desc(shares.id)).limit(limit);
  }

  async update(id: string, ownerId: string, changes: Partial<Pick<ShareRow, "expiresAt" | "maxDownloads" | "passwordHash" | "items" | "fileId" | "folderId">>): Promise<ShareRow | undefined> {
    const where = and(eq(shares.id, id), eq(shares.ownerId, ownerId), isNull(shares.deletedAt));
    if (Object.keys(changes).length === 0) return (await this.db.select().from(shares).where(where))[0];
    return (await this.db.update(shares).set(changes).where(where).returning())[0];
  }

  async recordDownload(row: Omit<ShareDownloadRow, "seq">): Promise<void> {
    await this.db.insert(shareDownloads).values(row);
  }

  async downloads(shareId: string, limit: number, after: { at: number; seq: number } | undefined): Promise<ShareDownloadRow[]> {
    const where = and(eq(shareDownloads.shareId, shareId), after === undefined ? undefined : sql`(${shareDownloads.at}, ${shareDownloads.seq}) < (${after.at}, ${after.seq})`);
    return this.db.select().from(shareDownloads).where(where).orderBy(desc(shareDownloads.at), desc(shareDownloads.seq)).limit(limit);
  }

  async pruneDownloads(before: number, limit: number): Promise<number> {
    const old = this.db.select({ seq: shareDownloads.seq }).from(shareDownloads).where(lt(shareDownloads.at, before)).limit(limit);
    return (await this.db.delete(shareDownloads).where(inArray(shareDownloads.seq, old)).returning({ seq: shareDownloads.seq })).length;
  }

  async markDeleted(id: string, ownerId: string, now: number): Promise<boolean> {
    const where = and(eq(shares.id, id), eq(shares.ownerId, ownerId), isNull(shares.deletedAt));
    return (await this.db.update(shares).set({ deletedAt: now }).where(where).returning({ id: shares.id })).length > 0;
  }

  /** One UPDATE: PostgreSQL re-checks the condition on the row it locks, so racing downloads queue and the limit holds. */
  async countDownload(id: string, now: number): Promise<boolean> {
    const where = and(eq(shares.id, id), isNull(shares.deletedAt), or(isNull(shares.maxDownloads), lt(shares.downloadCount, shares.maxDownloads)));
    const counted = await this.db
      .update(shares)
      .set({ downloadCount: sql`${shares.downloadCount} + 1`, lastDownloadAt: now })
      .where(where)
      .returning({ id: shares.id });
    return counted.length > 0;
  }

  all(): AsyncIterable<ShareRow> {
    return inIdOrder((after) => this.db.select().from(shares).where(gt(shares.id, after)).orderBy(asc(shares.id)).limit(PAGE_ROWS));
  }
}
