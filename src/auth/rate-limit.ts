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

/** Internal request header carrying the client's address from the listener to the handlers; any incoming copy is dropped. */
export const CLIENT_ADDRESS_HEADER = "x-cubby-client-address";

/** `::ffff:192.0.2.1` (an IPv4 client on a dual-stack socket) → `192.0.2.1`. */
export function plainAddress(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/**
 * The address a request is attributed to (rate limits, logs). Normally the connection's peer.
 * When the peer is one of `trustedProxies` (TRUSTED_PROXIES), it is the rightmost address in
 * `X-Forwarded-For` that is not itself a trusted proxy, because each proxy appends the address
 * it received the request from and only trusted ones can be believed (MDN, "X-Forwarded-For:
 * selecting an IP address"). A client cannot choose its own address this way.
 * @param peer the TCP peer address
 * @param forwardedFor the `X-Forwarded-For` header, comma-separated, or null
 */
export function clientAddressOf(peer: string, forwardedFor: string | null | undefined, trustedProxies: ReadonlySet<string>): string {
  let address = plainAddress(peer);
  if (!trustedProxies.has(address) || !forwardedFor) return address;
  const hops = forwardedFor.split(",").map((h) => plainAddress(h.trim())).filter((h) => h !== "");
  for (let i = hops.length - 1; i >= 0; i--) {
    address = hops[i]!;
    if (!trustedProxies.has(address)) break;
  }
  return address;
}
