/**
 * File use cases shared by every transport (REST, RPC): create, read, list, replace content,
 * update metadata, publish, unpublish, delete, and access to content by URL. Authorization
 * follows CONTRACT §2: a file another user may not see answers exactly like a missing one.
 */
import { AppError } from "../errors.ts";
import { markReleasable } from "../gc-pacer.ts";
import type { FileRecord, Visibility } from "../domain/file.ts";
import type { FilePage } from "../domain/file-page.ts";
import { newFileId } from "../domain/ids.ts";
import { cursorAfter, NEWEST_FIRST, type FileCursor, type FileOrder } from "../domain/file-order.ts";
import { parseExpiry, type ExpiryInput } from "../domain/expiry.ts";
import { requireScope, type Principal, type Scope } from "../domain/principal.ts";
import { isNow, settle, type Later, type NowOrLater } from "../domain/later.ts";
import type { Clock } from "../domain/time.ts";
import type { BlobChunk, BlobStore, ByteRange, MetadataStore, MetadataTables, ReadPlan, StagedBlob } from "../storage/ports.ts";
import { removeOrphans } from "./orphans.ts";
import { QuotaExceededError, type Quotas } from "./quota.ts";
import { ReadCache } from "./read-cache.ts";
import type { WebhookService } from "./webhooks.ts";
import { assertNameFree, placeInFolder } from "./folder-names.ts";
import { yieldToLoop } from "../slices.ts";

export interface FileServiceDeps {
  store: MetadataStore;
  blobs: BlobStore;
  clock: Clock;
  /** Largest content accepted, in bytes (MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
  /** Storage quotas (CONTRACT §9): every upload is charged to its owner. */
  quotas: Quotas;
  /** Webhook events (CONTRACT §13), recorded in each change's own transaction. */
  webhooks: WebhookService;
}

/** How {@link FileService.commitNew} commits. */
export interface CommitOptions {
  /** As {@link CreateFileInput.signal}. */
  signal?: AbortSignal | undefined;
  /** Runs in the file's transaction (the upload's completion, the link's counters). */
  alsoInTx?: ((tx: MetadataTables, record: FileRecord) => Promise<void>) | undefined;
  /** The content's bytes were reserved against the quota already (a resumable upload's): not charged again. */
  reserved?: boolean | undefined;
}

/** File lookups kept for the read paths (each entry is one row, well under a kilobyte). */
const CACHED_LOOKUPS = 10_000;

/** How often the server deletes expired files (CONTRACT §8 allows a minute): ms. */
export const EXPIRY_SWEEP_MS = 15_000;

/** A new file's visibility when the client names none (CONTRACT §2), on every transport. */
export const DEFAULT_VISIBILITY: Visibility = "internal";

/** Raw content of an upload: an async stream of byte chunks, or null for an empty body. */
export type Content = AsyncIterable<Uint8Array> | null;

export interface CreateFileInput {
  slug: string;
  name: string;
  /** Undefined: {@link DEFAULT_VISIBILITY}. */
  visibility: Visibility | undefined;
  contentType: string;
  /** When the file expires (Unix microseconds, in the future); absent or null: never. */
  expiresAt?: number | null | undefined;
  /** CRC32C the client declared (base64); the upload fails if the content differs. */
  expectedChecksum?: string | undefined;
  content: Content;
  /**
   * The call's cancellation: once it fires (the client's deadline passed, the call was
   * cancelled or its stream reset), nothing is committed and the upload fails with its reason.
   */
  signal?: AbortSignal | undefined;
  /**
   * One of the caller's folders to put the new file in, in the same transaction (CONTRACT §12;
   * the dashboard's upload into the folder it shows, a WebDAV PUT); absent: at the top.
   */
  folderId?: string | undefined;
}

export interface ReplaceContentInput {
  contentType: string;
  expectedChecksum?: string | undefined;
  content: Content;
  /** As {@link CreateFileInput.signal}. */
  signal?: AbortSignal | undefined;
}

/** Metadata changes; an absent field is left as it is. */
export interface FilePatch {
  slug?: string | undefined;
  name?: string | undefined;
  visibility?: Visibility | undefined;
}

/**
 * A file opened for reading its content: the metadata, and its bytes, whole from memory when
 * the blob store keeps them (`cached`), else read in chunks as a plan says.
 */
export interface FileContent {
  file: FileRecord;
  cached: Uint8Array | undefined;
  read(range: ByteRange, plan: ReadPlan): AsyncIterable<BlobChunk>;
}

