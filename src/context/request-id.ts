/** Request IDs: taken from a sane incoming X-Request-Id or minted, echoed back, and logged. */
import { nanoid, urlAlphabet } from "nanoid";

/** What an incoming X-Request-Id may look like to be kept: short, no spaces or quotes. */
const SANE = /^[A-Za-z0-9._:-]{1,64}$/;

/** Characters of a minted ID that count requests. */
const COUNTER_CHARS = 5;

/** This process's part of every ID it mints, drawn anew when the counter wraps. */
let prefix = nanoid(12 - COUNTER_CHARS);
let counter = 0;

/**
 * The ID of a request whose incoming `X-Request-Id` header is `incoming`: kept if sane (1–64 of
 * `A-Z a-z 0-9 . _ : -`, so it can go into a log line unquoted), else a new 12-character ID of
 * nanoid's alphabet: 7 random characters drawn per process (and again every 64⁵ ≈ 10⁹
 * requests), then a counter. Unique across the processes of a server (each draws its own) at a
 * tenth of a nanoid's cost; request IDs correlate log lines, they are not secrets.
 */
export function requestIdFrom(incoming: string | null | undefined): string {
  if (incoming != null && SANE.test(incoming)) return incoming;
  const n = counter++;
  if (counter === 64 ** COUNTER_CHARS) {
    counter = 0;
    prefix = nanoid(12 - COUNTER_CHARS);
  }
  return prefix + urlAlphabet[(n >>> 24) & 63]! + urlAlphabet[(n >>> 18) & 63]! + urlAlphabet[(n >>> 12) & 63]! + urlAlphabet[(n >>> 6) & 63]! + urlAlphabet[n & 63]!;
}
