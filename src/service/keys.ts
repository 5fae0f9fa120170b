/**
 * API keys: minted for a user, listed without their secret, revoked by ID, and resolved from
 * a bearer token to the principal it stands for.
 */
import type { Statement } from "bun:sqlite";
import { and, desc, eq } from "drizzle-orm";
import { AppError } from "../errors.ts";
import { generateApiKey, hashApiKey, isApiKeyShaped } from "../domain/api-key.ts";
import { newKeyId } from "../domain/ids.ts";
import type { Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import { ReadCache, type ChangeWatch } from "../storage/change-watch.ts";
import type { Db } from "../storage/db.ts";
import { apiKeys } from "../storage/schema.ts";

/** A key as listed: never its secret. Times are Unix microseconds. */
export interface ApiKeyInfo {
  id: string;
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** A freshly minted key: the only time `key` is known. */
export interface MintedApiKey extends ApiKeyInfo {
  key: string;
}

/**
 * `last_used_at` is written at most this often per key, so that authenticated reads do not
 * each cost a database write. The first use is always recorded.
 */
export const LAST_USED_RESOLUTION_MICROS = 60_000_000;

const MAX_KEY_NAME = 100;
/** Bearer lookups kept (by key hash; unknown keys too, so a flood of them stays cheap). */
const CACHED_KEYS = 10_000;

interface KeyRow {
  id: string;
  userId: string;
  lastUsedAt: number | null;
}

export class KeyService {
  /** Bearer authentication runs on every API call: prepared once. */
  private readonly byHash: Statement<KeyRow, [Uint8Array]>;
  /**
   * Bearer lookups, valid until the next commit by any connection in any process, so a key
   * revoked anywhere (dashboard, RPC, `cubby keys revoke`) is refused from the next request on.
   */
  private readonly lookups: ReadCache<KeyRow | null>;

  constructor(private readonly deps: { db: Db; clock: Clock; changes: ChangeWatch }) {
    this.byHash = deps.db.$client.prepare(
      "SELECT id, user_id AS userId, last_used_at AS lastUsedAt FROM api_keys WHERE secret_hash = ?",
    );
    this.lookups = new ReadCache(deps.changes, CACHED_KEYS);
  }

  /** Mints a key for `userId`. @throws invalid_argument for a name over 100 characters or with control characters */
  create(userId: string, name: string): MintedApiKey {
    const trimmed = name.trim();
    if ([...trimmed].length > MAX_KEY_NAME || /[\x00-\x1F\x7F]/.test(trimmed)) {
      throw new AppError("invalid_argument", `name: at most ${MAX_KEY_NAME} characters, no control characters`);
    }
    const key = generateApiKey();
    const row = {
      id: newKeyId(),
      userId,
      name: trimmed,
      secretHash: hashApiKey(key),
      createdAt: this.deps.clock.nowMicros(),
      lastUsedAt: null,
    };
    this.deps.db.insert(apiKeys).values(row).run();
    return { id: row.id, name: row.name, createdAt: row.createdAt, lastUsedAt: null, key };
  }

  /** The user's keys, newest first. */
  list(userId: string): ApiKeyInfo[] {
    return this.deps.db
      .select({ id: apiKeys.id, name: apiKeys.name, createdAt: apiKeys.createdAt, lastUsedAt: apiKeys.lastUsedAt })
      .from(apiKeys)
      .where(eq(apiKeys.userId, userId))
      .orderBy(desc(apiKeys.createdAt))
      .all();
  }

  /**
   * Revokes (deletes) a key. With `userId`, only that user's key; without (the CLI, run by
   * the operator), any key.
   * @throws not_found when there is no such key for that user
   */
  revoke(keyId: string, userId?: string): void {
    const where = userId === undefined ? eq(apiKeys.id, keyId) : and(eq(apiKeys.id, keyId), eq(apiKeys.userId, userId));
    const deleted = this.deps.db.delete(apiKeys).where(where).returning({ id: apiKeys.id }).all();
    if (deleted.length === 0) throw new AppError("not_found", "API key not found");
  }

  /**
   * The principal a bearer token stands for, or null when it is not a live key. Records
   * `last_used_at` (see {@link LAST_USED_RESOLUTION_MICROS}).
   */
  authenticate(token: string): Principal | null {
    if (!isApiKeyShaped(token)) return null;
    const hash = hashApiKey(token);
    const row = this.lookups.get(hash.toString("base64"), () => this.byHash.get(hash));
    if (!row) return null;
    const now = this.deps.clock.nowMicros();
    if (row.lastUsedAt === null || now - row.lastUsedAt >= LAST_USED_RESOLUTION_MICROS) {
      try {
        this.deps.db.update(apiKeys).set({ lastUsedAt: now }).where(eq(apiKeys.id, row.id)).run();
      } catch (err) {
        // Bookkeeping only: a busy database must not fail the request it belongs to.
        console.error(`api key ${row.id}: could not record last use: ${err}`);
      }
    }
    return { userId: row.userId, via: "api_key" };
  }
}
