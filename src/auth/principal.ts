/**
 * Resolves who is calling from request headers: `Authorization: Bearer <API key>` (RFC 6750
 * §2.1), else the dashboard's session cookie. A key in the query string is never accepted
 * (RFC 6750 §2.3 discourages it; URLs end up in logs).
 *
 * A cookie rides along on requests other sites make, so a cookie-authenticated request with an
 * unsafe method must come from cubby's own origin (`Sec-Fetch-Site: same-origin`, or an
 * `Origin` equal to HOSTNAME), as in Hono's csrf middleware. Bearer keys are never sent by a
 * browser on its own, so they need no such check.
 */
import { parse as parseCookies } from "cookie";
import { AppError } from "../errors.ts";
import { WindowLimiter } from "./rate-limit.ts";
import type { Principal } from "../domain/principal.ts";
import type { KeyService } from "../service/keys.ts";
import { isNow, settle, type Later, type NowOrLater } from "../domain/later.ts";
import type { SessionService, ValidSession } from "../service/sessions.ts";

export interface HeaderSource {
  get(name: string): string | null;
}

/** What an authenticator needs of a request: its method, headers and client address. */
export interface RequestLike {
  method: string;
  headers: HeaderSource;
  /**
   * The address the request is attributed to, as the listener decided it
   * (context/client-address.ts): failed authentications are counted per address.
   */
  clientAddress: string;
  /** The request's context: told the user's ID once a credential is verified (logs). */
  context?: { userId?: string };
}

/** The outcome of looking at a request's credentials. */
export type Credentials =
  | { kind: "none" }
  | { kind: "invalid" }
  | { kind: "cross_origin" }
  | { kind: "rate_limited"; retryAfterSeconds: number }
  | { kind: "valid"; principal: Principal; session?: ValidSession & { token: string } };

/** The session cookie's name: `__Host-` prefixed when served over https (RFC 6265bis §4.1.3.2). */
export function sessionCookieName(baseUrl: string): string {
  return baseUrl.startsWith("https:") ? "__Host-cubby_session" : "cubby_session";
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** How long credentials verified by this process are checked without a charge first (ms). */
const VERIFIED_MS = 10 * 60_000;
/** Verified credentials remembered at most; a fuller map starts again. */
const VERIFIED_MAX = 10_000;

/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1; the scheme in any case,
 * spaces around the token tolerated), or undefined for no header or another form.
 */
export function bearerToken(authorization: string | null): string | undefined {
  return authorization === null ? undefined : /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(authorization)?.[1];
}

/**
 * Resolves the caller of a request (bearer key or session cookie, see the module comment),
 * counting failed authentications per client address and refusing a limited address with 429.
 */
export class Authenticator {
  constructor(
    private readonly keys: KeyService,
    private readonly sessions: SessionService,
    /** Public origin (HOSTNAME), for the same-origin check and the cookie name. */
    private readonly baseUrl: () => string,
    /** Failed authentications per client address and minute before 429, across every process. */
    private readonly failures: WindowLimiter,
  ) {}

  /**
   * Credentials this process verified recently: a request carrying one is no guess, so it is
   * checked without being charged first (two writes to the shared windows per request
   * otherwise), after a read that refuses it if its address is limited. Still checked every
   * time: one revoked since fails, and is then counted.
   * Token → when it stops counting as verified (ms).
   */
  private readonly verified = new Map<string, number>();

  /** What credentials the request carries and whether they are live. */
  private async inspect(request: RequestLike, opts: { bearer: boolean } = { bearer: true }): Promise<Credentials> {
    const authorization = request.headers.get("authorization");
    const token = authorization !== null && opts.bearer ? undefined : this.sessionToken(request.headers);
    if ((authorization === null || !opts.bearer) && token === undefined) return { kind: "none" };
    if (token !== undefined && !SAFE_METHODS.has(request.method) && !isSameOrigin(request.headers, this.baseUrl())) return { kind: "cross_origin" };
    const secret = token ?? bearerToken(authorization);
    const c = await this.verify(request.clientAddress, secret, async (secret) => {
      if (token === undefined) {
        const principal = await settle(this.keys.authenticate(secret));
        return principal === null ? undefined : { kind: "valid", principal };
      }
      const session = await this.sessions.validate(token);
      return session === null ? undefined : { kind: "valid", principal: session.principal, session: { ...session, token } };
    });
    if (c.kind === "valid" && request.context !== undefined) request.context.userId = c.principal.userId;
    return c;
  }

