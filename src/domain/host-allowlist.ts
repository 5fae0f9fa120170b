/**
 * Which addresses a webhook may be delivered to (CONTRACT §13): the public Internet, and what
 * WEBHOOK_ALLOWED_HOSTS allows (host names, addresses, CIDR ranges). Pure: resolving and
 * connecting are service/webhook-target.ts's and service/webhook-deliverer.ts's.
 */
import net from "node:net";

/**
 * Ranges that are not the public Internet: "this network", private (RFC 1918), shared
 * (RFC 6598), loopback, link-local, IETF protocol assignments, documentation, benchmarking,
 * multicast and reserved (IANA special-purpose registries, RFC 6890); for IPv6 also
 * unspecified, loopback, discard, Teredo and the other IETF protocol assignments, documentation,
 * ULA (RFC 4193), site-local and multicast. The IPv6 forms that embed an IPv4 address are not
 * listed: they are judged by the embedded address ({@link embeddedIPv4}).
 */
const NOT_PUBLIC: readonly [string, number, "ipv4" | "ipv6"][] = [
  ["0.0.0.0", 8, "ipv4"],
  ["10.0.0.0", 8, "ipv4"],
  ["100.64.0.0", 10, "ipv4"],
  ["127.0.0.0", 8, "ipv4"],
  ["169.254.0.0", 16, "ipv4"],
  ["172.16.0.0", 12, "ipv4"],
  ["192.0.0.0", 24, "ipv4"],
  ["192.0.2.0", 24, "ipv4"],
  ["192.88.99.0", 24, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["198.18.0.0", 15, "ipv4"],
  ["198.51.100.0", 24, "ipv4"],
  ["203.0.113.0", 24, "ipv4"],
  ["224.0.0.0", 4, "ipv4"],
  ["240.0.0.0", 4, "ipv4"],
  ["::", 128, "ipv6"],
  ["::1", 128, "ipv6"],
  ["100::", 64, "ipv6"],
  ["2001::", 23, "ipv6"],
  ["2001:db8::", 32, "ipv6"],
  ["fc00::", 7, "ipv6"],
  ["fe80::", 10, "ipv6"],
  ["fec0::", 10, "ipv6"],
  ["ff00::", 8, "ipv6"],
];

const notPublic = new net.BlockList();
for (const [prefix, bits, family] of NOT_PUBLIC) notPublic.addSubnet(prefix, bits, family);

/** WEBHOOK_ALLOWED_HOSTS parsed: host names (lower case) and addresses or ranges. */
export interface AllowedHosts {
  names: ReadonlySet<string>;
  addresses: net.BlockList;
}

/**
 * Parses WEBHOOK_ALLOWED_HOSTS: comma-separated host names, IP addresses and CIDR ranges
 * (`n8n.lan,10.0.0.0/8,::1`). Blank entries are skipped.
 * @throws Error with a one-line message naming the bad entry
 */
export function parseAllowedHosts(raw: string): AllowedHosts {
  const names = new Set<string>();
  const addresses = new net.BlockList();
  for (const entry of raw.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const slash = entry.indexOf("/");
    if (slash >= 0 && net.isIP(entry.slice(0, slash)) !== 0) {
      const prefix = entry.slice(0, slash);
      const bits = entry.slice(slash + 1);
      const family = net.isIP(prefix);
      const max = family === 4 ? 32 : 128;
      if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) throw new Error(`"${entry}" is not a CIDR range (expected e.g. 10.0.0.0/8 or fd00::/8)`);
      addresses.addSubnet(prefix, Number(bits), family === 4 ? "ipv4" : "ipv6");
    } else if (net.isIP(entry) !== 0) {
      addresses.addAddress(entry, net.isIP(entry) === 4 ? "ipv4" : "ipv6");
    } else if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(entry)) {
      names.add(entry.toLowerCase().replace(/\.$/, ""));
    } else {
      throw new Error(`"${entry}" is neither a host name, an IP address nor a CIDR range (expected e.g. n8n.lan,10.0.0.0/8)`);
    }
  }
  return { names, addresses };
}

