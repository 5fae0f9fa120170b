/**
 * Whether a user may authenticate (CONTRACT §9): a disabled user's keys and sessions stop
 * working from the next request on, on every server sharing the store, and every admitted
 * request records when the user was last seen.
 */
import type { Clock } from "../domain/time.ts";
import type { MetadataStore, UserAccount } from "../storage/ports.ts";
import { ReadCache } from "./read-cache.ts";
import { logError } from "../log.ts";

/** `last_seen_at` is written at most this often per user, as a key's `last_used_at` is. */
export const LAST_SEEN_RESOLUTION_MICROS = 60_000_000;
/** Account lookups kept (one small row each). */
const CACHED_ACCOUNTS = 10_000;

/** Admits or refuses a user's credentials (see the module comment). */
export class AccountStatus {
  /** Valid until the next commit anywhere, so `cubby users disable` takes effect at once. */
  private readonly accounts: ReadCache<UserAccount | undefined>;

  constructor(private readonly deps: { store: MetadataStore; clock: Clock }) {
    this.accounts = new ReadCache(deps.store, CACHED_ACCOUNTS);
  }

  /**
   * Whether `userId` exists and is not disabled; when so, records the request as their last
   * seen (at most every {@link LAST_SEEN_RESOLUTION_MICROS}; a failed write is logged, not thrown).
   */
  async admit(userId: string): Promise<boolean> {
    const account = await this.accounts.get(userId, () => this.deps.store.users.account(userId));
    if (account === undefined || account.disabledAt !== null) return false;
    const now = this.deps.clock.nowMicros();
    if (lastSeenDue(account, now)) {
      try {
        await this.deps.store.users.touch(userId, now);
      } catch (err) {
        // Bookkeeping only: a busy database must not fail the request it belongs to.
        logError(`user ${userId}: could not record last seen: ${err}`);
      }
    }
    return true;
  }

  /**
   * {@link admit} without waiting: true when the account is in the cache and current, enabled,
   * and its last-seen time needs no write; undefined when `admit` must decide (or would refuse).
   */
  admitNow(userId: string): true | undefined {
    const account = this.accounts.peek(userId)?.value;
    if (account === undefined || account.disabledAt !== null || lastSeenDue(account, this.deps.clock.nowMicros())) return undefined;
    return true;
  }
}

/** Whether a request now must record the user as last seen. */
function lastSeenDue(account: UserAccount, now: number): boolean {
  return account.lastSeenAt === null || now - account.lastSeenAt >= LAST_SEEN_RESOLUTION_MICROS;
}
