/**
 * The request target and authority of an incoming request, checked once before anything routes
 * on them. Handlers only ever see a path: URLs are built on a fixed origin
 * ({@link REQUEST_ORIGIN}), so no Host header can change what is routed (issue 11: `Host:
 * x/v1/files?` once made `GET /healthz` list the caller's files). Public links use HOSTNAME.
 */
import net from "node:net";

/** The origin every request URL is built on; never shown to anyone. */
export const REQUEST_ORIGIN = "http://localhost";

/**
 * Whether `value` is a valid `Host` / `:authority`: `host [ ":" port ]` of RFC 3986 §3.2.2-3.2.3
 * (as RFC 9110 §7.2 requires), where host is a reg-name (unreserved, pct-encoded and sub-delims
 * characters), a dotted IPv4 address (a reg-name too) or a bracketed IPv6 address, and port is
 * at most 65535. No userinfo (RFC 9110 §4.2.4 deprecates it in http URIs).
 */
export function isValidAuthority(value: string): boolean {
  // An empty Host is what a client sends for a target without authority (RFC 9110 §7.2).
  if (value === "" || value === lastValidAuthority) return true;
  if (!checkAuthority(value)) return false;
  // Nearly every request of a server names the same host: it is checked once.
  lastValidAuthority = value;
  return true;
}

/** The authority {@link isValidAuthority} last found valid. */
let lastValidAuthority = "";

function checkAuthority(value: string): boolean {
  let host = value;
  let port: string | undefined;
  if (value.startsWith("[")) {
    const close = value.indexOf("]");
    if (close === -1 || !net.isIPv6(value.slice(1, close))) return false;
    host = "";
    const rest = value.slice(close + 1);
    if (rest !== "") {
      if (!rest.startsWith(":")) return false;
      port = rest.slice(1);
    }
  } else {
    const colon = value.lastIndexOf(":");
    if (colon !== -1) {
      host = value.slice(0, colon);
      port = value.slice(colon + 1);
    }
    if (host === "" || !REG_NAME.test(host)) return false;
  }
  return port === undefined || port === "" || (/^[0-9]{1,5}$/.test(port) && Number(port) <= 65535);
}

/** reg-name = *( unreserved / pct-encoded / sub-delims ), RFC 3986 §3.2.2. */
const REG_NAME = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$/;

/**
 * The authority check every request passes before anything routes on it, whichever wire read it
 * (called by the one dispatch, dispatch.ts): the
 * authority it names — an absolute-form target's (RFC 9112 §3.2.3: it replaces Host), else
 * HTTP/2's `:authority` (RFC 9113 §8.3.1), else its Host header, which a request sends at most
 * once (RFC 9112 §3.2) — is absent or valid ({@link isValidAuthority}).
 * @param headers the request's headers by lower-case name
 * @param rawHeaders its headers as sent (names and values alternating), in which the Host
 *   headers are counted (Bun's node:http joins repeated ones into one value); undefined when the
 *   wire has refused a repeated Host itself (http1-head.ts), so `headers.host` is the one sent
 * @param targetAuthority the authority of an absolute-form target, which then is the one checked
 * @returns undefined when the request may be routed, else the message of the 400 that refuses it
 */
export function authorityProblem(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  rawHeaders: readonly string[] | undefined,
  targetAuthority?: string,
): string | undefined {
  let authority = targetAuthority;
  if (authority === undefined) {
    const h2Authority = headers[":authority"];
    if (typeof h2Authority === "string") authority = h2Authority;
    else if (rawHeaders === undefined) {
      const host = headers.host;
      if (typeof host === "string") authority = host;
    } else {
      let hosts = 0;
      for (let i = 0; i < rawHeaders.length; i += 2) {
        if (rawHeaders[i]!.toLowerCase() === "host") {
          hosts++;
          authority = rawHeaders[i + 1]!;
        }
      }
      if (hosts > 1) return "a request has one Host header";
    }
  }
  if (authority !== undefined && !isValidAuthority(authority)) return `malformed Host: ${JSON.stringify(authority.slice(0, 100))}`;
  return undefined;
}

/**
 * The request's target in origin form (`/path?query`), or an error message when the request
 * must be refused with 400: its authority refused by {@link authorityProblem}, or a target that
 * is neither origin form nor absolute form. An absolute-form target (`GET http://host/path`,
 * RFC 9112 §3.2.2) is accepted and reduced to its path. `OPTIONS *` (asterisk form) is answered
 * as `/`.
 */
export function originFormOf(
  method: string,
  raw: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  rawHeaders: readonly string[] | undefined,
): { target: string } | { problem: string } {
  let target = raw;
  let targetAuthority: string | undefined;
  if (!raw.startsWith("/")) {
    if (raw === "*" && method === "OPTIONS") return { target: "/" };
    const absolute = /^https?:\/\/([^/?#]*)([^#]*)$/i.exec(raw);
    if (absolute === null) return { problem: "the request target must be a path starting with /" };
    targetAuthority = absolute[1]!;
    target = absolute[2]!.startsWith("/") ? absolute[2]! : `/${absolute[2]!}`;
  }
  const problem = authorityProblem(headers, rawHeaders, targetAuthority);
  return problem === undefined ? { target } : { problem };
}
