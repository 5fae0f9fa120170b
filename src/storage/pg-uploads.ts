/**
 * The uploads and upload_links tables on PostgreSQL (see upload-ports.ts), for pg-metadata.ts.
 * The conditional updates are single UPDATEs: under READ COMMITTED, one that waited for another
 * writer's row lock re-checks its WHERE against the row that writer committed, so two PATCHes at
 * one offset, or two uploads past a link's last free slot, never both win.
 */
import { and, asc, desc, eq, gt, isNull, lte, ne, or, sql } from "drizzle-orm";
import type { PgDb } from "./pg-metadata.ts";
import { inIdOrder, newestFirstAfter, PAGE_ROWS } from "./paging.ts";
import { uploadLinks, uploads } from "./pg-schema.ts";
import type { PageCursor } from "../domain/params.ts";
import { filesHeld, linkAccepts, linkEnded, reservingUploadsOfLink } from "./upload-conditions.ts";
import { reservingUploadsOf, sumOf } from "./user-conditions.ts";
import type { UploadLinkRow } from "../domain/upload-link.ts";
import type { ConcatGroup, UploadLinkTable, UploadRow, UploadTable } from "./upload-ports.ts";

/** The {@link UploadTable} on PostgreSQL; `changed` moves the store's cache version after a write. */
export class PgUploads implements UploadTable {
  constructor(
    private readonly db: PgDb,
    private readonly changed: () => void,
  ) {}

  async get(id: string): Promise<UploadRow | undefined> {
    return (await this.db.select().from(uploads).where(eq(uploads.id, id)))[0];
  }

  async insert(row: UploadRow): Promise<void> {
    await this.db.insert(uploads).values(row);
    this.changed();
  }

  async advance(id: string, from: number, to: number, crc32c: number | null): Promise<boolean> {
    const moved = await this.db
      .update(uploads)
      .set({ offset: to, crc32c: crc32c === null ? null : crc32c | 0 })
      .where(and(eq(uploads.id, id), eq(uploads.offset, from), isNull(uploads.fileId)))
      .returning({ id: uploads.id });
    this.changed();
    return moved.length > 0;
  }

  async complete(id: string, from: number, fileId: string): Promise<boolean> {
    const done = await this.db
      .update(uploads)
      .set({ offset: sql`${uploads.length}`, fileId })
      .where(and(eq(uploads.id, id), eq(uploads.offset, from), isNull(uploads.fileId)))
      .returning({ id: uploads.id });
    this.changed();
    return done.length > 0;
  }

  async delete(id: string): Promise<boolean> {
    const deleted = await this.db.delete(uploads).where(eq(uploads.id, id)).returning({ id: uploads.id });
    this.changed();
    return deleted.length > 0;
  }

  async expired(now: number, limit: number): Promise<UploadRow[]> {
    return this.db.select().from(uploads).where(lte(uploads.expiresAt, now)).limit(limit);
  }

  async unfinishedIds(): Promise<Set<string>> {
    return new Set((await this.db.select({ id: uploads.id }).from(uploads).where(isNull(uploads.fileId))).map((r) => r.id));
  }

  async idsByOwner(ownerId: string): Promise<string[]> {
    return (await this.db.select({ id: uploads.id }).from(uploads).where(eq(uploads.ownerId, ownerId))).map((r) => r.id);
  }

  async unfinishedByOwner(ownerId: string, now: number, limit: number, after: PageCursor | undefined): Promise<UploadRow[]> {
    return this.db
      .select()
      .from(uploads)
      .where(and(reservingUploadsOf(uploads, ownerId, now), newestFirstAfter(uploads, after)))
      .orderBy(desc(uploads.createdAt), desc(uploads.id))
      .limit(limit);
  }

  async finalOf(ownerId: string, fileId: string, concat: string): Promise<UploadRow | undefined> {
    return (await this.db.select().from(uploads).where(and(eq(uploads.ownerId, ownerId), eq(uploads.fileId, fileId), eq(uploads.concat, concat))).limit(1))[0];
  }

  async inGroup(ownerId: string, group: string, limit: number): Promise<UploadRow[]> {
    return this.db
      .select()
      .from(uploads)
      .where(and(eq(uploads.ownerId, ownerId), eq(uploads.concatGroup, group), isNull(uploads.uploadLinkId), isNull(uploads.fileId)))
      .orderBy(asc(uploads.createdAt), asc(uploads.id))
      .limit(limit);
  }

