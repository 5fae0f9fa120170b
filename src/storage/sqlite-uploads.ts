/**
 * The uploads and upload_links tables on SQLite (see upload-ports.ts), for sqlite-metadata.ts.
 * Conditional updates are single statements, so they are atomic whoever else writes.
 */
import { and, asc, desc, eq, gt, isNull, lte, ne, or, sql } from "drizzle-orm";
import type { Db } from "./db.ts";
import { inIdOrder, newestFirstAfter, PAGE_ROWS } from "./paging.ts";
import { uploadLinks, uploads } from "./schema.ts";
import type { PageCursor } from "../domain/params.ts";
import { filesHeld, linkAccepts, linkEnded, reservingUploadsOfLink } from "./upload-conditions.ts";
import { reservingUploadsOf, sumOf } from "./user-conditions.ts";
import type { UploadLinkRow } from "../domain/upload-link.ts";
import type { ConcatGroup, UploadLinkTable, UploadRow, UploadTable } from "./upload-ports.ts";

/** Runs a write on the write connection (queued outside a transaction, at once inside). */
type WriteRunner = <T>(write: (db: Db) => T) => Promise<T>;

/** The {@link UploadTable} on SQLite: reads on the reader connection, writes through the store's write runner. */
export class SqliteUploads implements UploadTable {
  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {}

  async get(id: string): Promise<UploadRow | undefined> {
    return this.db.select().from(uploads).where(eq(uploads.id, id)).get();
  }

  insert(row: UploadRow): Promise<void> {
    return this.write((db) => void db.insert(uploads).values(row).run());
  }

  advance(id: string, from: number, to: number, crc32c: number | null): Promise<boolean> {
    return this.write(
      (db) =>
        db
          .update(uploads)
          .set({ offset: to, crc32c: crc32c === null ? null : crc32c | 0 })
          .where(and(eq(uploads.id, id), eq(uploads.offset, from), isNull(uploads.fileId)))
          .returning({ id: uploads.id })
          .all().length > 0,
    );
  }

  complete(id: string, from: number, fileId: string): Promise<boolean> {
    return this.write(
      (db) =>
        db
          .update(uploads)
          .set({ offset: sql`${uploads.length}`, fileId })
          .where(and(eq(uploads.id, id), eq(uploads.offset, from), isNull(uploads.fileId)))
          .returning({ id: uploads.id })
          .all().length > 0,
    );
  }

  delete(id: string): Promise<boolean> {
    return this.write((db) => db.delete(uploads).where(eq(uploads.id, id)).returning({ id: uploads.id }).all().length > 0);
  }

  async expired(now: number, limit: number): Promise<UploadRow[]> {
    return this.db.select().from(uploads).where(lte(uploads.expiresAt, now)).limit(limit).all();
  }

  async unfinishedIds(): Promise<Set<string>> {
    return new Set(this.db.select({ id: uploads.id }).from(uploads).where(isNull(uploads.fileId)).all().map((r) => r.id));
  }

  async idsByOwner(ownerId: string): Promise<string[]> {
    return this.db.select({ id: uploads.id }).from(uploads).where(eq(uploads.ownerId, ownerId)).all().map((r) => r.id);
  }

  async unfinishedByOwner(ownerId: string, now: number, limit: number, after: PageCursor | undefined): Promise<UploadRow[]> {
    return this.db
      .select()
      .from(uploads)
      .where(and(reservingUploadsOf(uploads, ownerId, now), newestFirstAfter(uploads, after)))
      .orderBy(desc(uploads.createdAt), desc(uploads.id))
      .limit(limit)
      .all();
  }

  async finalOf(ownerId: string, fileId: string, concat: string): Promise<UploadRow | undefined> {
    return this.db.select().from(uploads).where(and(eq(uploads.ownerId, ownerId), eq(uploads.fileId, fileId), eq(uploads.concat, concat))).get();
  }

  async inGroup(ownerId: string, group: string, limit: number): Promise<UploadRow[]> {
    return this.db
      .select()
      .from(uploads)
      .where(and(eq(uploads.ownerId, ownerId), eq(uploads.concatGroup, group), isNull(uploads.uploadLinkId), isNull(uploads.fileId)))
      .orderBy(asc(uploads.createdAt), asc(uploads.id))
      .limit(limit).all();
  }

