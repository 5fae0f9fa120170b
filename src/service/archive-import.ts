/**
 * `cubby import`: loads an archive written by `cubby export` (docs/archive.md) into whatever
 * stores are configured, over the two ports only. All or nothing:
 *
 * 1. Each record is checked as it arrives: well-formed, its user defined earlier in the archive,
 *    not a second time in the archive, and not already in the destination (a user by ID, e-mail
 *    or sign-in identity; a key by ID or hash; a session, folder or file by ID; a guest upload
 *    link or share link by ID or token). A file's guest upload link and folder, a folder's
 *    parent, and a share link's file or folder when the archive holds it, come earlier with the
 *    same owner; a share link whose file or folder the archive does not hold (deleted before
 *    the export) may not name one the destination has, which it would then serve. Names are
 *    unique within a folder as CONTRACT §12 says (service/folder-names.ts). Import never
 *    overwrites: the first clash stops it before another byte is stored.
 * 2. Each file's content streams into the blob store under a new name, its CRC32C verified by
 *    the store on the way (`expectedChecksum`); the rows wait in memory, each with its new blob.
 * 3. The trailer's counts and the CRC32C of the whole archive are checked, and nothing may follow.
 * 4. One metadata transaction inserts every row: users (with their quota and disabled state),
 *    keys, sessions, guest upload links, folders (parents first), files and the folders they
 *    are in, WebDAV dead properties (each after its resource in the archive, of the same owner,
 *    not twice), share links.
 *
 * When any step fails, every blob staged so far is removed and the error rethrown: the stores
 * are as they were. (A clash that appears between step 1 and step 4, written by someone else,
 * fails the transaction on its unique constraint, with the same outcome.)
 */
import { checksumToBase64, crc32cUpdate } from "../domain/checksum.ts";
import type { FileRecord } from "../domain/file.ts";
import { AppError } from "../errors.ts";
import type { UploadLinkRow } from "../domain/upload-link.ts";
import type { ShareRow } from "../domain/share.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { ApiKeyRow, BlobStore, MetadataStore, SessionRow } from "../storage/ports.ts";
import { checkMagic, damaged, decodeRecord, MAX_RECORD_BYTES, type ArchiveCounts, type ArchivedDavProperty, type ArchivedFile, type ArchivedUser, type Trailer } from "./archive-format.ts";
import { ArchiveReader } from "./archive-stream.ts";

/** What was imported. */
export type ImportReport = ArchiveCounts;

/**
 * Reads the archive from `source` and commits it (see the module comment).
 * @param source chunks that are not reused once handed out
 * @param opts.signal stops the import before the commit (its reason is thrown; nothing is changed)
 * @throws AppError invalid_argument when the archive is damaged, truncated, of another format,
 *   or holds a row the destination already has; whatever the stores throw. Nothing is changed.
 */
export async function importArchive(
  deps: { store: MetadataStore; blobs: BlobStore },
  source: AsyncIterable<Uint8Array>,
  opts: { signal?: AbortSignal | undefined } = {},
): Promise<ImportReport> {
  const importer = new Importer(deps, new ArchiveReader(source, opts.signal));
  try {
    await importer.read();
    opts.signal?.throwIfAborted();
    await importer.commit();
    return importer.counts();
  } catch (err) {
    await importer.unstage();
    throw err;
  }
}

/** Refusal to overwrite: bad input as far as the command line is concerned (exit status 2). */
function exists(what: string): AppError {
  return new AppError("invalid_argument", `refusing to import: ${what} already exists here, and import never overwrites; nothing was changed`);
}

