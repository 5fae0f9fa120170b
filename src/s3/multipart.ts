/**
 * S3 multipart uploads (CONTRACT §16) written over the tus machinery (service/uploads.ts): an
 * upload is a zero-length partial upload (its manifest: key, media type) in the group
 * `s3b:{bucket folder ID}`; each UploadPart is a partial upload of the part's bytes in the group
 * `s3u:{upload ID}`, its ETag its own upload ID, so a part's bytes are written, reserved against
 * the quota and swept after 24 hours exactly as a tus part is, on disk or on S3. Completing joins
 * the named parts with the blob store's concatenation (server-side on S3) and commits the file
 * under its key as a PUT does (FileService.commitNamed), the parts' rows completed in the same
 * transaction so their reservations give way to the file's size.
 */
import type { FileRecord } from "../domain/file.ts";
import type { Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import { AppError } from "../errors.ts";
import { logError } from "../log.ts";
import type { FileService } from "../service/files.ts";
import type { UploadService } from "../service/uploads.ts";
import type { MetadataStore, BlobStore } from "../storage/ports.ts";
import type { UploadRow } from "../storage/upload-ports.ts";
import { S3Error } from "./errors.ts";

/** S3's limits (AWS, "Amazon S3 multipart upload limits"): part numbers 1–10 000. */
export const MAX_PARTS = 10_000;

/**
 * A part's ETag, unquoted: its row's ID and `-1` (as objects' ETags: s3cmd compares an ETag
 * without a `-` to the part's MD5).
 */
export function partEtagOf(rowId: string): string {
  return `${rowId}-1`;
}

/** The row ID of a part's ETag as a client sends it back (quoted or not), or undefined. */
function rowIdOfPartEtag(etag: string): string | undefined {
  const bare = etag.replace(/^"|"$/g, "");
  return bare.endsWith("-1") ? bare.slice(0, -2) : undefined;
}

/** The upload ID S3 clients are given for `upload`. */
export function uploadIdOf(upload: MultipartUpload): string {
  return UPLOAD_ID_PREFIX + upload.id;
}

/** What the multipart operations use. */
export interface MultipartDeps {
  store: MetadataStore;
  blobs: BlobStore;
  files: FileService;
  uploads: UploadService;
  maxUploadBytes: number;
  /** The services' clock: a manifest past its expiry is no upload. */
  clock: Clock;
}

/** A multipart upload as its manifest row records it. */
export interface MultipartUpload {
  /** The manifest row's ID (the upload ID without its prefix: {@link uploadIdOf}). */
  id: string;
  bucketId: string;
  key: string;
  contentType: string;
  /** Unix microseconds. */
  createdAt: number;
}

/** A part as ListParts and Complete see it. */
export interface Part {
  number: number;
  /** The part's upload row's ID, of which its ETag is made ({@link partEtagOf}). */
  id: string;
  size: number;
  /** Unix microseconds. */
  createdAt: number;
}

/**
 * An upload ID is this and the manifest row's ID: row IDs may begin with `-`, which the AWS CLI
 * takes for an option (`--upload-id -abc…` fails to parse).
 */
const UPLOAD_ID_PREFIX = "mp";

const manifestGroup = (bucketId: string) => `s3b:${bucketId}`;
const partGroup = (uploadId: string) => `s3u:${uploadId}`;
const noSuchUpload = () => new S3Error(404, "NoSuchUpload", "no such multipart upload: it was completed, aborted, or expired (24 hours), or its ID is wrong");

/** Starts a multipart upload of `key` in bucket folder `bucketId`. @returns its upload ID */
export async function createMultipart(deps: MultipartDeps, principal: Principal, bucketId: string, key: string, contentType: string): Promise<string> {
  const state = await deps.uploads.create(
    { principal },
    // `filename`: GET /v1/uploads and the dashboard show the manifest and its parts as one upload of the key.
    { length: 0, metadata: { s3: "multipart", bucket: bucketId, key, type: contentType, filename: key }, content: null, partial: true, group: manifestGroup(bucketId) },
  );
  return UPLOAD_ID_PREFIX + state.id;
}

/**
 * The caller's live multipart upload `uploadId` of `key` in `bucketId`.
 * @throws S3Error NoSuchUpload
 */
export async function multipartOf(deps: MultipartDeps, principal: Principal, bucketId: string, key: string, uploadId: string): Promise<MultipartUpload> {
  const rowId = uploadId.startsWith(UPLOAD_ID_PREFIX) ? uploadId.slice(UPLOAD_ID_PREFIX.length) : "";
  const row = /^[A-Za-z0-9_-]{1,64}$/.test(rowId) ? await deps.store.uploads.get(rowId) : undefined;
  const upload = row === undefined ? undefined : manifestOf(row, principal, deps.clock.nowMicros());
  if (upload === undefined || upload.bucketId !== bucketId || upload.key !== key) throw noSuchUpload();
  return upload;
}

/** The manifest a row is, when it is a live one of the caller's. */
function manifestOf(row: UploadRow, principal: Principal, now: number): MultipartUpload | undefined {
  if (row.ownerId !== principal.userId || row.uploadLinkId !== null || row.fileId !== null || row.expiresAt <= now) return undefined;
  const m = JSON.parse(row.metadata) as Record<string, string>;
  if (m.s3 !== "multipart" || row.concatGroup !== manifestGroup(m.bucket ?? "")) return undefined;
  return { id: row.id, bucketId: m.bucket!, key: m.key!, contentType: m.type!, createdAt: row.createdAt };
}

/**
 * Stores part `number` of `upload` from `content` (`length` bytes, declared before they are
 * read: the quota and MAX_UPLOAD_BYTES are checked first).
 * @returns the part's ETag, unquoted ({@link partEtagOf})
 * @throws what UploadService.create throws (quota, limits); the body's own errors
 */
export async function uploadPart(deps: MultipartDeps, principal: Principal, upload: MultipartUpload, number: number, length: number, content: AsyncIterable<Uint8Array>): Promise<string> {
  const state = await deps.uploads.create(
    { principal },
    { length, metadata: { part: String(number), filename: upload.key }, content: length === 0 ? null : content, partial: true, group: partGroup(upload.id) },
  );
  if (state.offset !== length) throw new S3Error(400, "IncompleteBody", "the part's body ended before its length");
  return partEtagOf(state.id);
}

/** The upload's finished parts by number (the latest of a number uploaded twice), in order. */
export async function partsOf(deps: MultipartDeps, principal: Principal, upload: MultipartUpload): Promise<{ parts: Part[]; all: UploadRow[] }> {
  const all = await deps.store.uploads.inGroup(principal.userId, partGroup(upload.id), MAX_PARTS * 2);
  const byNumber = new Map<number, Part>();
  for (const row of all) {
    if (row.offset !== row.length) continue;
    const number = Number((JSON.parse(row.metadata) as Record<string, string>).part);
    byNumber.set(number, { number, id: row.id, size: row.length, createdAt: row.createdAt });
  }
  return { parts: [...byNumber.values()].sort((a, b) => a.number - b.number), all };
}

/**
 * Completes `upload` with the parts the client names (number and ETag, ascending): their bytes
 * joined become the file at the upload's key (made or replaced as a PUT would), and every part
 * and the manifest are consumed; the bytes of parts not named are removed.
 * @throws S3Error InvalidPart (a part not uploaded, or another ETag), InvalidPartOrder,
 *   EntityTooLarge past MAX_UPLOAD_BYTES; what FileService.commitNamed throws (quota)
 */
export async function completeMultipart(
  deps: MultipartDeps,
  principal: Principal,
  upload: MultipartUpload,
  listed: readonly { number: number; etag: string }[],
  place: { folderId: string; name: string },
): Promise<FileRecord> {
  if (listed.length === 0) throw new S3Error(400, "MalformedXML", "CompleteMultipartUpload names no part");
  const { all } = await partsOf(deps, principal, upload);
  const byId = new Map(all.map((r) => [r.id, r]));
  const chosen: UploadRow[] = [];
  let previous = 0;
  for (const { number, etag } of listed) {
    if (number <= previous) throw new S3Error(400, "InvalidPartOrder", "the parts must be listed in ascending order of part number");
    previous = number;
    const rowId = rowIdOfPartEtag(etag);
    const row = rowId === undefined ? undefined : byId.get(rowId);
    const rowNumber = row === undefined ? undefined : Number((JSON.parse(row.metadata) as Record<string, string>).part);
    if (row === undefined || rowNumber !== number || row.offset !== row.length) throw new S3Error(400, "InvalidPart", `part ${number} was not uploaded with ETag ${etag}`);
    chosen.push(row);
  }
  const size = chosen.reduce((n, p) => n + p.length, 0);
  if (size > deps.maxUploadBytes) throw new S3Error(400, "EntityTooLarge", `the parts hold ${size} bytes, over MAX_UPLOAD_BYTES (${deps.maxUploadBytes})`);
  const staged =
    size === 0
      ? await deps.files.stageContent(principal.userId, null, 0)
      : await deps.blobs.partials.concat(chosen.map((p) => ({ id: p.id, length: p.length, crc32c: p.crc32c === null ? undefined : p.crc32c >>> 0 })));
  const { file } = await deps.files.commitNamed(principal, place.folderId, place.name, upload.contentType, staged, {
    alsoInTx: async (tx, record) => {
      for (const p of chosen) if (!(await tx.uploads.complete(p.id, p.length, record.id))) throw new S3Error(409, "InvalidPart", "a part changed while the upload completed; complete it again");
      if (!(await tx.uploads.complete(upload.id, 0, record.id))) throw noSuchUpload();
    },
  });
  // The parts' bytes are in the file's blob now; parts not named go with their rows.
  for (const p of chosen) await deps.blobs.partials.remove(p.id).catch((err: unknown) => logError(`upload ${p.id}: removing its partial bytes failed (the sweep will): ${err}`));
  for (const row of all) if (!chosen.includes(row)) await endQuietly(deps, principal, row.id);
  return file;
}

/** Aborts `upload`: its parts' rows and bytes and its manifest go (their reservations with them). */
export async function abortMultipart(deps: MultipartDeps, principal: Principal, upload: MultipartUpload): Promise<void> {
  for (const row of await deps.store.uploads.inGroup(principal.userId, partGroup(upload.id), MAX_PARTS * 2)) await endQuietly(deps, principal, row.id);
  await deps.uploads.terminate({ principal }, upload.id);
}

/** The caller's live multipart uploads in bucket folder `bucketId`, oldest first (at most `limit`). */
export async function multipartsIn(deps: MultipartDeps, principal: Principal, bucketId: string, limit: number): Promise<MultipartUpload[]> {
  const rows = await deps.store.uploads.inGroup(principal.userId, manifestGroup(bucketId), limit);
  const now = deps.clock.nowMicros();
  return rows.map((r) => manifestOf(r, principal, now)).filter((u): u is MultipartUpload => u !== undefined);
}

/** Terminates an upload row, a missing one (another request's, or swept) being no failure. */
async function endQuietly(deps: MultipartDeps, principal: Principal, id: string): Promise<void> {
  try {
    await deps.uploads.terminate({ principal }, id);
  } catch (err) {
    if (!(err instanceof AppError && (err.code === "not_found" || err.code === "gone"))) throw err;
  }
}
