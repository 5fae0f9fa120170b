/** Folders and file membership (CONTRACT §12) on PostgreSQL: the {@link FolderTable} part of the PostgreSQL metadata store. */
import { and, asc, desc, eq, gt, isNull, sql } from "drizzle-orm";
import type { PgDb } from "./pg-metadata.ts";
import type { FileRecord } from "../domain/file.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { PageCursor } from "../domain/params.ts";
import { folderCountsQuery, inFolder, occupiedQuery } from "./folder-conditions.ts";
import { fileOrderTerms, inIdOrder, ownerFilesAfter, PAGE_ROWS } from "./paging.ts";
import { NEWEST_FIRST, type FileCursor, type FileOrder } from "../domain/file-order.ts";
import type { FolderCounts, FolderTable } from "./ports.ts";
import { fileColumns, files, folders, NAME_IN_C } from "./pg-schema.ts";

/** Folder rows on PostgreSQL, on the pool or inside a transaction (whichever `db` is). */
export class PgFolders implements FolderTable {
  constructor(private readonly db: PgDb) {}

  async insert(folder: FolderRow): Promise<void> {
    await this.db.insert(folders).values(folder);
  }

  async get(id: string): Promise<FolderRow | undefined> {
    return (await this.db.select().from(folders).where(eq(folders.id, id)))[0];
  }

  async update(folder: FolderRow): Promise<void> {
    const { id, name, parentId, updatedAt } = folder;
    await this.db.update(folders).set({ name, parentId, updatedAt }).where(eq(folders.id, id));
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.delete(folders).where(eq(folders.id, id)).returning({ id: folders.id })).length > 0;
  }

  listByParent(ownerId: string, parentId: string | null, limit: number, after: PageCursor | undefined): Promise<FolderRow[]> {
    const where = and(ownerFilesAfter(folders, ownerId, after), parentId === null ? isNull(folders.parentId) : eq(folders.parentId, parentId));
    return this.db.select().from(folders).where(where).orderBy(desc(folders.createdAt), desc(folders.id)).limit(limit);
  }

  subfoldersByName(parentId: string, limit: number, afterName: string | undefined): Promise<FolderRow[]> {
    const where = afterName === undefined ? eq(folders.parentId, parentId) : and(eq(folders.parentId, parentId), gt(folders.name, afterName));
    return this.db.select().from(folders).where(where).orderBy(asc(folders.name)).limit(limit);
  }

  childrenByKey(ownerId: string, parentId: string | null, limit: number, afterKey: string | undefined): Promise<FolderRow[]> {
    const key = sql`((${folders.name} || '/') COLLATE "C")`;
    const where = and(
      parentId === null ? and(eq(folders.ownerId, ownerId), isNull(folders.parentId)) : eq(folders.parentId, parentId),
      afterKey === undefined ? undefined : sql`${key} > ${afterKey}`,
    );
    return this.db.select().from(folders).where(where).orderBy(key).limit(limit);
  }

  async occupied(ids: string[]): Promise<{ withFiles: Set<string>; withFolders: Set<string> }> {
    const out = { withFiles: new Set<string>(), withFolders: new Set<string>() };
    if (ids.length === 0) return out;
    for (const r of (await this.db.execute(occupiedQuery(ids))) as unknown as { id: string; hasFiles: unknown; hasFolders: unknown }[]) {
      if (r.hasFiles === true || r.hasFiles === 1) out.withFiles.add(r.id);
      if (r.hasFolders === true || r.hasFolders === 1) out.withFolders.add(r.id);
    }
    return out;
  }

  async byName(ownerId: string, parentId: string | null, name: string): Promise<FolderRow | undefined> {
    const where = and(eq(folders.ownerId, ownerId), parentId === null ? isNull(folders.parentId) : eq(folders.parentId, parentId), eq(folders.name, name));
    return (await this.db.select().from(folders).where(where))[0];
  }

  async counts(ids: string[], now: number): Promise<Map<string, FolderCounts>> {
    const out = new Map<string, FolderCounts>();
    if (ids.length === 0) return out;
    const rows = (await this.db.execute(folderCountsQuery(ids, now))) as unknown as { folderId: string; files: string | number; bytes: string | number }[];
    for (const r of rows) out.set(r.folderId, { files: Number(r.files), bytes: Number(r.bytes) });
    return out;
  }

  async folderOf(fileId: string): Promise<string | undefined> {
    return (await this.db.select({ folderId: files.folderId }).from(files).where(eq(files.id, fileId)))[0]?.folderId ?? undefined;
  }

  async setFolder(fileId: string, folderId: string | null): Promise<void> {
    await this.db.update(files).set({ folderId }).where(eq(files.id, fileId));
  }

  async listFiles(ownerId: string, folderId: string | null, limit: number, after: FileCursor | undefined, order: FileOrder = NEWEST_FIRST): Promise<FileRecord[]> {
    const terms = fileOrderTerms(files, order, after, NAME_IN_C);
    return (await this.db
      .select(fileColumns)
      .from(files)
      .where(and(inFolder(files, ownerId, folderId), terms.after))
      .orderBy(...terms.orderBy)
      .limit(limit)) as FileRecord[];
  }


  async filesNamed(ownerId: string, folderId: string | null, name: string): Promise<FileRecord[]> {
    return (await this.db
      .select(fileColumns)
      .from(files)
      .where(and(inFolder(files, ownerId, folderId), eq(files.name, name)))) as FileRecord[];
  }

  all(): AsyncIterable<FolderRow> {
    return inIdOrder((after) => this.db.select().from(folders).where(gt(folders.id, after)).orderBy(asc(folders.id)).limit(PAGE_ROWS));
  }

  async *memberships(): AsyncIterable<{ fileId: string; folderId: string }> {
    // Every file a page at a time through the primary key (a page's cost is bounded whatever
    // the share of files in folders), those at the top skipped.
    const pages = inIdOrder((after) => this.db.select({ id: files.id, folderId: files.folderId }).from(files).where(gt(files.id, after)).orderBy(asc(files.id)).limit(PAGE_ROWS));
    for await (const { id, folderId } of pages) if (folderId !== null) yield { fileId: id, folderId };
  }
}
