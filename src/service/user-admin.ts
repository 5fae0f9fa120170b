/**
 * Administration of users (CONTRACT §9, §15), for the operator's `cubby users …` commands and
 * the administrators' `/v1/admin/users`: list users with what they hold, disable and enable
 * them, set their quota, promote and demote administrators, and delete them with everything
 * they own. Administrators are the users promoted here and those ADMIN_EMAILS lists.
 *
 * Deleting a user removes their files, keys, sessions, share links, upload links and uploads in
 * one transaction, and only after its commit their blobs and partial uploads (CONTRACT §6: a
 * blob goes only once no row refers to it); a crash in between leaves orphans the sweep removes.
 */
import { AppError } from "../errors.ts";
import { NO_QUOTA, type BlobStore, type MetadataStore, type UserAccount, type UserHoldings } from "../storage/ports.ts";
import type { Clock } from "../domain/time.ts";
import type { Quotas } from "./quota.ts";
import { logError } from "../log.ts";
import { isIdShaped } from "../domain/ids.ts";
import { requireScope, type Principal, type Scope } from "../domain/principal.ts";

/** A user as `cubby users list` shows them. Bytes; times Unix microseconds. */
export interface UserSummary extends UserHoldings {
  id: string;
  email: string;
  files: number;
  /** Bytes of their live files. */
  fileBytes: number;
  /** Upload-Length of their unfinished uploads, reserved against the quota. */
  reservedBytes: number;
  /** WebDAV dead properties and lock owners, bytes (CONTRACT §14). */
  davBytes: number;
  /** The quota that applies; null: none. */
  quotaBytes: number | null;
  /** Where it comes from: their own, QUOTA_BYTES, or "none" set for them. */
  quotaSource: "own" | "default" | "none";
  /** The later of their last authenticated request and their creation; null: never seen. */
  lastSeenAt: number | null;
  disabledAt: number | null;
  createdAt: number;
  /** The name shares show (CONTRACT §15): their own, or the e-mail's local part. */
  displayName: string;
  /** An administrator: promoted (`cubby users promote`) or listed in ADMIN_EMAILS. */
  admin: boolean;
}

/** What `PATCH /v1/admin/users/{id}` may change (CONTRACT §15); undefined leaves a field as it is. */
export interface UserChanges {
  disabled?: boolean | undefined;
  quota?: QuotaSetting | undefined;
  /** Promote or demote (ADMIN_EMAILS still makes the addresses it lists admins). */
  admin?: boolean | undefined;
}

/** A page of users by e-mail, and the e-mail the next page starts after (undefined on the last). */
export interface UserPage {
  users: UserSummary[];
  next: string | undefined;
}

/** What `cubby users set-quota` takes: bytes, `none` (no quota at all) or `default` (follow QUOTA_BYTES). */
export type QuotaSetting = number | "none" | "default";

/** The user administration use cases (see the module comment). Errors are AppErrors. */
export class UserAdmin {
  constructor(private readonly deps: { store: MetadataStore; blobs: BlobStore; clock: Clock; quotas: Quotas; adminEmails?: ReadonlySet<string> }) {}

  /** Every user with their usage and holdings, by e-mail, read a page at a time. */
  async *list(): AsyncIterable<UserSummary> {
    for (let after = ""; ; ) {
      const page = await this.deps.store.users.accountsByEmail(PAGE_USERS, after);
      for (const account of page) yield this.summary(account);
      if (page.length < PAGE_USERS) return;
      after = page[page.length - 1]!.email;
    }
  }

  /**
   * Whether `account` administers this cubby (CONTRACT §15): promoted with `cubby users
   * promote`, or its e-mail in ADMIN_EMAILS.
   */
  isAdmin(account: Pick<UserAccount, "admin" | "email">): boolean {
    return account.admin || (this.deps.adminEmails?.has(account.email) ?? false);
  }

  /**
   * The caller's account when they administer this cubby and their credential has `scope`.
   * @throws permission_denied for anyone else (CONTRACT §15: 403)
   */
  async requireAdmin(principal: Principal, scope: Scope): Promise<UserAccount> {
    const account = await this.deps.store.users.account(principal.userId);
    if (account === undefined || !this.isAdmin(account)) throw new AppError("permission_denied", "only an administrator of this cubby may do this (ADMIN_EMAILS, or cubby users promote)");
    requireScope(principal, scope);
    return account;
  }

  /**
   * A page of users by e-mail after `afterEmail` ("" for the first), with their usage, for an
   * administrator (CONTRACT §15 `GET /v1/admin/users`; keyset on the e-mail's unique index, §14).
   * @throws permission_denied for anyone else
   */
  async page(principal: Principal, pageSize: number, afterEmail: string): Promise<UserPage> {
    await this.requireAdmin(principal, "files.read");
    const rows = await this.deps.store.users.accountsByEmail(pageSize + 1, afterEmail);
    const users: UserSummary[] = [];
    for (const account of rows.slice(0, pageSize)) users.push(await this.summary(account));
    return { users, next: rows.length > pageSize ? users[users.length - 1]!.email : undefined };
  }

