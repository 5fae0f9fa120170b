/**
 * One-time sign-in links (CONTRACT §11): `cubby login-link --email E [--ttl 15m]` mints a URL
 * `{HOSTNAME}/auth/link/{token}` that signs E in once, with or without an identity provider, so
 * the dashboard works on a fresh machine. The token is 32 random bytes (256 bits, base64url);
 * the store keeps only its SHA-256 (as sessions keep their secret's, sessions.ts).
 *
 * Opening the URL only shows who it signs in ({@link LoginLinkService.look}); the page's "Sign
 * in" button POSTs the token, and that use deletes the link in the same statement that finds it
 * (storage/login-links.ts), so it signs in once however many requests, workers or instances race
 * for it. A link that expired unused is kept for 7 days, answering 410, then swept (CONTRACT §11
 * as amended in turn 4; issue 37: previews used links up, expired links turned 404 in a minute).
 */
import { createHash, randomBytes } from "node:crypto";
import { AppError } from "../errors.ts";
import { parseTtl } from "../domain/expiry.ts";
import type { Clock } from "../domain/time.ts";
import { Slicer } from "../slices.ts";
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

/**
 * How long an expired link is remembered, so that its URL answers 410 rather than 404 (CONTRACT
 * §11 as amended: "at least 7 days"): 7 days, in microseconds. The sweep deletes it after that.
 */
export const EXPIRED_LOGIN_LINK_KEPT_MICROS = 7 * 24 * 3600 * 1_000_000;
/** Expired links one sweep statement deletes at most: a statement's work stays small. */
const SWEEP_BATCH = 200;

const NOT_FOUND = "this sign-in link is not valid or has been used already; a link signs in once. Ask for a new one (cubby login-link --email …)";
const EXPIRED = "this sign-in link has expired; ask for a new one (cubby login-link --email …)";
const disabled = (email: string) => new AppError("permission_denied", `the account ${email} is disabled; ask the administrator of this cubby to enable it (cubby users enable)`);

/** Mints, shows and redeems login links (see the module comment). */
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
   * What opening a link shows (GET or HEAD, by anyone, any number of times): who it signs in.
   * Changes nothing, so link previews of chat and mail never use a link up (CONTRACT §11).
   * @returns the e-mail address of who the link would sign in
   * @throws AppError not_found when the token is unknown or was used already; gone (410) when
   *   it expired; permission_denied when that user exists and is disabled
   */
  async look(token: string): Promise<{ email: string }> {
    const link = TOKEN_SHAPE.test(token) ? await this.deps.store.loginLinks.find(hash(token)) : undefined;
    if (link === undefined) throw new AppError("not_found", NOT_FOUND);
    if (this.deps.clock.nowMicros() >= link.expiresAt) throw new AppError("gone", EXPIRED);
    const user = await this.deps.users.findByEmail(link.email);
    if (user !== undefined && (await this.deps.store.users.account(user.id))?.disabledAt != null) throw disabled(user.email);
    return { email: link.email };
  }

  /**
   * Uses a link (the "Sign in" button's POST): deletes it and returns the user it signs in
   * (created when missing). An expired link is not deleted (it keeps answering 410).
   * @throws AppError not_found when the token is unknown or was used already; gone (410) when
   *   it expired; permission_denied when the user is disabled (the link is used up then)
   */
  async redeem(token: string): Promise<User> {
    if (!TOKEN_SHAPE.test(token)) throw new AppError("not_found", NOT_FOUND);
    const tokenHash = hash(token);
    const link = await this.deps.store.loginLinks.take(tokenHash, this.deps.clock.nowMicros());
    if (link === undefined) {
      // Not taken: expired (still remembered), or used, swept or never minted.
      throw (await this.deps.store.loginLinks.find(tokenHash)) === undefined ? new AppError("not_found", NOT_FOUND) : new AppError("gone", EXPIRED);
    }
    const user = await this.deps.users.findOrCreateByEmail(link.email);
    if ((await this.deps.store.users.account(user.id))?.disabledAt != null) throw disabled(user.email);
    return user;
  }

  /**
   * Deletes links that expired more than {@link EXPIRED_LOGIN_LINK_KEPT_MICROS} ago (run by the
   * periodic sweep), {@link SWEEP_BATCH} per statement, yielding to the event loop between
   * statements ({@link Slicer}).
   * @returns how many
   */
  async sweepExpired(): Promise<number> {
    const before = this.deps.clock.nowMicros() - EXPIRED_LOGIN_LINK_KEPT_MICROS;
    const slicer = new Slicer();
    let total = 0;
    for (let n = SWEEP_BATCH; n === SWEEP_BATCH; total += n) {
      // The sweep runs in a serving process when WORKERS = 1: requests get their turn between batches.
      await slicer.breathe();
      const started = performance.now();
      n = await this.deps.store.loginLinks.deleteExpiredBefore(before, SWEEP_BATCH);
      // Background work takes at most half a core: a pause as long as the batch took. In the
      // supervisor (WORKERS > 1) the batches otherwise kept a core busy beside the serving workers
      // on a 2-core machine, and a /healthz once waited 136 ms for the CPU (docs/reliability.md).
      if (n === SWEEP_BATCH) await new Promise((resolve) => setTimeout(resolve, performance.now() - started));
    }
    return total;
  }
}