class Importer {
  private readonly users: ArchivedUser[] = [];
  private readonly keys: ApiKeyRow[] = [];
  private readonly sessions: SessionRow[] = [];
  private readonly uploadLinks: UploadLinkRow[] = [];
  private readonly folders: FolderRow[] = [];
  /** Rows with their new blob names: about 1 KB of memory per file (docs/archive.md). */
  private readonly files: FileRecord[] = [];
  /** Which folder each file goes in (file ID, folder ID), in archive order. */
  private readonly memberships: [string, string][] = [];
  private readonly shares: ShareRow[] = [];
  /** Dead properties, by owner and resource (`{owner}\n{resource}`), in archive order. */
  private readonly properties = new Map<string, ArchivedDavProperty[]>();
  private propertyCount = 0;
  /** `{owner}\n{resource}\n{namespace}\n{name}` of each dead property, to refuse one twice. */
  private readonly propertyNames = new Set<string>();
  /** Blobs written and not yet referenced by a committed row. */
  private readonly staged: string[] = [];
  private bytes = 0;
  // What the archive defined so far, to refuse duplicates and references to unknown users.
  private readonly userIds = new Set<string>();
  private readonly emails = new Set<string>();
  private readonly identities = new Set<string>();
  private readonly keyIds = new Set<string>();
  private readonly keyHashes = new Set<string>();
  private readonly sessionIds = new Set<string>();
  /** Owner by link ID, and by file ID: what later records must agree with. */
  private readonly linkOwners = new Map<string, string>();
  private readonly linkTokens = new Set<string>();
  private readonly fileOwners = new Map<string, string>();
  private readonly shareIds = new Set<string>();
  private readonly shareTokens = new Set<string>();
  /** Owner by folder ID. */
  private readonly folderOwners = new Map<string, string>();
  /**
   * The names each folder holds (`{folder ID}/{name}`), and the folder names at each user's
   * top (`{user ID}:{name}`): CONTRACT §12's rule, which the destination's service keeps.
   */
  private readonly names = new Set<string>();

  constructor(
    private readonly deps: { store: MetadataStore; blobs: BlobStore },
    private readonly reader: ArchiveReader,
  ) {}

  counts(): ImportReport {
    return {
      users: this.users.length,
      keys: this.keys.length,
      sessions: this.sessions.length,
      uploadLinks: this.uploadLinks.length,
      files: this.files.length,
      shares: this.shares.length,
      bytes: this.bytes,
      folders: this.folders.length,
      davProperties: this.propertyCount,
    };
  }

  /** Steps 1 to 3 of the module comment. */
  async read(): Promise<void> {
    const magic = await this.reader.line(MAX_RECORD_BYTES);
    if (magic === undefined) throw new AppError("invalid_argument", "not a cubby archive (it is empty)");
    const version = checkMagic(magic);
    for (;;) {
      const offset = this.reader.offset;
      const crcBefore = this.reader.checksum();
      const line = await this.reader.line(MAX_RECORD_BYTES);
      if (line === undefined) throw damaged(offset, "the archive ends before its trailer (truncated?)");
      const record = decodeRecord(line, offset, version);
      switch (record.type) {
        case "user":
          await this.user(record.row, offset);
          break;
        case "key":
          await this.key(record.row, offset);
          break;
        case "session":
          await this.session(record.row, offset);
          break;
        case "upload_link":
          await this.uploadLink(record.row, offset);
          break;
        case "folder":
          await this.folder(record.row, offset);
          break;
        case "file":
          await this.file(record.row, offset);
          break;
        case "share":
          await this.share(record.row, offset);
          break;
        case "dav_property":
          this.property(record.row, offset);
          break;
        case "end":
          return this.trailer(record.trailer, crcBefore, offset);
      }
    }
  }

  private async user(row: ArchivedUser, offset: number): Promise<void> {
    const identity = row.issuer === null ? undefined : `${row.issuer}\n${row.subject}`;
    if (this.userIds.has(row.id)) throw damaged(offset, `user ID ${row.id} appears twice`);
    if (this.emails.has(row.email)) throw damaged(offset, `the e-mail address ${row.email} appears twice`);
    if (identity !== undefined && this.identities.has(identity)) throw damaged(offset, `the sign-in identity of ${row.email} appears twice`);
    const { users } = this.deps.store;
    if ((await users.byId(row.id)) !== undefined) throw exists(`user ${row.email} (ID ${row.id})`);
    if ((await users.byEmail(row.email)) !== undefined) throw exists(`a user with the e-mail address ${row.email}`);
    if (row.issuer !== null && row.subject !== null && (await users.byIdentity(row.issuer, row.subject)) !== undefined) {
      throw exists(`a user signed in as subject ${row.subject} of ${row.issuer}`);
    }
    this.userIds.add(row.id);
    this.emails.add(row.email);
    if (identity !== undefined) this.identities.add(identity);
    this.users.push(row);
  }

