/**
 * Resolves who is calling from request headers: `Authorization: Bearer <API key>` (RFC 6750
 * §2.1). A key in the query string is never accepted (RFC 6750 §2.3 discourages it; URLs end up
 * in logs). Session cookies join here with the dashboard.
 */
import { AppError } from "../errors.ts";
import type { Principal } from "../domain/principal.ts";
import type { KeyService } from "../service/keys.ts";

export interface HeaderSource {
  get(name: string): string | null;
}

/** The outcome of looking at a request's credentials. */
export type Credentials =
  | { kind: "none" }
  | { kind: "invalid" }
  | { kind: "valid"; principal: Principal };

export class Authenticator {
  constructor(private readonly keys: KeyService) {}

  /** What credentials the request carries and whether they are live. */
  inspect(headers: HeaderSource): Credentials {
    const authorization = headers.get("authorization");
    if (authorization === null) return { kind: "none" };
    const m = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(authorization);
    if (!m) return { kind: "invalid" };
    const principal = this.keys.authenticate(m[1]!);
    return principal === null ? { kind: "invalid" } : { kind: "valid", principal };
  }

  /**
   * The principal, for endpoints that require one (`/v1/*`).
   * @throws AppError unauthenticated (401) for missing, unknown or revoked credentials; the
   *   message is the same whatever shape an invalid key has
   */
  require(headers: HeaderSource): Principal {
    const c = this.inspect(headers);
    if (c.kind === "valid") return c.principal;
    if (c.kind === "none") throw new AppError("unauthenticated", "missing credentials: send Authorization: Bearer <API key>");
    throw new AppError("unauthenticated", "invalid or revoked API key");
  }

  /** The principal, or null for anonymous callers (content URLs). Invalid credentials count as none. */
  optional(headers: HeaderSource): Principal | null {
    const c = this.inspect(headers);
    return c.kind === "valid" ? c.principal : null;
  }
}