  async unfinishedOfLink(linkId: string): Promise<UploadRow[]> {
    return this.db.select().from(uploads).where(and(eq(uploads.uploadLinkId, linkId), isNull(uploads.fileId)));
  }

  async unfinishedOfEndedLinks(now: number, limit: number): Promise<UploadRow[]> {
    const rows = await this.db
      .select({ upload: uploads })
      .from(uploads)
      .innerJoin(uploadLinks, eq(uploadLinks.id, uploads.uploadLinkId))
      .where(and(isNull(uploads.fileId), linkEnded(uploadLinks, now)))
      .limit(limit);
    return rows.map((r) => r.upload);
  }

  async reservedByLink(linkId: string, ownerId: string, now: number, exceptGroup?: string): Promise<{ files: number; bytes: number }> {
    const others = exceptGroup === undefined ? undefined : or(isNull(uploads.concatGroup), ne(uploads.concatGroup, exceptGroup));
    return (await this.db.select({ files: filesHeld(uploads), bytes: sumOf(uploads.length) }).from(uploads).where(and(reservingUploadsOfLink(uploads, linkId, ownerId, now), others)))[0]!;
  }
}

/** The {@link UploadLinkTable} on PostgreSQL (see {@link PgUploads}). */
export class PgUploadLinks implements UploadLinkTable {
  constructor(
    private readonly db: PgDb,
    private readonly changed: () => void,
  ) {}

  async get(id: string): Promise<UploadLinkRow | undefined> {
    return (await this.db.select().from(uploadLinks).where(eq(uploadLinks.id, id)))[0];
  }

  async byToken(token: string): Promise<UploadLinkRow | undefined> {
    return (await this.db.select().from(uploadLinks).where(eq(uploadLinks.token, token)))[0];
  }

  async listByOwner(ownerId: string, withDeleted: boolean, limit: number, after: PageCursor | undefined): Promise<UploadLinkRow[]> {
    const where = and(eq(uploadLinks.ownerId, ownerId), withDeleted ? undefined : isNull(uploadLinks.deletedAt), newestFirstAfter(uploadLinks, after));
    return this.db.select().from(uploadLinks).where(where).orderBy(desc(uploadLinks.createdAt), desc(uploadLinks.id)).limit(limit);
  }

  async insert(row: UploadLinkRow): Promise<void> {
    await this.db.insert(uploadLinks).values(row);
    this.changed();
  }

  async markDeleted(id: string, ownerId: string, now: number): Promise<boolean> {
    const where = and(eq(uploadLinks.id, id), eq(uploadLinks.ownerId, ownerId), isNull(uploadLinks.deletedAt));
    const done = await this.db.update(uploadLinks).set({ deletedAt: now }).where(where).returning({ id: uploadLinks.id });
    this.changed();
    return done.length > 0;
  }

  async consume(id: string, bytes: number, now: number): Promise<boolean> {
    const done = await this.db
      .update(uploadLinks)
      .set({ filesUploaded: sql`${uploadLinks.filesUploaded} + 1`, bytesUploaded: sql`${uploadLinks.bytesUploaded} + ${bytes}` })
      .where(linkAccepts(uploadLinks, uploads, id, bytes, now))
      .returning({ id: uploadLinks.id });
    this.changed();
    return done.length > 0;
  }

  async reserve(id: string, bytes: number, now: number, group?: ConcatGroup): Promise<boolean> {
    // FOR NO KEY UPDATE: the link's row stays locked to the end of the creation's transaction,
    // a second guard beside the owner's row (see upload-conditions.ts).
    const rows = await this.db.select({ id: uploadLinks.id }).from(uploadLinks).where(linkAccepts(uploadLinks, uploads, id, bytes, now, group)).for("no key update");
    return rows.length > 0;
  }

  all(): AsyncIterable<UploadLinkRow> {
    return inIdOrder((after) => this.db.select().from(uploadLinks).where(gt(uploadLinks.id, after)).orderBy(asc(uploadLinks.id)).limit(PAGE_ROWS));
  }
}
