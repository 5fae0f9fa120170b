/**
 * API keys: `cubby_` followed by 43 base64url characters (256 random bits). Only the SHA-256
 * of the whole key is stored; with that much entropy a fast hash cannot be brute-forced, and
 * looking a key up by its hash needs no comparison against secrets (Lucia's session guide).
 */
import { randomBytes } from "node:crypto";

export const API_KEY_PREFIX = "cubby_";
const API_KEY_PATTERN = /^cubby_[A-Za-z0-9_-]{43}$/;

/** A new random API key. */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString("base64url");
}

/** True when `s` has the exact shape of a key this server issues. */
export function isApiKeyShaped(s: string): boolean {
  return API_KEY_PATTERN.test(s);
}

/** SHA-256 of the key, 32 bytes: what the database holds. One call, no hasher object to collect. */
export function hashApiKey(key: string): Buffer {
  const digest = Bun.SHA256.hash(key) as Uint8Array;
  return Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength);
}
