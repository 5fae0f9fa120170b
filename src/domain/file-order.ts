/**
 * The orders a file listing takes (CONTRACT §15 "Sorting": `order_by` of `GET /v1/files` and of
 * a folder's files, as AIP-132 spells it: a field, then ` desc` for descending) and the page
 * tokens of each. Every order is a keyset through an index (storage/paging.ts fileOrderTerms):
 * the field, then the ID, so equal values page without gaps or repeats.
 */
import { AppError } from "../errors.ts";
import { encodePageToken, parsePageToken, type PageCursor } from "./params.ts";

/** A field a file listing is ordered by. */
export type FileOrderField = "create_time" | "name" | "size";

/** How a file listing is ordered. */
export interface FileOrder {
  field: FileOrderField;
  descending: boolean;
}

/** The default order of every file listing: newest first. */
export const NEWEST_FIRST: FileOrder = { field: "create_time", descending: true };

/** The values `order_by` takes, the default first. */
export const ORDER_BY_VALUES = ["create_time desc", "create_time", "name", "name desc", "size", "size desc"] as const;

/**
 * An `order_by` value (AIP-132: `name`, `size desc`, …; absent means {@link NEWEST_FIRST}).
 * @throws AppError invalid_argument naming order_by and what it takes
 */
export function parseOrderBy(raw: string): FileOrder {
  if (!(ORDER_BY_VALUES as readonly string[]).includes(raw)) {
    throw new AppError("invalid_argument", `order_by: one of ${ORDER_BY_VALUES.map((v) => `"${v}"`).join(", ")}`);
  }
  const [field, direction] = raw.split(" ") as [FileOrderField, string | undefined];
  return { field, descending: direction === "desc" };
}

/**
 * Where a file listing continues: the ID of the last file of the previous page and its value of
 * the order's field (the one the order reads; a page's own cursor carries all three).
 */
export interface FileCursor {
  id: string;
  createdAt?: number;
  name?: string;
  size?: number;
}

/** The cursor after `file` (any order: it carries every field an order may read). */
export function cursorAfter(file: { id: string; createdAt: number; name: string; size: number }): PageCursor & Required<FileCursor> {
  return { id: file.id, createdAt: file.createdAt, name: file.name, size: file.size };
}

/** One letter per order but the default, so a token is refused by a listing of another order. */
const CODES: Record<string, string> = { "create_time asc": "a", "name asc": "n", "name desc": "N", "size asc": "s", "size desc": "S" };

const keyOf = (o: FileOrder) => `${o.field} ${o.descending ? "desc" : "asc"}`;

/**
 * The `next_page_token` after `cursor` in `order`: newest first, the format every listing has
 * always had ({@link encodePageToken}); any other order, base64url of JSON `[code, value, id]`.
 */
export function encodeFileToken(order: FileOrder, cursor: FileCursor): string {
  const key = keyOf(order);
  if (key === "create_time desc") return encodePageToken({ createdAt: cursor.createdAt!, id: cursor.id });
  const value = order.field === "name" ? cursor.name : order.field === "size" ? cursor.size : cursor.createdAt;
  return Buffer.from(JSON.stringify([CODES[key], value, cursor.id])).toString("base64url");
}

/**
 * A `page_token` of a listing in `order` ("" is the first page).
 * @throws AppError invalid_argument ("page_token: not a token this server issued") for anything
 *   else, a token of another order included
 */
export function parseFileToken(raw: string, order: FileOrder): FileCursor | undefined {
  const key = keyOf(order);
  if (key === "create_time desc") return parsePageToken(raw);
  if (raw === "") return undefined;
  const bad = () => new AppError("invalid_argument", `page_token: not a token this server issued for order_by "${order.field}${order.descending ? " desc" : ""}"`);
  if (!/^[A-Za-z0-9_-]{1,2048}$/.test(raw)) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 3 || parsed[0] !== CODES[key]) throw bad();
  const [, value, id] = parsed as [string, unknown, unknown];
  if (typeof id !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw bad();
  if (order.field === "name") {
    if (typeof value !== "string" || value.length > 1024) throw bad();
    return { id, name: value };
  }
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) throw bad();
  return order.field === "size" ? { id, size: value } : { id, createdAt: value };
}
