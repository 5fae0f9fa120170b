/**
 * The folder queries both metadata stores share (CONTRACT §12): drizzle's operators work on
 * either dialect's columns, and the recursive and grouped queries are plain SQL both dialects
 * read alike, so each is written once.
 */
import { and, eq, gt, inArray, isNull, or, sql, type Column, type SQL } from "drizzle-orm";

/**
 * Live files (no expiry, or one after `now`, Unix microseconds) and their bytes directly in each
 * of the folders `ids` (not empty). Rows: `{ folderId, files, bytes }`, none for an empty folder.
 */
export function folderCountsQuery(ids: string[], now: number): SQL {
  const list = sql.join(
    ids.map((id) => sql`${id}`),
    sql`, `,
  );
  return sql`SELECT folder_id AS "folderId", count(*) AS "files", coalesce(sum(size), 0) AS "bytes" FROM files WHERE folder_id IN (${list}) AND (expires_at IS NULL OR expires_at > ${now}) GROUP BY folder_id`;
}

/**
 * For each of the folders `ids` (not empty) that exists: whether it holds a file and whether it
 * holds a sub-folder. Rows: `{ id, hasFiles, hasFolders }` (0/1 on SQLite, booleans on
 * PostgreSQL).
 *
 * Each is the first row of an index's order (files_folder_created_idx, folders_parent_name_unique),
 * not an `EXISTS`: PostgreSQL plans an `EXISTS (… WHERE c.parent_id = f.id)` from the column's
 * statistics, and when the walked folders' siblings are most of the table (20 000 sub-folders of
 * one folder) it expects a match at once and scans the table for each row, finding none: 0.4 ms a
 * folder, a walk of 20 000 in over 60 s (issue 37). The first row in index order is read through
 * the index whatever the statistics say.
 */
export function occupiedQuery(ids: string[]): SQL {
  const list = sql.join(
    ids.map((id) => sql`${id}`),
    sql`, `,
  );
  return sql`SELECT f.id AS "id", (SELECT 1 FROM files WHERE folder_id = f.id ORDER BY created_at DESC, id DESC LIMIT 1) IS NOT NULL AS "hasFiles", (SELECT 1 FROM folders c WHERE c.parent_id = f.id ORDER BY c.name LIMIT 1) IS NOT NULL AS "hasFolders" FROM folders f WHERE f.id IN (${list})`;
}

/**
 * The condition, over `files`, for `ownerId`'s files directly in `folderId`, or (null) in no
 * folder. Written so that each case is served by its index (schema.ts): files_folder_* for a
 * folder (whose files are its owner's: only the owner puts files in it), the partial
 * files_top_* (`folder_id IS NULL`) per owner for the top.
 */
export function inFolder(files: { ownerId: Column; folderId: Column }, ownerId: string, folderId: string | null): SQL | undefined {
  return folderId === null ? and(eq(files.ownerId, ownerId), isNull(files.folderId)) : eq(files.folderId, folderId);
}

/**
 * The condition for `ownerId`'s live files (no expiry, or one after `now`) at the top whose name
 * is one of `names` (WebDAV's name clashes at the top), through files_top_name_idx (PostgreSQL) or files_top_order_name_idx (SQLite).
 */
export function liveTopFilesNamed(files: { ownerId: Column; folderId: Column; name: Column; expiresAt: Column }, ownerId: string, names: string[], now: number): SQL | undefined {
  return and(eq(files.ownerId, ownerId), isNull(files.folderId), inArray(files.name, names), or(isNull(files.expiresAt), gt(files.expiresAt, now)));
}

/** The condition for `ownerId`'s folders at the top whose name is one of `names`, through folders_top_name_unique. */
export function topFoldersNamed(folders: { ownerId: Column; parentId: Column; name: Column }, ownerId: string, names: string[]): SQL | undefined {
  return and(eq(folders.ownerId, ownerId), isNull(folders.parentId), inArray(folders.name, names));
}

/** Of the names of top files (`topFiles`: each name with its count) and top folders, those two or more resources share. */
export function sharedNames(topFiles: { name: string; n: number }[], topFolders: { name: string }[]): string[] {
  const folderNames = new Set(topFolders.map((r) => r.name));
  return topFiles.filter((r) => r.n > 1 || folderNames.has(r.name)).map((r) => r.name);
}