const notFound = () => new AppError("not_found", "file not found");

/**
 * The file use cases over the two storage ports. Every method checks access itself (CONTRACT
 * §2) and throws AppError: not_found, permission_denied, unauthenticated, payload_too_large,
 * invalid_argument, unavailable.
 */
export class FileService {
  /** Lookups by ID for reads, valid until the next commit anywhere. */
  private readonly readable: ReadCache<FileRecord | undefined>;

  constructor(private readonly deps: FileServiceDeps) {
    this.readable = new ReadCache(deps.store, CACHED_LOOKUPS);
  }

  /**
   * Stores new content durably, then commits its metadata (CONTRACT §6), within the caller's
   * quota (CONTRACT §9).
   * @throws payload_too_large (past MAX_UPLOAD_BYTES, or QuotaExceededError past the quota),
   *   invalid_argument (checksum), unavailable (disk full)
   */
  async create(principal: Principal, input: CreateFileInput): Promise<FileRecord> {
    requireScope(principal, "files.write");
    const staged = await this.stageContent(principal.userId, input.content, this.deps.maxUploadBytes, input.expectedChecksum);
    const fields = { ...input, visibility: input.visibility ?? DEFAULT_VISIBILITY, expiresAt: input.expiresAt ?? null, uploadLinkId: null };
    const folderId = input.folderId;
    const alsoInTx = folderId === undefined ? undefined : (tx: MetadataTables, record: FileRecord) => placeInFolder(tx, record.ownerId, folderId, record, this.deps.clock.nowMicros());
    return this.commitNew(principal.userId, staged, fields, { signal: input.signal, alsoInTx });
  }

  /**
   * Commits a new file of `ownerId` over content already staged durably (a tus upload's, or a
   * guest link's upload staged with {@link stageContent}), charging its size to the owner's
   * quota unless `opts.reserved`, and running `opts.alsoInTx` in the same transaction: all of
   * it commits or nothing does, and then the staged blob is removed (CONTRACT §6).
   * `fields.uploadLinkId` is the guest link the file arrives through, or null.
   * @throws QuotaExceededError (payload_too_large); what `alsoInTx` throws; unavailable
   */
  async commitNew(
    ownerId: string,
    staged: StagedBlob,
    fields: Pick<FileRecord, "slug" | "name" | "visibility" | "contentType" | "expiresAt" | "uploadLinkId">,
    opts: CommitOptions = {},
  ): Promise<FileRecord> {
    const now = this.deps.clock.nowMicros();
    const record: FileRecord = {
      id: newFileId(),
      ownerId,
      slug: fields.slug,
      name: fields.name,
      contentType: fields.contentType,
      size: staged.size,
      checksum: staged.checksum,
      visibility: fields.visibility,
      blob: staged.name,
      createdAt: now,
      updatedAt: now,
      expiresAt: fields.expiresAt,
      uploadLinkId: fields.uploadLinkId,
    };
    await this.commitOrDiscard(staged, record.id, opts.signal, async (tx) => {
      const quota = await this.deps.quotas.lock(tx, ownerId);
      if (opts.reserved !== true) await quota.charge(record.size);
      await tx.files.insert(record);
      await opts.alsoInTx?.(tx, record);
      await this.deps.webhooks.fileChanged(tx, "file.created", record);
    });
    return record;
  }

  /**
   * Streams content into a new durable blob no row refers to yet, refusing more than `maxBytes`
   * (at most MAX_UPLOAD_BYTES) with payload_too_large, and more than `ownerId`'s quota leaves
   * room for (less `freedBytes`, a replaced file's size) with QuotaExceededError; commit it
   * with {@link commitNew}, which checks the quota again.
   */
  async stageContent(ownerId: string, content: Content, maxBytes: number, expectedChecksum?: string | undefined, freedBytes = 0): Promise<StagedBlob> {
    const limit = Math.min(maxBytes, this.deps.maxUploadBytes);
    const room = await this.deps.quotas.headroom(ownerId, freedBytes);
    try {
      return await this.deps.blobs.write(content, { maxBytes: Math.min(limit, room.bytes), expectedChecksum });
    } catch (err) {
      if (err instanceof AppError && err.code === "payload_too_large" && room.bytes < limit) throw new QuotaExceededError(room.usedBytes, room.quotaBytes!);
      throw err;
    }
  }

