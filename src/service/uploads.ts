/**
 * Resumable uploads (tus 1.0.0, CONTRACT §8): create, report the offset, append a chunk, finish
 * into a file, terminate, and sweep expired ones. The upload row's offset is authoritative: a
 * chunk is written durably at that offset first (storage/upload-ports.ts), and only then does a
 * conditional update move the offset past it. The last chunk is not counted separately: the file
 * is staged from the stored bytes and one transaction inserts its row, marks the upload complete
 * (at the offset the chunk started at) and, through a guest link, moves the link's counters.
 *
 * Concatenation (tus extension): a partial upload (`Upload-Concat: partial`) reserves its
 * length like any upload but never becomes a file by itself; a final upload names finished
 * partials, and one transaction commits the file of their bytes in order, marks each partial
 * consumed (its file_id), inserts the final's row complete and, through a guest link, counts
 * one file of the total. So the quota and a link's limits count the bytes once and the file once.
 */
import { crc32cCombine } from "../domain/checksum.ts";
import type { FileRecord, Visibility } from "../domain/file.ts";
import { parseExpiry } from "../domain/expiry.ts";
import { parseName, parseSlug, parseVisibility, uploadMediaType, pageFrom, type PageCursor } from "../domain/params.ts";
import { requireScope, type Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import { formatUploadConcat, type UploadChecksum } from "../domain/tus.ts";
import { newUploadId, type UploadLinkRow } from "../domain/upload-link.ts";
import { AppError } from "../errors.ts";
import type { BlobStore, MetadataStore } from "../storage/ports.ts";
import type { UploadLock, UploadLocks } from "../storage/upload-locks.ts";
import type { ConcatGroup, UploadRow } from "../storage/upload-ports.ts";
import { DEFAULT_VISIBILITY, type Content, type FileService } from "./files.ts";
import type { Quotas } from "./quota.ts";
import type { UploadLinkService } from "./upload-links.ts";
import { logError } from "../log.ts";

/** Who is uploading: a signed-in user (with files.write), or anyone holding a guest link's token. */
export type Uploader = { principal: Principal } | { link: UploadLinkRow };

/** An upload's state as the tus headers report it. */
export interface UploadState {
  id: string;
  offset: number;
  length: number;
  /** Unix microseconds (Upload-Expires). */
  expiresAt: number;
  /** The decoded Upload-Metadata the client sent. */
  metadata: Record<string, string>;
  /** The file it became (Cubby-File-Id), once complete; for a partial upload, the final's. */
  fileId: string | null;
  /** Upload-Concat: null, `partial`, or `final;<partial uploads' paths>`. */
  concat: string | null;
}

export interface NewUpload {
  /** Upload-Length, bytes. */
  length: number;
  /** Decoded Upload-Metadata. */
  metadata: Record<string, string>;
  /** creation-with-upload: the first chunk, or null for none. */
  content: Content;
  checksum?: UploadChecksum | undefined;
  /** A partial upload (tus concatenation): never a file by itself; its Upload-Metadata is kept but unused. */
  partial?: boolean;
  /** An owner's partial's group (an S3 multipart upload, s3/multipart.ts); a guest's comes from its Upload-Metadata. */
  group?: string | undefined;
}

export interface UploadServiceDeps {
  store: MetadataStore;
  blobs: BlobStore;
  clock: Clock;
  files: FileService;
  links: UploadLinkService;
  /** Upload-Length is reserved against the owner's quota at creation (CONTRACT §9). */
  quotas: Quotas;
  maxUploadBytes: number;
  /** How long an unfinished upload lives, microseconds (24 h; TUS_UPLOAD_EXPIRY_SECONDS). */
  expiryMicros: number;
  /**
   * How long a guest's partial upload waits to be concatenated, microseconds: {@link GUEST_PART_MICROS}
   * (shorter in tests only: CUBBY_TEST_GUEST_PART_MS); at most {@link expiryMicros} counts.
   */
  guestPartMicros: number;
  /** One writer per upload across every process and instance (storage/upload-locks.ts). */
  locks: UploadLocks;
}

/** An unfinished upload as `GET /v1/uploads` lists it (CONTRACT §10). */
export interface UnfinishedUpload extends UploadState {
  /** The guest upload link it comes through, or null for the owner's own. */
  uploadLinkId: string | null;
  /** Unix microseconds. */
  createdAt: number;
}

/** What the file of a finished upload gets from its Upload-Metadata, parsed at creation. */
interface FileFields {
  slug: string;
  name: string;
  contentType: string;
  visibility: Visibility;
  expiresAt: number | null;
  /** The guest link it comes through, or null. */
  uploadLinkId: string | null;
}

const notFound = () => new AppError("not_found", "upload not found");
/** How long a guest's partial upload waits to be concatenated (CONTRACT §15): an hour. */
export const GUEST_PART_MICROS = 3600 * 1_000_000;

/**
 * The concatenation a guest's partial upload belongs to, from its Upload-Metadata: `group` (1-64
 * of `A-Z a-z 0-9 _ -`, chosen by the client for one file) and `total` (the whole file's bytes,
 * at least this part's). Both or neither; undefined when neither is given (the part is then
 * checked by itself).
 * @throws AppError invalid_argument naming the bad field
 */
function concatGroupOf(metadata: Record<string, string>, length: number): ConcatGroup | undefined {
  const { group, total } = metadata;
  if (group === undefined && total === undefined) return undefined;
  if (group === undefined || !/^[A-Za-z0-9_-]{1,64}$/.test(group)) throw new AppError("invalid_argument", "Upload-Metadata group: 1 to 64 of A-Z a-z 0-9 _ -, with total");
  if (total === undefined || !/^\d{1,16}$/.test(total) || !Number.isSafeInteger(Number(total)) || Number(total) < length) {
    throw new AppError("invalid_argument", "Upload-Metadata total: the whole file's bytes (at least this part's Upload-Length), with group");
  }
  return { id: group, total: Number(total) };
}
/** Expired rows handled per sweep query. */
const SWEEP_BATCH = 100;

/** The tus use cases (see the module comment). Errors are AppErrors. */
export class UploadService {
  /** Uploads a request of this process is writing: a second writer gets 409 (tus clients retry it). */
  private readonly writing = new Set<string>();

  constructor(private readonly deps: UploadServiceDeps) {}

  /**
   * Creates an upload (tus creation), with its first chunk when `content` is given
   * (creation-with-upload); an upload of length 0 is complete at once.
   * @throws permission_denied without files.write; payload_too_large past MAX_UPLOAD_BYTES or
   *   what a guest link has left (its received files and its unfinished uploads' reservations
   *   counted: CONTRACT §10), QuotaExceededError (payload_too_large) when Upload-Length does
   *   not fit in the owner's quota (reserved here, before any byte is sent); gone for a link that no longer takes uploads; invalid_argument
   *   for bad metadata; what {@link append} throws for the first chunk
   */
  async create(uploader: Uploader, input: NewUpload): Promise<UploadState> {
    const { ownerId, link } = this.check(uploader);
    if (link !== undefined) await this.deps.links.checkOwnerEnabled(link);
    const partial = input.partial === true;
    // A guest's part of a concatenation may say which file it is part of and that file's size
    // (Upload-Metadata `group` and `total`): the whole is then refused at its first part.
    const group = partial && link !== undefined ? concatGroupOf(input.metadata, input.length) : undefined;
    const limit = link === undefined ? this.deps.maxUploadBytes : this.deps.links.remainingBytes(link);
    if (Math.max(input.length, group?.total ?? 0) > limit) {
      if (link === undefined) throw new AppError("payload_too_large", `Upload-Length is over the limit of ${limit} bytes`);
      throw new AppError("payload_too_large", `this upload link takes at most ${limit} more bytes; this ${group === undefined ? "upload" : "file"} is ${group?.total ?? input.length}`);
    }
    const now = this.deps.clock.nowMicros();
    if (!partial) fieldsOf(input.metadata, link, now);
    const row: UploadRow = {
      id: newUploadId(),
      ownerId,
      uploadLinkId: link?.id ?? null,
      length: input.length,
      offset: 0,
      metadata: JSON.stringify(input.metadata),
      fileId: null,
      concat: partial ? formatUploadConcat({ kind: "partial" }) : null,
      concatGroup: group?.id ?? (partial && link === undefined ? (input.group ?? null) : null),
      crc32c: 0,
      createdAt: now,
      // A guest's parts not concatenated within the hour end and give their reservation back
      // (CONTRACT §15), so an abandoned upload cannot hold a link for a day.
      expiresAt: now + (partial && link !== undefined ? Math.min(this.deps.expiryMicros, this.deps.guestPartMicros) : this.deps.expiryMicros),
    };
    // The whole Upload-Length is reserved against the owner's quota now, atomically (quota.ts),
    // and, through a guest link, a file and the Upload-Length against the link's limits
    // (CONTRACT §10), after the owner's lock, which every writer through the link takes first.
    await this.deps.store.transaction(async (tx) => {
      await (await this.deps.quotas.lock(tx, ownerId)).charge(input.length);
      if (link !== undefined) await this.deps.links.reserve(tx, link, input.length, group);
      await tx.uploads.insert(row);
    });
    if (input.length === 0) return partial ? stateOf(row) : this.locked(row.id, () => this.finish(row, link));
    if (input.content === null) return stateOf(row);
    return this.append(uploader, row.id, 0, input.content, input.checksum);
  }

  /**
   * The upload's state (tus HEAD).
   * @throws not_found when there is none the uploader may see; gone once expired
   */
  async status(uploader: Uploader, id: string): Promise<UploadState> {
    this.check(uploader);
    return stateOf(await this.owned(uploader, id));
  }

  /**
   * Appends a chunk at `offset` (tus PATCH). When it holds the last byte, the upload becomes a
   * file (CONTRACT §6: staged durably, committed in one transaction).
   * @throws aborted (409) when `offset` is not the upload's (or another request is writing it);
   *   checksum_mismatch (460), payload_too_large past Upload-Length: the chunk is discarded;
   *   gone when expired, or its guest link stopped taking uploads; not_found
   */
  async append(uploader: Uploader, id: string, offset: number, content: Content, checksum: UploadChecksum | undefined): Promise<UploadState> {
    await this.checkOrEnd(uploader, id);
    return this.locked(id, async (lock) => {
      const row = await this.owned(uploader, id);
      if (isFinal(row)) throw new AppError("permission_denied", "a final upload (Upload-Concat: final) takes no PATCH: its bytes are its partial uploads'");
      if (row.fileId !== null && offset === row.length) return stateOf(row);
      if (row.fileId !== null || offset !== row.offset) {
        throw new AppError("aborted", `Upload-Offset ${offset} is not the upload's offset ${row.offset}; ask with HEAD and resume from there`);
      }
      const link = row.uploadLinkId === null ? undefined : await this.linkOf(row);
      try {
        const partials = this.deps.blobs.partials;
        const written = await partials.append(id, offset, content, { maxBytes: row.length - offset, checksum });
        const to = offset + written.bytes;
        // The CRC32C up to the chunk's end, carried from the row's; unknown for a row from before
        // it was carried (the finished upload is then read back once).
        const crc = row.crc32c === null || written.crc32c === undefined ? undefined : crc32cCombine(row.crc32c, written.crc32c, written.bytes);
        // Fencing: what another writer may have done once the lock was lost is not committed over.
        if (written.bytes > 0 && !(await lock.held())) throw new AppError("aborted", "this request lost the upload's lock while it wrote; ask with HEAD and resume from there");
        let state: UploadState;
        if (to === row.length && !isPartial(row)) state = await this.finish(row, link, crc);
        else {
          if (written.bytes > 0 && !(await this.deps.store.uploads.advance(id, offset, to, crc ?? null))) throw moved();
          state = stateOf({ ...row, offset: to });
        }
        if (written.cutShort !== undefined) throw written.cutShort;
        return state;
      } catch (err) {
        if (await this.endedMeanwhile(id)) throw new AppError("gone", "the upload was ended while this request was writing it", { cause: err });
        throw err;
      }
    });
  }

  /**
   * Creates a final upload (tus concatenation, `Upload-Concat: final;…`) of finished partial
   * uploads, in order, and the file of their bytes at once (CONTRACT §6: staged durably, then one
   * transaction). The file's fields come from the final's Upload-Metadata; the partials
   * reserved the bytes against the owner's quota and the link's max_bytes, and the file is
   * counted once (one file of the total through a guest link). The partials are consumed
   * (HEAD then reports the final's file) and their bytes removed. Nothing changes on failure.
   * The same final again (same partials, same order) answers the first one's state: a client
   * that lost the answer and resumes gets its file, not an error.
   * @throws not_found for a partial the uploader may not see (another user's, another link's);
   *   gone once one expired; invalid_argument for an upload that is not a partial, an
   *   unfinished partial, one consumed already, or the owner naming their link's partials;
   *   aborted (409) while a request writes one; payload_too_large past MAX_UPLOAD_BYTES; what
   *   commitNew and the link's consume throw
   */
  async concatenate(uploader: Uploader, uploadIds: readonly string[], metadata: Record<string, string>): Promise<UploadState> {
    const { ownerId, link } = this.check(uploader);
    if (link !== undefined) await this.deps.links.checkOwnerEnabled(link);
    const now = this.deps.clock.nowMicros();
    const fields = fieldsOf(metadata, link, now);
    if (new Set(uploadIds).size !== uploadIds.length || uploadIds.length === 0) throw new AppError("invalid_argument", "Upload-Concat: name each partial upload once");
    const concat = formatUploadConcat({ kind: "final", uploadIds: [...uploadIds] });
    return this.lockedAll(uploadIds, async () => {
      const parts: UploadRow[] = [];
      for (const [i, id] of uploadIds.entries()) {
        const row = await this.owned(uploader, id);
        if (!isPartial(row)) throw new AppError("invalid_argument", `upload ${id} is not a partial upload (create it with Upload-Concat: partial)`);
        if (row.fileId !== null) {
          // The same final again (its answer was lost, and the client resumed): the same answer.
          const again = i === 0 ? await this.deps.store.uploads.finalOf(ownerId, row.fileId, concat) : undefined;
          if (again !== undefined && (again.uploadLinkId ?? null) === (link?.id ?? null)) return stateOf(again);
          throw new AppError("invalid_argument", `partial upload ${id} is part of a final upload already`);
        }
        if (row.offset < row.length) throw new AppError("invalid_argument", `partial upload ${id} is unfinished (${row.offset} of ${row.length} bytes): finish it first`);
        if (row.uploadLinkId !== (link?.id ?? null)) throw new AppError("invalid_argument", `partial upload ${id} came through a guest upload link: only that link's final upload takes it`);
        parts.push(row);
      }
      const length = parts.reduce((n, p) => n + p.length, 0);
      if (length > this.deps.maxUploadBytes) throw new AppError("payload_too_large", `the partial uploads hold ${length} bytes, over the limit of ${this.deps.maxUploadBytes}`);
      const { files, blobs } = this.deps;
      const staged = length === 0 ? await files.stageContent(ownerId, null, 0) : await blobs.partials.concat(parts.map((p) => ({ id: p.id, length: p.length, crc32c: p.crc32c === null ? undefined : p.crc32c >>> 0 })));
      const final: UploadRow = {
        id: newUploadId(),
        ownerId,
        uploadLinkId: link?.id ?? null,
        length,
        offset: length,
        metadata: JSON.stringify(metadata),
        fileId: null,
        concat,
        concatGroup: null,
        crc32c: null,
        createdAt: now,
        expiresAt: now + this.deps.expiryMicros,
      };
      const file = await files.commitNew(ownerId, staged, fields, {
        // The partials' reservations hold the bytes until one expires (as for a last PATCH).
        reserved: parts.every((p) => p.expiresAt > this.deps.clock.nowMicros()),
        alsoInTx: async (tx, record) => {
          for (const p of parts) if (!(await tx.uploads.complete(p.id, p.length, record.id))) throw moved();
          await tx.uploads.insert({ ...final, fileId: record.id });
          if (link !== undefined) await this.deps.links.consume(tx, link, record.size);
        },
      });
      for (const p of parts) await blobs.partials.remove(p.id).catch((err: unknown) => logError(`upload ${p.id}: removing its partial bytes failed (the sweep will): ${err}`));
      return stateOf({ ...final, fileId: file.id });
    });
  }

  /**
   * Terminates an upload (tus termination; `DELETE /v1/uploads/{id}`, CONTRACT §10): its row
   * (and so what it reserved of the owner's quota and its link's limits) and partial bytes are
   * removed; a file it already became stays. The owner may end their links' uploads too.
   * @throws not_found; aborted (409) while a request writes it: ending does not wait for a
   *   body of unbounded length, and tus clients retry 409; gone through a link that was deleted
   *   or expired (the upload ends with it)
   */
  async terminate(uploader: Uploader, id: string): Promise<void> {
    await this.checkOrEnd(uploader, id);
    await this.locked(id, async () => {
      const row = await this.owned(uploader, id, { expiredToo: true });
      await this.end(row.id);
    });
  }

  /**
   * The unfinished uploads landing in the caller's account, their own and those made through
   * their guest links (CONTRACT §10: `GET /v1/uploads`), newest first, `pageSize` at a time.
   * @returns the page's rows, and where the next page starts (undefined on the last)
   * @throws permission_denied without files.read
   */
  async list(principal: Principal, pageSize: number, after: PageCursor | undefined): Promise<{ uploads: UnfinishedUpload[]; next: PageCursor | undefined }> {
    requireScope(principal, "files.read");
    const page = pageFrom(await this.deps.store.uploads.unfinishedByOwner(principal.userId, this.deps.clock.nowMicros(), pageSize + 1, after), pageSize);
    return { uploads: page.items.map((r) => ({ ...stateOf(r), uploadLinkId: r.uploadLinkId, createdAt: r.createdAt })), next: page.next };
  }

  /**
   * Deletes one of the caller's guest links (UploadLinkService.delete) and ends its unfinished
   * uploads (CONTRACT §10), releasing what they reserved against the owner's quota and removing
   * their partial bytes. An upload a request is writing at that moment is left to that request,
   * which is refused at its next step, and to the sweep (within a minute).
   * @throws what UploadLinkService.delete throws
   */
  async deleteLink(principal: Principal, id: string): Promise<void> {
    await this.deps.links.delete(principal, id);
    await this.endUploadsOfLink(id);
  }

  /**
   * Ends link `linkId`'s unfinished uploads that no request is writing (rows, then bytes).
   * @returns how many ended
   */
  async endUploadsOfLink(linkId: string): Promise<number> {
    let ended = 0;
    for (const row of await this.deps.store.uploads.unfinishedOfLink(linkId)) {
      if (await this.unlessWritten(row.id, () => this.end(row.id))) ended++;
    }
    return ended;
  }

  /**
   * {@link check}, for a request that writes upload `id`; a guest's upload whose link was deleted
   * or expired ends here (CONTRACT §10), unless a request is writing it.
   * @throws what check throws
   */
  private async checkOrEnd(uploader: Uploader, id: string): Promise<void> {
    try {
      this.check(uploader);
    } catch (err) {
      if ("link" in uploader && this.linkEnded(uploader.link)) await this.endThrough(uploader.link, id);
      throw err;
    }
  }

  /** Whether a link was deleted or has expired: its unfinished uploads end (CONTRACT §10). */
  private linkEnded(link: UploadLinkRow): boolean {
    return link.deletedAt !== null || (link.expiresAt !== null && link.expiresAt <= this.deps.clock.nowMicros());
  }

  /** Ends upload `id` if it is an unfinished one of `link` and no request is writing it. */
  private async endThrough(link: UploadLinkRow, id: string): Promise<void> {
    await this.unlessWritten(id, async () => {
      const row = await this.deps.store.uploads.get(id);
      if (row !== undefined && row.uploadLinkId === link.id && row.fileId === null) await this.end(id);
    });
  }

  /**
   * Whether upload `id` was ended (its row deleted) while a request wrote it: every ending takes
   * the upload's lock (storage/upload-locks.ts), so only after a PostgreSQL lock was lost with
   * its connection. What that request stored is removed then (no row will ever own it again: IDs
   * are unique).
   */
  private async endedMeanwhile(id: string): Promise<boolean> {
    if ((await this.deps.store.uploads.get(id)) !== undefined) return false;
    await this.deps.blobs.partials.remove(id).catch((err: unknown) => logError(`upload ${id}: removing its partial bytes failed (the sweep will): ${err}`));
    return true;
  }

  /** Ends an upload: its row (and so its quota reservation), then its partial bytes. */
  private async end(id: string): Promise<void> {
    if (await this.deps.store.uploads.delete(id)) await this.deps.blobs.partials.remove(id);
  }

  /**
   * Removes expired uploads (rows, then their bytes), the unfinished uploads of deleted or
   * expired guest links (CONTRACT §10), and partial bytes no unfinished upload
   * owns (a crash between the two, or after a finished upload's commit). The partial bytes are
   * listed before the rows are read, so an upload created meanwhile is never taken for an orphan.
   * @returns how many expired (or ended with their link) uploads and orphaned partial uploads were removed
   */
  async sweep(): Promise<{ expired: number; orphans: number }> {
    const { store, blobs } = this.deps;
    const now = this.deps.clock.nowMicros();
    let expired = 0;
    for (;;) {
      const rows = await store.uploads.expired(now, SWEEP_BATCH);
      let skipped = 0;
      for (const row of rows) {
        const swept = await this.unlessWritten(row.id, async () => {
          if (await store.uploads.delete(row.id)) expired++;
          await blobs.partials.remove(row.id);
        });
        if (!swept) skipped++;
      }
      // A batch of uploads all being written is left for the next sweep.
      if (rows.length < SWEEP_BATCH || skipped === rows.length) break;
    }
    // Unfinished uploads of deleted or expired guest links end with them (CONTRACT §10).
    for (;;) {
      const rows = await store.uploads.unfinishedOfEndedLinks(now, SWEEP_BATCH);
      let skipped = 0;
      for (const row of rows) {
        if (await this.unlessWritten(row.id, () => this.end(row.id))) expired++;
        else skipped++;
      }
      if (rows.length < SWEEP_BATCH || skipped === rows.length) break;
    }
    const listed: string[] = [];
    for await (const p of blobs.partials.list()) listed.push(p.id);
    const live = await store.uploads.unfinishedIds();
    let orphans = 0;
    for (const id of listed) {
      if (live.has(id)) continue;
      if (await this.unlessWritten(id, () => blobs.partials.remove(id))) orphans++;
    }
    return { expired, orphans };
  }

  /**
   * Runs `work` on upload `id` unless a request is writing it, in this process or (through the
   * partial store's lock) another worker process: a PATCH that began before the upload expired
   * finishes, and is charged, rather than losing its bytes to the sweep.
   * @returns whether `work` ran
   */
  private async unlessWritten(id: string, work: () => Promise<void>): Promise<boolean> {
    if (this.writing.has(id)) return false;
    const lock = await this.deps.locks.tryLock(id);
    if (lock === undefined) return false;
    try {
      await work();
      return true;
    } finally {
      await lock.release();
    }
  }

  /** The owner files land with, and the link, of an uploader allowed to upload. */
  private check(uploader: Uploader): { ownerId: string; link: UploadLinkRow | undefined } {
    if ("principal" in uploader) {
      requireScope(uploader.principal, "files.write");
      return { ownerId: uploader.principal.userId, link: undefined };
    }
    this.deps.links.checkActive(uploader.link);
    return { ownerId: uploader.link.ownerId, link: uploader.link };
  }

  /** The upload if the uploader may use it: the user's own, or one made through the same link. */
  private async owned(uploader: Uploader, id: string, opts: { expiredToo?: boolean } = {}): Promise<UploadRow> {
    const row = await this.deps.store.uploads.get(id);
    if (row === undefined) throw notFound();
    const mine = "principal" in uploader ? row.ownerId === uploader.principal.userId : row.uploadLinkId === uploader.link.id;
    if (!mine) throw notFound();
    if (opts.expiredToo !== true && row.fileId === null && row.expiresAt <= this.deps.clock.nowMicros()) {
      throw new AppError("gone", "the upload expired; start a new one");
    }
    return row;
  }

  /**
   * The link an upload came through, while it takes uploads. An upload whose link was deleted or
   * expired ends here (CONTRACT §10), if the sweep or the link's deletion has not ended it yet:
   * the caller holds its lock.
   * @throws gone
   */
  private async linkOf(row: UploadRow): Promise<UploadLinkRow> {
    const link = await this.deps.store.uploadLinks.get(row.uploadLinkId!);
    if (link === undefined || this.linkEnded(link)) {
      await this.end(row.id);
      throw new AppError("gone", link === undefined || link.deletedAt !== null ? "this upload link was deleted" : "this upload link has expired");
    }
    this.deps.links.checkActive(link);
    await this.deps.links.checkOwnerEnabled(link);
    return link;
  }

  /**
   * Stages the stored bytes as a blob and commits the file, the upload's completion and the link's count together.
   * @param crc32c the whole upload's CRC32C when carried chunk by chunk (unsigned)
   */
  private async finish(row: UploadRow, link: UploadLinkRow | undefined, crc32c?: number): Promise<UploadState> {
    const fields = fieldsOf(JSON.parse(row.metadata) as Record<string, string>, link, row.createdAt);
    const { files, blobs } = this.deps;
    const staged = row.length === 0 ? await files.stageContent(row.ownerId, null, 0) : await blobs.partials.stage(row.id, row.length, crc32c);
    const file: FileRecord = await files.commitNew(row.ownerId, staged, fields, {
      // The Upload-Length counts against the quota only until the upload expires: a last PATCH
      // that began before its expiry and ends after it is charged like a new upload.
      reserved: row.expiresAt > this.deps.clock.nowMicros(),
      alsoInTx: async (tx, record) => {
        if (!(await tx.uploads.complete(row.id, row.offset, record.id))) throw moved();
        if (link !== undefined) await this.deps.links.consume(tx, link, record.size);
      },
    });
    await blobs.partials.remove(row.id).catch((err: unknown) => logError(`upload ${row.id}: removing its partial bytes failed (the sweep will): ${err}`));
    return stateOf({ ...row, offset: row.length, fileId: file.id });
  }

  /** {@link locked} on every upload of `ids` at once (none waits: a busy one is 409 at once). */
  private async lockedAll<T>(ids: readonly string[], work: () => Promise<T>): Promise<T> {
    const [first, ...rest] = ids;
    if (first === undefined) return work();
    return this.locked(first, () => this.lockedAll(rest, work));
  }

  /**
   * Runs `work` as the only writer of upload `id`: in this process, and under the upload's lock
   * across every process and instance (storage/upload-locks.ts).
   * @throws aborted when another request writes it
   */
  private async locked<T>(id: string, work: (lock: UploadLock) => Promise<T>): Promise<T> {
    const busy = () => new AppError("aborted", "another request is writing this upload; retry once it is done");
    if (this.writing.has(id)) throw busy();
    this.writing.add(id);
    try {
      // Another worker process (WORKERS > 1) or instance may be writing it.
      const lock = await this.deps.locks.tryLock(id);
      if (lock === undefined) throw busy();
      try {
        return await work(lock);
      } finally {
        await lock.release();
      }
    } finally {
      this.writing.delete(id);
    }
  }
}

const moved = () => new AppError("aborted", "the upload's offset moved: another request wrote this range first; ask with HEAD and resume from there");

function stateOf(row: UploadRow): UploadState {
  return {
    id: row.id,
    offset: row.offset,
    length: row.length,
    expiresAt: row.expiresAt,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    fileId: row.fileId,
    concat: row.concat,
  };
}

/** A partial upload (tus concatenation): never a file by itself. */
const isPartial = (row: UploadRow) => row.concat === "partial";
/** A final upload (tus concatenation): made of partials, complete from its creation. */
const isFinal = (row: UploadRow) => row.concat !== null && row.concat.startsWith("final;");

/**
 * The new file's fields from Upload-Metadata (CONTRACT §8): `filename` → name, `filetype` →
 * content_type, `slug`, `visibility`, `expire_time`; other keys are kept but unused. Through a
 * guest link, the link decides visibility, and slug and expiry are not the guest's to set.
 * @throws AppError invalid_argument for a value the REST API would refuse
 */
function fieldsOf(metadata: Record<string, string>, link: UploadLinkRow | undefined, now: number): FileFields {
  const filetype = metadata.filetype;
  const fields: FileFields = {
    name: parseName(metadata.filename ?? ""),
    contentType: uploadMediaType(filetype === undefined || filetype === "" ? null : filetype, metadata.filename ?? ""),
    slug: "",
    visibility: link?.visibility ?? DEFAULT_VISIBILITY,
    expiresAt: null,
    uploadLinkId: link?.id ?? null,
  };
  if (link !== undefined) return fields;
  fields.slug = parseSlug(metadata.slug ?? "");
  if (metadata.visibility !== undefined && metadata.visibility !== "") fields.visibility = parseVisibility(metadata.visibility);
  fields.expiresAt = parseExpiry({ expire_time: metadata.expire_time }, now) ?? null;
  return fields;
}
