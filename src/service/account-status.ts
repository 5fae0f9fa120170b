/**
 * Whether a user may authenticate (CONTRACT §9): a disabled user's keys and sessions stop
 * working from the next request on, on every server sharing the store, and every admitted
 * request records when the user was last seen.
 */
import type { Clock } from "../domain/time.ts";
import type { MetadataStore, UserAccount } from "../storage/ports.ts";
import { ReadCache } from "./read-cache.ts";
import { logError } from "../log.ts";
import { settle, type Later, type NowOrLater } from "../domain/later.ts";

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
   * Decided now (no I/O, no allocation) when the account is in the read cache and current and
   * no last-seen write is due; else the rest to run ({@link NowOrLater}, domain/later.ts).
   */
  admit(userId: string): NowOrLater<boolean> {
    const hit = this.accounts.peek(userId);
    return hit === undefined ? this.loadLater(userId) : this.decide(userId, hit.value);
  }

  // The rests are made by methods of their own: a closure made in `admit` or `decide` would
  // give every call, decided now or not, a scope object to allocate.
  private loadLater(userId: string): Later<boolean> {
    return () => this.load(userId);
  }

  private async load(userId: string): Promise<boolean> {
    return settle(this.decide(userId, await this.accounts.get(userId, () => this.deps.store.users.account(userId))));
  }

  /** {@link admit} of a looked-up account: a write to make is the rest. */
  private decide(userId: string, account: UserAccount | undefined): NowOrLater<boolean> {
    if (account === undefined || account.disabledAt !== null) return false;
    const now = this.deps.clock.nowMicros();
    return lastSeenDue(account, now) ? this.touchLater(userId, now) : true;
  }

  private touchLater(userId: string, now: number): Later<boolean> {
    return async () => {
      try {
        await this.deps.store.users.touch(userId, now);
      } catch (err) {
        // Bookkeeping only: a busy database must not fail the request it belongs to.
        logError(`user ${userId}: could not record last seen: ${err}`);
      }
      return true;
    };
  }
}

/** Whether a request now must record the user as last seen. */
function lastSeenDue(account: UserAccount, now: number): boolean {
  return account.lastSeenAt === null || now - account.lastSeenAt >= LAST_SEEN_RESOLUTION_MICROS;
}
