/**
 * Per-client-address limits on failed authentication (bad keys, bad session cookies, wrong share
 * passwords) and on sign-in callbacks: a fixed window of one minute per address, counted once
 * per event across every worker and instance in the metadata store's shared windows
 * (storage/rate-limits.ts; CONTRACT §10). Past the limit, requests from that address get 429
 * with Retry-After until the window ends, so guessing keys or hammering the provider's callback
 * costs the attacker time, not the server.
 *
 * An attempt is charged *before* the check it guards and refunded when the check passes
 * ({@link WindowLimiter.reserve}): N concurrent guesses get at most the limit checked, the rest
 * 429, whichever processes they land on. Charging after the check (as before issue 25) let every
 * guess already in flight be checked, and each process kept its own windows.
 */
import type { Clock } from "../domain/time.ts";
import type { RateLimitTable } from "../storage/ports.ts";

/** The outcome of {@link WindowLimiter.reserve}. */
export type Reservation =
  /** Within the limit: go ahead with the check; `refund` takes the attempt back if it passed. */
  | { ok: true; refund: () => Promise<void> }
  /** Limited: answer 429 with Retry-After `retryAfterSeconds` (≥ 1) without checking anything. */
  | { ok: false; retryAfterSeconds: number };

/** How often a process removes ended windows from the shared table, at most (µs). */
const PRUNE_EVERY_MICROS = 60_000_000;
/** Addresses this process knows to be limited, at most (a fuller map is cleared of ended ones). */
const KNOWN_LIMITED_MAX = 10_000;

/** Counts events per client in fixed windows shared by every process (see the module comment). */
export class WindowLimiter {
  /** Addresses the shared table said were limited, with when their window ends (µs). */
  private readonly limited = new Map<string, number>();
  private lastPrune = 0;

  /**
   * @param table the shared windows
   * @param name what is limited, prefixed to each address in the table (`auth`, `sign-in`)
   * @param limit events allowed per window and address; 0 disables the limiter
   * @param clock the time windows are measured in
   * @param windowMs window length in milliseconds
   */
  constructor(
    private readonly table: RateLimitTable,
    private readonly name: string,
    private readonly limit: number,
    private readonly clock: Clock,
    private readonly windowMs = 60_000,
  ) {}

  /**
   * Charges one attempt of `client` before its check. Within the limit the attempt stays
   * counted unless the caller refunds it (the check passed); past it nothing is checked.
   * @throws what the metadata store throws (unreachable: the request fails, nothing is checked)
   */
  async reserve(client: string): Promise<Reservation> {
    if (this.limit === 0) return { ok: true, refund: async () => {} };
    const now = this.clock.nowMicros();
    this.pruneNowAndThen(now);
    const key = `${this.name}:${client}`;
    const window = await this.table.charge(key, now, this.windowMs * 1000);
    if (window.count > this.limit) {
      if (this.limited.size >= KNOWN_LIMITED_MAX) this.forgetEnded(now);
      this.limited.set(client, window.resetAt);
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((window.resetAt - now) / 1_000_000)) };
    }
    return { ok: true, refund: () => this.table.refund(key, window.resetAt) };
  }

  /**
   * Counts a failed attempt that was not reserved (credentials this process had verified before,
   * which failed this time: revoked or expired since).
   */
  async record(client: string): Promise<void> {
    await this.reserve(client);
  }

  /**
   * Seconds until `client` may try again (0: it may), read from the shared windows without
   * charging anything: for a check that is not charged (credentials verified before).
   */
  async retryAfterSeconds(client: string): Promise<number> {
    if (this.limit === 0) return 0;
    const now = this.clock.nowMicros();
    const window = await this.table.peek(`${this.name}:${client}`, now);
    if (window === undefined || window.count < this.limit) {
      this.limited.delete(client);
      return 0;
    }
    this.limited.set(client, window.resetAt);
    return Math.max(1, Math.ceil((window.resetAt - now) / 1_000_000));
  }

  /**
   * Seconds until `client` may try again as far as this process knows without asking the shared
   * table (the last answer it had for the address), or 0. For paths that must not wait: a
   * limited address found here takes the path that reserves.
   */
  knownLimited(client: string): number {
    const resetAt = this.limited.get(client);
    if (resetAt === undefined) return 0;
    const now = this.clock.nowMicros();
    if (now >= resetAt) {
      this.limited.delete(client);
      return 0;
    }
    return Math.max(1, Math.ceil((resetAt - now) / 1_000_000));
  }

  private forgetEnded(now: number): void {
    for (const [client, resetAt] of this.limited) if (now >= resetAt) this.limited.delete(client);
    if (this.limited.size >= KNOWN_LIMITED_MAX) this.limited.clear();
  }

  /** Removes ended windows from the shared table about once a minute per process, in the background. */
  private pruneNowAndThen(now: number): void {
    if (now - this.lastPrune < PRUNE_EVERY_MICROS) return;
    this.lastPrune = now;
    this.table.prune(now).catch(() => {});
  }
}
