/**
 * The storage ports of resumable uploads (tus 1.0.0) and guest upload links (CONTRACT §8),
 * beside the others of ports.ts (which re-exports them): two metadata tables and the partial
 * bytes of unfinished uploads in the blob store.
 *
 * The rule both keep: an upload's row holds the authoritative offset. Bytes are written durably
 * at the row's offset first, and only then does a conditional update move the offset past them
 * (`… WHERE offset = expected`), so a crash leaves at most bytes past the offset, which the next
 * write at that offset replaces, and two writers at one offset never both win.
 */
import type { PageCursor } from "../domain/params.ts";
import type { UploadChecksum } from "../domain/tus.ts";
import type { UploadLinkRow } from "../domain/upload-link.ts";
import type { StagedBlob } from "./ports.ts";

/** A resumable upload. Sizes and offsets are bytes; times Unix microseconds. */
export interface UploadRow {
  id: string;
  /** Whose account the file lands in: the caller's, or the guest upload link's owner's. */
  ownerId: string;
  /** The guest upload link it came through, or null. */
  uploadLinkId: string | null;
  /** Upload-Length. */
  length: number;
  /** Bytes stored durably so far (Upload-Offset). */
  offset: number;
  /** The decoded Upload-Metadata, a JSON object of strings. */
  metadata: string;
  /**
   * The file it became once the last byte arrived; null before. A tus partial upload never
   * becomes a file by itself: it gets the file of the final upload that consumed it.
   */
  fileId: string | null;
  /** Upload-Concat (tus concatenation): null, `partial`, or `final;<upload paths>`. */
  concat: string | null;
  /**
   * For a partial upload through a guest link, the concatenation it belongs to, as its
   * Upload-Metadata `group` named it (service/uploads.ts): the declared total of the whole file
   * is checked against what the link has left, its siblings' reservations aside. Null otherwise.
   */
  concatGroup: string | null;
  /**
   * CRC32C of the bytes before the offset, carried on by each chunk so the finished upload is
   * not read back to checksum it; signed 32-bit as stored (`>>> 0` for the unsigned value);
   * null when unknown (a row made before it was kept, or a chunk the store wrote only part of).
   */
  crc32c: number | null;
  createdAt: number;
  /** Unfinished, it is swept after this (Upload-Expires). */
  expiresAt: number;
}

/** A guest's concatenation: its Upload-Metadata `group` and declared `total` bytes (service/uploads.ts). */
export interface ConcatGroup {
  id: string;
  total: number;
}

/** The uploads table. */
export interface UploadTable {
  get(id: string): Promise<UploadRow | undefined>;
  insert(row: UploadRow): Promise<void>;
  /**
   * Moves an unfinished upload's offset from `from` to `to` if it is still `from`, with the
   * CRC32C of the bytes before `to` (null: unknown).
   * @returns whether it moved (false: another request moved it first, or it is gone or complete)
   */
  advance(id: string, from: number, to: number, crc32c: number | null): Promise<boolean>;
  /**
   * Marks an unfinished upload at offset `from` complete: offset = length, file_id = `fileId`.
   * @returns whether it did (false: the offset moved, or it is gone or complete already)
   */
  complete(id: string, from: number, fileId: string): Promise<boolean>;
  /** @returns whether a row was deleted */
  delete(id: string): Promise<boolean>;
  /** Up to `limit` rows whose expiresAt is at or before `now`. */
  expired(now: number, limit: number): Promise<UploadRow[]>;
  /** IDs of every upload not yet complete (the sweep keeps their partial bytes). */
  unfinishedIds(): Promise<Set<string>>;
  /** IDs of every upload of `ownerId`, finished or not (`cubby users delete`). */
  idsByOwner(ownerId: string): Promise<string[]>;
  /**
   * Up to `limit` unfinished, unexpired uploads landing in `ownerId`'s account (their own and
   * those through their guest links), newest first (created_at, then id, descending), after
   * `after` (keyset pagination, as files are listed).
   */
  unfinishedByOwner(ownerId: string, now: number, limit: number, after: PageCursor | undefined): Promise<UploadRow[]>;
  /**
   * The final upload (tus concatenation) of `ownerId` that made file `fileId` with Upload-Concat
   * `concat`, if its row is still there (a client repeating a final whose answer it lost).
   */
  finalOf(ownerId: string, fileId: string, concat: string): Promise<UploadRow | undefined>;
  /** Every unfinished upload made through link `linkId`, expired or not. */
  unfinishedOfLink(linkId: string): Promise<UploadRow[]>;
  /**
   * Up to `limit` of `ownerId`'s own uploads (no guest link) not yet complete whose concat_group
   * is `group`, oldest first, through uploads_owner_group_idx (an S3 multipart upload's parts
   * and manifests, s3/multipart.ts).
   */
  inGroup(ownerId: string, group: string, limit: number): Promise<UploadRow[]>;
  /** Up to `limit` unfinished uploads whose guest link is deleted, or expired at `now` (the sweep ends them). */
  unfinishedOfEndedLinks(now: number, limit: number): Promise<UploadRow[]>;
  /**
   * What link `linkId`'s unfinished, unexpired uploads hold of its limits at `now` (CONTRACT §10).
   * @returns how many of them hold a file (partial uploads hold none) and the sum of their
   *   Upload-Lengths (bytes); with `exceptGroup`, leaving out the parts of that concatenation
   */
  reservedByLink(linkId: string, ownerId: string, now: number, exceptGroup?: string): Promise<{ files: number; bytes: number }>;
}

