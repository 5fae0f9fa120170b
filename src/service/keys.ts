/**
 * API keys: minted for a user, listed without their secret, revoked by ID, and resolved from
 * a bearer token to the principal it stands for.
 */
import { AppError } from "../errors.ts";
import { generateApiKey, hashApiKey, isApiKeyShaped } from "../domain/api-key.ts";
import { isIdShaped, newKeyId } from "../domain/ids.ts";
import { parseExpiry, type ExpiryInput } from "../domain/expiry.ts";
import { pageFrom, type Page, type PageCursor } from "../domain/params.ts";
import { ALL_SCOPES, formatScopes, parseScopes, type Principal, type Scope } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import type { ApiKeyRow, MetadataStore } from "../storage/ports.ts";
import { ReadCache } from "./read-cache.ts";
import type { AccountStatus } from "./account-status.ts";
import { logError } from "../log.ts";
import { settle, type Later, type NowOrLater } from "../domain/later.ts";
import { customAlphabet } from "nanoid";
import { createHash } from "node:crypto";

/** A key as listed: never its secret. Times are Unix microseconds. */
export interface ApiKeyInfo {
  id: string;
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
  /** In SCOPES order. */
  scopes: Scope[];
  /** After this the key is refused (401); null: never. */
  expiresAt: number | null;
  /** An S3 access key's access key ID (CONTRACT §16); null for an API key. */
  s3AccessKeyId: string | null;
}

/** What a new key may do and for how long; absent: every scope, no expiry. */
export interface KeyOptions {
  scopes?: ReadonlySet<Scope> | undefined;
  /** Unix microseconds; must be in the future. */
  expiresAt?: number | null | undefined;
}

/** A freshly minted key: the only time `key` is known. */
export interface MintedApiKey extends ApiKeyInfo {
  key: string;
}

/** A freshly minted S3 access key: the only time its secret is shown (CONTRACT §16). */
export interface MintedS3Key extends ApiKeyInfo {
  s3AccessKeyId: string;
  secretAccessKey: string;
}

/** What an S3 request's signature is checked with: the key's secret and who it stands for. */
export interface S3Credential {
  secretAccessKey: string;
  principal: Principal;
}

/**
 * An S3 access key ID is this prefix and the key's ID in capitals (`CUBBY` + 16 of [0-9A-Z]:
 * 21 characters, the shape clients expect of AWS's 20), so it names its row without a lookup
 * table of its own.
 */
export const S3_ACCESS_KEY_PREFIX = "CUBBY";

/** The access key ID of key `id`. */
export function s3AccessKeyIdOf(id: string): string {
  return S3_ACCESS_KEY_PREFIX + id.toUpperCase();
}

/** The key ID an access key ID names, or undefined when it is not one of cubby's. */
export function keyIdOfS3AccessKey(accessKeyId: string): string | undefined {
  if (!accessKeyId.startsWith(S3_ACCESS_KEY_PREFIX)) return undefined;
  const id = accessKeyId.slice(S3_ACCESS_KEY_PREFIX.length);
  return /^[0-9A-Z]{16}$/.test(id) ? id.toLowerCase() : undefined;
}

