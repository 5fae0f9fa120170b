import { expect, test } from "bun:test";
import { clientAddressOf } from "../../src/context/client-address.ts";

const proxies = new Set(["10.0.0.1", "10.0.0.2"]);

test.each([
  ["a direct client", "192.0.2.9", null, "192.0.2.9"],
  ["a direct client's X-Forwarded-For is ignored", "192.0.2.9", "203.0.113.1", "192.0.2.9"],
  ["an IPv4 client on a dual-stack socket", "::ffff:192.0.2.9", null, "192.0.2.9"],
  ["one trusted proxy", "10.0.0.1", "203.0.113.1", "203.0.113.1"],
  ["a forged entry left of the real client", "10.0.0.1", "1.1.1.1, 203.0.113.1", "203.0.113.1"],
  ["two trusted proxies in a chain", "10.0.0.1", "203.0.113.1, 10.0.0.2", "203.0.113.1"],
  ["a trusted proxy without the header", "10.0.0.1", null, "10.0.0.1"],
  ["a trusted proxy with an empty header", "10.0.0.1", " , ", "10.0.0.1"],
  ["only trusted proxies in the header", "10.0.0.1", "10.0.0.2", "10.0.0.2"],
] as [string, string, string | null, string][])("%s", (_, peer, forwardedFor, expected) => {
  expect(clientAddressOf(peer, forwardedFor, proxies)).toBe(expected);
});