  /**
   * Changes a user by ID for an administrator (CONTRACT §15 `PATCH /v1/admin/users/{id}`): what
   * is given of disabled, quota and admin.
   * @returns the user as they are now
   * @throws permission_denied for anyone else; not_found for an unknown ID; invalid_argument as {@link setQuota}
   */
  async update(principal: Principal, id: string, changes: UserChanges): Promise<UserSummary> {
    await this.requireAdmin(principal, "files.write");
    const account = isIdShaped(id) ? await this.deps.store.users.account(id) : undefined;
    if (account === undefined) throw new AppError("not_found", "no such user");
    if (changes.quota !== undefined) await this.setQuota(account.email, changes.quota);
    if (changes.disabled !== undefined) await this.setDisabled(account.email, changes.disabled);
    if (changes.admin !== undefined) await this.deps.store.users.setAdmin(account.id, changes.admin);
    return this.describe(account.email);
  }

  /**
   * Promotes (`admin`) or demotes a user (`cubby users promote|demote`).
   * @returns the user as they are now (still an admin after a demotion when ADMIN_EMAILS lists them)
   * @throws not_found for an unknown e-mail
   */
  async setAdmin(email: string, admin: boolean): Promise<UserSummary> {
    const account = await this.accountOf(email);
    await this.deps.store.users.setAdmin(account.id, admin);
    return this.summary({ ...account, admin });
  }

  /** One user's summary. @throws not_found for an unknown e-mail */
  async describe(email: string): Promise<UserSummary> {
    return this.summary(await this.accountOf(email));
  }

  /**
   * Disables (`disabled`) or enables a user: their keys and sessions stop working, or work
   * again, from the next request on, on every server. Their public files and share links stay
   * served (only deleting the user removes them).
   * @returns whether anything changed (false: it already was so)
   * @throws not_found for an unknown e-mail
   */
  async setDisabled(email: string, disabled: boolean): Promise<boolean> {
    const account = await this.accountOf(email);
    if ((account.disabledAt !== null) === disabled) return false;
    await this.deps.store.users.setDisabled(account.id, disabled ? this.deps.clock.nowMicros() : null);
    return true;
  }

  /**
   * Sets a user's quota. Lowering it below what they use deletes nothing: uploads that add
   * bytes are refused until they are under it again.
   * @throws not_found for an unknown e-mail; invalid_argument for a negative or fractional byte count
   */
  async setQuota(email: string, setting: QuotaSetting): Promise<UserSummary> {
    if (typeof setting === "number" && (!Number.isSafeInteger(setting) || setting < 0)) {
      throw new AppError("invalid_argument", `a quota is a whole number of bytes, none or default (got ${setting})`);
    }
    const account = await this.accountOf(email);
    const stored = setting === "none" ? NO_QUOTA : setting === "default" ? null : setting;
    await this.deps.store.users.setQuota(account.id, stored);
    return this.summary({ ...account, quotaBytes: stored });
  }

  /**
   * Deletes a user and everything they own (see the module comment).
   * @returns what was deleted, as it was just before
   * @throws not_found for an unknown e-mail
   */
  async delete(email: string): Promise<UserSummary> {
    const account = await this.accountOf(email);
    const { store, blobs } = this.deps;
    const { summary, blobNames, uploadIds } = await store.transaction(async (tx) => {
      // Locked first (PostgreSQL), as every quota check does: no upload of theirs commits meanwhile.
      const locked = await tx.users.account(account.id);
      if (locked === undefined) throw new AppError("not_found", `no user with the e-mail ${email}`);
      const summary = await this.summary(locked);
      const uploadIds = await tx.uploads.idsByOwner(account.id);
      const blobNames = await tx.files.deleteByOwner(account.id);
      await tx.users.delete(account.id);
      return { summary, blobNames, uploadIds };
    });
    // Now, not after a readers' grace: the command's process ends next, and a download of a
    // deleted user's file may as well stop. What cannot be removed now the sweep removes later.
    const left = (what: string) => (err: unknown) => logError(`${what}: removal failed (the sweep will remove it): ${err}`);
    for (const name of blobNames) await blobs.remove(name).catch(left(`blob ${name}`));
    for (const id of uploadIds) await blobs.partials.remove(id).catch(left(`upload ${id}`));
    return summary;
  }

  private async accountOf(email: string): Promise<UserAccount> {
    const row = await this.deps.store.users.byEmail(email);
    const account = row === undefined ? undefined : await this.deps.store.users.account(row.id);
    if (account === undefined) throw new AppError("not_found", `no user with the e-mail ${email}`);
    return account;
  }

  private async summary(account: UserAccount): Promise<UserSummary> {
    const { store, clock, quotas } = this.deps;
    const usage = await store.users.usage(account.id, clock.nowMicros());
    const holdings = await store.users.holdings(account.id);
    return {
      id: account.id,
      email: account.email,
      files: usage.files,
      fileBytes: usage.fileBytes,
      reservedBytes: usage.reservedBytes,
      davBytes: usage.davBytes,
      ...holdings,
      quotaBytes: quotas.quotaOf(account),
      quotaSource: account.quotaBytes === NO_QUOTA ? "none" : account.quotaBytes === null ? "default" : "own",
      lastSeenAt: account.lastSeenAt,
      disabledAt: account.disabledAt,
      createdAt: account.createdAt,
      displayName: displayNameOf(account),
      admin: this.isAdmin(account),
    };
  }
}

/** Users read a query at a time by {@link UserAdmin.list}. */
const PAGE_USERS = 500;

/** The name a user shows under (CONTRACT §15): their own, or their e-mail's local part. */
export function displayNameOf(account: Pick<UserAccount, "displayName" | "email">): string {
  if (account.displayName !== null) return account.displayName;
  const at = account.email.lastIndexOf("@");
  return at > 0 ? account.email.slice(0, at) : account.email;
}