  /** Metadata of a file the caller may see (owner, or internal/public for any signed-in user). */
  async get(principal: Principal, id: string): Promise<FileRecord> {
    requireScope(principal, "files.read");
    const file = await this.findForRead(id);
    if (file === undefined || !canSee(principal, file)) throw notFound();
    return file;
  }

  /**
   * A live file `principal` owns, for what goes beside it (share links): as the file's own
   * changes check, `scope` (files.write unless said), then 404 when they cannot see it, 403 when they can but do not own it.
   */
  owned(principal: Principal, id: string, scope: Scope = "files.write"): Promise<FileRecord> {
    return this.ownedForWrite(this.deps.store, principal, id, scope);
  }

  /**
   * A file by ID with no access check, for a share link's holder (the share is the access);
   * undefined when it does not exist or has expired.
   */
  forShare(id: string): Promise<FileRecord | undefined> {
    return this.findForRead(id);
  }

  /**
   * A file's bytes from its blob as a new upload's content (a copy: WebDAV COPY, S3 CopyObject),
   * 256 KiB at a time, two chunks at most in memory; each chunk is copied before its buffer is
   * released (the writer may still hold it).
   */
  async *copyOf(file: FileRecord): AsyncIterable<Uint8Array> {
    for await (const chunk of this.contentOf(file).read({ start: 0, length: file.size }, { chunkBytes: 256 * 1024, buffers: 2 })) {
      // A copy: `bytes` may be a Buffer, whose slice() is a view of the pooled buffer. The copy is
      // the writer's alone: marked so that it is kept as it is and freed once written (gc-pacer.ts).
      const copy = new Uint8Array(chunk.bytes);
      chunk.release();
      markReleasable(copy);
      yield copy;
    }
  }

  /** The content handle of a file (whoever holds it was let in already). */
  contentOf(file: FileRecord): FileContent {
    const blobs = this.deps.blobs;
    return { file, cached: blobs.cached(file.blob, file.size), read: (range, plan) => blobs.read(file.blob, range, plan) };
  }

  /**
   * The expiry a request asks for, `expire_time` or `ttl` (CONTRACT §8), against this service's clock.
   * @returns Unix microseconds, null for "never" (`""`, only with `allowClear`), undefined when neither was given
   * @throws invalid_argument (domain/expiry.ts parseExpiry)
   */
  expiryFrom(input: ExpiryInput, opts: { allowClear?: boolean } = {}): number | null | undefined {
    return parseExpiry(input, this.deps.clock.nowMicros(), opts);
  }

  /**
   * When a file the caller may see expires (Unix microseconds), or null for never.
   * @throws not_found as {@link get}
   */
  async expiry(principal: Principal, id: string): Promise<number | null> {
    return (await this.get(principal, id)).expiresAt;
  }

  /**
   * Sets (a future time, Unix microseconds) or clears (null) when a file expires; owner only.
   * The File object does not show expiry, so `updated_at` stays.
   * @throws invalid_argument for a time not in the future; not_found, permission_denied
   */
  setExpiry(principal: Principal, id: string, expiresAt: number | null): Promise<number | null> {
    requireScope(principal, "files.write");
    if (expiresAt !== null && expiresAt <= this.deps.clock.nowMicros()) throw new AppError("invalid_argument", "expire_time must be in the future");
    return this.deps.store.transaction(async (tx) => {
      const file = await this.ownedForWrite(tx, principal, id);
      if (file.expiresAt !== expiresAt) await tx.files.update({ ...file, expiresAt });
      return expiresAt;
    });
  }

  /**
   * Deletes, as DELETE does, up to `limit` files whose expiry has passed (CONTRACT §8: within a
   * minute of it; the server runs this every {@link EXPIRY_SWEEP_MS}). Safe on several
   * instances at once: each row goes in its own transaction, only if it still refers to the
   * same blob and is still due.
   * @returns how many were deleted
   */
  async deleteExpired(limit = 1000): Promise<number> {
    const now = this.deps.clock.nowMicros();
    let deleted = 0;
    for (const due of await this.deps.store.files.dueToExpire(now, limit)) {
      const gone = await this.deps.store.transaction(async (tx) => {
        const file = await tx.files.get(due.id);
        if (file === undefined || file.expiresAt === null || file.expiresAt > now) return false;
        if (!(await tx.files.delete(file.id, file.blob))) return false;
        await this.deps.webhooks.fileDeleted(tx, file, "expired");
        return file.blob;
      });
      if (gone !== false) {
        this.deps.blobs.removeLater(gone);
        deleted++;
      }
    }
    return deleted;
  }