  /**
   * Runs `check` of `secret` from `address` under the failure limit: charged before the check
   * and refunded when it passes, unless this process verified the same secret recently (then
   * counted only if it fails). A limited address gets `rate_limited` without a check.
   */
  private async verify(
    address: string,
    secret: string | undefined,
    check: (secret: string) => Promise<Extract<Credentials, { kind: "valid" }> | undefined>,
  ): Promise<Credentials> {
    const now = Date.now();
    const known = secret !== undefined && (this.verified.get(secret) ?? 0) > now;
    let refund: (() => Promise<void>) | undefined;
    if (known) {
      const wait = await this.failures.retryAfterSeconds(address);
      if (wait > 0) return { kind: "rate_limited", retryAfterSeconds: wait };
    } else {
      const reservation = await this.failures.reserve(address);
      if (!reservation.ok) return { kind: "rate_limited", retryAfterSeconds: reservation.retryAfterSeconds };
      refund = reservation.refund;
    }
    const valid = secret === undefined ? undefined : await check(secret);
    if (valid === undefined) {
      if (known) {
        this.verified.delete(secret!);
        await this.failures.record(address);
      }
      return { kind: "invalid" };
    }
    if (refund !== undefined) {
      await refund();
      if (this.verified.size >= VERIFIED_MAX) this.verified.clear();
      this.verified.set(secret!, now + VERIFIED_MS);
    }
    return valid;
  }

  /**
   * The principal, for endpoints that require one (`/v1/*`, RPC).
   * @throws AppError unauthenticated (401) for missing, unknown or revoked credentials (the
   *   same message whatever shape an invalid key has); permission_denied (403) for a
   *   cross-origin request authenticated only by the session cookie
   */
  async require(request: RequestLike): Promise<Principal> {
    return this.check(await this.inspect(request)).principal;
  }

  /**
   * The principal of an S3 request signed with `accessKeyId` (CONTRACT §16), under the same
   * failure limit as a bearer key: charged before the check, refunded when it passes. `check`
   * is given the key's secret and answers whether the request's signature holds.
   * @returns the principal; "unknown" when no live S3 access key has that ID; "mismatch" when
   *   the signature does not hold; "limited" (with the seconds to wait) for a limited address
   */
  async s3(
    request: RequestLike,
    accessKeyId: string,
    check: (secretAccessKey: string) => Promise<boolean>,
  ): Promise<{ principal: Principal } | { refused: "unknown" | "mismatch" } | { refused: "limited"; retryAfterSeconds: number }> {
    let refused: "unknown" | "mismatch" = "unknown";
    const c = await this.verify(request.clientAddress, `s3:${accessKeyId}`, async () => {
      const credential = await this.keys.s3Credential(accessKeyId);
      if (credential === null) return undefined;
      if (!(await check(credential.secretAccessKey))) {
        refused = "mismatch";
        return undefined;
      }
      return { kind: "valid", principal: credential.principal };
    });
    if (c.kind === "rate_limited") return { refused: "limited", retryAfterSeconds: c.retryAfterSeconds };
    if (c.kind !== "valid") return { refused };
    if (request.context !== undefined) request.context.userId = c.principal.userId;
    return { principal: c.principal };
  }

  /**
   * A dashboard session, for `/auth/*` endpoints: bearer keys cannot manage keys.
   * @throws AppError unauthenticated or permission_denied as {@link require}
   */
  async requireSession(request: RequestLike): Promise<ValidSession & { token: string }> {
    const c = await this.inspect(request, { bearer: false });
    // A key sent where only a session counts (/auth/keys, /auth/logout) is not "missing": say what is.
    if (c.kind === "none" && bearerToken(request.headers.get("authorization")) !== undefined) {
      throw new AppError("unauthenticated", "this needs a dashboard session (sign in and use its cookie): an API key cannot mint, list or revoke keys, or sign out; mint keys with cubby keys create");
    }
    return this.check(c).session!;
  }

