/**
 * Where the client address is decided: the one rule every surface (REST, RPC, content URLs,
 * sign-in) attributes a request to an address by, for rate limits and logs. The listener
 * (`server/`) calls {@link clientAddressOf} once per request and keeps the answer in the
 * request's {@link RequestContext}; the Authenticator (`auth/`) is handed that answer and never
 * reads a header for it. It lives here, below both, so neither imports the other.
 */

/** `::ffff:192.0.2.1` (an IPv4 client on a dual-stack socket) → `192.0.2.1`. */
export function plainAddress(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/**
 * The address a request is attributed to (rate limits, logs). Normally the connection's peer.
 * When the peer is one of `trustedProxies` (TRUSTED_PROXIES), it is the rightmost address in
 * `X-Forwarded-For` that is not itself a trusted proxy, because each proxy appends the address
 * it received the request from and only trusted ones can be believed (RFC 7239 §5.2 on the
 * de-facto header, MDN "X-Forwarded-For: selecting an IP address"). A client cannot choose its
 * own address this way.
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
