// How a share's access log keeps a client's address (CONTRACT §15): an IPv4 /24, an IPv6 /48,
// an IPv4-mapped IPv6 address as its IPv4 /24; the whole address when the operator asks.
import { expect, test } from "bun:test";
import { logAddress } from "../../src/domain/share.ts";

test.each([
  ["203.0.113.77", "203.0.113.0/24"],
  ["::ffff:203.0.113.77", "203.0.113.0/24"],
  ["2001:db8:1234:5678::9", "2001:db8:1234::/48"],
  ["2001:db8::1", "2001:db8::/48"],
  ["2001:0:5:ff::1", "2001:0:5::/48"],
  ["::1", "::/48"],
  ["fe80::1%eth0", "fe80::/48"],
  ["", ""],
])("%p → %p", (address, kept) => expect(logAddress(address, false)).toBe(kept));

test("SHARE_LOG_FULL_ADDRESS keeps the address", () => {
  expect(logAddress("203.0.113.77", true)).toBe("203.0.113.77");
  expect(logAddress("2001:db8:1234:5678::9", true)).toBe("2001:db8:1234:5678::9");
});
