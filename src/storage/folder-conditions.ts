/**
 * The folder queries both metadata stores share (CONTRACT §12): drizzle's operators work on
 * either dialect's columns, and the recursive and grouped queries are plain SQL both dialects
 * read alike, so each is written once.
 */
import { and, eq, isNull, sql, type Column, type SQL } from "drizzle-orm";

/**
 * The IDs of folder `id` and every folder below it: a recursive common table expression
 * (SQLite ≥ 3.8.3, PostgreSQL), `id` first. Rows: `{ id }`.
 */
export function subtreeQuery(id: string): SQL {
  return sql`WITH RECURSIVE tree(id, depth) AS (SELECT id, 0 FROM folders WHERE id = ${id} UNION ALL SELECT f.id, tree.depth + 1 FROM folders f JOIN tree ON f.parent_id = tree.id) SELECT id FROM tree ORDER BY depth`;
}

/**
 * Live files (no expiry, or one after `now`, Unix microseconds) and their bytes directly in each
 * of the folders `ids` (not empty). Rows: `{ folderId, files, bytes }`, none for an empty folder.
 */
export function folderCountsQuery(ids: string[], now: number): SQL {
  const list = sql.join(
    ids.map((id) => sql`${id}`),
    sql`, `,
  );
  return sql`SELECT ff.folder_id AS "folderId", count(*) AS "files", coalesce(sum(f.size), 0) AS "bytes" FROM folder_files ff JOIN files f ON f.id = ff.file_id WHERE ff.folder_id IN (${list}) AND (f.expires_at IS NULL OR f.expires_at > ${now}) GROUP BY ff.folder_id`;
}

/**
 * The condition, over `files LEFT JOIN folder_files ON file_id = files.id`, for `ownerId`'s files
 * directly in `folderId`, or (null) in no folder.
 */
export function inFolder(t: { files: { ownerId: Column }; folderFiles: { folderId: Column; fileId: Column } }, ownerId: string, folderId: string | null): SQL | undefined {
  return and(eq(t.files.ownerId, ownerId), folderId === null ? isNull(t.folderFiles.fileId) : eq(t.folderFiles.folderId, folderId));
}