  private async key(row: ApiKeyRow, offset: number): Promise<void> {
    const hash = Buffer.from(row.secretHash).toString("base64");
    this.knownUser(row.userId, `API key ${row.id}`, offset);
    if (this.keyIds.has(row.id)) throw damaged(offset, `API key ID ${row.id} appears twice`);
    if (this.keyHashes.has(hash)) throw damaged(offset, `the hash of API key ${row.id} appears twice`);
    const { keys } = this.deps.store;
    if ((await keys.byId(row.id)) !== undefined) throw exists(`API key ${row.id}`);
    if ((await keys.byHash(row.secretHash)) !== undefined) throw exists(`the API key of archived key ${row.id} (same hash)`);
    this.keyIds.add(row.id);
    this.keyHashes.add(hash);
    this.keys.push(row);
  }

  private async session(row: SessionRow, offset: number): Promise<void> {
    this.knownUser(row.userId, `session ${row.id}`, offset);
    if (this.sessionIds.has(row.id)) throw damaged(offset, `session ID ${row.id} appears twice`);
    if ((await this.deps.store.sessions.get(row.id)) !== undefined) throw exists(`session ${row.id}`);
    this.sessionIds.add(row.id);
    this.sessions.push(row);
  }

  private async uploadLink(row: UploadLinkRow, offset: number): Promise<void> {
    this.knownUser(row.ownerId, `guest upload link ${row.id}`, offset);
    if (this.linkOwners.has(row.id)) throw damaged(offset, `guest upload link ID ${row.id} appears twice`);
    if (this.linkTokens.has(row.token)) throw damaged(offset, `the token of guest upload link ${row.id} appears twice`);
    const { uploadLinks } = this.deps.store;
    if ((await uploadLinks.get(row.id)) !== undefined) throw exists(`guest upload link ${row.id}`);
    if ((await uploadLinks.byToken(row.token)) !== undefined) throw exists(`the guest upload link of archived link ${row.id} (same token)`);
    this.linkOwners.set(row.id, row.ownerId);
    this.linkTokens.add(row.token);
    this.uploadLinks.push(row);
  }

  private async folder(row: FolderRow, offset: number): Promise<void> {
    this.knownUser(row.ownerId, `folder ${row.id}`, offset);
    if (this.folderOwners.has(row.id)) throw damaged(offset, `folder ID ${row.id} appears twice`);
    if (row.parentId !== null) {
      const parentOwner = this.folderOwners.get(row.parentId);
      if (parentOwner === undefined) throw damaged(offset, `folder ${row.id} is in folder ${row.parentId}, which no earlier record defines`);
      if (parentOwner !== row.ownerId) throw damaged(offset, `folder ${row.id} is in folder ${row.parentId} of another user`);
    }
    this.nameFree(row.parentId === null ? `${row.ownerId}:${row.name}` : `${row.parentId}/${row.name}`, `folder ${row.id}`, offset);
    if ((await this.deps.store.folders.get(row.id)) !== undefined) throw exists(`folder ${row.id}`);
    this.folderOwners.set(row.id, row.ownerId);
    this.folders.push(row);
  }

  /** Takes `key` (see {@link names}) for `what`. @throws damaged when it is taken */
  private nameFree(key: string, what: string, offset: number): void {
    if (this.names.has(key)) throw damaged(offset, `${what}: its folder holds its name already`);
    this.names.add(key);
  }

