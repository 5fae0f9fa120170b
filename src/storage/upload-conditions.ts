/**
 * Conditions on the upload_links table written once for both dialects (drizzle's operators
 * work on either's columns), as paging.ts does for files.
 */
import { and, eq, gt, isNotNull, isNull, lte, or, sql, type Column, type SQL, type Table } from "drizzle-orm";
import type { ConcatGroup } from "./upload-ports.ts";

/** The columns of the uploads table the reservation conditions read. */
export interface UploadColumns {
  ownerId: Column;
  uploadLinkId: Column;
  fileId: Column;
  expiresAt: Column;
  length: Column;
  /** Upload-Concat: null, `partial` or `final;…`. */
  concat: Column;
  /** A guest's partial upload's concatenation, or null. */
  concatGroup: Column;
}

/** The columns of the upload_links table the conditions read. */
export interface LinkColumns {
  id: Column;
  ownerId: Column;
  deletedAt: Column;
  expiresAt: Column;
  maxFiles: Column;
  filesUploaded: Column;
  maxBytes: Column;
  bytesUploaded: Column;
}

/**
 * The uploads that reserve a place under link `linkId`'s limits at `now` (CONTRACT §10): made
 * through it, unfinished and not expired. `ownerId` (the link's owner, whose account every such
 * upload lands in) lets the query use the uploads' owner index.
 */
export function reservingUploadsOfLink(u: UploadColumns, linkId: string | SQL | Column, ownerId: string | SQL | Column, now: number) {
  return and(eq(u.uploadLinkId, linkId), eq(u.ownerId, ownerId), isNull(u.fileId), gt(u.expiresAt, now));
}

/**
 * How many of the reserving uploads hold a file's place under a link's max_files: all but tus
 * partial uploads, which hold bytes only; the final upload they make counts one file, once,
 * when it commits (CONTRACT §8).
 */
export function filesHeld(u: Pick<UploadColumns, "concat">) {
  return sql<number>`coalesce(sum(case when ${u.concat} is null then 1 else 0 end), 0)`.mapWith(Number);
}

/**
 * The condition under which link `id` takes one more file of `bytes` at `now`: not deleted, not
 * expired, and a file and `bytes` left under its limits (a null limit is none), counting both the
 * files it received and the unfinished uploads made through it, which hold their place from
 * their creation (CONTRACT §10; a tus partial upload holds its bytes but no file: {@link filesHeld}). One statement reads both, so it is exact when the statement
 * runs after the owner's row is locked (service/quota.ts's `lock`, taken first by every
 * transaction that creates an upload or commits a file through the link): no other
 * reservation or commit of theirs can be in flight, and the statement's snapshot sees all the
 * committed ones.
 */
export function linkAccepts(t: LinkColumns, u: UploadColumns & Table, id: string, bytes: number, now: number, group?: ConcatGroup) {
  const reserving = reservingUploadsOfLink(u, t.id, t.ownerId, now);
  return and(
    eq(t.id, id),
    isNull(t.deletedAt),
    or(isNull(t.expiresAt), sql`${t.expiresAt} > ${now}`),
    or(isNull(t.maxFiles), sql`${t.filesUploaded} + (select count(*) from ${u} where ${reserving} and ${u.concat} is null) < ${t.maxFiles}`),
    or(isNull(t.maxBytes), sql`${t.bytesUploaded} + (select coalesce(sum(${u.length}), 0) from ${u} where ${reserving}) + ${bytes} <= ${t.maxBytes}`),
    // A part of a concatenation: the whole file's declared total fits beside every other
    // reservation, its own parts' aside (CONTRACT §15: refused at its first part, not its sixth).
    group === undefined
      ? undefined
      : or(
          isNull(t.maxBytes),
          sql`${t.bytesUploaded} + (select coalesce(sum(${u.length}), 0) from ${u} where ${reserving} and (${u.concatGroup} is null or ${u.concatGroup} <> ${group.id})) + ${group.total} <= ${t.maxBytes}`,
        ),
  );
}


/** The condition under which a link has ended at `now`: deleted, or expired (CONTRACT §10: its unfinished uploads end with it). */
export function linkEnded(t: Pick<LinkColumns, "deletedAt" | "expiresAt">, now: number) {
  return or(isNotNull(t.deletedAt), lte(t.expiresAt, now));
}
