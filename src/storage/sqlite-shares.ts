/** The shares table (CONTRACT §8) on SQLite: the {@link ShareTable} part of the SQLite metadata store. */
import { and, asc, desc, eq, gt, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { Db, WriteRunner } from "./db.ts";
import { inIdOrder, newestFirstAfter, PAGE_ROWS } from "./paging.ts";
import type { PageCursor } from "../domain/params.ts";
import type { ShareDownloadRow, ShareRow } from "../domain/share.ts";
import type { ShareTable } from "./ports.ts";
import { shareDownloads, shares } from "./schema.ts";

/** Share rows on SQLite: reads on the given connection, writes through the store's write runner. */
export class SqliteShares implements ShareTable {
  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {}

  insert(share: ShareRow): Promise<void> {
    return this.write((db) => void db.insert(shares).values(share).run());
  }

  async byToken(token: string): Promise<ShareRow | undefined> {
    return this.db.select().from(shares).where(eq(shares.token, token)).get();
  }

  async byId(id: string): Promise<ShareRow | undefined> {
    return this.db.select().from(shares).where(eq(shares.id, id)).get();
  }

  async listByFile(fileId: string, limit: number, after: PageCursor | undefined): Promise<ShareRow[]> {
    const where = and(eq(shares.fileId, fileId), isNull(shares.deletedAt), newestFirstAfter(shares, after));
    return this.db.select().from(shares).where(where).orderBy(desc(shares.createdAt), desc(shares.id)).limit(limit).all();
  }

  async listByFolder(folderId: string, limit: number, after: PageCursor | undefined): Promise<ShareRow[]> {
    const where = and(eq(shares.folderId, folderId), isNull(shares.deletedAt), newestFirstAfter(shares, after));
    return this.db.select().from(shares).where(where).orderBy(desc(shares.createdAt), desc(shares.id)).limit(limit).all();
  }

  async listByOwner(ownerId: string, limit: number, after: PageCursor | undefined): Promise<ShareRow[]> {
    const where = and(eq(shares.ownerId, ownerId), isNull(shares.deletedAt), newestFirstAfter(shares, after));
    return this.db.select().from(shares).where(where).orderBy(desc(shares.createdAt), desc(shares.id)).limit(limit).all();
  }

  update(id: string, ownerId: string, changes: Partial<Pick<ShareRow, "expiresAt" | "maxDownloads" | "passwordHash" | "items" | "fileId" | "folderId">>): Promise<ShareRow | undefined> {
    const where = and(eq(shares.id, id), eq(shares.ownerId, ownerId), isNull(shares.deletedAt));
    return this.write((db) => (Object.keys(changes).length === 0 ? db.select().from(shares).where(where).get() : db.update(shares).set(changes).where(where).returning().get()));
  }

  recordDownload(row: Omit<ShareDownloadRow, "seq">): Promise<void> {
    return this.write((db) => void db.insert(shareDownloads).values(row).run());
  }

  async downloads(shareId: string, limit: number, after: { at: number; seq: number } | undefined): Promise<ShareDownloadRow[]> {
    const where = and(eq(shareDownloads.shareId, shareId), after === undefined ? undefined : sql`(${shareDownloads.at}, ${shareDownloads.seq}) < (${after.at}, ${after.seq})`);
    return this.db.select().from(shareDownloads).where(where).orderBy(desc(shareDownloads.at), desc(shareDownloads.seq)).limit(limit).all();
  }

  pruneDownloads(before: number, limit: number): Promise<number> {
    const old = this.db.select({ seq: shareDownloads.seq }).from(shareDownloads).where(lt(shareDownloads.at, before)).limit(limit);
    return this.write((db) => db.delete(shareDownloads).where(inArray(shareDownloads.seq, old)).returning({ seq: shareDownloads.seq }).all().length);
  }

  markDeleted(id: string, ownerId: string, now: number): Promise<boolean> {
    const where = and(eq(shares.id, id), eq(shares.ownerId, ownerId), isNull(shares.deletedAt));
    return this.write((db) => db.update(shares).set({ deletedAt: now }).where(where).returning({ id: shares.id }).all().length > 0);
  }

  countDownload(id: string, now: number): Promise<boolean> {
    const where = and(eq(shares.id, id), isNull(shares.deletedAt), or(isNull(shares.maxDownloads), lt(shares.downloadCount, shares.maxDownloads)));
    return this.write(
      (db) =>
        db
          .update(shares)
          .set({ downloadCount: sql`${shares.downloadCount} + 1`, lastDownloadAt: now })
          .where(where)
          .returning({ id: shares.id })
          .all().length > 0,
    );
  }

  all(): AsyncIterable<ShareRow> {
    return inIdOrder((after) => this.db.select().from(shares).where(gt(shares.id, after)).orderBy(asc(shares.id)).limit(PAGE_ROWS).all());
  }
}
