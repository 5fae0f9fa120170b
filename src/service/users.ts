/**
 * Users: found or created by e-mail (CLI), or by OpenID identity (issuer, subject) on sign-in.
 * A user the CLI created by e-mail alone is linked to the identity that first signs in with
 * that verified e-mail (CONTRACT §5).
 */
import { AppError } from "../errors.ts";
import { newUserId } from "../domain/ids.ts";
import type { Clock } from "../domain/time.ts";
import { isDuplicateKey, type MetadataStore, type MetadataTables, type UserRow } from "../storage/ports.ts";
import { requireScope, type Principal } from "../domain/principal.ts";
import { displayNameOf } from "./user-admin.ts";
import { MAX_DISPLAY_NAME, parseDisplayName, storedDisplayName } from "../domain/params.ts";

/** A user's profile as `/v1/me` shows it (CONTRACT §15). */
export interface Profile {
  email: string;
  /** Their own name, or the e-mail's local part. */
  displayName: string;
  showEmailOnShares: boolean;
}

/** A provider's `name` claim as a display name, or undefined when it cannot be one. */
function cleanDisplayName(raw: string): string | undefined {
  try {
    return storedDisplayName(parseDisplayName([...raw].slice(0, MAX_DISPLAY_NAME).join(""))) ?? undefined;
  } catch {
    return undefined;
  }
}

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
  async findOrCreateByIdentity(identity: { issuer: string; subject: string; email: string; name?: string | undefined }): Promise<User> {
    const found = await this.linkOrCreate(identity);
    const account = await this.deps.store.users.account(found.id);
    if (account?.disabledAt != null) {
      throw new AppError("permission_denied", `the account ${found.email} is disabled; ask the administrator of this cubby to enable it (cubby users enable)`);
    }
    // The provider's name is the display name until the user sets one (CONTRACT §15).
    const name = identity.name === undefined ? undefined : cleanDisplayName(identity.name);
    if (account !== undefined && account.displayName === null && name) await this.deps.store.users.setProfile(found.id, { displayName: name });
    return found;
  }

  /**
   * The caller's profile (CONTRACT §15 `GET /v1/me`): e-mail, the name shares show (their own,
   * else the e-mail's local part) and whether share pages show the e-mail too.
   * @throws unauthenticated when the user is gone
   */
  async profile(principal: Principal): Promise<Profile> {
    const account = await this.deps.store.users.account(principal.userId);
    if (account === undefined) throw new AppError("unauthenticated", "the account no longer exists");
    return { email: account.email, displayName: displayNameOf(account), showEmailOnShares: account.showEmailOnShares };
  }

  /**
   * Changes what is given of the caller's profile (CONTRACT §15 `PATCH /v1/me`). A display name
   * (domain/params.ts parseDisplayName) is stored trimmed; "" goes back to the default.
   * @throws permission_denied without files.write; invalid_argument for a name out of bounds
   */
  async updateProfile(principal: Principal, changes: { displayName?: string | undefined; showEmailOnShares?: boolean | undefined }): Promise<Profile> {
    requireScope(principal, "files.write");
    const set: { displayName?: string | null; showEmailOnShares?: boolean } = {};
    if (changes.displayName !== undefined) set.displayName = storedDisplayName(parseDisplayName(changes.displayName));
    if (changes.showEmailOnShares !== undefined) set.showEmailOnShares = changes.showEmailOnShares;
    await this.deps.store.users.setProfile(principal.userId, set);
    return this.profile(principal);
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
