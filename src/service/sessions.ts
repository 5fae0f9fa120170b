/**
 * Dashboard sessions (Lucia's session guide): the token is `<id>.<secret>`; the database keeps
 * only SHA-256(secret), compared in constant time. Sessions expire after 30 days and slide:
 * a session used when less than half its lifetime is left is extended, so an active user stays
 * signed in and an idle one is signed out.
 */
import type { Statement } from "bun:sqlite";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { nanoid } from "nanoid";
import type { Clock } from "../domain/time.ts";
import type { Principal } from "../domain/principal.ts";
import type { Db } from "../storage/db.ts";

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

export class SessionService {
  private readonly byId: Statement<{ userId: string; secretHash: Uint8Array; expiresAt: number }, [string]>;

  constructor(private readonly deps: { db: Db; clock: Clock }) {
    this.byId = deps.db.$client.prepare("SELECT user_id AS userId, secret_hash AS secretHash, expires_at AS expiresAt FROM sessions WHERE id = ?");
  }

  /** Starts a session for a user. */
  create(userId: string): NewSession {
    const id = nanoid(21);
    const secret = randomBytes(32).toString("base64url");
    const now = this.deps.clock.nowMicros();
    const expiresAt = now + SESSION_LIFETIME_MICROS;
    this.deps.db.$client
      .query("INSERT INTO sessions (id, user_id, secret_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)")
      .run(id, userId, hash(secret), now, expiresAt);
    return { token: `${id}.${secret}`, expiresAt };
  }

  /** The session a token stands for, or null if unknown, forged or expired (expired ones are deleted). */
  validate(token: string): ValidSession | null {
    const dot = token.indexOf(".");
    if (dot !== 21 || token.length > 100) return null;
    const id = token.slice(0, dot);
    const row = this.byId.get(id);
    if (!row) return null;
    const given = hash(token.slice(dot + 1));
    if (!timingSafeEqual(given, Buffer.from(row.secretHash))) return null;
    const now = this.deps.clock.nowMicros();
    if (now >= row.expiresAt) {
      this.deps.db.$client.query("DELETE FROM sessions WHERE id = ?").run(id);
      return null;
    }
    const session: ValidSession = { principal: { userId: row.userId, via: "session" }, sessionId: id };
    if (row.expiresAt - now < SESSION_LIFETIME_MICROS / 2) {
      const until = now + SESSION_LIFETIME_MICROS;
      this.deps.db.$client.query("UPDATE sessions SET expires_at = ? WHERE id = ?").run(until, id);
      session.renewedUntil = until;
    }
    return session;
  }

  /** Ends a session (sign-out). Unknown tokens are ignored. */
  revoke(token: string): void {
    const id = token.slice(0, token.indexOf("."));
    if (id !== "") this.deps.db.$client.query("DELETE FROM sessions WHERE id = ?").run(id);
  }

  /** Removes expired sessions (run at start). @returns how many */
  sweepExpired(): number {
    return this.deps.db.$client.query("DELETE FROM sessions WHERE expires_at <= ?").run(this.deps.clock.nowMicros()).changes;
  }
}