  /**
   * The caller's own files in `order` (default newest first; CONTRACT §15 order_by), `pageSize`
   * at a time (keyset pagination); with `nameContains` (not empty), only those whose name
   * contains it: ASCII letters in either case, every other character (`%` and `_` too) as itself
   * (storage/paging.ts containsPattern).
   */
  async list(principal: Principal, pageSize: number, after: FileCursor | undefined, nameContains = "", order: FileOrder = NEWEST_FIRST): Promise<FilePage> {
    requireScope(principal, "files.read");
    return pageOf(await readInChunks(pageSize + 1, after, (limit, from) => this.deps.store.files.listByOwner(principal.userId, limit, from, nameContains, order)), pageSize);
  }


  /**
   * Replaces a file's content entirely; ID and URL stay. The new blob is written under a new
   * name; the old one is removed only after the commit, so readers see old or new, never a mix.
   */
  async replaceContent(principal: Principal, id: string, input: ReplaceContentInput): Promise<FileRecord> {
    // Refuse before reading the body when the caller may not write.
    const before = await this.ownedForWrite(this.deps.store, principal, id);
    const staged = await this.stageContent(principal.userId, input.content, this.deps.maxUploadBytes, input.expectedChecksum, before.size);
    let updated!: FileRecord;
    let oldBlob = "";
    await this.commitOrDiscard(staged, id, input.signal, async (tx) => {
      // The owner's row first, then the file's: every transaction locks in that order.
      const quota = await this.deps.quotas.lock(tx, principal.userId);
      const file = await this.ownedForWrite(tx, principal, id);
      await quota.charge(staged.size - file.size);
      oldBlob = file.blob;
      updated = {
        ...file,
        contentType: input.contentType,
        size: staged.size,
        checksum: staged.checksum,
        blob: staged.name,
        updatedAt: this.nextUpdate(file),
      };
      await tx.files.update(updated);
      await this.deps.webhooks.fileChanged(tx, "file.updated", updated);
    });
    this.deps.blobs.removeLater(oldBlob);
    return updated;
  }

  /**
   * Stores content under a name in one of the caller's folders (null: the top), as a WebDAV
   * PUT to a path does (CONTRACT §12): the content is staged durably first, then, in one
   * transaction with the owner's row locked, it replaces the content of the one live file of
   * that name there (ID and URL kept), or becomes a new file there when there is none (or, at
   * the top, several). Two such PUTs racing for one new name, from any processes, therefore
   * make one file, whose content is the later commit's.
   * @returns the file and whether it was created
   * @throws what {@link create} and {@link replaceContent} throw; not_found (folder)
   */
  async putNamed(principal: Principal, folderId: string | null, name: string, input: ReplaceContentInput): Promise<{ file: FileRecord; created: boolean }> {
    requireScope(principal, "files.write");
    const staged = await this.stageContent(principal.userId, input.content, this.deps.maxUploadBytes, input.expectedChecksum);
    return this.commitNamed(principal, folderId, name, input.contentType, staged, { signal: input.signal });
  }

