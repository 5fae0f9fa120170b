// The webhook target check (CONTRACT §13): which addresses are public, what WEBHOOK_ALLOWED_HOSTS
// allows by name, address and CIDR range, and how a name's addresses are checked (a resolver
// given by the test stands in for DNS).
import { describe, expect, test } from "bun:test";
import { isAllowedAddress, parseAllowedHosts, PUBLIC_ONLY } from "../../src/domain/host-allowlist.ts";
import { AppError } from "../../src/errors.ts";
import { checkTarget, type Resolve } from "../../src/service/webhook-target.ts";

describe("isAllowedAddress with nothing allowed beyond the public Internet", () => {
  test.each([
    ["93.184.215.14", true],
    ["1.1.1.1", true],
    ["2606:4700:4700::1111", true],
    ["127.0.0.1", false],
    ["127.255.255.254", false],
    ["0.0.0.0", false],
    ["10.1.2.3", false],
    ["172.16.0.1", false],
    ["172.31.255.255", false],
    ["172.32.0.1", true],
    ["192.168.1.1", false],
    ["100.64.0.1", false],
    ["169.254.169.254", false],
    ["192.0.2.1", false],
    ["198.18.0.1", false],
    ["224.0.0.1", false],
    ["255.255.255.255", false],
    ["::", false],
    ["::1", false],
    ["::ffff:127.0.0.1", false],
    ["::ffff:10.0.0.1", false],
    ["::ffff:93.184.215.14", true],
    ["fe80::1", false],
    ["fd00::1", false],
    ["fc00::1", false],
    ["fec0::1", false],
    ["ff02::1", false],
    ["2001:db8::1", false],
    ["64:ff9b::a00:1", false],
    ["2002:a00:1::1", false],
    // Every IPv6 form that embeds an IPv4 address, judged by that address (CONTRACT §14).
    ["::127.0.0.1", false],
    ["::7f00:1", false],
    ["::10.0.0.1", false],
    ["::93.184.215.14", true],
    ["::ffff:0:127.0.0.1", false],
    ["::ffff:0:7f00:1", false],
    ["::ffff:0:169.254.169.254", false],
    ["::ffff:0:93.184.215.14", true],
    ["::ffff:7f00:1", false],
    ["64:ff9b::127.0.0.1", false],
    ["64:ff9b::93.184.215.14", true],
    ["64:ff9b:1::7f00:1", false],
    ["64:ff9b:1:7f00:1::", false],
    ["64:ff9b:1:7f:0:1::", false],
    ["64:ff9b:1:0:7f:1::", false],
    ["64:ff9b:1:5db8:d7:e00::", false],
    ["2002:7f00:1::", false],
    ["2002:a9fe:a9fe::1", false],
    ["2002:5db8:d70e::1", true],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", false],
    ["not an address", false],
  ])("%s → %p", (address, allowed) => {
    expect(isAllowedAddress(address, "example.com", PUBLIC_ONLY)).toBe(allowed);
  });
});

