import { expect, test } from "bun:test";
import { formatTimestamp, systemClock, toHttpDate } from "../../src/domain/time.ts";

// Same digit choice as protobuf's JSON mapping of google.protobuf.Timestamp: 0, 3, 6 or 9.
test.each([
  ["whole second", 1_700_000_000_000_000, "2023-11-14T22:13:20Z"],
  ["milliseconds", 1_700_000_000_120_000, "2023-11-14T22:13:20.120Z"],
  ["microseconds", 1_700_000_000_123_456, "2023-11-14T22:13:20.123456Z"],
  ["leading zeros kept", 1_700_000_000_000_001, "2023-11-14T22:13:20.000001Z"],
  ["epoch", 0, "1970-01-01T00:00:00Z"],
])("formatTimestamp %s", (_, micros, want) => expect(formatTimestamp(micros)).toBe(want));

test("toHttpDate is an IMF-fixdate (RFC 9110 §5.6.7)", () => {
  expect(toHttpDate(784_111_777_000_000)).toBe("Sun, 06 Nov 1994 08:49:37 GMT");
});

test("the system clock strictly increases", () => {
  const clock = systemClock();
  const seen = Array.from({ length: 10_000 }, () => clock.nowMicros());
  const backwards = seen.filter((t, i) => i > 0 && t <= seen[i - 1]!);
  expect(backwards).toEqual([]);
});
