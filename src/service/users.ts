/**
 * Users: found or created by e-mail (CLI), or by OpenID identity (issuer, subject) on sign-in.
 * A user the CLI created by e-mail alone is linked to the identity that first signs in with
 * that verified e-mail (CONTRACT §5).
 */
import { AppError } from "../errors.ts";
import { newUserId } from "../domain/ids.ts";
import type { Clock } from "../domain/time.ts";
import { isDuplicateKey, type MetadataStore, type MetadataTables, type UserRow } from "../storage/ports.ts";

export interface User {
  id: string;
  email: string;
}

const user = (row: UserRow): User => ({ id: row.id, email: row.email });

/** Users by e-mail or OpenID identity (see the module comment for the linking rule). */
export class UserService {
  constructor(private readonly deps: { store: MetadataStore; clock: Clock }) {}

  /** The user with this (lower-cased) e-mail, created when missing. */
  findOrCreateByEmail(email: string): Promise<User> {
    return this.findOrCreate(async (tx) => {
      const found = await tx.users.byEmail(email);
      if (found) return user(found);
      const row: UserRow = { id: newUserId(), email, issuer: null, subject: null, createdAt: this.deps.clock.nowMicros() };
      await tx.users.insert(row);
      return user(row);
    });
  }

  /**
   * The user for a verified OpenID identity: by (issuer, subject); else the CLI-created user
   * with that e-mail, now linked; else a new user.
   * @throws AppError permission_denied when the e-mail belongs to a user linked to another
   *   identity, or the user is disabled (`cubby users disable`, CONTRACT §9)
   */
  async findOrCreateByIdentity(identity: { issuer: string; subject: string; email: string }): Promise<User> {
    const found = await this.linkOrCreate(identity);
    if ((await this.deps.store.users.account(found.id))?.disabledAt != null) {
      throw new AppError("permission_denied", `the account ${found.email} is disabled; ask the administrator of this cubby to enable it (cubby users enable)`);
    }
    return found;
  }

  private linkOrCreate(identity: { issuer: string; subject: string; email: string }): Promise<User> {
    return this.findOrCreate(async (tx) => {
      const linked = await tx.users.byIdentity(identity.issuer, identity.subject);
      if (linked) {
        // The provider's e-mail changed: follow it, unless another user already has it.
        if (linked.email !== identity.email && (await tx.users.byEmail(identity.email)) === undefined) {
          await tx.users.update({ ...linked, email: identity.email });
          return { id: linked.id, email: identity.email };
        }
        return user(linked);
      }
      const byEmail = await tx.users.byEmail(identity.email);
      if (byEmail) {
        if (byEmail.issuer !== null) {
          throw new AppError("permission_denied", `${identity.email} already belongs to another account of the identity provider`);
        }
        await tx.users.update({ ...byEmail, issuer: identity.issuer, subject: identity.subject });
        return user(byEmail);
      }
      const row: UserRow = { id: newUserId(), email: identity.email, issuer: identity.issuer, subject: identity.subject, createdAt: this.deps.clock.nowMicros() };
      await tx.users.insert(row);
      return user(row);
    });
  }

  /**
   * Runs a find-or-create transaction; when a concurrent one committed the same user first (on
   * PostgreSQL nothing locks a row that does not exist yet, so both insert and a unique index
   * refuses the second), runs it once more, which finds that user.
   */
  private async findOrCreate(work: (tx: MetadataTables) => Promise<User>): Promise<User> {
    try {
      return await this.deps.store.transaction(work);
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      return this.deps.store.transaction(work);
    }
  }

  /** The user's e-mail, by ID. */
  async emailOf(userId: string): Promise<string | undefined> {
    return (await this.deps.store.users.byId(userId))?.email;
  }

  /** The user with this (lower-cased) e-mail, if any. */
  async findByEmail(email: string): Promise<User | undefined> {
    const row = await this.deps.store.users.byEmail(email);
    return row === undefined ? undefined : user(row);
  }
}