describe("WEBHOOK_ALLOWED_HOSTS", () => {
  const allowed = parseAllowedHosts("n8n.lan, 10.0.0.0/8,192.168.1.5,fd00::/8, Home.Example.");
  test.each([
    ["10.9.8.7", "x.example.com", true, "in a CIDR range"],
    ["11.0.0.1", "x.example.com", true, "public anyway"],
    ["192.168.1.5", "x.example.com", true, "an address"],
    ["192.168.1.6", "x.example.com", false, "its neighbour"],
    ["fd12::1", "x.example.com", true, "an IPv6 range"],
    ["::ffff:10.0.0.1", "x.example.com", true, "IPv4-mapped, in the IPv4 range"],
    ["::10.0.0.1", "x.example.com", true, "IPv4-compatible, in the IPv4 range"],
    ["::ffff:0:10.0.0.1", "x.example.com", true, "IPv4-translated, in the IPv4 range"],
    ["64:ff9b::10.0.0.1", "x.example.com", true, "NAT64, in the IPv4 range"],
    ["2002:a00:1::", "x.example.com", true, "6to4, in the IPv4 range"],
    ["::127.0.0.1", "x.example.com", false, "IPv4-compatible loopback, not listed"],
    ["127.0.0.1", "n8n.lan", true, "a name: whatever it resolves to"],
    ["127.0.0.1", "N8N.LAN.", true, "a name in another case, with the root dot"],
    ["127.0.0.1", "home.example.com", false, "another name"],
    ["127.0.0.1", "home.example", true, "a listed name given with a root dot"],
  ])("%s for %s → %p (%s)", (address, host, expected) => {
    expect(isAllowedAddress(address, host, allowed)).toBe(expected);
  });

  test.each([
    ["10.0.0.0/33", '"10.0.0.0/33" is not a CIDR range (expected e.g. 10.0.0.0/8 or fd00::/8)'],
    ["fd00::/129", '"fd00::/129" is not a CIDR range (expected e.g. 10.0.0.0/8 or fd00::/8)'],
    ["n8n.lan/8", '"n8n.lan/8" is neither a host name, an IP address nor a CIDR range (expected e.g. n8n.lan,10.0.0.0/8)'],
    ["http://n8n.lan", '"http://n8n.lan" is neither a host name, an IP address nor a CIDR range (expected e.g. n8n.lan,10.0.0.0/8)'],
    ["under_score.lan", '"under_score.lan" is neither a host name, an IP address nor a CIDR range (expected e.g. n8n.lan,10.0.0.0/8)'],
  ])("%s is refused", (raw, message) => {
    expect(() => parseAllowedHosts(raw)).toThrow(message);
  });
});

describe("checkTarget", () => {
  const resolver = (table: Record<string, string[]>): Resolve => async (host) => {
    const found = table[host];
    if (found === undefined) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return found;
  };
  const resolve = resolver({ "public.test": ["93.184.215.14"], "mixed.test": ["93.184.215.14", "10.0.0.5"], "inside.test": ["10.0.0.5"] });
  const refusal = async (url: string, every = true) => {
    try {
      await checkTarget(new URL(url), PUBLIC_ONLY, resolve, { every });
      return "allowed";
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      return (err as AppError).message;
    }
  };

  test("a public name: the address to connect to is the one checked", async () => {
    expect(await checkTarget(new URL("https://public.test:8443/hook"), PUBLIC_ONLY, resolve, { every: true })).toMatchObject({ host: "public.test", address: "93.184.215.14" });
  });

  test("refused: a name resolving to a private address, loopback and private literals, an unresolvable name", async () => {
    expect(await refusal("http://inside.test/")).toBe("url: inside.test (10.0.0.5) is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it");
    expect(await refusal("http://127.0.0.1:9/")).toBe("url: 127.0.0.1 is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it");
    expect(await refusal("http://[::1]:9/")).toBe("url: ::1 is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it");
    expect(await refusal("http://[::ffff:7f00:1]/")).toBe("url: ::ffff:7f00:1 is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it");
    expect(await refusal("http://[::127.0.0.1]/")).toBe("url: ::7f00:1 is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it");
    expect(await refusal("http://[::ffff:0:127.0.0.1]/")).toBe("url: ::ffff:0:7f00:1 is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it");
    expect(await refusal("http://nowhere.test/")).toBe("url: the host nowhere.test does not resolve (ENOTFOUND)");
  });

  test("a name with one private address among public ones: refused at creation, the public one used at delivery", async () => {
    expect(await refusal("http://mixed.test/")).toBe("url: mixed.test (10.0.0.5) is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it");
    expect((await checkTarget(new URL("http://mixed.test/"), PUBLIC_ONLY, resolve, { every: false })).address).toBe("93.184.215.14");
  });
});
