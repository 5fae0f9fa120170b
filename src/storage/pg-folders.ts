/** Folders and file membership (CONTRACT §12) on PostgreSQL: the {@link FolderTable} part of the PostgreSQL metadata store. */
import { and, asc, desc, eq, getTableColumns, gt, isNull } from "drizzle-orm";
import type { PgDb } from "./pg-metadata.ts";
import type { FileRecord } from "../domain/file.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { PageCursor } from "../domain/params.ts";
import { folderCountsQuery, inFolder, subtreeQuery } from "./folder-conditions.ts";
import { inIdOrder, newestFirstAfter, ownerFilesAfter, PAGE_ROWS } from "./paging.ts";
import type { FolderCounts, FolderTable } from "./ports.ts";
import { files, folderFiles, folders } from "./pg-schema.ts";

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

  async byName(ownerId: string, parentId: string | null, name: string): Promise<FolderRow | undefined> {
    const where = and(eq(folders.ownerId, ownerId), parentId === null ? isNull(folders.parentId) : eq(folders.parentId, parentId), eq(folders.name, name));
    return (await this.db.select().from(folders).where(where))[0];
  }

  async subtree(id: string): Promise<string[]> {
    return ((await this.db.execute(subtreeQuery(id))) as unknown as { id: string }[]).map((r) => r.id);
  }

  async counts(ids: string[], now: number): Promise<Map<string, FolderCounts>> {
    const out = new Map<string, FolderCounts>();
    if (ids.length === 0) return out;
    const rows = (await this.db.execute(folderCountsQuery(ids, now))) as unknown as { folderId: string; files: string | number; bytes: string | number }[];
    for (const r of rows) out.set(r.folderId, { files: Number(r.files), bytes: Number(r.bytes) });
    return out;
  }

  async folderOf(fileId: string): Promise<string | undefined> {
    return (await this.db.select({ folderId: folderFiles.folderId }).from(folderFiles).where(eq(folderFiles.fileId, fileId)))[0]?.folderId;
  }

  async setFolder(fileId: string, folderId: string | null): Promise<void> {
    if (folderId === null) await this.db.delete(folderFiles).where(eq(folderFiles.fileId, fileId));
    else await this.db.insert(folderFiles).values({ fileId, folderId }).onConflictDoUpdate({ target: folderFiles.fileId, set: { folderId } });
  }

  async listFiles(ownerId: string, folderId: string | null, limit: number, after: PageCursor | undefined): Promise<FileRecord[]> {
    return (await this.db
      .select(getTableColumns(files))
      .from(files)
      .leftJoin(folderFiles, eq(folderFiles.fileId, files.id))
      .where(and(inFolder({ files, folderFiles }, ownerId, folderId), newestFirstAfter(files, after)))
      .orderBy(desc(files.createdAt), desc(files.id))
      .limit(limit)) as FileRecord[];
  }

  async filesNamed(ownerId: string, folderId: string | null, name: string): Promise<FileRecord[]> {
    return (await this.db
      .select(getTableColumns(files))
      .from(files)
      .leftJoin(folderFiles, eq(folderFiles.fileId, files.id))
      .where(and(inFolder({ files, folderFiles }, ownerId, folderId), eq(files.name, name)))) as FileRecord[];
  }

  all(): AsyncIterable<FolderRow> {
    return inIdOrder((after) => this.db.select().from(folders).where(gt(folders.id, after)).orderBy(asc(folders.id)).limit(PAGE_ROWS));
  }

  memberships(): AsyncIterable<{ fileId: string; folderId: string }> {
    return inIdOrder((after) =>
      this.db
        .select({ id: folderFiles.fileId, fileId: folderFiles.fileId, folderId: folderFiles.folderId })
        .from(folderFiles)
        .where(gt(folderFiles.fileId, after))
        .orderBy(asc(folderFiles.fileId))
        .limit(PAGE_ROWS),
    );
  }
}