  /**
   * {@link putNamed} of content staged already (an S3 multipart upload's parts joined, CONTRACT
   * §16): the same transaction, with `alsoInTx` run in it before the quota is charged (so parts
   * that reserved the bytes give their reservation back first). The staged blob is discarded on
   * failure.
   * @throws as {@link putNamed}
   */
  async commitNamed(
    principal: Principal,
    folderId: string | null,
    name: string,
    contentType: string,
    staged: StagedBlob,
    opts: { signal?: AbortSignal | undefined; alsoInTx?: (tx: MetadataTables, file: FileRecord) => Promise<void> } = {},
  ): Promise<{ file: FileRecord; created: boolean }> {
    requireScope(principal, "files.write");
    const ownerId = principal.userId;
    const input = { contentType, signal: opts.signal };
    const now = this.deps.clock.nowMicros();
    const fresh: FileRecord = {
      id: newFileId(),
      ownerId,
      slug: "",
      name,
      contentType: input.contentType,
      size: staged.size,
      checksum: staged.checksum,
      visibility: DEFAULT_VISIBILITY,
      blob: staged.name,
      createdAt: now,
      updatedAt: now,
      expiresAt: null,
      uploadLinkId: null,
    };
    let result: { file: FileRecord; created: boolean } = { file: fresh, created: true };
    let oldBlob: string | undefined;
    await this.commitOrDiscard(staged, () => result.file.id, input.signal, async (tx) => {
      const quota = await this.deps.quotas.lock(tx, ownerId);
      if (folderId !== null) {
        const folder = await tx.folders.get(folderId);
        if (folder === undefined || folder.ownerId !== ownerId) throw new AppError("not_found", "folder not found");
      }
      const named = (await tx.folders.filesNamed(ownerId, folderId, name)).filter((f) => !isExpired(f, this.deps.clock));
      if (name !== "" && named.length === 1) {
        const file = named[0]!;
        oldBlob = file.blob;
        const updated: FileRecord = { ...file, contentType: input.contentType, size: staged.size, checksum: staged.checksum, blob: staged.name, updatedAt: this.nextUpdate(file) };
        await opts.alsoInTx?.(tx, updated);
        await quota.charge(staged.size - file.size);
        await tx.files.update(updated);
        await this.deps.webhooks.fileChanged(tx, "file.updated", updated);
        result = { file: updated, created: false };
        return;
      }
      result = { file: fresh, created: true };
      await opts.alsoInTx?.(tx, fresh);
      await quota.charge(fresh.size);
      await tx.files.insert(fresh);
      if (folderId !== null) await placeInFolder(tx, ownerId, folderId, fresh, this.deps.clock.nowMicros());
      await this.deps.webhooks.fileChanged(tx, "file.created", fresh);
    });
    if (oldBlob !== undefined) this.deps.blobs.removeLater(oldBlob);
    return result;
  }

  /**
   * Moves one of the caller's files onto another of theirs (WebDAV MOVE with Overwrite: a save
   * through a temporary file): `targetId` keeps its ID, URL, name and folder and takes the
   * source's content and media type; the source's row goes. One transaction, so a failure
   * changes nothing; the target's old blob is removed after the commit.
   * @throws not_found, permission_denied (either file); invalid_argument (the same file)
   */
  async moveOnto(principal: Principal, sourceId: string, targetId: string): Promise<FileRecord> {
    if (sourceId === targetId) throw new AppError("invalid_argument", "a file cannot be moved onto itself");
    let oldBlob = "";
    const updated = await this.deps.store.transaction(async (tx) => {
      await this.deps.quotas.lock(tx, principal.userId);
      const source = await this.ownedForWrite(tx, principal, sourceId);
      const target = await this.ownedForWrite(tx, principal, targetId);
      // The source's row goes first: a blob is referred to by one row at a time.
      await tx.files.delete(source.id, source.blob);
      await this.deps.webhooks.fileDeleted(tx, source, "deleted");
      oldBlob = target.blob;
      const next: FileRecord = { ...target, contentType: source.contentType, size: source.size, checksum: source.checksum, blob: source.blob, updatedAt: this.nextUpdate(target) };
      await tx.files.update(next);
      await this.deps.webhooks.fileChanged(tx, "file.updated", next);
      return next;
    });
    this.deps.blobs.removeLater(oldBlob);
    return updated;
  }

  /**
   * Sets or clears slug and name, or changes visibility. Fields left undefined are kept.
   * Needs files.read as well as files.write (CONTRACT §10): the answer is the File, and a
   * visibility change may expose it; a write-only key creates and replaces, never reads back.
   * @throws permission_denied without either scope; not_found; invalid_argument
   */
  async update(principal: Principal, id: string, patch: FilePatch): Promise<FileRecord> {
    requireScope(principal, "files.write");
    requireScope(principal, "files.read");
    return this.deps.store.transaction(async (tx) => {
      // A new name is checked against its folder's under the owner's row (service/folders.ts),
      // locked before the file's row, as every transaction locks them; only the owner renames.
      if (patch.name !== undefined) await tx.users.account(principal.userId);
      const file = await this.ownedForWrite(tx, principal, id);
      const next: FileRecord = {
        ...file,
        slug: patch.slug ?? file.slug,
        name: patch.name ?? file.name,
        visibility: patch.visibility ?? file.visibility,
      };
      if (next.slug === file.slug && next.name === file.name && next.visibility === file.visibility) return file;
      if (next.name !== file.name) {
        // Names are unique within a folder (CONTRACT §12): the owner's row is locked above.
        const folderId = await tx.folders.folderOf(file.id);
        if (folderId !== undefined) await assertNameFree(tx, file.ownerId, folderId, next.name, { fileId: file.id }, this.deps.clock.nowMicros());
      }
      next.updatedAt = this.nextUpdate(file);
      await tx.files.update(next);
      return next;
    });
  }