/** No host allowed beyond the public Internet. */
export const PUBLIC_ONLY: AllowedHosts = parseAllowedHosts("");

/**
 * Whether `address` may be connected to for a URL naming `host`: the host name is listed in
 * WEBHOOK_ALLOWED_HOSTS, or the address is listed there or public. An IPv6 address that embeds
 * an IPv4 address ({@link embeddedIPv4}) and is not itself listed is judged by what it embeds:
 * allowed only when every IPv4 address it may stand for is listed or public.
 */
export function isAllowedAddress(address: string, host: string, allowed: AllowedHosts): boolean {
  if (allowed.names.has(host.toLowerCase().replace(/\.$/, ""))) return true;
  const family = net.isIP(address);
  if (family === 0) return false;
  if (family === 4) return allowed.addresses.check(address, "ipv4") || !notPublic.check(address, "ipv4");
  if (allowed.addresses.check(address, "ipv6")) return true;
  const embedded = embeddedIPv4(address);
  if (embedded !== undefined) return embedded.every((v4) => allowed.addresses.check(v4, "ipv4") || !notPublic.check(v4, "ipv4"));
  return !notPublic.check(address, "ipv6");
}

/**
 * The IPv4 addresses an IPv6 address embeds, dotted; undefined when it is none of these forms:
 * - IPv4-compatible `::a.b.c.d` (::/96, RFC 4291 §2.5.5.1, deprecated; `::` and `::1` fall here
 *   too, as 0.0.0.0 and 0.0.0.1, which are refused anyway),
 * - IPv4-mapped `::ffff:a.b.c.d` (::ffff:0:0/96, RFC 4291 §2.5.5.2),
 * - IPv4-translated `::ffff:0:a.b.c.d` (::ffff:0:0:0/96, RFC 2765 §2.1),
 * - NAT64 well-known prefix 64:ff9b::/96 (RFC 6052 §2.1): the last 32 bits,
 * - NAT64 local-use 64:ff9b:1::/48 (RFC 8215): the operator picks a prefix of 48, 56, 64 or 96
 *   bits inside it, so each place RFC 6052 §2.2 puts the IPv4 address for those lengths is
 *   returned (the caller requires all of them to pass),
 * - 6to4 2002::/16 (RFC 3056 §2): bits 16..47.
 */
export function embeddedIPv4(address: string): string[] | undefined {
  const b = ipv6Bytes(address);
  if (b === undefined) return undefined;
  const zero = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  const v4 = (...at: number[]) => at.map((i) => b[i]).join(".");
  if (zero(0, 10) && ((b[10] === 0 && b[11] === 0) || (b[10] === 0xff && b[11] === 0xff))) return [v4(12, 13, 14, 15)];
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && b[10] === 0 && b[11] === 0) return [v4(12, 13, 14, 15)];
  const nat64 = b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b;
  if (nat64 && zero(4, 12)) return [v4(12, 13, 14, 15)];
  if (nat64 && b[4] === 0 && b[5] === 1) return [v4(6, 7, 9, 10), v4(7, 9, 10, 11), v4(9, 10, 11, 12), v4(12, 13, 14, 15)];
  if (b[0] === 0x20 && b[1] === 0x02) return [v4(2, 3, 4, 5)];
  return undefined;
}

/** The 16 bytes of an IPv6 address in any RFC 4291 §2.2 text form (a zone ID is dropped); undefined when it is not one. */
export function ipv6Bytes(address: string): Uint8Array | undefined {
  const text = address.replace(/%.*$/, "");
  if (!net.isIPv6(text)) return undefined;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  const hex = dotted === null ? text : `${text.slice(0, dotted.index)}${((Number(dotted[1]) << 8) | Number(dotted[2])).toString(16)}:${((Number(dotted[3]) << 8) | Number(dotted[4])).toString(16)}`;
  const [head, tail] = hex.includes("::") ? hex.split("::") : [hex, undefined];
  const groups = (s: string | undefined) => (s === undefined || s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  const front = groups(head);
  const back = groups(tail);
  const all = tail === undefined ? front : [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
  if (all.length !== 8) return undefined;
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}