  private async share(row: ShareRow, offset: number): Promise<void> {
    this.knownUser(row.ownerId, `share link ${row.id}`, offset);
    if (this.shareIds.has(row.id)) throw damaged(offset, `share link ID ${row.id} appears twice`);
    if (this.shareTokens.has(row.token)) throw damaged(offset, `the token of share link ${row.id} appears twice`);
    if (row.items !== null) {
      // A share of several items: each item the archive holds is its owner's; one it does not
      // hold (deleted before the export) must not be another's row of that ID here.
      for (const item of row.items) {
        const [kind, id, owners] = "file_id" in item ? (["file", item.file_id, this.fileOwners] as const) : (["folder", item.folder_id, this.folderOwners] as const);
        const owner = owners.get(id);
        if (owner !== undefined && owner !== row.ownerId) throw damaged(offset, `share link ${row.id} shares ${kind} ${id}, which its owner does not own`);
        const here = owner === undefined ? await (kind === "file" ? this.deps.store.files.get(id) : this.deps.store.folders.get(id)) : undefined;
        if (here !== undefined) throw exists(`${kind} ${id}, which archived share link ${row.id} refers to`);
      }
      if ((await this.deps.store.shares.byId(row.id)) !== undefined) throw exists(`share link ${row.id}`);
      if ((await this.deps.store.shares.byToken(row.token)) !== undefined) throw exists(`the share link of archived share ${row.id} (same token)`);
      this.shareIds.add(row.id);
      this.shareTokens.add(row.token);
      this.shares.push(row);
      return;
    }
    if (row.folderId !== null) {
      const folderOwner = this.folderOwners.get(row.folderId);
      if (folderOwner !== undefined && folderOwner !== row.ownerId) throw damaged(offset, `share link ${row.id} shares folder ${row.folderId}, which its owner does not own`);
      if ((await this.deps.store.shares.byId(row.id)) !== undefined) throw exists(`share link ${row.id}`);
      if ((await this.deps.store.shares.byToken(row.token)) !== undefined) throw exists(`the share link of archived share ${row.id} (same token)`);
      if (folderOwner === undefined && (await this.deps.store.folders.get(row.folderId)) !== undefined) {
        throw exists(`folder ${row.folderId}, which archived share link ${row.id} refers to`);
      }
      this.shareIds.add(row.id);
      this.shareTokens.add(row.token);
      this.shares.push(row);
      return;
    }
    const fileOwner = this.fileOwners.get(row.fileId);
    if (fileOwner !== undefined && fileOwner !== row.ownerId) throw damaged(offset, `share link ${row.id} shares file ${row.fileId}, which its owner does not own`);
    const { shares, files } = this.deps.store;
    if ((await shares.byId(row.id)) !== undefined) throw exists(`share link ${row.id}`);
    if ((await shares.byToken(row.token)) !== undefined) throw exists(`the share link of archived share ${row.id} (same token)`);
    // The share of a file deleted before the export answers 410; pointed at someone else's file
    // of that ID here, it would serve it.
    if (fileOwner === undefined && (await files.get(row.fileId)) !== undefined) throw exists(`file ${row.fileId}, which archived share link ${row.id} refers to`);
    this.shareIds.add(row.id);
    this.shareTokens.add(row.token);
    this.shares.push(row);
  }

  private async file(row: ArchivedFile, offset: number): Promise<void> {
    this.knownUser(row.ownerId, `file ${row.id}`, offset);
    if (this.fileOwners.has(row.id)) throw damaged(offset, `file ID ${row.id} appears twice`);
    if (row.uploadLinkId !== null) {
      const linkOwner = this.linkOwners.get(row.uploadLinkId);
      if (linkOwner === undefined) throw damaged(offset, `file ${row.id} arrived through guest upload link ${row.uploadLinkId}, which no earlier record defines`);
      if (linkOwner !== row.ownerId) throw damaged(offset, `file ${row.id} arrived through guest upload link ${row.uploadLinkId} of another user`);
    }
    if (row.folderId !== null) {
      const folderOwner = this.folderOwners.get(row.folderId);
      if (folderOwner === undefined) throw damaged(offset, `file ${row.id} is in folder ${row.folderId}, which no earlier record defines`);
      if (folderOwner !== row.ownerId) throw damaged(offset, `file ${row.id} is in folder ${row.folderId} of another user`);
      // A file with no name never clashes, nor does one past its expiry (service/folder-names.ts):
      // an export may hold such a file beside a live one of its name.
      const expired = row.expiresAt !== null && row.expiresAt <= Date.now() * 1000;
      if (row.name !== "" && !expired) this.nameFree(`${row.folderId}/${row.name}`, `file ${row.id}`, offset);
    }
    if ((await this.deps.store.files.get(row.id)) !== undefined) throw exists(`file ${row.id}`);
    this.fileOwners.set(row.id, row.ownerId);

    const what = `the content of file ${row.id}`;
    const start = this.reader.offset;
    let crc = 0;
    const content = this.reader.bytes(row.size, what);
    const counted = (async function* () {
      for await (const piece of content) {
        crc = crc32cUpdate(crc, piece);
        yield piece;
      }
    })();
    let blob: string;
    try {
      // The store verifies the CRC32C before the blob is durable, and leaves nothing when it differs.
      blob = (await this.deps.blobs.write(counted, { maxBytes: row.size, expectedChecksum: row.checksum })).name;
    } catch (err) {
      const actual = checksumToBase64(crc);
      if (this.reader.offset === start + row.size && actual !== row.checksum) {
        throw damaged(start, `${what} has CRC32C ${actual}, its record says ${row.checksum}`);
      }
      throw err;
    }
    this.staged.push(blob);
    await this.reader.newline(what);
    const { folderId, ...record } = row;
    this.files.push({ ...record, blob });
    if (folderId !== null) this.memberships.push([row.id, folderId]);
    this.bytes += row.size;
  }