  /** Makes a file public. @returns the file as it is now */
  publish(principal: Principal, id: string): Promise<FileRecord> {
    return this.update(principal, id, { visibility: "public" });
  }

  /** Undoes publish: visibility becomes `internal`, the create default (CONTRACT §2). @returns the file as it is now */
  unpublish(principal: Principal, id: string): Promise<FileRecord> {
    return this.update(principal, id, { visibility: DEFAULT_VISIBILITY });
  }

  /** Deletes a file (owner only); its blob is removed after the commit. */
  async delete(principal: Principal, id: string): Promise<void> {
    const blob = await this.deps.store.transaction(async (tx) => {
      // The owner's row first (only the owner deletes), so that a delete and a change that
      // looked the file up by name under that lock (putNamed, a folder's) apply one after the other.
      await tx.users.account(principal.userId);
      const file = await this.ownedForWrite(tx, principal, id);
      if (await tx.files.delete(id, file.blob)) await this.deps.webhooks.fileDeleted(tx, file, "deleted");
      return file.blob;
    });
    this.deps.blobs.removeLater(blob);
  }

  /**
   * A file as served at its URL (CONTRACT §3), with its content: public to anyone, internal to
   * any signed-in user, private to its owner. `principalOf` is asked only for files that are
   * not public, so serving a public file never looks at credentials, and at most once.
   *
   * Decided now ({@link NowOrLater}, domain/later.ts; no I/O) when the file's row is in the
   * read cache and current, it has not expired, and it is public or `principalOf` gives now a
   * principal who may open it. Anything else is the rest to run, which looks the row up (again)
   * and gives the answer or the error; a principal `principalOf` gave now is kept for it, a rest
   * it gave is run only then.
   * @throws (the rest rejects) not_found when there is no such file, or the signed-in caller may
   *   not see it; unauthenticated when an anonymous caller may not see it; permission_denied
   *   without files.read; what `principalOf` throws
   */
  openContent(principalOf: () => NowOrLater<Principal | null>, id: string): NowOrLater<FileContent> {
    const file = this.readable.peek(id)?.value;
    if (file === undefined || isExpired(file, this.deps.clock)) return this.openLater(principalOf, id, undefined);
    if (file.visibility === "public") return this.contentOf(file);
    const principal = principalOf();
    if (principal !== null && isNow(principal) && canSee(principal, file) && principal.scopes.has("files.read")) return this.contentOf(file);
    return this.openLater(principalOf, id, principal);
  }

  /**
   * The rest of {@link openContent}; a method of its own, so that a request decided now
   * allocates no scope for it. `asked`: what `principalOf` gave already, if it was asked.
   */
  private openLater(principalOf: () => NowOrLater<Principal | null>, id: string, asked: NowOrLater<Principal | null> | undefined): Later<FileContent> {
    return () => this.open(principalOf, id, asked);
  }

  private async open(principalOf: () => NowOrLater<Principal | null>, id: string, asked: NowOrLater<Principal | null> | undefined): Promise<FileContent> {
    const file = await this.findForRead(id);
    if (file === undefined) throw notFound();
    if (file.visibility !== "public") {
      const principal = await settle(asked === undefined ? principalOf() : asked);
      if (principal === null) throw new AppError("unauthenticated", "sign in to open this file");
      if (!canSee(principal, file)) throw notFound();
      requireScope(principal, "files.read");
    }
    return this.contentOf(file);
  }

  /**
   * The sweep (at start, and periodically on a shared store): removes uploads a crash left
   * unfinished and blobs no row refers to (left by a crash between the blob's write and the
   * commit, or between a commit and the removal), except those younger than the blob store's
   * `orphanGraceMs`, which may be another process's upload about to commit.
   */
  async sweep(): Promise<{ unfinished: number; orphans: number }> {
    const unfinished = await this.deps.blobs.sweepUnfinished();
    const removed = await removeOrphans(this.deps.store, this.deps.blobs, this.deps.blobs.orphanGraceMs);
    return { unfinished, orphans: removed.length };
  }

