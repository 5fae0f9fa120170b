/**
 * The request target and authority of an incoming request, checked once before anything routes
 * on them. Handlers only ever see a path: URLs are built on a fixed origin
 * ({@link REQUEST_ORIGIN}), so no Host header can change what is routed (issue 11: `Host:
 * x/v1/files?` once made `GET /healthz` list the caller's files). Public links use HOSTNAME.
 */
import net from "node:net";
import type { NodeRequest } from "./node-bridge.ts";

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
 * The request's target in origin form (`/path?query`), or an error message when the request
 * must be refused with 400: a malformed or repeated Host (RFC 9112 §3.2), a malformed
 * `:authority`, or a target that is neither origin form nor absolute form. An absolute-form
 * target (`GET http://host/path`, RFC 9112 §3.2.2) is accepted and reduced to its path; its
 * authority replaces the Host header as RFC 9112 §3.2.3 says. `OPTIONS *` (asterisk form) is
 * answered as `/`.
 */
export function originFormOf(req: NodeRequest): { target: string } | { problem: string } {
  const raw = req.url ?? "";
  let target = raw;
  let authority: string | undefined;
  if (!raw.startsWith("/")) {
    if (raw === "*" && req.method === "OPTIONS") return { target: "/" };
    const absolute = /^https?:\/\/([^/?#]*)([^#]*)$/i.exec(raw);
    if (absolute === null) return { problem: "the request target must be a path starting with /" };
    authority = absolute[1]!;
    target = absolute[2]!.startsWith("/") ? absolute[2]! : `/${absolute[2]!}`;
  }
  if (authority === undefined) {
    const h2Authority = req.headers[":authority"];
    if (typeof h2Authority === "string") authority = h2Authority;
    else {
      // Bun's node:http joins repeated Host headers with ", ", and a comma is a sub-delim: count
      // them in the raw headers instead.
      let hosts = 0;
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        if (req.rawHeaders[i]!.toLowerCase() === "host") {
          hosts++;
          authority = req.rawHeaders[i + 1]!;
        }
      }
      if (hosts > 1) return { problem: "a request has one Host header" };
    }
  }
  if (authority !== undefined && !isValidAuthority(authority)) return { problem: `malformed Host: ${JSON.stringify(authority.slice(0, 100))}` };
  return { target };
}