/** The upload_links table. */
export interface UploadLinkTable {
  get(id: string): Promise<UploadLinkRow | undefined>;
  byToken(token: string): Promise<UploadLinkRow | undefined>;
  /** Up to `limit` of an owner's links (deleted ones too with `withDeleted`), newest first, after `after` (keyset). */
  listByOwner(ownerId: string, withDeleted: boolean, limit: number, after: PageCursor | undefined): Promise<UploadLinkRow[]>;
  insert(row: UploadLinkRow): Promise<void>;
  /** Sets deleted_at if the link is `ownerId`'s and not deleted yet. @returns whether it did */
  markDeleted(id: string, ownerId: string, now: number): Promise<boolean>;
  /**
   * Counts one more file of `bytes` against the link, only if that stays within its limits and
   * it is neither deleted nor expired at `now`: one conditional UPDATE, so concurrent uploads
   * can never pass a limit together.
   * @returns whether it was counted
   */
  consume(id: string, bytes: number, now: number): Promise<boolean>;
  /**
   * Whether link `id` has room at `now` for one more upload of `bytes`, counting the files it
   * received and its unfinished uploads' reservations, and it is neither deleted nor expired;
   * on PostgreSQL the link's row stays locked for the rest of the transaction. Run it in the
   * transaction that inserts the upload, after the owner's row is locked (service/quota.ts), so
   * concurrent creations can never pass a limit together (storage/upload-conditions.ts). With
   * `group` (a part of a guest's concatenation), its declared total must fit too, beside every
   * reservation but its own parts'.
   */
  reserve(id: string, bytes: number, now: number, group?: ConcatGroup): Promise<boolean>;
  /** Every row, deleted ones too, in ID order (export). */
  all(): AsyncIterable<UploadLinkRow>;
}

/** How one chunk of a resumable upload is written. */
export interface AppendOptions {
  /** Bytes the chunk may hold at most (the upload's remaining length): payload_too_large past it. */
  maxBytes: number;
  /** The digest the chunk must have (tus checksum extension): checksum_mismatch otherwise. */
  checksum?: UploadChecksum | undefined;
}

/**
 * The bytes of unfinished resumable uploads, by upload ID, in the blob store (see the module
 * comment for the offset rule). On disk one file per upload; on S3 one object per chunk.
 */
export interface PartialUploads {
  /**
   * Writes `content` durably at byte `offset` of upload `id`, replacing anything at or past
   * `offset` (left by a crash or a lost race). On a checksum mismatch or payload_too_large the
   * chunk is discarded. When the body is cut short with no checksum declared, the store may
   * keep what arrived (tus: "store as much of the received data as possible"): it says so with
   * `cutShort`, the error that ended the body.
   * @returns the bytes written durably, and their CRC32C (unsigned) when the store can use a
   *   carried checksum in {@link stage} and {@link concat} (disk: it then reads nothing for it; S3
   *   checksums while it copies the chunks into the blob anyway, and gives none)
   * @throws AppError checksum_mismatch, payload_too_large; what the stream or store throws
   */
  append(id: string, offset: number, content: AsyncIterable<Uint8Array> | null, opts: AppendOptions): Promise<{ bytes: number; crc32c?: number; cutShort?: unknown }>;
  /**
   * The upload's first `length` bytes as a new durable blob with its CRC32C (the partial bytes
   * stay until {@link remove}).
   * @param crc32c the bytes' CRC32C when the caller carried it chunk by chunk (unsigned): a store
   *   may then skip reading them back; undefined: computed from the stored bytes
   * @throws when fewer than `length` bytes are stored
   */
  stage(id: string, length: number, crc32c?: number): Promise<StagedBlob>;
  /**
   * Finished partial uploads (tus concatenation), in order, as one new durable blob with its
   * CRC32C (their partial bytes stay until {@link remove}); memory stays constant. A part's
   * `crc32c` (unsigned), when given, lets a store combine the checksums instead of reading the
   * bytes for them (domain/crc32c.ts crc32cCombine).
   * @throws when a part holds fewer bytes than its `length`
   */
  concat(parts: readonly { id: string; length: number; crc32c?: number | undefined }[]): Promise<StagedBlob>;
  /** Removes an upload's partial bytes. Missing is fine. */
  remove(id: string): Promise<void>;
  /** Every upload that has partial bytes, with when they were last written (Unix ms). */
  list(): AsyncIterable<{ id: string; writtenAt: number }>;
}
