/**
 * The records of a cubby archive (docs/archive.md): one JSON object per line for each user, API
 * key, session, guest upload link, folder, file (with the folder it is in), WebDAV dead property
 * and share link, and a trailer. Encoding is exact and decoding is strict: a record with
 * a missing, unknown or ill-typed field is refused rather than guessed at, because an importer
 * that dropped a field it did not know (a key's scopes, say) would hand out more than the
 * source did. Pure functions, no I/O.
 */
import { AppError } from "../errors.ts";
import { VISIBILITIES, type FileRecord, type Visibility } from "../domain/file.ts";
import { FILE_ID_PATTERN, SHARE_TOKEN_PATTERN } from "../domain/ids.ts";
import { ALL_SCOPES, formatScopes, parseScopes, SCOPES } from "../domain/principal.ts";
import { UPLOAD_LINK_TOKEN, type UploadLinkRow } from "../domain/upload-link.ts";
import { MAX_SHARE_ITEMS, type ShareItemJson, type ShareRow } from "../domain/share.ts";
import { checkFolderName, type FolderRow } from "../domain/folder.ts";
import { NO_QUOTA, type ApiKeyRow, type SessionRow, type UserAccount } from "../storage/ports.ts";

/** The version this cubby writes. */
export const ARCHIVE_VERSION = 8;
/** The first line of every archive, without its "\n"; the number is the format's version. */
export const ARCHIVE_MAGIC = `cubby-archive ${ARCHIVE_VERSION}`;
/**
 * The versions this cubby reads: 1 (before key scopes and expiries), 2 (before users' state,
 * share links and guest upload links), 3 (before folders), 4 (before WebDAV dead properties),
 * 5 (before a share's last download time and users' display names and admin flags), 6 (before
 * S3 access keys), 7 (before shares of several items) and 8.
 * What an older version lacks reads as the default (no folders: every file at the top; no dead
 * properties; never downloaded; the e-mail's local part as the name; not an admin).
 */
export type ArchiveVersion = 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8;
const READABLE: readonly ArchiveVersion[] = [1, 2, 3, 4, 5, 6, 7, 8];
const MAGIC_PREFIX = "cubby-archive ";

/**
 * The longest record line accepted, "\n" excluded: a damaged archive cannot make a reader buffer
 * more. A dead property's value may hold up to 2 MiB (dav/limits.ts), twice that as JSON.
 */
export const MAX_RECORD_BYTES = 5 * 1024 * 1024;

/** A WebDAV dead property as archived (CONTRACT §14): its owner, resource (`root`, `file:{id}`, `folder:{id}`), expanded name and element. */
export interface ArchivedDavProperty {
  ownerId: string;
  resource: string;
  namespace: string;
  name: string;
  value: string;
}

/**
 * A file's row as archived: everything but the blob name, which belongs to the source's blob
 * store, and with the folder it is in (CONTRACT §12; null at the top).
 */
export type ArchivedFile = Omit<FileRecord, "blob"> & { folderId: string | null };

/**
 * A user's row as archived: the identity and the administrative state (quota, disabled, last
 * seen). The archive writes a quota of {@link NO_QUOTA} as `"none"`.
 */
export type ArchivedUser = UserAccount;

/** What an archive holds; the trailer repeats it so a reader can tell a whole archive from a cut one. */
export interface ArchiveCounts {
  users: number;
  keys: number;
  sessions: number;
  /** Guest upload links, deleted ones included. */
  uploadLinks: number;
  files: number;
  /** Share links, deleted ones included. */
  shares: number;
  /** Content bytes of every file together. */
  bytes: number;
  /** Folders (CONTRACT §12). */
  folders: number;
  /** WebDAV dead properties (CONTRACT §14). */
  davProperties: number;
}

