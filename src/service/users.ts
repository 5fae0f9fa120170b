/** Users: found or created by e-mail (CLI) — sign-in by (issuer, subject) comes with OIDC. */
import { eq } from "drizzle-orm";
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

  /** The user with this (lower-cased) e-mail, if any. */
  findByEmail(email: string): User | undefined {
    return this.deps.db.select({ id: users.id, email: users.email }).from(users).where(eq(users.email, email)).get();
  }
}
