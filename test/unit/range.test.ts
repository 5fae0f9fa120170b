import { expect, test } from "bun:test";
import { parseRange } from "../../src/domain/range.ts";

// RFC 9110 §14.1.2 examples and edge cases against a 10 000-byte representation.
test.each([
  ["absent", null, 10000, { kind: "none" }],
  ["first 500 bytes", "bytes=0-499", 10000, { kind: "range", range: { start: 0, end: 499 } }],
  ["second 500 bytes", "bytes=500-999", 10000, { kind: "range", range: { start: 500, end: 999 } }],
  ["final 500 bytes (suffix)", "bytes=-500", 10000, { kind: "range", range: { start: 9500, end: 9999 } }],
  ["from 9500 (open end)", "bytes=9500-", 10000, { kind: "range", range: { start: 9500, end: 9999 } }],
  ["end past the size is clamped", "bytes=9000-20000", 10000, { kind: "range", range: { start: 9000, end: 9999 } }],
  ["suffix longer than size", "bytes=-20000", 10000, { kind: "range", range: { start: 0, end: 9999 } }],
  ["white space allowed", "bytes = 1 - 2", 10000, { kind: "range", range: { start: 1, end: 2 } }],
  ["start past the end", "bytes=10000-", 10000, { kind: "unsatisfiable" }],
  ["zero-length suffix", "bytes=-0", 10000, { kind: "unsatisfiable" }],
  ["last before first", "bytes=5-3", 10000, { kind: "unsatisfiable" }],
  ["any range of empty content", "bytes=0-", 0, { kind: "unsatisfiable" }],
  ["several ranges are served whole", "bytes=0-1,5-6", 10000, { kind: "none" }],
  ["other unit", "items=0-1", 10000, { kind: "none" }],
  ["garbage", "bytes=a-b", 10000, { kind: "none" }],
  ["no positions", "bytes=-", 10000, { kind: "none" }],
  ["negative start", "bytes=--5", 10000, { kind: "none" }],
])("%s", (_, header, size, want) => expect(parseRange(header, size)).toEqual(want as never));
