/**
 * Identifiers. File IDs are 21 characters of the URL-safe alphabet `A-Za-z0-9_-` (the spec's
 * pattern), which is exactly nanoid's default: 126 random bits.
 */
import { customAlphabet, nanoid } from "nanoid";

/** The spec's file ID pattern: `^[A-Za-z0-9_-]{21}$`. */
export const FILE_ID_PATTERN = /^[A-Za-z0-9_-]{21}$/;

/** A fresh file ID (21 chars, 126 random bits). */
export function newFileId(): string {
  return nanoid(21);
}

/** True when `s` has the shape of a file ID. */
export function isFileId(s: string): boolean {
  return FILE_ID_PATTERN.test(s);
}

/** A fresh, never-reused blob file name: replace writes a new blob instead of overwriting one. */
export function newBlobName(): string {
  return nanoid(24);
}

/** API key IDs: 16 alphanumeric characters, easy to copy from a terminal. */
export const newKeyId = customAlphabet("0123456789abcdefghijklmnopqrstuvwxyz", 16);

/** User IDs (internal, never shown in the File object). */
export function newUserId(): string {
  return nanoid(21);
}

/**
 * Whether `raw` could be a row ID at all (1-64 of `0-9 A-Z a-z _ -`, which every ID cubby
 * makes is): lookups of anything else answer not found without asking the database, which
 * refuses some strings outright (PostgreSQL: a NUL byte in text is an error, not a miss).
 */
export function isIdShaped(raw: string): boolean {
  return /^[0-9A-Za-z_-]{1,64}$/.test(raw);
}

/** Share link IDs (the handle for listing and DELETE; not a secret): like API key IDs. */
export const newShareId = customAlphabet("0123456789abcdefghijklmnopqrstuvwxyz", 16);

/** The secret of a share link's URL, `/s/{token}`: 32 URL-safe characters, 192 random bits (CONTRACT §8 asks ≥ 128). */
export function newShareToken(): string {
  return nanoid(32);
}

/** The shape of {@link newShareToken}'s tokens. */
export const SHARE_TOKEN_PATTERN = /^[A-Za-z0-9_-]{32}$/;
