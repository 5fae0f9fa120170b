/**
 * Users: found or created by e-mail (CLI), or by OpenID identity (issuer, subject) on sign-in.
 * A user the CLI created by e-mail alone is linked to the identity that first signs in with
 * that verified e-mail (CONTRACT §5).
 */
import { and, eq } from "drizzle-orm";
import { AppError } from "../errors.ts";
import { newUserId } from "../domain/ids.ts";
import type { Clock } from "../domain/time.ts";
import type { Db } from "../storage/db.ts";
import { users } from "../storage/schema.ts";

export interface User {
  id: string;
  email: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A lower-cased e-mail address. @throws AppError invalid_argument when it does not look like one. */
export function parseEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email)) throw new AppError("invalid_argument", `"${raw}" is not an e-mail address`);
  return email;
}

export class UserService {
  constructor(private readonly deps: { db: Db; clock: Clock }) {}

  /** The user with this e-mail, created when missing. */
  findOrCreateByEmail(email: string): User {
    return this.deps.db.transaction(
      () => {
        const found = this.findByEmail(email);
        if (found) return found;
        const user = { id: newUserId(), email, createdAt: this.deps.clock.nowMicros() };
        this.deps.db.insert(users).values(user).run();
        return { id: user.id, email };
      },
      { behavior: "immediate" },
    );
  }

  /**
   * The user for a verified OpenID identity: by (issuer, subject); else the CLI-created user
   * with that e-mail, now linked; else a new user.
   * @throws AppError permission_denied when the e-mail belongs to a user linked to another identity
   */
  findOrCreateByIdentity(identity: { issuer: string; subject: string; email: string }): User {
    return this.deps.db.transaction(
      () => {
        const linked = this.deps.db
          .select({ id: users.id, email: users.email })
          .from(users)
          .where(and(eq(users.issuer, identity.issuer), eq(users.subject, identity.subject)))
          .get();
        if (linked) {
          if (linked.email !== identity.email && this.findByEmail(identity.email) === undefined) {
            this.deps.db.update(users).set({ email: identity.email }).where(eq(users.id, linked.id)).run();
            return { id: linked.id, email: identity.email };
          }
          return linked;
        }
        const byEmail = this.deps.db.select().from(users).where(eq(users.email, identity.email)).get();
        if (byEmail) {
          if (byEmail.issuer !== null) {
            throw new AppError("permission_denied", `${identity.email} already belongs to another account of the identity provider`);
          }
          this.deps.db.update(users).set({ issuer: identity.issuer, subject: identity.subject }).where(eq(users.id, byEmail.id)).run();
          return { id: byEmail.id, email: byEmail.email };
        }
        const user = { id: newUserId(), email: identity.email, issuer: identity.issuer, subject: identity.subject, createdAt: this.deps.clock.nowMicros() };
        this.deps.db.insert(users).values(user).run();
        return { id: user.id, email: user.email };
      },
      { behavior: "immediate" },
    );
  }

  /** The user's e-mail, by ID. */
  emailOf(userId: string): string | undefined {
    return this.deps.db.select({ email: users.email }).from(users).where(eq(users.id, userId)).get()?.email;
  }

  /** The user with this (lower-cased) e-mail, if any. */
  findByEmail(email: string): User | undefined {
    return this.deps.db.select({ id: users.id, email: users.email }).from(users).where(eq(users.email, email)).get();
  }
}
