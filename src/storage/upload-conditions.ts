/**
 * Conditions on the upload_links table written once for both dialects (drizzle's operators
 * work on either's columns), as paging.ts does for files.
 */
import { and, eq, isNull, or, sql, type Column } from "drizzle-orm";

/**
 * The condition under which link `id` takes one more file of `bytes` at `now`: not deleted, not
 * expired, a file and `bytes` left under its limits (a null limit is none).
 */
export function linkAccepts(
  t: { id: Column; deletedAt: Column; expiresAt: Column; maxFiles: Column; filesUploaded: Column; maxBytes: Column; bytesUploaded: Column },
  id: string,
  bytes: number,
  now: number,
) {
  return and(
    eq(t.id, id),
    isNull(t.deletedAt),
    or(isNull(t.expiresAt), sql`${t.expiresAt} > ${now}`),
    or(isNull(t.maxFiles), sql`${t.filesUploaded} < ${t.maxFiles}`),
    or(isNull(t.maxBytes), sql`${t.bytesUploaded} + ${bytes} <= ${t.maxBytes}`),
  );
}
