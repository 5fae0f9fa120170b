/**
 * Administration of users (CONTRACT §9), for the operator's `cubby users …` commands: list
 * users with what they hold, disable and enable them, set their quota, and delete them with
 * everything they own.
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
}

/** What `cubby users set-quota` takes: bytes, `none` (no quota at all) or `default` (follow QUOTA_BYTES). */
export type QuotaSetting = number | "none" | "default";

/** The user administration use cases (see the module comment). Errors are AppErrors. */
export class UserAdmin {
  constructor(private readonly deps: { store: MetadataStore; blobs: BlobStore; clock: Clock; quotas: Quotas }) {}

  /** Every user with their usage and holdings, by e-mail. */
  async list(): Promise<UserSummary[]> {
    const out: UserSummary[] = [];
    for await (const row of this.deps.store.users.all()) {
      const account = await this.deps.store.users.account(row.id);
      if (account !== undefined) out.push(await this.summary(account));
    }
    return out.sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
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
    };
  }
}
