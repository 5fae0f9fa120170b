/**
 * Guest upload links (CONTRACT §8): an owner makes a link; anyone with its token uploads files
 * into the owner's account, with the link's visibility, within its limits. The limits hold under
 * any concurrency: the counters move by one conditional UPDATE in the transaction that commits
 * each file (storage/upload-conditions.ts), so the file and its count commit together or not at all.
 * A resumable upload through a link holds its place from its creation (CONTRACT §10): its
 * creation reserves a file and its Upload-Length against the limits by one conditional
 * statement in the transaction that inserts it, and every condition counts the link's
 * unfinished, unexpired uploads beside the files it received.
 */
import type { Visibility } from "../domain/file.ts";
import type { FileRecord } from "../domain/file.ts";
import type { FilePage } from "../domain/file-page.ts";
import { pageFrom, type Page, type PageCursor } from "../domain/params.ts";
import { requireScope, type Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import { newUploadLinkId, newUploadLinkToken, UPLOAD_LINK_TOKEN, type UploadLinkRow } from "../domain/upload-link.ts";
import { AppError } from "../errors.ts";
import type { MetadataStore, MetadataTables } from "../storage/ports.ts";
import type { ConcatGroup } from "../storage/upload-ports.ts";
import { pageOf, type Content, type FileService } from "./files.ts";
import { QuotaExceededError } from "./quota.ts";

/** A new link's settings, parsed (http/upload-links-routes.ts). */
export interface NewUploadLink {
  name: string;
  /** Unix microseconds in the future, or null: never. */
  expiresAt: number | null;
  maxFiles: number | null;
  maxBytes: number | null;
  visibility: Visibility;
}

/** A raw upload through a link (`POST /u/{token}?name=…`). */
export interface GuestUpload {
  name: string;
  contentType: string;
  expectedChecksum?: string | undefined;
  content: Content;
}

const notFound = () => new AppError("not_found", "upload link not found");

/** The link use cases (see the module comment). Errors are AppErrors. */
export class UploadLinkService {
  constructor(private readonly deps: { store: MetadataStore; clock: Clock; files: FileService; maxUploadBytes: number }) {}

  /** Makes a link owned by the caller. @throws permission_denied without files.write */
  async create(principal: Principal, input: NewUploadLink): Promise<UploadLinkRow> {
    requireScope(principal, "files.write");
    const row: UploadLinkRow = {
      id: newUploadLinkId(),
      ownerId: principal.userId,
      token: newUploadLinkToken(),
      name: input.name,
      visibility: input.visibility,
      expiresAt: input.expiresAt,
      maxFiles: input.maxFiles,
      maxBytes: input.maxBytes,
      filesUploaded: 0,
      bytesUploaded: 0,
      createdAt: this.deps.clock.nowMicros(),
      deletedAt: null,
    };
    await this.deps.store.uploadLinks.insert(row);
    return row;
  }

  /**
   * The caller's links, newest first: those not deleted, and with `showDeleted` the deleted ones
   * too (AIP-164), whose received files stay reachable through {@link files}; `pageSize` at a time
   * after `after` (keyset, CONTRACT §14).
   * @throws permission_denied without files.read
   */
  async list(principal: Principal, showDeleted: boolean, pageSize: number, after: PageCursor | undefined): Promise<Page<UploadLinkRow>> {
    requireScope(principal, "files.read");
    return pageFrom(await this.deps.store.uploadLinks.listByOwner(principal.userId, showDeleted, pageSize + 1, after), pageSize);
  }

  /**
   * The files that arrived through one of the caller's links and still exist, newest first,
   * `pageSize` at a time (keyset pagination, as {@link FileService.list}). A deleted link's row
   * stays, so its owner still sees what arrived through it.
   * @throws not_found ("upload link not found") when the link is not the caller's;
   *   permission_denied without files.read
   */
  async files(principal: Principal, id: string, pageSize: number, after: PageCursor | undefined): Promise<FilePage> {
    requireScope(principal, "files.read");
    const link = await this.deps.store.uploadLinks.get(id);
    if (link === undefined || link.ownerId !== principal.userId) throw notFound();
    return pageOf(await this.deps.store.files.listByUploadLink(id, pageSize + 1, after), pageSize);
  }

  /**
   * Deletes one of the caller's links: its URL answers 410 from then on; files already uploaded stay.
   * @throws not_found when it is not the caller's (or already deleted); permission_denied without files.write
   */
  async delete(principal: Principal, id: string): Promise<void> {
    requireScope(principal, "files.write");
    if (!(await this.deps.store.uploadLinks.markDeleted(id, principal.userId, this.deps.clock.nowMicros()))) throw notFound();
  }

  /**
   * The link of a token if there is one (any state), undefined otherwise: how a bearer token that
   * is not an API key is tried as a link's.
   */
  async byToken(token: string): Promise<UploadLinkRow | undefined> {
    if (!UPLOAD_LINK_TOKEN.test(token)) return undefined;
    return this.deps.store.uploadLinks.byToken(token);
  }

  /**
   * The link of a token while it takes uploads.
   * @throws not_found for an unknown token; gone (410) when deleted, expired or past a limit,
   *   or while its owner is disabled
   */
  async active(token: string): Promise<UploadLinkRow> {
    const link = await this.byToken(token);
    if (link === undefined) throw notFound();
    this.checkActive(link);
    await this.checkOwnerEnabled(link);
    return link;
  }

  /**
   * A disabled user's links take no uploads (CONTRACT §9: a disabled account gains nothing new),
   * until the user is enabled again.
   * @throws gone (410) while the link's owner is disabled
   */
  async checkOwnerEnabled(link: UploadLinkRow): Promise<void> {
    if ((await this.deps.store.users.account(link.ownerId))?.disabledAt != null) throw new AppError("gone", "this upload link does not take uploads: its owner's account is disabled");
  }

  /** @throws gone (410) when the link is deleted, expired, or has no file or byte left */
  checkActive(link: UploadLinkRow): void {
    if (link.deletedAt !== null) throw new AppError("gone", "this upload link was deleted");
    if (link.expiresAt !== null && link.expiresAt <= this.deps.clock.nowMicros()) throw new AppError("gone", "this upload link has expired");
    if (link.maxFiles !== null && link.filesUploaded >= link.maxFiles) throw new AppError("gone", `this upload link took its ${link.maxFiles} file(s)`);
    if (link.maxBytes !== null && link.bytesUploaded >= link.maxBytes) throw new AppError("gone", `this upload link took its ${link.maxBytes} bytes`);
  }

  /** Bytes one more upload through the link may hold: what is left of max_bytes, and MAX_UPLOAD_BYTES. */
  remainingBytes(link: UploadLinkRow): number {
    return link.maxBytes === null ? this.deps.maxUploadBytes : Math.min(this.deps.maxUploadBytes, link.maxBytes - link.bytesUploaded);
  }

  /**
   * Counts a file committed through the link, in the file's transaction (after the owner's
   * quota lock), counting its unfinished uploads' reservations too (CONTRACT §10).
   * @throws gone when that would pass a limit, or the link was deleted or expired meanwhile;
   *   payload_too_large when its unfinished uploads hold what is left
   */
  async consume(tx: MetadataTables, link: UploadLinkRow, bytes: number): Promise<void> {
    const now = this.deps.clock.nowMicros();
    if (!(await tx.uploadLinks.consume(link.id, bytes, now))) throw await this.refusal(tx, link, bytes, now);
  }

  /**
   * Reserves a place for a new upload of `bytes` through the link, in the transaction that
   * inserts it (CONTRACT §10): the link's received files plus its unfinished uploads must stay
   * within max_files, and their bytes plus `bytes` within max_bytes. Call it after the owner's
   * quota lock (service/quota.ts), which every writer through the link takes first.
   * @throws payload_too_large (413) naming the limit the reservations fill; gone when the link
   *   was deleted or expired meanwhile
   */
  async reserve(tx: MetadataTables, link: UploadLinkRow, bytes: number, group?: ConcatGroup): Promise<void> {
    const now = this.deps.clock.nowMicros();
    if (await tx.uploadLinks.reserve(link.id, bytes, now, group)) return;
    if (group !== undefined && (await tx.uploadLinks.reserve(link.id, bytes, now))) {
      // The part fits, the whole file does not: say so in the file's terms.
      const current = (await tx.uploadLinks.get(link.id)) ?? link;
      const others = await tx.uploads.reservedByLink(link.id, link.ownerId, now, group.id);
      const left = Math.max(0, (current.maxBytes ?? 0) - current.bytesUploaded - others.bytes);
      throw new AppError("payload_too_large", `this upload link takes at most ${left} more bytes now; this file is ${group.total}`);
    }
    throw await this.refusal(tx, link, bytes, now);
  }

  /**
   * Why the link refused one more file of `bytes` at `now`: gone (410) when it was deleted,
   * expired or used up by the files it received; payload_too_large (413) when its unfinished
   * uploads hold what is left (they may end, and give it back).
   */
  private async refusal(tx: MetadataTables, link: UploadLinkRow, bytes: number, now: number): Promise<AppError> {
    const current = await tx.uploadLinks.get(link.id);
    if (current === undefined) return new AppError("gone", "this upload link was deleted");
    try {
      this.checkActive(current);
    } catch (err) {
      return err as AppError;
    }
    const held = await tx.uploads.reservedByLink(link.id, link.ownerId, now);
    if (current.maxFiles !== null && current.filesUploaded + held.files >= current.maxFiles) {
      return new AppError("payload_too_large", `this upload link takes ${current.maxFiles} file(s): ${current.filesUploaded} received and ${held.files} unfinished upload(s) hold them`);
    }
    const left = Math.max(0, (current.maxBytes ?? 0) - current.bytesUploaded - held.bytes);
    if (held.bytes > 0) return new AppError("payload_too_large", `this upload link takes at most ${left} more bytes now (${held.bytes} are held by its unfinished uploads); this upload needs ${bytes}`);
    return new AppError("gone", "this upload link no longer takes uploads: a limit was reached, or it expired or was deleted");
  }

  /**
   * Stores a raw upload (`POST /u/{token}`) as a file of the link's owner, with the link's visibility.
   * @throws not_found, gone (see {@link active}); payload_too_large past what the link has left
   *   or MAX_UPLOAD_BYTES, QuotaExceededError (payload_too_large) past the owner's quota
   *   (CONTRACT §9: guests' files count against it); invalid_argument (checksum)
   */
  async upload(token: string, input: GuestUpload): Promise<FileRecord> {
    const link = await this.active(token);
    const remaining = this.remainingBytes(link);
    const staged = await this.deps.files.stageContent(link.ownerId, input.content, remaining, input.expectedChecksum).catch((err: unknown) => {
      if (err instanceof AppError && err.code === "payload_too_large" && !(err instanceof QuotaExceededError)) {
        throw new AppError("payload_too_large", `this upload link takes at most ${remaining} more bytes`);
      }
      throw err;
    });
    const fields = { slug: "", name: input.name, visibility: link.visibility, contentType: input.contentType, expiresAt: null, uploadLinkId: link.id };
    return this.deps.files.commitNew(link.ownerId, staged, fields, { alsoInTx: (tx, record) => this.consume(tx, link, record.size) });
  }
}
