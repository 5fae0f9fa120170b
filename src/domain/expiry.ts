/**
 * When something expires (CONTRACT §8): a file, a share link, a guest upload link, an API key.
 * Clients give either an absolute `expire_time` (RFC 3339) or a relative `ttl` (`90s`, `15m`,
 * `12h`, `7d`); both become Unix microseconds, or null for "never".
 */
import { AppError } from "../errors.ts";
import { formatTimestamp } from "./time.ts";

/** The longest ttl accepted: ten years, in seconds (a longer one is almost surely a typo). */
export const MAX_TTL_SECONDS = 10 * 366 * 24 * 60 * 60;

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86400 } as const;

// RFC 3339 §5.6 date-time: full-date "T" full-time, with "t"/"z" allowed in lower case, a
// fraction of any length, and a numeric offset or Z. Years 0000-9999 only by the grammar.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

function invalid(message: string): never {
  throw new AppError("invalid_argument", message);
}

const shown = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s);

/**
 * A ttl: decimal digits and one unit, `s` (seconds), `m` (minutes), `h` (hours) or `d` (days),
 * e.g. `90s`, `15m`, `12h`, `7d`; from 1 second to {@link MAX_TTL_SECONDS}.
 * @returns the duration in microseconds
 * @throws AppError invalid_argument for anything else (signs, spaces, fractions, 0, too long)
 */
export function parseTtl(raw: string): number {
  const m = /^(\d{1,12})([smhd])$/.exec(raw);
  if (m === null) invalid(`ttl: "${shown(raw)}" is not a duration like 90s, 15m, 12h or 7d`);
  const seconds = Number(m[1]) * UNIT_SECONDS[m[2] as keyof typeof UNIT_SECONDS];
  if (seconds < 1) invalid("ttl: must be at least 1s");
  if (seconds > MAX_TTL_SECONDS) invalid(`ttl: at most ${MAX_TTL_SECONDS / 86400}d`);
  return seconds * 1_000_000;
}

/**
 * An RFC 3339 date-time (§5.6, e.g. `2026-11-21T04:27:22Z` or `2026-11-21T06:27:22.5+02:00`),
 * with a valid calendar date and time (no leap second: `:60` is refused), fractions beyond
 * microseconds truncated.
 * @returns Unix microseconds
 * @throws AppError invalid_argument naming the value
 */
export function parseRfc3339(raw: string, field = "expire_time"): number {
  const m = RFC3339.exec(raw);
  if (m === null) invalid(`${field}: "${shown(raw)}" is not an RFC 3339 time like 2026-11-21T04:27:22Z`);
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) {
    invalid(`${field}: "${shown(raw)}" is not a valid date and time`);
  }
  const fraction = m[7] === undefined ? 0 : Number(m[7].slice(1).padEnd(9, "0").slice(0, 6));
  let offsetMinutes = 0;
  const zone = m[8]!;
  if (zone !== "Z" && zone !== "z") {
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) invalid(`${field}: "${shown(raw)}" has an invalid offset`);
    offsetMinutes = (zone[0] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  // Date.UTC maps years 0-99 to 1900-1999; setUTCFullYear does not.
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second));
  date.setUTCFullYear(year);
  const millis = date.getTime() - offsetMinutes * 60_000;
  return millis * 1000 + fraction;
}

/**
 * The expiry a request asks for: `expire_time` (RFC 3339, in the future) or `ttl` (from
 * `nowMicros`), at most one of them; absent or `""` means never.
 * @param nowMicros the current time, Unix microseconds
 * @returns Unix microseconds, or null for never
 * @throws AppError invalid_argument when both are given, either is malformed, or the time is
 *   not in the future (or beyond {@link MAX_TTL_SECONDS} from now)
 */
export function parseExpiry(input: { expire_time?: string | undefined; ttl?: string | undefined }, nowMicros: number): number | null {
  const expireTime = input.expire_time === "" ? undefined : input.expire_time;
  const ttl = input.ttl === "" ? undefined : input.ttl;
  if (expireTime !== undefined && ttl !== undefined) invalid("give expire_time or ttl, not both");
  if (ttl !== undefined) return nowMicros + parseTtl(ttl);
  if (expireTime === undefined) return null;
  const at = parseRfc3339(expireTime);
  if (at <= nowMicros) invalid(`expire_time: ${shown(expireTime)} is not in the future`);
  if (at - nowMicros > MAX_TTL_SECONDS * 1_000_000) invalid(`expire_time: at most ${MAX_TTL_SECONDS / 86400} days from now`);
  return at;
}

/** An expiry as sent back: RFC 3339 UTC (as File timestamps are written), or `""` for never. */
export function formatExpiry(micros: number | null): string {
  return micros === null ? "" : formatTimestamp(micros);
}