/** Secret access keys: 40 characters of [0-9A-Za-z] (238 bits), AWS's length. */
const newS3Secret = customAlphabet("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 40);

/**
 * `last_used_at` is written at most this often per key, so that authenticated reads do not
 * each cost a database write. The first use is always recorded.
 */
export const LAST_USED_RESOLUTION_MICROS = 60_000_000;

const MAX_KEY_NAME = 100;
/** Bearer lookups kept (by key hash; unknown keys too, so a flood of them stays cheap). */
const CACHED_KEYS = 10_000;

/** API keys: mint, list, revoke, and resolve a bearer token (see the module comment). */
export class KeyService {
  /**
   * Bearer lookups, valid until the next commit by any connection in any process, so a key
   * revoked anywhere (dashboard, RPC, `cubby keys revoke`) is refused from the next request on.
   */
  private readonly lookups: ReadCache<ApiKeyRow | undefined>;
  /** S3 access keys' rows by key ID, valid as {@link lookups}. */
  private readonly s3Lookups: ReadCache<ApiKeyRow | undefined>;

  constructor(private readonly deps: { store: MetadataStore; clock: Clock; /** Refuses disabled users' keys (CONTRACT §9). */ accounts: AccountStatus }) {
    this.lookups = new ReadCache(deps.store, CACHED_KEYS);
    this.s3Lookups = new ReadCache(deps.store, CACHED_KEYS);
  }

  /**
   * Mints a key for `userId`.
   * @throws invalid_argument for a name over 100 characters or with control characters, or an
   *   expiry that is not in the future
   */
  async create(userId: string, name: string, opts: KeyOptions = {}): Promise<MintedApiKey> {
    const key = generateApiKey();
    const row = this.newRow(userId, name, opts, hashApiKey(key), null);
    await this.deps.store.keys.insert(row);
    return { ...info(row), key };
  }

  /**
   * Mints an S3 access key for `userId` (CONTRACT §16): a row of this table whose secret is
   * kept (docs/s3.md), so that a request's Signature Version 4 can be recomputed. Its
   * `secret_hash` is the SHA-256 of `s3:` and the secret, which no bearer token hashes to.
   * @throws as {@link create}
   */
  async createS3(userId: string, name: string, opts: KeyOptions = {}): Promise<MintedS3Key> {
    const secretAccessKey = newS3Secret();
    const row = this.newRow(userId, name, opts, createHash("sha256").update(`s3:${secretAccessKey}`).digest(), secretAccessKey);
    await this.deps.store.keys.insert(row);
    return { ...info(row), s3AccessKeyId: s3AccessKeyIdOf(row.id), secretAccessKey };
  }

  /**
   * What an S3 request signed with `accessKeyId` is checked with, or null when that is not a
   * live S3 access key of an enabled user (the same rules as a bearer key: expiry, disabled
   * users, last use recorded). The row is read through the same kind of read cache.
   */
  async s3Credential(accessKeyId: string): Promise<S3Credential | null> {
    const id = keyIdOfS3AccessKey(accessKeyId);
    if (id === undefined) return null;
    const row = await this.s3Lookups.get(id, () => this.deps.store.keys.byId(id));
    if (row === undefined || row.s3Secret === null) return null;
    const principal = await settle(this.decide(row));
    return principal === null ? null : { secretAccessKey: row.s3Secret, principal };
  }

  /** A new key's row. @throws invalid_argument (see {@link create}) */
  private newRow(userId: string, name: string, opts: KeyOptions, secretHash: Uint8Array, s3Secret: string | null): ApiKeyRow {
    const trimmed = name.trim();
    if ([...trimmed].length > MAX_KEY_NAME || /[\x00-\x1F\x7F]/.test(trimmed)) {
      throw new AppError("invalid_argument", `name: at most ${MAX_KEY_NAME} characters, no control characters`);
    }
    const now = this.deps.clock.nowMicros();
    const expiresAt = opts.expiresAt ?? null;
    if (expiresAt !== null && expiresAt <= now) throw new AppError("invalid_argument", "expire_time must be in the future");
    return {
      id: newKeyId(),
      userId,
      name: trimmed,
      secretHash,
      createdAt: now,
      lastUsedAt: null,
      scopes: formatScopes(opts.scopes ?? ALL_SCOPES),
      expiresAt,
      s3Secret,
    };
  }

  /**
   * A new key's options as a request or the CLI states them: scope names (absent: all) and
   * `expire_time` or `ttl` (CONTRACT §8), against this service's clock.
   * @throws invalid_argument for an unknown scope, an empty list, or a bad expiry
   */
  options(input: ExpiryInput & { scopes?: readonly string[] | undefined }): KeyOptions {
    return {
      scopes: input.scopes === undefined ? undefined : parseScopes(input.scopes),
      expiresAt: parseExpiry(input, this.deps.clock.nowMicros()),
    };
  }

  /** The user's keys, newest first, `pageSize` at a time after `after` (keyset, CONTRACT §14). */
  async list(userId: string, pageSize: number, after: PageCursor | undefined): Promise<Page<ApiKeyInfo>> {
    const page = pageFrom(await this.deps.store.keys.listByUser(userId, pageSize + 1, after), pageSize);
    return { items: page.items.map(info), next: page.next };
  }

  /**
   * Revokes (deletes) a key. With `userId`, only that user's key; without (the CLI, run by
   * the operator), any key.
   * @throws not_found when there is no such key for that user
   */
  async revoke(keyId: string, userId?: string): Promise<void> {
    if (!isIdShaped(keyId) || !(await this.deps.store.keys.delete(keyId, userId))) throw new AppError("not_found", "API key not found");
  }

  /**
   * The principal a bearer token stands for, or null when it is not a live key or its user is
   * disabled (`cubby users disable`, from the next request on). Records
   * `last_used_at` (see {@link LAST_USED_RESOLUTION_MICROS}).
   *
   * Decided now (no I/O; no allocation but the principal) when the key's row and its user's
   * account are in the read caches and current and neither a last use nor a last-seen time needs
   * writing; else the rest to run, which starts nothing until called ({@link NowOrLater},
   * domain/later.ts): the rate limit charges an attempt before its check (auth/principal.ts).
   */
  authenticate(token: string): NowOrLater<Principal | null> {
    if (!isApiKeyShaped(token)) return null;
    const hash = hashApiKey(token);
    const key = hash.toString("base64");
    const hit = this.lookups.peek(key);
    return hit === undefined ? this.loadLater(key, hash) : this.decide(hit.value);
  }

  // The rests are made by methods of their own: a closure made in `authenticate` or `decide`
  // would give every call, decided now or not, a scope object to allocate.
  private loadLater(key: string, hash: Buffer): Later<Principal | null> {
    return () => this.load(key, hash);
  }

  private async load(key: string, hash: Buffer): Promise<Principal | null> {
    return settle(this.decide(await this.lookups.get(key, () => this.deps.store.keys.byHash(hash))));
  }

  /** {@link authenticate} of a looked-up row: the user's admission or a write to make is the rest. */
  private decide(row: ApiKeyRow | undefined): NowOrLater<Principal | null> {
    if (!row) return null;
    const now = this.deps.clock.nowMicros();
    if (isExpiredKey(row, now)) return null;
    const admitted = this.deps.accounts.admit(row.userId);
    if (admitted === false) return null;
    return admitted === true && !lastUseDue(row, now) ? principalOf(row) : this.recordLater(row, now, admitted);
  }

  /** The rest of {@link decide}: the user's admission, then the last use to record. */
  private recordLater(row: ApiKeyRow, now: number, admitted: NowOrLater<boolean>): Later<Principal | null> {
    return async () => {
      if (!(await settle(admitted))) return null;
      if (lastUseDue(row, now)) {
        try {
          await this.deps.store.keys.touch(row.id, now);
        } catch (err) {
          // Bookkeeping only: a busy database must not fail the request it belongs to.
          logError(`api key ${row.id}: could not record last use: ${err}`);
        }
      }
      return principalOf(row);
    };
  }
}

function principalOf(row: ApiKeyRow): Principal {
  return { userId: row.userId, via: "api_key", scopes: scopesOf(row.scopes) };
}

function isExpiredKey(row: ApiKeyRow, now: number): boolean {
  return row.expiresAt !== null && row.expiresAt <= now;
}

/** Whether a request now must record the key's last use. */
function lastUseDue(row: ApiKeyRow, now: number): boolean {
  return row.lastUsedAt === null || now - row.lastUsedAt >= LAST_USED_RESOLUTION_MICROS;
}

/** A row as listed. */
function info(row: ApiKeyRow): ApiKeyInfo {
  return { id: row.id, name: row.name, createdAt: row.createdAt, lastUsedAt: row.lastUsedAt, scopes: [...scopesOf(row.scopes)], expiresAt: row.expiresAt, s3AccessKeyId: row.s3Secret === null ? null : s3AccessKeyIdOf(row.id) };
}

/** Parsed scope sets by their stored form (there are three). */
const parsedScopes = new Map<string, ReadonlySet<Scope>>();

/** The scopes of a stored key; a row written with a scope this version does not know grants nothing of it. */
function scopesOf(stored: string): ReadonlySet<Scope> {
  let scopes = parsedScopes.get(stored);
  if (scopes === undefined) {
    scopes = new Set(stored.split(" ").filter((s): s is Scope => ALL_SCOPES.has(s as Scope)));
    if (parsedScopes.size < 16) parsedScopes.set(stored, scopes);
  }
  return scopes;
}
