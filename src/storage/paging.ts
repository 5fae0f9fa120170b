/**
 * Keyset pagination shared by the SQLite and PostgreSQL metadata stores: drizzle's operators
 * work on either dialect's columns, so the conditions are written once.
 */
import { and, eq, sql, type Column, type SQL } from "drizzle-orm";
import type { PageCursor } from "../domain/params.ts";
import type { FileCursor, FileOrder } from "../domain/file-order.ts";

/** Rows read per query when iterating a whole table. */
export const PAGE_ROWS = 1000;

/**
 * Every row of a table in ID order: `page(after)` returns up to {@link PAGE_ROWS} rows with IDs
 * after `after` (keyset pagination, so memory stays one page and no query rescans what it skipped).
 */
export async function* inIdOrder<T extends { id: string }>(page: (after: string) => T[] | Promise<T[]>): AsyncIterable<T> {
  for (let after = ""; ; ) {
    const rows = await page(after);
    yield* rows;
    if (rows.length < PAGE_ROWS) return;
    after = rows[rows.length - 1]!.id;
  }
}

/** Every row of a table in its primary key's order, a page at a time (export). */
export async function* allInKeyOrder<T>(page: (after: T | undefined) => T[] | Promise<T[]>): AsyncIterable<T> {
  let after: T | undefined;
  for (;;) {
    const rows = await page(after);
    yield* rows;
    if (rows.length === 0) return;
    after = rows[rows.length - 1];
  }
}

/**
 * The condition for rows after `after` in a newest-first listing: (created_at, id) below the
 * cursor's, as listings order them (descending created_at, then id); undefined on the first page.
 */
export function newestFirstAfter(columns: { createdAt: Column; id: Column }, after: PageCursor | undefined): SQL | undefined {
  if (after === undefined) return undefined;
  // A row value (SQL:1999; SQLite ≥ 3.15, PostgreSQL): both stores read it as one range of a
  // (…, created_at DESC, id DESC) index that starts at the cursor. The equivalent
  // `created_at < ? OR (created_at = ? AND id < ?)` is not an index range on PostgreSQL, which
  // then reads every newer row again on each page.
  return sql`(${columns.createdAt}, ${columns.id}) < (${sql.param(after.createdAt, columns.createdAt)}, ${sql.param(after.id, columns.id)})`;
}

/**
 * The condition for rows after `after` and the ORDER BY of a file listing in `order`
 * (domain/file-order.ts), on either dialect's files table: (field, id) compared as a row value,
 * as {@link newestFirstAfter} does for creation time, so each page is a range of an index on
 * (…, field, id). `name` is the expression names are ordered by: PostgreSQL's `COLLATE "C"`,
 * SQLite's BINARY, both code point order, so both stores list alike.
 */
export function fileOrderTerms(
  columns: { createdAt: Column; name: Column; size: Column; id: Column },
  order: FileOrder,
  after: FileCursor | undefined,
  name: SQL | Column = columns.name,
): { after: SQL | undefined; orderBy: SQL[] } {
  const field = order.field === "name" ? name : order.field === "size" ? columns.size : columns.createdAt;
  const direction = order.descending ? sql`DESC` : sql`ASC`;
  const orderBy = [sql`${field} ${direction}`, sql`${columns.id} ${direction}`];
  if (after === undefined) return { after: undefined, orderBy };
  const value = order.field === "name" ? after.name : order.field === "size" ? after.size : after.createdAt;
  if (value === undefined) throw new Error(`a cursor without the ${order.field} it continues after`);
  const bound = order.field === "name" ? sql`${value}` : sql.param(value, order.field === "size" ? columns.size : columns.createdAt);
  const compare = order.descending ? sql`<` : sql`>`;
  return { after: sql`(${field}, ${columns.id}) ${compare} (${bound}, ${sql.param(after.id, columns.id)})`, orderBy };
}

/** The condition for an owner's files after `after`, newest first (see {@link newestFirstAfter}). */
export function ownerFilesAfter(columns: { ownerId: Column; createdAt: Column; id: Column }, ownerId: string, after: PageCursor | undefined): SQL | undefined {
  return and(eq(columns.ownerId, ownerId), newestFirstAfter(columns, after));
}

/**
 * The LIKE pattern, for `ESCAPE '\'`, of names that contain `text`: its `%`, `_` and `\` are
 * escaped so that they match themselves, and its ASCII letters are lower-cased, to be matched
 * against the name with its ASCII letters lower-cased (each store's listByOwner). Other
 * characters, non-ASCII letters included, match only themselves, on both stores alike.
 */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, "\\$&").replace(/[A-Z]/g, (c) => c.toLowerCase())}%`;
}
