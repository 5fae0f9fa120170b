/**
 * Where a webhook may be delivered (CONTRACT §13): public addresses only, unless
 * WEBHOOK_ALLOWED_HOSTS allows a host name, an address or a CIDR range. The check is made on
 * the addresses a name resolves to, and the delivery connects to the address that passed it
 * (never resolving again), so a name that changes its answer between check and connection (DNS
 * rebinding) gains nothing.
 */
import dns from "node:dns";
import net from "node:net";
import { AppError } from "../errors.ts";
import { isAllowedAddress, type AllowedHosts } from "../domain/host-allowlist.ts";

/** Resolves a host name to its addresses (`dns.lookup`, as the system resolver answers). */
export type Resolve = (host: string) => Promise<string[]>;

/** The system resolver: every address, IPv4 and IPv6, in the resolver's order. */
export const systemResolve: Resolve = async (host) => (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** A target that passed the check: connect to `address`, and name `host` in Host and SNI. */
export interface CheckedTarget {
  url: URL;
  /** The URL's host name, without IPv6 brackets. */
  host: string;
  /** The address to connect to. */
  address: string;
}

/**
 * Resolves the URL's host and checks every address it resolves to.
 * @param opts.every true (at creation): refuse when any address is refused; false (at delivery):
 *   use the first allowed one
 * @returns the target and the address to connect to
 * @throws AppError invalid_argument naming `url` when the host does not resolve or is refused
 */
export async function checkTarget(url: URL, allowed: AllowedHosts, resolve: Resolve, opts: { every: boolean }): Promise<CheckedTarget> {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  let addresses: string[];
  if (net.isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = await resolve(host);
    } catch (err) {
      throw new AppError("invalid_argument", `url: the host ${host} does not resolve (${(err as { code?: string }).code ?? "error"})`);
    }
  }
  const refused = addresses.filter((a) => !isAllowedAddress(a, host, allowed));
  const usable = addresses.find((a) => isAllowedAddress(a, host, allowed));
  if (usable === undefined || (opts.every && refused.length > 0)) {
    const which = refused[0] === host ? host : `${host} (${refused[0] ?? "no address"})`;
    throw new AppError("invalid_argument", `url: ${which} is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it`);
  }
  return { url, host, address: usable };
}
