/**
 * The records of a cubby archive (docs/archive.md): one JSON object per line for each user, API
 * key, session and file, and a trailer. Encoding is exact and decoding is strict: a record with
 * a missing, unknown or ill-typed field is refused rather than guessed at, because an importer
 * that dropped a field it did not know (a key's scopes, say) would hand out more than the
 * source did. Pure functions, no I/O.
 */
import { AppError } from "../errors.ts";
import { VISIBILITIES, type FileRecord, type Visibility } from "../domain/file.ts";
import { FILE_ID_PATTERN } from "../domain/ids.ts";
import { ALL_SCOPES, formatScopes, parseScopes, SCOPES } from "../domain/principal.ts";
import type { ApiKeyRow, SessionRow, UserRow } from "../storage/ports.ts";

/** The first line of every archive, without its "\n"; the number is the format's version. */
export const ARCHIVE_MAGIC = "cubby-archive 2";
/** The versions this cubby reads: 1 (before key scopes and expiries) and 2. */
export type ArchiveVersion = 1 | 2;
const MAGIC_PREFIX = "cubby-archive ";

/** The longest record line accepted, "\n" excluded: a damaged archive cannot make a reader buffer more. */
export const MAX_RECORD_BYTES = 64 * 1024;

/**
 * A file's row as archived: everything but the blob name, which belongs to the source's blob
 * store, and the guest upload link it arrived through (archives carry no links; imported files
 * have none).
 */
export type ArchivedFile = Omit<FileRecord, "blob" | "uploadLinkId">;

/** What an archive holds; the trailer repeats it so a reader can tell a whole archive from a cut one. */
export interface ArchiveCounts {
  users: number;
  keys: number;
  sessions: number;
  files: number;
  /** Content bytes of every file together. */
  bytes: number;
}

export interface Trailer extends ArchiveCounts {
  /** CRC32C (base64, as file checksums) of every archive byte before the trailer's line. */
  crc32c: string;
}

export type ArchiveRecord =
  | { type: "user"; row: UserRow }
  | { type: "key"; row: ApiKeyRow }
  | { type: "session"; row: SessionRow }
  | { type: "file"; row: ArchivedFile }
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
      return { type: "user", id: u.id, email: u.email, issuer: u.issuer, subject: u.subject, created_at: u.createdAt };
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
      };
    }
    case "end":
      return { type: "end", ...record.trailer };
  }
}

/**
 * The archive's first line (without "\n") must be {@link ARCHIVE_MAGIC} or version 1's.
 * @returns the archive's version
 * @throws AppError invalid_argument naming what the file is instead
 */
export function checkMagic(line: string): ArchiveVersion {
  if (line === ARCHIVE_MAGIC) return 2;
  if (line === `${MAGIC_PREFIX}1`) return 1;
  if (line.startsWith(MAGIC_PREFIX)) {
    throw new AppError("invalid_argument", `archive format "${line}" is not one this cubby reads (it reads "${MAGIC_PREFIX}1" and "${ARCHIVE_MAGIC}")`);
  }
  throw new AppError("invalid_argument", `not a cubby archive (it does not start with "${ARCHIVE_MAGIC}")`);
}

/**
 * One record line (without "\n").
 * @param offset where the line starts in the archive, for messages
 * @throws AppError invalid_argument (see {@link damaged}) for anything but a well-formed record
 */
export function decodeRecord(line: string, offset: number, version: ArchiveVersion = 2): ArchiveRecord {
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
      const row: UserRow = { id: f.id("id"), email: f.text("email"), issuer: f.optionalText("issuer"), subject: f.optionalText("subject"), createdAt: f.count("created_at") };
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
        scopes: f.since("scopes", formatScopes(ALL_SCOPES), (n) => f.scopes(n)),
        expiresAt: f.since("expires_at", null, (n) => f.optionalCount(n)),
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
        expiresAt: f.since("expires_at", null, (n) => f.optionalCount(n)),
      };
      f.done("file");
      return { type: "file", row };
    }
    case "end": {
      const trailer: Trailer = {
        users: f.count("users"),
        keys: f.count("keys"),
        sessions: f.count("sessions"),
        files: f.count("files"),
        bytes: f.count("bytes"),
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
   * A field of version 2 (CONTRACT §8's key scopes and expiries): read as `read` says; in a
   * version 1 archive, `absent` (and a record that has the field anyway is refused as unknown).
   */
  since<T>(name: string, absent: T, read: (name: string) => T): T {
    return this.version >= 2 ? read(name) : absent;
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
