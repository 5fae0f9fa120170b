/**
 * Expiry as CONTRACT §8 writes it, for files, share links, upload links and API keys: an
 * absolute `expire_time` (RFC 3339) or a relative `ttl` (`90s`, `15m`, `12h`, `7d`), at most one
 * of the two; answered as `expire_time`, RFC 3339 or "" for never.
 */
import { AppError } from "../errors.ts";
import { formatTimestamp } from "./time.ts";

/** The longest ttl and the latest expire_time accepted: ten years. */
export const MAX_EXPIRY_MICROS = 10 * 366 * 24 * 3600 * 1_000_000;

const UNIT_MICROS = { s: 1_000_000, m: 60_000_000, h: 3_600_000_000, d: 86_400_000_000 } as const;

/**
 * RFC 3339 date-time (§5.6): date, `T` (or `t`), time with optional fraction, and `Z` or an
 * offset. JavaScript's Date parses more than this (and less strictly), so the shape is checked first.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * A ttl: a whole number and one unit of s, m, h, d.
 * @returns microseconds
 * @throws AppError invalid_argument for another shape, zero, or more than ten years
 */
export function parseTtl(raw: string): number {
  const m = /^([1-9]\d{0,9})([smhd])$/.exec(raw);
  if (!m) throw new AppError("invalid_argument", `ttl: expected a whole number and a unit s, m, h or d, such as 90s, 15m, 12h or 7d (got "${truncate(raw)}")`);
  const micros = Number(m[1]) * UNIT_MICROS[m[2] as keyof typeof UNIT_MICROS];
  if (micros > MAX_EXPIRY_MICROS) throw new AppError("invalid_argument", "ttl: at most ten years");
  return micros;
}

/**
 * An RFC 3339 timestamp.
 * @returns Unix microseconds (a fraction finer than a microsecond is cut)
 * @throws AppError invalid_argument naming `field` for anything else, or an impossible date
 */
export function parseRfc3339(raw: string, field = "expire_time"): number {
  const m = RFC3339.exec(raw);
  const bad = () => new AppError("invalid_argument", `${field}: expected an RFC 3339 time such as 2030-01-31T12:00:00Z (got "${truncate(raw)}")`);
  if (!m) throw bad();
  const [, y, mo, d, h, mi, s, frac = "", zone] = m;
  // Date.UTC maps years 0-99 to 1900-1999; setUTCFullYear does not.
  const check = new Date(Date.UTC(2000, Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)));
  check.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  const ms = check.getTime();
  // Date.UTC rolls 2030-02-31 over into March; RFC 3339 allows a leap second (60) only in name.
  if (check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d) || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) throw bad();
  let offsetMinutes = 0;
  if (zone !== "Z" && zone !== "z") {
    const [oh, om] = zone!.slice(1).split(":").map(Number) as [number, number];
    if (oh > 23 || om > 59) throw bad();
    offsetMinutes = (zone!.startsWith("-") ? -1 : 1) * (oh * 60 + om);
  }
  const fracMicros = frac === "" ? 0 : Number(frac.slice(1, 7).padEnd(6, "0"));
  return (ms - offsetMinutes * 60_000) * 1000 + fracMicros;
}

/** An expiry as a request states it: at most one of the two. */
export interface ExpiryInput {
  expire_time?: string | undefined;
  ttl?: string | undefined;
}

/**
 * The expiry a request asks for: from `expire_time` (must be in the future, at most ten years
 * ahead) or `ttl` (from `nowMicros`). `""` as expire_time means "never" where clearing is
 * allowed (`allowClear`, PATCH), and is refused elsewhere.
 * @returns Unix microseconds, null for never, or undefined when neither was given
 * @throws AppError invalid_argument for both at once, a bad shape, or a time not in the future
 */
export function parseExpiry(input: ExpiryInput, nowMicros: number, opts: { allowClear?: boolean } = {}): number | null | undefined {
  const { expire_time: at, ttl } = input;
  if (at !== undefined && ttl !== undefined) throw new AppError("invalid_argument", "give expire_time or ttl, not both");
  if (ttl !== undefined) return nowMicros + parseTtl(ttl);
  if (at === undefined) return undefined;
  if (at === "") {
    if (opts.allowClear) return null;
    throw new AppError("invalid_argument", `expire_time: expected an RFC 3339 time such as 2030-01-31T12:00:00Z (got "")`);
  }
  const micros = parseRfc3339(at);
  if (micros <= nowMicros) throw new AppError("invalid_argument", "expire_time must be in the future");
  if (micros - nowMicros > MAX_EXPIRY_MICROS) throw new AppError("invalid_argument", "expire_time: at most ten years ahead");
  return micros;
}

/** An expiry as answered: RFC 3339 in UTC, or "" for never. */
export function formatExpiry(micros: number | null): string {
  return micros === null ? "" : formatTimestamp(micros);
}

function truncate(s: string): string {
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}
