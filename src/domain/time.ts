/**
 * Time as integer microseconds since the Unix epoch: exact in a JS number until year 2255 and in
 * a SQLite INTEGER, and fine enough that every change gets its own `updated_at`.
 */

/** A source of "now" in microseconds; services take one so tests can pass a fake. */
export interface Clock {
  nowMicros(): number;
}

/**
 * The system clock, made strictly increasing within the process so two changes in the same
 * microsecond (or a clock step backwards) still order correctly.
 */
export function systemClock(): Clock {
  let last = 0;
  return {
    nowMicros() {
      const now = Math.floor((performance.timeOrigin + performance.now()) * 1000);
      last = now > last ? now : last + 1;
      return last;
    },
  };
}

/**
 * Formats microseconds as RFC 3339 in UTC with `Z`, choosing 0, 3, 6 or 9 fractional digits
 * exactly as protobuf's JSON mapping of `google.protobuf.Timestamp` does, so REST and the
 * proto3 JSON of the File message are byte-identical (CONTRACT §4).
 */
export function formatTimestamp(micros: number): string {
  const seconds = Math.floor(micros / 1_000_000);
  const frac = micros - seconds * 1_000_000;
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  if (frac === 0) return `${base}Z`;
  if (frac % 1000 === 0) return `${base}.${String(frac / 1000).padStart(3, "0")}Z`;
  return `${base}.${String(frac).padStart(6, "0")}Z`;
}

/** Microseconds → `{seconds, nanos}` as in google.protobuf.Timestamp. */
export function toSecondsNanos(micros: number): { seconds: bigint; nanos: number } {
  const seconds = Math.floor(micros / 1_000_000);
  return { seconds: BigInt(seconds), nanos: (micros - seconds * 1_000_000) * 1000 };
}

/** Microseconds → an HTTP-date (RFC 9110 §5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`. */
export function toHttpDate(micros: number): string {
  return new Date(Math.floor(micros / 1_000_000) * 1000).toUTCString();
}
