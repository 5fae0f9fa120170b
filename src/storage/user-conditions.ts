/**
 * Queries about one user written once for both dialects (drizzle's operators work on either's
 * columns), as upload-conditions.ts does for links: what counts against a quota (CONTRACT §9),
 * and what a user holds.
 */
import { and, eq, gt, isNull, or, sql, type Column } from "drizzle-orm";

/** The user's files that count at `now`: those not past their expiry (the sweep deletes those within seconds). */
export function liveFilesOf(t: { ownerId: Column; expiresAt: Column }, userId: string, now: number) {
  return and(eq(t.ownerId, userId), or(isNull(t.expiresAt), gt(t.expiresAt, now)));
}

/** The user's uploads that reserve their Upload-Length at `now`: unfinished and not expired. */
export function reservingUploadsOf(t: { ownerId: Column; fileId: Column; expiresAt: Column }, userId: string, now: number) {
  return and(eq(t.ownerId, userId), isNull(t.fileId), gt(t.expiresAt, now));
}

/** `count(*)` as a number on both dialects (PostgreSQL's is a bigint, which its driver gives as a string). */
export const countAll = () => sql<number>`count(*)`.mapWith(Number);

/** `coalesce(sum(column), 0)` as a number (PostgreSQL's sum of a bigint is a numeric). */
export const sumOf = (c: Column) => sql<number>`coalesce(sum(${c}), 0)`.mapWith(Number);
