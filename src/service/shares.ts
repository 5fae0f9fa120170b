/**
 * Share links (CONTRACT §8): a URL `/s/{token}` that serves one file's content to whoever holds
 * it, whatever the file's visibility, until it expires, runs out of downloads, or is deleted
 * (then 410 Gone). An optional password is stored only as an argon2id hash (Bun.password).
 */
import { AppError } from "../errors.ts";
import type { FileRecord } from "../domain/file.ts";
import { isIdShaped, newShareId, newShareToken, SHARE_TOKEN_PATTERN } from "../domain/ids.ts";
import { pageFrom, type Page, type PageCursor } from "../domain/params.ts";
import { requireScope, type Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import { logAddress, MAX_SHARE_ITEMS, type ShareDownloadRow, type ShareItemJson, type ShareRow } from "../domain/share.ts";
import { logError } from "../log.ts";
import type { MetadataStore } from "../storage/ports.ts";
import type { FileService } from "./files.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { FolderService } from "./folders.ts";
import type { WebhookService } from "./webhooks.ts";
import { displayNameOf } from "./user-admin.ts";

/** What a new share may set; every field optional. */
export interface ShareInput {
  /** Unix microseconds in the future, or null/undefined for never. */
  expiresAt?: number | null | undefined;
  /** 1 … {@link MAX_DOWNLOADS}; null/undefined for no limit. */
  maxDownloads?: number | null | undefined;
  /** 1 … {@link MAX_PASSWORD_CHARS} characters; undefined for none. */
  password?: string | undefined;
}

/**
 * What `PATCH /v1/shares/{id}` may change (CONTRACT §15): undefined leaves a field as it is;
 * null clears it (no expiry, no limit, no password).
 */
export interface ShareChanges {
  /** Unix microseconds in the future, or null for never. */
  expiresAt?: number | null | undefined;
  /** 1 … {@link MAX_DOWNLOADS}, or null for no limit. */
  maxDownloads?: number | null | undefined;
  /** 1 … {@link MAX_PASSWORD_CHARS} characters, or null for none. */
  password?: string | null | undefined;
  /**
   * What the share holds from now on (1 … {@link MAX_SHARE_ITEMS} of the caller's files and
   * folders): a file's or a folder's share becomes a share of these items.
   */
  items?: ShareItemJson[] | undefined;
}

export const MAX_DOWNLOADS = 1_000_000_000;
/** How long a share's access log keeps a download (CONTRACT §15), days. */
export const SHARE_LOG_DAYS = 90;
export const MAX_PASSWORD_CHARS = 1024;

/** What a share of several items still holds when opened: its live files and folders, in the order given. */
export interface OpenItems {
  files: FileRecord[];
  folders: FolderRow[];
}

/** A live share and its file (a file's share) or folder (a folder's, CONTRACT §12), as a share URL opens them. */
export type OpenShare =
  | { share: ShareRow; file: FileRecord; folder?: undefined; items?: undefined }
  | { share: ShareRow; folder: FolderRow; file?: undefined; items?: undefined }
  | { share: ShareRow; items: OpenItems; file?: undefined; folder?: undefined };

/** Share links: create, list and delete (the file's owner), and open by token (anyone who has it). */
export class ShareService {
  constructor(private readonly deps: { store: MetadataStore; files: FileService; folders: FolderService; clock: Clock; webhooks: WebhookService; logFullAddresses?: boolean }) {}

  /**
   * Shares a file the caller owns.
   * @throws permission_denied without files.read or files.write; invalid_argument (a limit out of range, an empty or too long password, an expiry
   *   not in the future), and what {@link FileService.owned} throws
   */
  async create(principal: Principal, fileId: string, input: ShareInput): Promise<ShareRow> {
    // A share link exposes the file: files.read as well as files.write (CONTRACT §10).
    requireScope(principal, "files.read");
    const file = await this.deps.files.owned(principal, fileId);
    const share = await this.newShare(principal, input, { fileId: file.id, folderId: null });
    await this.deps.store.shares.insert(share);
    return share;
  }

  /**
   * Shares a folder the caller owns (CONTRACT §12): its files, and its sub-folders' files, for
   * whoever has the link, as a page and as one ZIP. Records `folder.shared` (CONTRACT §13) in
   * the same transaction.
   * @throws permission_denied without files.read or files.write; invalid_argument as
   *   {@link create}; not_found (no such folder of the caller's)
   */
  async createForFolder(principal: Principal, folderId: string, input: ShareInput): Promise<ShareRow> {
    requireScope(principal, "files.read");
    requireScope(principal, "files.write");
    const folder = await this.deps.folders.row(principal, folderId);
    const share = await this.newShare(principal, input, { fileId: "", folderId: folder.id });
    await this.deps.store.transaction(async (tx) => {
      await tx.shares.insert(share);
      await this.deps.webhooks.folderShared(tx, folder, share.id);
    });
    return share;
  }

  /**
   * Shares several of the caller's files and folders by one link (CONTRACT §15
   * `POST /v1/shares`): its page lists them (folders browsable), each downloadable, and all of
   * them as one ZIP. Records no event of its own (`folder.shared` is a folder's share's);
   * each counted download records `share.downloaded`.
   * @throws permission_denied without files.read or files.write; invalid_argument (no items,
   *   more than {@link MAX_SHARE_ITEMS}, an item named twice, and as {@link create}); not_found,
   *   or permission_denied for another's file the caller can see (as sharing it alone answers)
   */
  async createForItems(principal: Principal, items: readonly ShareItemJson[], input: ShareInput): Promise<ShareRow> {
    requireScope(principal, "files.read");
    requireScope(principal, "files.write");
    const checked = await this.ownedItems(principal, items);
    const share = await this.newShare(principal, input, { fileId: "", folderId: null, items: checked });
    await this.deps.store.shares.insert(share);
    return share;
  }

  /**
   * `items` checked: 1 … {@link MAX_SHARE_ITEMS}, none twice, each one of the caller's files
   * (readable to them) or folders. @throws invalid_argument; not_found; permission_denied (FileService.owned)
   */
  private async ownedItems(principal: Principal, items: readonly ShareItemJson[]): Promise<ShareItemJson[]> {
    if (items.length === 0) throw new AppError("invalid_argument", "items: at least one file or folder");
    if (items.length > MAX_SHARE_ITEMS) throw new AppError("invalid_argument", `items: at most ${MAX_SHARE_ITEMS} files and folders in one share`);
    const seen = new Set<string>();
    const out: ShareItemJson[] = [];
    for (const item of items) {
      const key = "file_id" in item ? `file:${item.file_id}` : `folder:${item.folder_id}`;
      if (seen.has(key)) throw new AppError("invalid_argument", `items: ${key.replace(":", " ")} is named twice`);
      seen.add(key);
      if ("file_id" in item) out.push({ file_id: (await this.deps.files.owned(principal, item.file_id, "files.read")).id });
      else out.push({ folder_id: (await this.deps.folders.row(principal, item.folder_id)).id });
    }
    return out;
  }

  /**
   * The live shares of a folder the caller owns, newest first, `pageSize` at a time after `after`
   * (keyset, CONTRACT §14). @throws not_found
   */
  async listForFolder(principal: Principal, folderId: string, pageSize: number, after: PageCursor | undefined): Promise<Page<ShareRow>> {
    const folder = await this.deps.folders.row(principal, folderId);
    return pageFrom(await this.deps.store.shares.listByFolder(folder.id, pageSize + 1, after), pageSize);
  }

  /** A new share row of the caller's for a file, a folder or several items, its input checked and its password hashed. */
  private async newShare(principal: Principal, input: ShareInput, target: Pick<ShareRow, "fileId" | "folderId"> & { items?: ShareItemJson[] }): Promise<ShareRow> {
    const now = this.deps.clock.nowMicros();
    const { expiresAt = null, maxDownloads = null, password } = input;
    if (expiresAt !== null && expiresAt <= now) throw new AppError("invalid_argument", "expire_time must be in the future");
    if (maxDownloads !== null) checkMaxDownloads(maxDownloads);
    if (password !== undefined) checkSharePassword(password);
    return {
      id: newShareId(),
      ...target,
      ownerId: principal.userId,
      token: newShareToken(),
      expiresAt,
      maxDownloads,
      downloadCount: 0,
      lastDownloadAt: null,
      passwordHash: password === undefined ? null : await Bun.password.hash(password, { algorithm: "argon2id" }),
      createdAt: now,
      deletedAt: null,
      items: target.items ?? null,
    };
  }

  /**
   * The live shares of a file the caller owns (expired and used-up ones included), newest first,
   * `pageSize` at a time after `after` (keyset, CONTRACT §14). @throws not_found
   */
  async list(principal: Principal, fileId: string, pageSize: number, after: PageCursor | undefined): Promise<Page<ShareRow>> {
    const file = await this.deps.files.owned(principal, fileId, "files.read");
    return pageFrom(await this.deps.store.shares.listByFile(file.id, pageSize + 1, after), pageSize);
  }

  /**
   * Every live share of the caller's (files' and folders', expired and used-up ones included),
   * newest first, `pageSize` at a time after `after` (CONTRACT §15 `GET /v1/shares`; keyset, §14).
   * @throws permission_denied without files.read
   */
  async listAll(principal: Principal, pageSize: number, after: PageCursor | undefined): Promise<Page<ShareRow>> {
    requireScope(principal, "files.read");
    return pageFrom(await this.deps.store.shares.listByOwner(principal.userId, pageSize + 1, after), pageSize);
  }

  /**
   * Changes one of the caller's live shares (CONTRACT §15 `PATCH /v1/shares/{id}`): each field
   * given replaces the share's; what is not given stays. A new password (or none) also ends what
   * the old one unlocked (the unlock cookie is bound to the password's hash). A limit at or below
   * the downloads already counted leaves the link used up (410). New `items` make it a share of
   * those items, whatever it shared before.
   * @returns the share as it is now
   * @throws permission_denied without files.write; invalid_argument as {@link create} and
   *   {@link createForItems}; not_found when the caller has no such live share, or an item is not theirs
   */
  async update(principal: Principal, shareId: string, changes: ShareChanges): Promise<ShareRow> {
    requireScope(principal, "files.write");
    const { expiresAt, maxDownloads, password, items } = changes;
    if (expiresAt != null && expiresAt <= this.deps.clock.nowMicros()) throw new AppError("invalid_argument", "expire_time must be in the future");
    if (maxDownloads != null) checkMaxDownloads(maxDownloads);
    if (password != null) checkSharePassword(password);
    const set: Parameters<MetadataStore["shares"]["update"]>[2] = {};
    if (expiresAt !== undefined) set.expiresAt = expiresAt;
    if (maxDownloads !== undefined) set.maxDownloads = maxDownloads;
    if (password !== undefined) set.passwordHash = password === null ? null : await Bun.password.hash(password, { algorithm: "argon2id" });
    if (items !== undefined) Object.assign(set, { items: await this.ownedItems(principal, items), fileId: "", folderId: null });
    const updated = isIdShaped(shareId) ? await this.deps.store.shares.update(shareId, principal.userId, set) : undefined;
    if (updated === undefined) throw new AppError("not_found", "share not found");
    return updated;
  }

  /**
   * Records a counted download in its share's access log once its answer ended (CONTRACT §15):
   * what was sent, how many bytes, whether all of them went out, and the client's address
   * shortened ({@link logAddress}). A failure to record is logged, never the download's.
   */
  async recordDownload(share: ShareRow, item: string, sent: { bytes: number; completed: boolean }, clientAddress: string): Promise<void> {
    const row = { shareId: share.id, at: this.deps.clock.nowMicros(), item, bytes: sent.bytes, completed: sent.completed, client: logAddress(clientAddress, this.deps.logFullAddresses === true) };
    await this.deps.store.shares.recordDownload(row).catch((err: unknown) => logError(`share ${share.id}: the access log lost a download: ${err}`));
  }

  /**
   * A share's access log, newest first, `pageSize` at a time after `after` (CONTRACT §15
   * `GET /v1/shares/{id}/downloads`); a deleted share's too, for its owner.
   * @throws permission_denied without files.read; not_found when the share is not the caller's
   */
  async downloads(principal: Principal, shareId: string, pageSize: number, after: PageCursor | undefined): Promise<Page<ShareDownloadRow>> {
    requireScope(principal, "files.read");
    const share = isIdShaped(shareId) ? await this.deps.store.shares.byId(shareId) : undefined;
    if (share === undefined || share.ownerId !== principal.userId) throw new AppError("not_found", "share not found");
    const rows = await this.deps.store.shares.downloads(share.id, pageSize + 1, after === undefined ? undefined : { at: after.createdAt, seq: Number(after.id) });
    // The log's place (at, seq) as a page cursor, so it pages as every listing does.
    return pageFrom(rows.map((r) => ({ ...r, createdAt: r.at, id: String(r.seq) })), pageSize);
  }

  /** Removes access log rows older than {@link SHARE_LOG_DAYS} days, a thousand at a time. @returns how many */
  async pruneDownloads(): Promise<number> {
    const before = this.deps.clock.nowMicros() - SHARE_LOG_DAYS * 24 * 3600 * 1_000_000;
    let total = 0;
    for (let n = -1; n !== 0; total += n) n = await this.deps.store.shares.pruneDownloads(before, 1000);
    return total;
  }

  /**
   * Deletes one of the caller's shares: its URL answers 410 from then on.
   * @throws not_found when the caller has no such live share
   */
  async delete(principal: Principal, shareId: string): Promise<void> {
    requireScope(principal, "files.write");
    if (!isIdShaped(shareId) || !(await this.deps.store.shares.markDeleted(shareId, principal.userId, this.deps.clock.nowMicros()))) {
      throw new AppError("not_found", "share not found");
    }
  }

  /**
   * The share of a URL token and its file, if it still serves.
   * @throws not_found for a token that never was; gone (410) once deleted, expired, used up, or
   *   when the file is gone
   */
  async open(token: string): Promise<OpenShare> {
    const share = SHARE_TOKEN_PATTERN.test(token) ? await this.deps.store.shares.byToken(token) : undefined;
    if (share === undefined) throw new AppError("not_found", "no such share link");
    if (share.deletedAt !== null) throw gone("this share link was deleted");
    if (share.expiresAt !== null && share.expiresAt <= this.deps.clock.nowMicros()) throw gone("this share link has expired");
    if (share.maxDownloads !== null && share.downloadCount >= share.maxDownloads) throw gone("this share link has reached its download limit");
    if (share.items !== null) {
      const items = await this.openItems(share);
      if (items.files.length + items.folders.length === 0) throw gone("everything this link shared was deleted");
      return { share, items };
    }
    if (share.folderId !== null) {
      const folder = await this.deps.folders.forShare(share.folderId);
      if (folder === undefined) throw gone("the shared folder was deleted");
      return { share, folder };
    }
    const file = await this.deps.files.forShare(share.fileId);
    if (file === undefined) throw gone("the shared file was deleted");
    return { share, file };
  }

  /**
   * The items of a share of several that still serve, in the order given: files deleted or past
   * their expiry, folders deleted, and anything that changed hands (never: kept for safety) left
   * out. At most {@link MAX_SHARE_ITEMS} lookups by primary key.
   */
  private async openItems(share: ShareRow): Promise<OpenItems> {
    const out: OpenItems = { files: [], folders: [] };
    for (const item of share.items ?? []) {
      if ("file_id" in item) {
        const file = await this.deps.files.forShare(item.file_id);
        if (file !== undefined && file.ownerId === share.ownerId) out.files.push(file);
      } else {
        const folder = await this.deps.folders.forShare(item.folder_id);
        if (folder !== undefined && folder.ownerId === share.ownerId) out.folders.push(folder);
      }
    }
    return out;
  }

  /**
   * Who made the share, as its page names them (CONTRACT §15): their display name, with their
   * e-mail only when they chose to show it (`show_email_on_shares`); undefined once the user is gone.
   */
  async sharerName(share: ShareRow): Promise<string | undefined> {
    const account = await this.deps.store.users.account(share.ownerId);
    if (account === undefined) return undefined;
    return account.showEmailOnShares ? `${displayNameOf(account)} (${account.email})` : displayNameOf(account);
  }

  /** Whether `password` is the share's (argon2id verify; a share without a password takes any). */
  async passwordMatches(share: ShareRow, password: string | undefined): Promise<boolean> {
    if (share.passwordHash === null) return true;
    if (password === undefined || password.length > MAX_PASSWORD_CHARS) return false;
    return Bun.password.verify(password, share.passwordHash);
  }

  /**
   * Counts a download (a GET from byte 0) of a file, of a shared folder's ZIP or of a share of
   * several items' ZIP (CONTRACT §12, §15: the limit counts them alike), through `share`, never past the limit, and records
   * `share.downloaded` in the same transaction (CONTRACT §13).
   * @throws gone when the limit was reached meanwhile, or the share was deleted
   */
  async countDownload(share: ShareRow, what: FileRecord | FolderRow | OpenItems): Promise<void> {
    const counted = await this.deps.store.transaction(async (tx) => {
      if (!(await tx.shares.countDownload(share.id, this.deps.clock.nowMicros()))) return false;
      if ("files" in what) await this.deps.webhooks.itemsDownloaded(tx, share, what);
      else if ("blob" in what) await this.deps.webhooks.shareDownloaded(tx, what, share.id);
      else await this.deps.webhooks.folderDownloaded(tx, what, share.id);
      return true;
    });
    if (!counted) throw gone("this share link has reached its download limit");
  }
}

function gone(message: string): AppError {
  return new AppError("gone", message);
}

/** A share's download limit: a whole number from 1 to {@link MAX_DOWNLOADS}. @throws AppError invalid_argument */
export function checkMaxDownloads(n: number): void {
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_DOWNLOADS) throw new AppError("invalid_argument", `max_downloads: a whole number from 1 to ${MAX_DOWNLOADS}`);
}

/** A share's password: 1 to {@link MAX_PASSWORD_CHARS} characters (UTF-16 code units). @throws AppError invalid_argument */
export function checkSharePassword(password: string): void {
  if (password.length === 0 || password.length > MAX_PASSWORD_CHARS) throw new AppError("invalid_argument", `password: 1 to ${MAX_PASSWORD_CHARS} characters`);
}