  async unfinishedOfLink(linkId: string): Promise<UploadRow[]> {
    return this.db.select().from(uploads).where(and(eq(uploads.uploadLinkId, linkId), isNull(uploads.fileId))).all();
  }

  async unfinishedOfEndedLinks(now: number, limit: number): Promise<UploadRow[]> {
    return this.db
      .select({ upload: uploads })
      .from(uploads)
      .innerJoin(uploadLinks, eq(uploadLinks.id, uploads.uploadLinkId))
      .where(and(isNull(uploads.fileId), linkEnded(uploadLinks, now)))
      .limit(limit)
      .all()
      .map((r) => r.upload);
  }

  async reservedByLink(linkId: string, ownerId: string, now: number, exceptGroup?: string): Promise<{ files: number; bytes: number }> {
    const others = exceptGroup === undefined ? undefined : or(isNull(uploads.concatGroup), ne(uploads.concatGroup, exceptGroup));
    return this.db.select({ files: filesHeld(uploads), bytes: sumOf(uploads.length) }).from(uploads).where(and(reservingUploadsOfLink(uploads, linkId, ownerId, now), others)).get()!;
  }
}

/** The {@link UploadLinkTable} on SQLite (see {@link SqliteUploads}). */
export class SqliteUploadLinks implements UploadLinkTable {
  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {}

  async get(id: string): Promise<UploadLinkRow | undefined> {
    return this.db.select().from(uploadLinks).where(eq(uploadLinks.id, id)).get();
  }

  async byToken(token: string): Promise<UploadLinkRow | undefined> {
    return this.db.select().from(uploadLinks).where(eq(uploadLinks.token, token)).get();
  }

  async listByOwner(ownerId: string, withDeleted: boolean, limit: number, after: PageCursor | undefined): Promise<UploadLinkRow[]> {
    const where = and(eq(uploadLinks.ownerId, ownerId), withDeleted ? undefined : isNull(uploadLinks.deletedAt), newestFirstAfter(uploadLinks, after));
    return this.db.select().from(uploadLinks).where(where).orderBy(desc(uploadLinks.createdAt), desc(uploadLinks.id)).limit(limit).all();
  }

  insert(row: UploadLinkRow): Promise<void> {
    return this.write((db) => void db.insert(uploadLinks).values(row).run());
  }

  markDeleted(id: string, ownerId: string, now: number): Promise<boolean> {
    const where = and(eq(uploadLinks.id, id), eq(uploadLinks.ownerId, ownerId), isNull(uploadLinks.deletedAt));
    return this.write((db) => db.update(uploadLinks).set({ deletedAt: now }).where(where).returning({ id: uploadLinks.id }).all().length > 0);
  }

  consume(id: string, bytes: number, now: number): Promise<boolean> {
    return this.write(
      (db) =>
        db
          .update(uploadLinks)
          .set({ filesUploaded: sql`${uploadLinks.filesUploaded} + 1`, bytesUploaded: sql`${uploadLinks.bytesUploaded} + ${bytes}` })
          .where(linkAccepts(uploadLinks, uploads, id, bytes, now))
          .returning({ id: uploadLinks.id })
          .all().length > 0,
    );
  }

  reserve(id: string, bytes: number, now: number, group?: ConcatGroup): Promise<boolean> {
    // On the write connection (in the creation's BEGIN IMMEDIATE transaction), after every
    // earlier write; an UPDATE that changes nothing, so that it is one with consume.
    return this.write(
      (db) =>
        db
          .update(uploadLinks)
          .set({ filesUploaded: sql`${uploadLinks.filesUploaded}` })
          .where(linkAccepts(uploadLinks, uploads, id, bytes, now, group))
          .returning({ id: uploadLinks.id })
          .all().length > 0,
    );
  }

  all(): AsyncIterable<UploadLinkRow> {
    return inIdOrder((after) => this.db.select().from(uploadLinks).where(gt(uploadLinks.id, after)).orderBy(asc(uploadLinks.id)).limit(PAGE_ROWS).all());
  }
}
