/**
 * Dashboard sessions (Lucia's session guide): the token is `<id>.<secret>`; the database keeps
 * only SHA-256(secret), compared in constant time. Sessions expire after 30 days and slide:
 * a session used when less than half its lifetime is left is extended, so an active user stays
 * signed in and an idle one is signed out.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { nanoid } from "nanoid";
import { isIdShaped } from "../domain/ids.ts";
import type { Clock } from "../domain/time.ts";
import { ALL_SCOPES, type Principal } from "../domain/principal.ts";
import type { MetadataStore } from "../storage/ports.ts";
import type { AccountStatus } from "./account-status.ts";
import { settle } from "../domain/later.ts";

/** A session lives this long after it was created or last renewed. */
export const SESSION_LIFETIME_MICROS = 30 * 24 * 3600 * 1_000_000;

export interface NewSession {
  token: string;
  expiresAt: number;
}

export interface ValidSession {
  principal: Principal;
  sessionId: string;
  /** Set when the session was just extended: the cookie should be sent again with this expiry. */
  renewedUntil?: number;
}

const hash = (secret: string) => createHash("sha256").update(secret).digest();

/** Dashboard sessions: create, validate (sliding expiry), revoke, sweep (see the module comment). */
export class SessionService {
  constructor(private readonly deps: { store: MetadataStore; clock: Clock; /** Refuses disabled users' sessions (CONTRACT §9). */ accounts: AccountStatus }) {}

  /** Starts a session for a user. */
  async create(userId: string): Promise<NewSession> {
    const id = nanoid(21);
    const secret = randomBytes(32).toString("base64url");
    const now = this.deps.clock.nowMicros();
    const expiresAt = now + SESSION_LIFETIME_MICROS;
    await this.deps.store.sessions.insert({ id, userId, secretHash: hash(secret), createdAt: now, expiresAt });
    return { token: `${id}.${secret}`, expiresAt };
  }

  /**
   * The session a token stands for, or null if unknown, forged or expired (expired ones are
   * deleted), or while its user is disabled (the session works again once enabled).
   */
  async validate(token: string): Promise<ValidSession | null> {
    const dot = token.indexOf(".");
    if (dot !== 21 || token.length > 100) return null;
    const id = token.slice(0, dot);
    if (!isIdShaped(id)) return null;
    const row = await this.deps.store.sessions.get(id);
    if (!row) return null;
    const given = hash(token.slice(dot + 1));
    if (!timingSafeEqual(given, Buffer.from(row.secretHash))) return null;
    const now = this.deps.clock.nowMicros();
    if (now >= row.expiresAt) {
      await this.deps.store.sessions.delete(id);
      return null;
    }
    if (!(await settle(this.deps.accounts.admit(row.userId)))) return null;
    const session: ValidSession = { principal: { userId: row.userId, via: "session", scopes: ALL_SCOPES }, sessionId: id };
    if (row.expiresAt - now < SESSION_LIFETIME_MICROS / 2) {
      const until = now + SESSION_LIFETIME_MICROS;
      await this.deps.store.sessions.extend(id, until);
      session.renewedUntil = until;
    }
    return session;
  }

  /** Ends a session (sign-out). Unknown tokens are ignored. */
  async revoke(token: string): Promise<void> {
    const id = token.slice(0, token.indexOf("."));
    if (id !== "") await this.deps.store.sessions.delete(id);
  }

  /** Removes expired sessions (run at start). @returns how many */
  sweepExpired(): Promise<number> {
    return this.deps.store.sessions.deleteExpired(this.deps.clock.nowMicros());
  }
}
