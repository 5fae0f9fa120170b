/**
 * Per-client-address limits on failed authentication and on sign-in callbacks: a fixed window
 * of one minute per address, counted in memory. Past the limit, requests from that address get
 * 429 with Retry-After until the window ends, so guessing keys or hammering the provider's
 * callback costs the attacker time, not the server.
 */

/** Counts events per key in fixed windows. */
export class WindowLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();

  /**
   * @param limit events allowed per window and key; 0 disables the limiter
   * @param windowMs window length in milliseconds
   */
  constructor(
    private readonly limit: number,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until `key` may try again, or 0 when it is under the limit. */
  retryAfterSeconds(key: string): number {
    if (this.limit === 0) return 0;
    const w = this.windows.get(key);
    const now = this.now();
    if (w === undefined || now >= w.resetAt || w.count < this.limit) return 0;
    return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  }

  /** Counts one event for `key`. */
  record(key: string): void {
    if (this.limit === 0) return;
    const now = this.now();
    const w = this.windows.get(key);
    if (w === undefined || now >= w.resetAt) {
      if (this.windows.size >= 100_000) this.prune(now);
      this.windows.set(key, { count: 1, resetAt: now + this.windowMs });
    } else {
      w.count++;
    }
  }

  private prune(now: number): void {
    for (const [k, w] of this.windows) if (now >= w.resetAt) this.windows.delete(k);
  }
}
