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
 * unspecified, loopback, discard, ULA (RFC 4193), site-local, NAT64 and 6to4 (which embed an
 * IPv4 address; refused rather than unpacked). IPv4-mapped IPv6 is checked as its IPv4 address.
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
  ["64:ff9b::", 96, "ipv6"],
  ["64:ff9b:1::", 48, "ipv6"],
  ["100::", 64, "ipv6"],
  ["2001::", 23, "ipv6"],
  ["2001:db8::", 32, "ipv6"],
  ["2002::", 16, "ipv6"],
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

/** Whether `address` may be connected to for a URL naming `host`. */
export function isAllowedAddress(address: string, host: string, allowed: AllowedHosts): boolean {
  if (allowed.names.has(host.toLowerCase().replace(/\.$/, ""))) return true;
  const family = net.isIP(address);
  if (family === 0) return false;
  const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
  const [a, type] = mapped !== undefined ? [mapped, "ipv4" as const] : [address, family === 4 ? ("ipv4" as const) : ("ipv6" as const)];
  if (allowed.addresses.check(a, type)) return true;
  return !notPublic.check(a, type);
}