/** The counts as the CLI reports them: "3 user(s), 4 API key(s), …, 5 file(s) of 1234 bytes, 2 share link(s), 1 folder(s), 0 WebDAV dead properties". */
export function describeCounts(c: ArchiveCounts): string {
  return (
    `${c.users} user(s), ${c.keys} API key(s), ${c.sessions} session(s), ${c.uploadLinks} guest upload link(s), ${c.files} file(s) of ${c.bytes} bytes, ` +
    `${c.shares} share link(s), ${c.folders} folder(s), ${c.davProperties} WebDAV dead propert${c.davProperties === 1 ? "y" : "ies"}`
  );
}

export interface Trailer extends ArchiveCounts {
  /** CRC32C (base64, as file checksums) of every archive byte before the trailer's line. */
  crc32c: string;
}

export type ArchiveRecord =
  | { type: "user"; row: ArchivedUser }
  | { type: "key"; row: ApiKeyRow }
  | { type: "session"; row: SessionRow }
  | { type: "upload_link"; row: UploadLinkRow }
  | { type: "folder"; row: FolderRow }
  | { type: "file"; row: ArchivedFile }
  | { type: "share"; row: ShareRow }
  | { type: "dav_property"; row: ArchivedDavProperty }
  | { type: "end"; trailer: Trailer };

/** The archive is not one this cubby can read, or it is damaged: bad input (exit status 2). */
export function damaged(offset: number, message: string): AppError {
  return new AppError("invalid_argument", `damaged archive at byte ${offset}: ${message}`);
}

/** The record's line, "\n" included. */
export function encodeRecord(record: ArchiveRecord): string {
  return `${JSON.stringify(toJson(record))}\n`;
}

function toJson(record: ArchiveRecord): Record<string, unknown> {
  switch (record.type) {
    case "user": {
      const u = record.row;
      return {
        type: "user",
        id: u.id,
        email: u.email,
        issuer: u.issuer,
        subject: u.subject,
        created_at: u.createdAt,
        quota_bytes: u.quotaBytes === NO_QUOTA ? "none" : u.quotaBytes,
        disabled_at: u.disabledAt,
        last_seen_at: u.lastSeenAt,
        display_name: u.displayName,
        show_email_on_shares: u.showEmailOnShares,
        admin: u.admin,
      };
    }
    case "key": {
      const k = record.row;
      return {
        type: "key",
        id: k.id,
        user_id: k.userId,
        name: k.name,
        secret_hash: Buffer.from(k.secretHash).toString("base64"),
        created_at: k.createdAt,
        last_used_at: k.lastUsedAt,
        scopes: k.scopes,
        expires_at: k.expiresAt,
        s3_secret: k.s3Secret,
      };
    }
    case "session": {
      const s = record.row;
      return {
        type: "session",
        id: s.id,
        user_id: s.userId,
        secret_hash: Buffer.from(s.secretHash).toString("base64"),
        created_at: s.createdAt,
        expires_at: s.expiresAt,
      };
    }
    case "file": {
      const f = record.row;
      return {
        type: "file",
        id: f.id,
        owner_id: f.ownerId,
        slug: f.slug,
        name: f.name,
        content_type: f.contentType,
        visibility: f.visibility,
        size: f.size,
        checksum: f.checksum,
        created_at: f.createdAt,
        updated_at: f.updatedAt,
        expires_at: f.expiresAt,
        upload_link_id: f.uploadLinkId,
        folder_id: f.folderId,
      };
    }
    case "folder": {
      const f = record.row;
      return { type: "folder", id: f.id, owner_id: f.ownerId, parent_id: f.parentId, name: f.name, created_at: f.createdAt, updated_at: f.updatedAt };
    }
    case "upload_link": {
      const l = record.row;
      return {
        type: "upload_link",
        id: l.id,
        owner_id: l.ownerId,
        token: l.token,
        name: l.name,
        visibility: l.visibility,
        expires_at: l.expiresAt,
        max_files: l.maxFiles,
        max_bytes: l.maxBytes,
        files_uploaded: l.filesUploaded,
        bytes_uploaded: l.bytesUploaded,
        created_at: l.createdAt,
        deleted_at: l.deletedAt,
      };
    }
    case "share": {
      const s = record.row;
      return {
        type: "share",
        id: s.id,
        file_id: s.fileId,
        folder_id: s.folderId,
        owner_id: s.ownerId,
        token: s.token,
        expires_at: s.expiresAt,
        max_downloads: s.maxDownloads,
        download_count: s.downloadCount,
        last_download_at: s.lastDownloadAt,
        password_hash: s.passwordHash,
        created_at: s.createdAt,
        deleted_at: s.deletedAt,
        items: s.items,
      };
    }
    case "dav_property": {
      const p = record.row;
      return { type: "dav_property", owner_id: p.ownerId, resource: p.resource, namespace: p.namespace, name: p.name, value: p.value };
    }
    case "end": {
      const t = record.trailer;
      return {
        type: "end",
        users: t.users,
        keys: t.keys,
        sessions: t.sessions,
        upload_links: t.uploadLinks,
        files: t.files,
        shares: t.shares,
        bytes: t.bytes,
        folders: t.folders,
        dav_properties: t.davProperties,
        crc32c: t.crc32c,
      };
    }
  }
}

