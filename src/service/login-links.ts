/**
 * One-time sign-in links (CONTRACT §11): `cubby login-link --email E [--ttl 15m]` mints a URL
 * `{HOSTNAME}/auth/link/{token}` that signs E in once, with or without an identity provider, so
 * the dashboard works on a fresh machine. The token is 32 random bytes (256 bits, base64url);
 * the store keeps only its SHA-256 (as sessions keep their secret's, sessions.ts). Using a link
 * deletes it in the same statement that finds it (storage/login-links.ts), so it signs in once
 * however many requests, workers or instances race for it.
 */
import { createHash, randomBytes } from "node:crypto";
import { AppError } from "../errors.ts";
import { parseTtl } from "../domain/expiry.ts";
import type { Clock } from "../domain/time.ts";
import type { MetadataStore } from "../storage/ports.ts";
import type { User, UserService } from "./users.ts";

/** How long a link works when `--ttl` is not given: 15 minutes, in microseconds. */
export const DEFAULT_LOGIN_LINK_TTL_MICROS = 15 * 60 * 1_000_000;
/** The longest `--ttl` accepted: 24 hours, in microseconds. */
export const MAX_LOGIN_LINK_TTL_MICROS = 24 * 3600 * 1_000_000;

/**
 * The TTL of a new link: `raw` as a ttl (`90s`, `15m`, `12h`), or 15 minutes when undefined.
 * @returns microseconds
 * @throws AppError invalid_argument for a malformed ttl or one over 24 hours
 */
export function loginLinkTtl(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LOGIN_LINK_TTL_MICROS;
  const ttl = parseTtl(raw);
  if (ttl > MAX_LOGIN_LINK_TTL_MICROS) throw new AppError("invalid_argument", `ttl: a login link works at most 24 hours (got "${raw}")`);
  return ttl;
}

/** A token is 43 base64url characters (32 bytes); anything else is not one of ours. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

const hash = (token: string) => createHash("sha256").update(token).digest();

/** Mints and redeems login links (see the module comment). */
export class LoginLinkService {
  constructor(private readonly deps: { store: MetadataStore; clock: Clock; users: UserService }) {}

  /**
   * Mints a link for `email` (already parsed and lower-cased, domain/params.ts parseEmail).
   * @param ttlMicros how long it works ({@link loginLinkTtl})
   * @returns the token (to put in the URL; it is not stored) and when it expires (Unix µs)
   */
  async mint(email: string, ttlMicros = DEFAULT_LOGIN_LINK_TTL_MICROS): Promise<{ token: string; expiresAt: number }> {
    const token = randomBytes(32).toString("base64url");
    const now = this.deps.clock.nowMicros();
    const expiresAt = now + ttlMicros;
    await this.deps.store.loginLinks.insert({ tokenHash: hash(token), email, createdAt: now, expiresAt });
    return { token, expiresAt };
  }

  /**
   * Uses a link: deletes it and returns the user it signs in (created when missing).
   * @throws AppError not_found when the token is unknown or was used already; gone (410) when
   *   it expired; permission_denied when the user is disabled (the link is used up either way)
   */
  async redeem(token: string): Promise<User> {
    const link = TOKEN_SHAPE.test(token) ? await this.deps.store.loginLinks.take(hash(token)) : undefined;
    if (link === undefined) throw new AppError("not_found", "this sign-in link is not valid or has been used already; a link signs in once. Ask for a new one (cubby login-link --email …)");
    if (this.deps.clock.nowMicros() >= link.expiresAt) throw new AppError("gone", "this sign-in link has expired; ask for a new one (cubby login-link --email …)");
    const user = await this.deps.users.findOrCreateByEmail(link.email);
    if ((await this.deps.store.users.account(user.id))?.disabledAt != null) {
      throw new AppError("permission_denied", `the account ${user.email} is disabled; ask the administrator of this cubby to enable it (cubby users enable)`);
    }
    return user;
  }

  /** Removes expired links (run by the periodic sweep). @returns how many */
  sweepExpired(): Promise<number> {
    return this.deps.store.loginLinks.deleteExpired(this.deps.clock.nowMicros());
  }
}