  private property(row: ArchivedDavProperty, offset: number): void {
    this.knownUser(row.ownerId, `a dead property of ${row.resource}`, offset);
    const [kind, id] = row.resource.split(":") as [string, string | undefined];
    const owner = kind === "file" ? this.fileOwners.get(id!) : kind === "folder" ? this.folderOwners.get(id!) : row.ownerId;
    if (owner === undefined) throw damaged(offset, `a dead property of ${row.resource}, which no earlier record defines`);
    if (owner !== row.ownerId) throw damaged(offset, `a dead property of ${row.resource} belongs to another user`);
    const key = `${row.ownerId}\n${row.resource}`;
    const unique = `${key}\n${row.namespace}\n${row.name}`;
    if (this.propertyNames.has(unique)) throw damaged(offset, `dead property {${row.namespace}}${row.name} of ${row.resource} appears twice`);
    this.propertyNames.add(unique);
    const list = this.properties.get(key);
    if (list === undefined) this.properties.set(key, [row]);
    else list.push(row);
    this.propertyCount++;
  }

  private knownUser(userId: string, what: string, offset: number): void {
    if (!this.userIds.has(userId)) throw damaged(offset, `${what} belongs to user ${userId}, whom no earlier record defines`);
  }

  private async trailer(trailer: Trailer, crcBefore: string, offset: number): Promise<void> {
    if (trailer.crc32c !== crcBefore) {
      throw damaged(offset, `the archive's CRC32C is ${crcBefore}, its trailer says ${trailer.crc32c} (changed after it was written?)`);
    }
    const found = this.counts();
    for (const k of Object.keys(found) as (keyof ArchiveCounts)[]) {
      const what = k === "uploadLinks" ? "upload links" : k;
      if (found[k] !== trailer[k]) throw damaged(offset, `the trailer counts ${trailer[k]} ${what}, the archive holds ${found[k]}`);
    }
    if (!(await this.reader.atEnd())) throw damaged(this.reader.offset, "bytes follow the trailer");
  }

  /** Step 4: every row in one transaction; the staged blobs are then referenced. */
  async commit(): Promise<void> {
    await this.deps.store.transaction(async (tx) => {
      for (const { quotaBytes, disabledAt, lastSeenAt, ...identity } of this.users) {
        await tx.users.insert(identity);
        if (quotaBytes !== null) await tx.users.setQuota(identity.id, quotaBytes);
        if (disabledAt !== null) await tx.users.setDisabled(identity.id, disabledAt);
        if (lastSeenAt !== null) await tx.users.touch(identity.id, lastSeenAt);
      }
      for (const k of this.keys) await tx.keys.insert(k);
      for (const s of this.sessions) await tx.sessions.insert(s);
      for (const l of this.uploadLinks) await tx.uploadLinks.insert(l);
      // In archive order: every folder's parent comes before it.
      for (const f of this.folders) await tx.folders.insert(f);
      for (const f of this.files) await tx.files.insert(f);
      for (const [fileId, folderId] of this.memberships) await tx.folders.setFolder(fileId, folderId);
      for (const rows of this.properties.values()) await tx.dav.applyProperties(rows[0]!.ownerId, rows[0]!.resource, rows, []);
      for (const s of this.shares) await tx.shares.insert(s);
    });
    this.staged.length = 0;
  }

  /** Removes every blob staged and not committed. */
  async unstage(): Promise<void> {
    for (const name of this.staged.splice(0)) {
      await this.deps.blobs.remove(name).catch((err) => console.error(`blob ${name}: removal failed (the orphan sweep will remove it): ${err}`));
    }
  }
}