/**
 * The archive's first line (without "\n") must be {@link ARCHIVE_MAGIC} or an earlier version's.
 * @returns the archive's version
 * @throws AppError invalid_argument naming what the file is instead (a later version: written by a newer cubby)
 */
export function checkMagic(line: string): ArchiveVersion {
  const version = READABLE.find((v) => line === `${MAGIC_PREFIX}${v}`);
  if (version !== undefined) return version;
  if (line.startsWith(MAGIC_PREFIX)) {
    const reads = READABLE.map((v) => `"${MAGIC_PREFIX}${v}"`).join(", ");
    const newer = /^\d+$/.test(line.slice(MAGIC_PREFIX.length)) && Number(line.slice(MAGIC_PREFIX.length)) > ARCHIVE_VERSION ? " (written by a newer cubby?)" : "";
    throw new AppError("invalid_argument", `archive format "${line}" is not one this cubby reads${newer}; it reads ${reads}; nothing was changed`);
  }
  throw new AppError("invalid_argument", `not a cubby archive (it does not start with "${ARCHIVE_MAGIC}")`);
}

/**
 * One record line (without "\n").
 * @param offset where the line starts in the archive, for messages
 * @throws AppError invalid_argument (see {@link damaged}) for anything but a well-formed record
 */
export function decodeRecord(line: string, offset: number, version: ArchiveVersion = ARCHIVE_VERSION): ArchiveRecord {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    throw damaged(offset, "a record is not JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw damaged(offset, "a record is not a JSON object");
  const o = json as Record<string, unknown>;
  const f = new Fields(o, offset, version);
  switch (o.type) {
    case "user": {
      const row: ArchivedUser = {
        id: f.id("id"),
        email: f.text("email"),
        issuer: f.optionalText("issuer"),
        subject: f.optionalText("subject"),
        createdAt: f.count("created_at"),
        quotaBytes: f.since(3, "quota_bytes", null, (n) => f.quota(n)),
        disabledAt: f.since(3, "disabled_at", null, (n) => f.optionalCount(n)),
        lastSeenAt: f.since(3, "last_seen_at", null, (n) => f.optionalCount(n)),
        displayName: f.since(6, "display_name", null, (n) => f.optionalText(n)),
        showEmailOnShares: f.since(6, "show_email_on_shares", false, (n) => f.boolean(n)),
        admin: f.since(6, "admin", false, (n) => f.boolean(n)),
      };
      if ((row.issuer === null) !== (row.subject === null)) throw damaged(offset, `user ${row.id}: issuer and subject must both be set or both be null`);
      f.done("user");
      return { type: "user", row };
    }
    case "key": {
      const row: ApiKeyRow = {
        id: f.id("id"),
        userId: f.id("user_id"),
        name: f.string("name"),
        secretHash: f.sha256("secret_hash"),
        createdAt: f.count("created_at"),
        lastUsedAt: f.optionalCount("last_used_at"),
        scopes: f.since(2, "scopes", formatScopes(ALL_SCOPES), (n) => f.scopes(n)),
        expiresAt: f.since(2, "expires_at", null, (n) => f.optionalCount(n)),
        s3Secret: f.since(7, "s3_secret", null, (n) => f.optionalText(n)),
      };
      f.done("key");
      return { type: "key", row };
    }
    case "session": {
      const row: SessionRow = { id: f.id("id"), userId: f.id("user_id"), secretHash: f.sha256("secret_hash"), createdAt: f.count("created_at"), expiresAt: f.count("expires_at") };
      f.done("session");
      return { type: "session", row };
    }
    case "file": {
      const id = f.id("id");
      if (!FILE_ID_PATTERN.test(id)) throw damaged(offset, `"${id}" is not a file ID`);
      const row: ArchivedFile = {
        id,
        ownerId: f.id("owner_id"),
        slug: f.string("slug"),
        name: f.string("name"),
        contentType: f.text("content_type"),
        visibility: f.visibility("visibility"),
        size: f.count("size"),
        checksum: f.checksum("checksum"),
        createdAt: f.count("created_at"),
        updatedAt: f.count("updated_at"),
        expiresAt: f.since(2, "expires_at", null, (n) => f.optionalCount(n)),
        uploadLinkId: f.since(3, "upload_link_id", null, (n) => f.optionalId(n)),
        folderId: f.since(4, "folder_id", null, (n) => f.optionalId(n)),
      };
      f.done("file");
      return { type: "file", row };
    }
    case "folder": {
      f.introducedIn(4);
      const id = f.id("id");
      if (!FILE_ID_PATTERN.test(id)) throw damaged(offset, `"${id}" is not a folder ID`);
      const row: FolderRow = {
        id,
        ownerId: f.id("owner_id"),
        parentId: f.optionalId("parent_id"),
        name: f.folderName("name"),
        createdAt: f.count("created_at"),
        updatedAt: f.count("updated_at"),
      };
      f.done("folder");
      return { type: "folder", row };
    }
    case "upload_link": {
      f.introducedIn(3);
      const row: UploadLinkRow = {
        id: f.id("id"),
        ownerId: f.id("owner_id"),
        token: f.token("token", UPLOAD_LINK_TOKEN),
        name: f.string("name"),
        visibility: f.visibility("visibility"),
        expiresAt: f.optionalCount("expires_at"),
        maxFiles: f.optionalCount("max_files"),
        maxBytes: f.optionalCount("max_bytes"),
        filesUploaded: f.count("files_uploaded"),
        bytesUploaded: f.count("bytes_uploaded"),
        createdAt: f.count("created_at"),
        deletedAt: f.optionalCount("deleted_at"),
      };
      f.done("upload_link");
      return { type: "upload_link", row };
    }
    case "share": {
      f.introducedIn(3);
      // A folder's share (CONTRACT §12, version 4) has file_id "" and names its folder; a share
      // of several items (CONTRACT §15, version 8) has file_id "", no folder, and its items.
      const folderId = f.since(4, "folder_id", null, (n) => f.optionalId(n));
      const items = f.since(8, "items", null, (n) => f.shareItems(n));
      const fileId = folderId === null && items === null ? f.id("file_id") : f.string("file_id");
      if (items !== null && (fileId !== "" || folderId !== null)) throw damaged(offset, "a share of several items has file_id \"\" and folder_id null");
      if (items === null && (folderId === null ? !FILE_ID_PATTERN.test(fileId) : fileId !== "")) {
        throw damaged(offset, folderId === null ? `"${fileId}" is not a file ID` : `a folder's share has file_id "", not "${fileId}"`);
      }
      const row: ShareRow = {
        id: f.id("id"),
        fileId,
        folderId,
        ownerId: f.id("owner_id"),
        token: f.token("token", SHARE_TOKEN_PATTERN),
        expiresAt: f.optionalCount("expires_at"),
        maxDownloads: f.optionalCount("max_downloads"),
        downloadCount: f.count("download_count"),
        lastDownloadAt: f.since(6, "last_download_at", null, (n) => f.optionalCount(n)),
        passwordHash: f.optionalText("password_hash"),
        createdAt: f.count("created_at"),
        deletedAt: f.optionalCount("deleted_at"),
        items,
      };
      f.done("share");
      return { type: "share", row };
    }
    case "dav_property": {
      f.introducedIn(5);
      const resource = f.text("resource");
      const m = /^(?:root|(?:file|folder):(.*))$/.exec(resource);
      if (m === null || (m[1] !== undefined && !FILE_ID_PATTERN.test(m[1]))) throw damaged(offset, `"${resource}" is not a WebDAV resource (root, file:{id}, folder:{id})`);
      const row: ArchivedDavProperty = { ownerId: f.id("owner_id"), resource, namespace: f.string("namespace"), name: f.text("name"), value: f.text("value") };
      f.done("dav_property");
      return { type: "dav_property", row };
    }
    case "end": {
      const trailer: Trailer = {
        users: f.count("users"),
        keys: f.count("keys"),
        sessions: f.count("sessions"),
        uploadLinks: f.since(3, "upload_links", 0, (n) => f.count(n)),
        files: f.count("files"),
        shares: f.since(3, "shares", 0, (n) => f.count(n)),
        bytes: f.count("bytes"),
        folders: f.since(4, "folders", 0, (n) => f.count(n)),
        davProperties: f.since(5, "dav_properties", 0, (n) => f.count(n)),
        crc32c: f.checksum("crc32c"),
      };
      f.done("end");
      return { type: "end", trailer };
    }
    default:
      throw damaged(offset, `unknown record type ${JSON.stringify(o.type)} (written by a newer cubby?)`);
  }
}

const B64_CRC = /^[A-Za-z0-9+/]{6}==$/;
const B64_SHA256 = /^[A-Za-z0-9+/]{43}=$/;

/** Reads a record's fields by type, remembering which were read so that {@link done} can refuse the rest. */
class Fields {
  private readonly read = new Set<string>(["type"]);

  constructor(
    private readonly o: Record<string, unknown>,
    private readonly offset: number,
    private readonly version: ArchiveVersion,
  ) {}

  private seen(name: string): void {
    if (!(name in this.o)) throw damaged(this.offset, `a ${String(this.o.type)} record has no "${name}"`);
    this.read.add(name);
  }

  private bad(name: string, what: string): AppError {
    return damaged(this.offset, `"${name}" of a ${String(this.o.type)} record must be ${what}`);
  }

  string(name: string): string {
    this.seen(name);
    const v = this.o[name];
    if (typeof v !== "string") throw this.bad(name, "a string");
    return v;
  }

  text(name: string): string {
    const v = this.string(name);
    if (v === "") throw this.bad(name, "a non-empty string");
    return v;
  }

  id(name: string): string {
    const v = this.text(name);
    if (v.length > 200) throw this.bad(name, "an ID of at most 200 characters");
    return v;
  }

  boolean(name: string): boolean {
    this.seen(name);
    const v = this.o[name];
    if (typeof v !== "boolean") throw this.bad(name, "true or false");
    return v;
  }

  optionalText(name: string): string | null {
    this.seen(name);
    return this.o[name] === null ? null : this.text(name);
  }

  /** A whole number from 0 to 2^53 − 1 (sizes, counts, Unix microseconds). */
  count(name: string): number {
    this.seen(name);
    const v = this.o[name];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw this.bad(name, "a whole number from 0 to 2^53 − 1");
    return v;
  }

  optionalCount(name: string): number | null {
    this.seen(name);
    return this.o[name] === null ? null : this.count(name);
  }

  /**
   * A field added in `version` (2: CONTRACT §8's key scopes and expiries; 3: users' state and a
   * file's upload link, CONTRACT §10; 4: a file's folder, a share's folder, CONTRACT §12; 5: the
   * trailer's count of dead properties, CONTRACT §14): read as `read` says; in an earlier archive, `absent` (and
   * a record that has the field anyway is refused as unknown).
   */
  since<T>(version: ArchiveVersion, name: string, absent: T, read: (name: string) => T): T {
    return this.version >= version ? read(name) : absent;
  }

  /** A record type added in `version`: in an earlier archive it is refused, as a newer cubby's. */
  introducedIn(version: ArchiveVersion): void {
    if (this.version < version) {
      throw damaged(this.offset, `a ${String(this.o.type)} record in a version ${this.version} archive (records of that type came with version ${version})`);
    }
  }

  optionalId(name: string): string | null {
    this.seen(name);
    return this.o[name] === null ? null : this.id(name);
  }

  /**
   * A share's items: null, or 1 … MAX_SHARE_ITEMS objects each of exactly `file_id` or
   * `folder_id`, an ID of either shape, none twice.
   */
  shareItems(name: string): ShareItemJson[] | null {
    this.seen(name);
    const v = this.o[name];
    if (v === null) return null;
    const what = `null, or a list of 1 to ${MAX_SHARE_ITEMS} {"file_id"} or {"folder_id"} objects, none twice`;
    if (!Array.isArray(v) || v.length === 0 || v.length > MAX_SHARE_ITEMS) throw this.bad(name, what);
    const seen = new Set<string>();
    return v.map((item: unknown) => {
      const keys = item !== null && typeof item === "object" ? Object.keys(item) : [];
      const key = keys.length === 1 ? keys[0]! : "";
      const id = (item as Record<string, unknown>)?.[key];
      if ((key !== "file_id" && key !== "folder_id") || typeof id !== "string" || !FILE_ID_PATTERN.test(id) || seen.has(`${key}:${id}`)) throw this.bad(name, what);
      seen.add(`${key}:${id}`);
      return key === "file_id" ? { file_id: id } : { folder_id: id };
    });
  }

  /** A URL secret of the shape `pattern` (a token of another shape would never be looked up). */
  token(name: string, pattern: RegExp): string {
    const v = this.string(name);
    if (!pattern.test(v)) throw this.bad(name, "a token of 32 URL-safe characters");
    return v;
  }

  /** A user's quota: bytes, null (the importing server's QUOTA_BYTES) or "none" ({@link NO_QUOTA}). */
  quota(name: string): number | null {
    this.seen(name);
    const v = this.o[name];
    if (v === null) return null;
    if (v === "none") return NO_QUOTA;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw this.bad(name, 'a whole number of bytes, null or "none"');
    return v;
  }

  /** Space-separated scope names, stored in canonical order. */
  scopes(name: string): string {
    const v = this.string(name);
    try {
      return formatScopes(parseScopes(v));
    } catch {
      throw this.bad(name, `space-separated scopes of ${SCOPES.join(", ")}`);
    }
  }

  checksum(name: string): string {
    const v = this.string(name);
    if (!B64_CRC.test(v)) throw this.bad(name, "a base64 CRC32C (8 characters ending in ==)");
    return v;
  }

  sha256(name: string): Uint8Array {
    const v = this.string(name);
    if (!B64_SHA256.test(v)) throw this.bad(name, "a base64 SHA-256 (44 characters ending in =)");
    const bytes = Buffer.from(v, "base64");
    if (bytes.toString("base64") !== v) throw this.bad(name, "canonical base64");
    return new Uint8Array(bytes);
  }

  /** A folder's name (domain/folder.ts checkFolderName). */
  folderName(name: string): string {
    const v = this.string(name);
    try {
      return checkFolderName(v);
    } catch (err) {
      throw this.bad(name, `a folder name (${(err as AppError).message})`);
    }
  }

  visibility(name: string): Visibility {
    const v = this.string(name);
    if (!(VISIBILITIES as readonly string[]).includes(v)) throw this.bad(name, `one of ${VISIBILITIES.join(", ")}`);
    return v as Visibility;
  }

  /** @throws when the record has fields that were not read */
  done(type: string): void {
    const extra = Object.keys(this.o).filter((k) => !this.read.has(k));
    if (extra.length > 0) throw damaged(this.offset, `a ${type} record has unknown field(s) ${extra.map((k) => `"${k}"`).join(", ")} (written by a newer cubby?)`);
  }
}
