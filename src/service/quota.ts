/**
 * Storage quotas (CONTRACT §9). What counts against a user's quota: the sizes of their live
 * files (a replaced file counts with its new size only) and the Upload-Length of their
 * unfinished resumable uploads, reserved when the upload is created; files arriving through a
 * guest upload link count against the link's owner; WebDAV dead properties and the DAV:owner
 * elements of live locks (CONTRACT §14).
 *
 * The check is atomic: it runs inside the transaction that commits the file (or reserves the
 * upload), after locking the user's row (PostgreSQL `SELECT … FOR NO KEY UPDATE`; SQLite's
 * `BEGIN IMMEDIATE` transactions are serial already), so two uploads that each fit but not
 * together can never both commit, on one server or several. Before a body is read, the
 * headroom known then caps the stream, so an upload far past the quota stops early; the
 * commit's check is the one that decides.
 */
import { AppError } from "../errors.ts";
import type { Clock } from "../domain/time.ts";
import { NO_QUOTA, type MetadataStore, type MetadataTables, type UserAccount, type UserUsage } from "../storage/ports.ts";

/** An upload refused because it would pass the owner's quota: 413, RESOURCE_EXHAUSTED. */
export class QuotaExceededError extends AppError {
  constructor(usedBytes: number, quotaBytes: number, neededBytes?: number) {
    const needs = neededBytes === undefined ? "" : `; this upload needs ${neededBytes} more`;
    super("payload_too_large", `storage quota exceeded: ${usedBytes} of ${quotaBytes} bytes used${needs}`);
  }
}

/** A user's usage and quota (GET /v1/usage, `cubby users list`). Bytes. */
export interface Usage extends UserUsage {
  /** fileBytes + reservedBytes + davBytes: what the quota is checked against. */
  usedBytes: number;
  /** The quota that applies (the user's own, else QUOTA_BYTES); null: none. */
  quotaBytes: number | null;
}

/** How much more a user may store now, as known before a commit (the commit checks again). */
export interface Headroom {
  /** Bytes; Infinity without a quota; never negative. */
  bytes: number;
  usedBytes: number;
  quotaBytes: number | null;
}

/** A user's row locked for the rest of a transaction, ready to charge bytes against their quota. */
export interface LockedQuota {
  /**
   * Checks that `bytes` more (the change in the user's stored bytes; 0 or less always passes,
   * so shrinking is allowed even over the quota) stay within the quota.
   * @throws QuotaExceededError otherwise
   */
  charge(bytes: number): Promise<void>;
  /**
   * Checks, after a change already made in the transaction that grew the user's stored bytes by
   * `grownBytes` (0 or less always passes), that their usage is within the quota.
   * @throws QuotaExceededError otherwise (the caller's transaction then rolls back)
   */
  settle(grownBytes: number): Promise<void>;
}

/** What counts against a quota: files, reservations, WebDAV dead properties and lock owners (CONTRACT §14). */
export function usedOf(usage: UserUsage): number {
  return usage.fileBytes + usage.reservedBytes + usage.davBytes;
}

/** The quota rules over the metadata store (see the module comment). */
export class Quotas {
  constructor(private readonly deps: { store: MetadataStore; clock: Clock; /** QUOTA_BYTES; null: none. */ defaultQuotaBytes: number | null }) {}

  /** The quota that applies to an account: its own, else QUOTA_BYTES; null for none. */
  quotaOf(account: Pick<UserAccount, "quotaBytes">): number | null {
    if (account.quotaBytes === NO_QUOTA) return null;
    return account.quotaBytes ?? this.deps.defaultQuotaBytes;
  }

  /** A user's usage and quota now (a plain read). @throws not_found for an unknown user */
  async usage(userId: string): Promise<Usage> {
    const account = await this.deps.store.users.account(userId);
    if (account === undefined) throw new AppError("not_found", "user not found");
    const usage = await this.deps.store.users.usage(userId, this.deps.clock.nowMicros());
    return { ...usage, usedBytes: usedOf(usage), quotaBytes: this.quotaOf(account) };
  }

  /**
   * How many more bytes the user may store now, counting `freedBytes` (a replaced file's old
   * size) as free: the cap for streaming a body before the commit decides.
   */
  async headroom(userId: string, freedBytes = 0): Promise<Headroom> {
    const account = await this.deps.store.users.account(userId);
    const quotaBytes = account === undefined ? null : this.quotaOf(account);
    if (quotaBytes === null) return { bytes: Infinity, usedBytes: 0, quotaBytes };
    const usage = await this.deps.store.users.usage(userId, this.deps.clock.nowMicros());
    const usedBytes = usedOf(usage);
    return { bytes: Math.max(0, quotaBytes - usedBytes + freedBytes), usedBytes, quotaBytes };
  }

  /**
   * Locks the user's row in `tx` (call it before locking anything else of theirs, so that every
   * transaction takes locks in one order) and returns what charges bytes against their quota.
   */
  async lock(tx: MetadataTables, userId: string): Promise<LockedQuota> {
    const account = await tx.users.account(userId);
    const quotaBytes = account === undefined ? null : this.quotaOf(account);
    return {
      charge: async (bytes) => {
        if (bytes <= 0 || quotaBytes === null) return;
        const usage = await tx.users.usage(userId, this.deps.clock.nowMicros());
        const usedBytes = usedOf(usage);
        if (usedBytes + bytes > quotaBytes) throw new QuotaExceededError(usedBytes, quotaBytes, bytes);
      },
      settle: async (grownBytes) => {
        if (grownBytes <= 0 || quotaBytes === null) return;
        const usedBytes = usedOf(await tx.users.usage(userId, this.deps.clock.nowMicros()));
        if (usedBytes > quotaBytes) throw new QuotaExceededError(usedBytes - grownBytes, quotaBytes, grownBytes);
      },
    };
  }
}