  /**
   * The principal, or null for anonymous callers (content URLs). Invalid credentials count as
   * none, so the caller answers as it would to an anonymous request.
   *
   * Decided now ({@link NowOrLater}, domain/later.ts; no I/O, no charge) for a request without
   * credentials (null), and for a bearer key that {@link KeyService.authenticate} resolves now
   * to a principal from an address this process does not know to be limited (a passing check
   * is refunded anyway, so nothing is left uncharged). Anything else — a session cookie, a key
   * that needs a lookup or is not live, a limited address — is the rest, which charges before
   * it checks and refuses a limited address.
   * @throws AppError resource_exhausted (429, with Retry-After), from the rest, when the request
   *   carries credentials and its client address is rate limited, exactly as {@link require}
   *   does: a limited address learns nothing about its credentials on any surface
   */
  optional(request: RequestLike): NowOrLater<Principal | null> {
    const authorization = request.headers.get("authorization");
    if (authorization === null) {
      if (this.sessionToken(request.headers) === undefined) return null;
    } else if (this.failures.knownLimited(request.clientAddress) === 0) {
      const bearer = bearerToken(authorization);
      const principal = bearer === undefined ? null : this.keys.authenticate(bearer);
      if (principal !== null && isNow(principal)) {
        if (request.context !== undefined) request.context.userId = principal.userId;
        return principal;
      }
    }
    return this.optionalLater(request);
  }

  /** The rest of {@link optional}; a method of its own, so that a request decided now allocates no scope for it. */
  private optionalLater(request: RequestLike): Later<Principal | null> {
    return async () => this.validOrNull(await this.inspect(request))?.principal ?? null;
  }

  /**
   * The dashboard session, or null when the request has none or an invalid one (`/auth/session`
   * reports "signed out" rather than failing). Bearer keys are not looked at.
   * @throws AppError resource_exhausted (429, with Retry-After) when the request carries a
   *   session cookie and its client address is rate limited, as {@link requireSession} does
   */
  async optionalSession(request: RequestLike): Promise<(ValidSession & { token: string }) | null> {
    return this.validOrNull(await this.inspect(request, { bearer: false }))?.session ?? null;
  }

  /**
   * Checks a secret other than a key or session (a share link's password, CONTRACT §8) under
   * the same per-address limit as failed authentications: the attempt is charged before the
   * check and refunded when the secret is right, so a limited address is refused unchecked.
   * @throws AppError resource_exhausted (429, Retry-After) when the address is limited
   * @returns whether `check` accepted the secret
   */
  async checkSecret(clientAddress: string, check: () => Promise<boolean>): Promise<boolean> {
    const reservation = await this.failures.reserve(clientAddress);
    if (!reservation.ok) throw rateLimited(reservation.retryAfterSeconds);
    const ok = await check();
    if (ok) await reservation.refund();
    return ok;
  }

  /** The session token from the request's cookie, if any. */
  sessionToken(headers: HeaderSource): string | undefined {
    const header = headers.get("cookie");
    if (header === null) return undefined;
    return parseCookies(header)[sessionCookieName(this.baseUrl())];
  }

  /** For optional authentication: valid credentials, or null for none or invalid ones; throws only when rate limited. */
  private validOrNull(c: Credentials): Extract<Credentials, { kind: "valid" }> | null {
    if (c.kind === "rate_limited") throw rateLimited(c.retryAfterSeconds);
    return c.kind === "valid" ? c : null;
  }

  private check(c: Credentials): Extract<Credentials, { kind: "valid" }> {
    if (c.kind === "valid") return c;
    if (c.kind === "rate_limited") throw rateLimited(c.retryAfterSeconds);
    if (c.kind === "cross_origin") throw new AppError("permission_denied", "cross-origin request refused: sign-in cookies work only from cubby's own pages");
    if (c.kind === "none") throw new AppError("unauthenticated", "missing credentials: send Authorization: Bearer <API key>");
    throw new AppError("unauthenticated", "invalid or revoked credentials");
  }
}

/** The one rate-limit error of every surface: 429 / RESOURCE_EXHAUSTED with Retry-After. */
function rateLimited(retryAfterSeconds: number): AppError {
  return new AppError("resource_exhausted", `too many failed sign-in attempts from this address; retry in ${retryAfterSeconds} s`, { retryAfterSeconds });
}

/** `Sec-Fetch-Site: same-origin`, or else an `Origin` header equal to cubby's public origin. */
function isSameOrigin(headers: HeaderSource, baseUrl: string): boolean {
  const site = headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin";
  const origin = headers.get("origin");
  return origin !== null && origin === new URL(baseUrl).origin;
}