  /**
   * The row for a read, from the cache while nothing has committed since it was read; a file
   * past its expiry is gone already, before the sweep deletes it.
   */
  private async findForRead(id: string): Promise<FileRecord | undefined> {
    const file = await this.readable.get(id, () => this.deps.store.files.get(id));
    return file === undefined || isExpired(file, this.deps.clock) ? undefined : file;
  }

  /**
   * A live file `principal` owns as `tables` see it (inside a transaction, its tables), for a
   * change beside the file (moving it between folders): as {@link owned}.
   */
  ownedIn(tables: MetadataTables, principal: Principal, id: string, scope: Scope = "files.write"): Promise<FileRecord> {
    return this.ownedForWrite(tables, principal, id, scope);
  }

  /** The file if `principal` owns it; 404 when they cannot see it, 403 when they can but do not own it. */
  private async ownedForWrite(tables: MetadataTables, principal: Principal, id: string, scope: Scope = "files.write"): Promise<FileRecord> {
    requireScope(principal, scope);
    const file = await tables.files.get(id);
    if (file === undefined || isExpired(file, this.deps.clock) || !canSee(principal, file)) throw notFound();
    if (file.ownerId !== principal.userId) {
      throw new AppError("permission_denied", "only the file's owner can change it");
    }
    return file;
  }

  /** A new updated_at that is later than the previous one even if the clock stepped back. */
  private nextUpdate(file: FileRecord): number {
    return Math.max(this.deps.clock.nowMicros(), file.updatedAt + 1);
  }

  /**
   * Runs the metadata commit, unless `signal` has fired; if it fired or the commit fails, the
   * staged blob is removed so nothing is orphaned, unless the file's row (by `id`, or the ID
   * `id()` gives once the commit has chosen its file) refers to it.
   */
  private async commitOrDiscard(staged: StagedBlob, id: string | (() => string), signal: AbortSignal | undefined, commit: (tx: MetadataTables) => Promise<void>): Promise<void> {
    try {
      signal?.throwIfAborted();
      await this.deps.store.transaction(commit);
    } catch (err) {
      // A COMMIT whose answer was lost (the database connection dropped) may still have been
      // applied: the blob goes only once the row is seen not to refer to it. If that cannot be
      // known either, it stays, and the sweep removes it once it is surely unreferenced.
      const row = await this.deps.store.files.get(typeof id === "string" ? id : id()).catch(() => null);
      if (row !== null && row?.blob !== staged.name) await this.deps.blobs.remove(staged.name).catch(() => {});
      throw err;
    }
  }
}

/**
 * Rows of a page read by `read` (up to `limit` rows after a cursor, in the listing's order) at
 * most {@link LIST_CHUNK} a query, a turn of the event loop between queries: a page of 1 000 read
 * at once held a serving process for 110–160 ms here (CONTRACT §14). Each query goes on from the
 * last row of the one before (keyset), as the next page would.
 * @returns up to `want` rows in order
 */
export async function readInChunks(want: number, after: FileCursor | undefined, read: (limit: number, after: FileCursor | undefined) => Promise<FileRecord[]>): Promise<FileRecord[]> {
  const rows: FileRecord[] = [];
  for (let from = after; ; ) {
    const asked = Math.min(LIST_CHUNK, want - rows.length);
    const chunk = await read(asked, from);
    rows.push(...chunk);
    if (chunk.length < asked || rows.length >= want) return rows;
    from = cursorAfter(chunk[chunk.length - 1]!);
    await yieldToLoop();
  }
}

/** Rows one listing query reads at most ({@link readInChunks}). */
export const LIST_CHUNK = 250;

/**
 * A page of a listing from up to `pageSize + 1` rows read in its order: the first `pageSize`,
 * and where the next page starts when there was one row more.
 */
export function pageOf(rows: FileRecord[], pageSize: number): FilePage {
  const more = rows.length > pageSize;
  const files = more ? rows.slice(0, pageSize) : rows;
  const last = files[files.length - 1];
  return { files, next: more && last !== undefined ? cursorAfter(last) : undefined };
}

/** Whether a file's expiry (CONTRACT §8) has passed by `clock` (read only for a file that expires). */
function isExpired(file: FileRecord, clock: Clock): boolean {
  return file.expiresAt !== null && file.expiresAt <= clock.nowMicros();
}

/** The metadata read rule: owners see their files; other signed-in users see internal and public ones. */
function canSee(principal: Principal, file: FileRecord): boolean {
  return file.ownerId === principal.userId || file.visibility !== "private";
}
