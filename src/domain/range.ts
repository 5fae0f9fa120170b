/**
 * Byte ranges of RFC 9110 §14. cubby serves one range per request; a request for several
 * ranges is answered with the whole content (allowed by §14.2: a server MAY ignore Range).
 */

/** Inclusive byte offsets of one satisfiable range. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * What a Range header asks of a representation of `size` bytes:
 * - `{ kind: "none" }`: no usable Range (absent, malformed, several ranges, another unit) → 200;
 * - `{ kind: "range", range }`: one satisfiable range → 206;
 * - `{ kind: "unsatisfiable" }`: the range starts past the end → 416 with `bytes * /size`.
 */
export type RangeRequest = { kind: "none" } | { kind: "range"; range: ByteRange } | { kind: "unsatisfiable" };

const SINGLE = /^bytes[ \t]*=[ \t]*(\d*)[ \t]*-[ \t]*(\d*)[ \t]*$/i;

/** Parses a Range header value against a content of `size` bytes (RFC 9110 §14.1.2). */
export function parseRange(header: string | null, size: number): RangeRequest {
  if (header === null) return { kind: "none" };
  const m = SINGLE.exec(header);
  if (!m) return { kind: "none" };
  const [, first, last] = m as unknown as [string, string, string];
  if (first === "" && last === "") return { kind: "none" };
  if (first.length > 16 || last.length > 16) return { kind: "none" };
  if (first === "") {
    // Suffix range: the last N bytes.
    const n = Number(last);
    if (n === 0) return { kind: "unsatisfiable" };
    if (size === 0) return { kind: "unsatisfiable" };
    return { kind: "range", range: { start: Math.max(0, size - n), end: size - 1 } };
  }
  const start = Number(first);
  const end = last === "" ? size - 1 : Number(last);
  // §14.1.1: last < first is an invalid range-spec; §14.2: answer 416.
  if (last !== "" && end < start) return { kind: "unsatisfiable" };
  if (start >= size) return { kind: "unsatisfiable" };
  return { kind: "range", range: { start, end: Math.min(end, size - 1) } };
}
