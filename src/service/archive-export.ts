/**
 * `cubby export`: every user (with their quota and disabled state), API key (hash only), live
 * session if asked for, guest upload link, folder, file row (with its folder) and blob, WebDAV
 * dead property (each resource's right after the resource: a user's top after the user, a
 * folder's after the folder, a file's after its content), and share link of the configured stores, as one streamed archive (docs/archive.md). Written over the two
 * ports only, so it reads SQLite + disk and PostgreSQL + S3 alike.
 *
 * The ports give no snapshot, so the archive is consistent row by row, as each was committed
 * when read, not as of one instant: stop writers for an exact copy. What a concurrent change
 * does is decided here, so that the archive always imports:
 * - a file deleted after its row was read (its blob is gone) is left out and counted;
 * - a file replaced meanwhile is exported with its new content;
 * - a user who appeared after the users were read is written just before the first record
 *   that refers to them (every record's user comes before it), and so is a guest upload link
 *   that appeared after the links were read, before the first file that arrived through it;
 * - a folder is written after its parent (reading the parent first when it comes later in ID
 *   order, or appeared after the folders were read), and before the first file in it; a folder
 *   gone by then is left out (its sub-folders went with it), and a file whose folder is gone is
 *   at the top (it was moved out before the folder was deleted);
 * - a share link read after its file was left out (deleted, or created after the files were
 *   read) is written as it is: imported, it answers 410 as the share of a deleted file does.
 * A blob that is missing while its row still names it, or whose bytes do not match the row's
 * size and CRC32C, stops the export: that is damage (`cubby fsck`), not a race.
 */
import { checksumToBase64, crc32cUpdate } from "../domain/checksum.ts";
import type { FileRecord } from "../domain/file.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { Clock } from "../domain/time.ts";
import type { UploadLinkRow } from "../domain/upload-link.ts";
import type { BlobChunk, BlobStore, MetadataStore } from "../storage/ports.ts";
import { ARCHIVE_MAGIC, encodeRecord, type ArchiveCounts, type ArchiveRecord } from "./archive-format.ts";
import { ArchiveWriter, type ArchiveSink } from "./archive-stream.ts";

export interface ExportOptions {
  /** Include sessions that have not expired (signed-in browsers stay signed in). */
  sessions: boolean;
  /** Stops the export (its reason is thrown) before the next write. */
  signal?: AbortSignal | undefined;
}

export interface ExportReport extends ArchiveCounts {
  /** Files deleted while the export ran, left out. */
  skippedFiles: number;
}

/** How blobs are read: two buffers, so the store reads one while the other is written out. */
const READ_PLAN = { chunkBytes: 1024 * 1024, buffers: 2 };
/** A file replaced again and again while being exported is given up on after this many tries. */
const MAX_ATTEMPTS = 5;

/**
 * Writes the archive to `sink`.
 * @throws Error when a blob is missing or damaged (see the module comment), or whatever the
 *   stores or the sink throw; the archive is then incomplete (no trailer), which import refuses
 */
export async function exportArchive(
  deps: { store: MetadataStore; blobs: BlobStore; clock: Clock },
  sink: ArchiveSink,
  opts: ExportOptions,
): Promise<ExportReport> {
  const { signal } = opts;
  const checked: ArchiveSink = {
    async write(bytes) {
      signal?.throwIfAborted();
      await sink.write(bytes);
    },
  };
  const exporter = new Exporter(deps, new ArchiveWriter(checked));
  return exporter.run(opts);
}

class Exporter {
  private readonly report: ExportReport = { users: 0, keys: 0, sessions: 0, uploadLinks: 0, files: 0, shares: 0, bytes: 0, folders: 0, davProperties: 0, skippedFiles: 0 };
  /** IDs of the users written so far: one string per user (and per link, below) is the export's only growing memory. */
  private readonly written = new Set<string>();
  /** IDs of the guest upload links written so far. */
  private readonly writtenLinks = new Set<string>();
  /** IDs of the folders written so far; null for those found gone. */
  private readonly writtenFolders = new Map<string, boolean>();
  /** Folders whose parents are being written: a chain that meets one again changed meanwhile. */
  private readonly writingFolders = new Set<string>();

  constructor(
    private readonly deps: { store: MetadataStore; blobs: BlobStore; clock: Clock },
    private readonly out: ArchiveWriter,
  ) {}

  async run(opts: ExportOptions): Promise<ExportReport> {
    const { store } = this.deps;
    await this.out.text(`${ARCHIVE_MAGIC}\n`);
    for await (const user of store.users.all()) {
      if (!this.written.has(user.id)) await this.userWritten(user.id);
    }
    for await (const key of store.keys.all()) {
      // A key whose user is gone was deleted with them.
      if (await this.userWritten(key.userId)) await this.record({ type: "key", row: key });
    }
    if (opts.sessions) {
      const now = this.deps.clock.nowMicros();
      for await (const session of store.sessions.all()) {
        if (session.expiresAt > now && (await this.userWritten(session.userId))) await this.record({ type: "session", row: session });
      }
    }
    for await (const link of store.uploadLinks.all()) {
      if (!this.writtenLinks.has(link.id)) await this.link(link);
    }
    for await (const folder of store.folders.all()) await this.folderWritten(folder.id);
    for await (const file of store.files.all()) await this.file(file);
    for await (const share of store.shares.all()) {
      // A share whose owner is gone was deleted with them; a folder's share names a folder written
      // before it, or one gone (deleted with its folder: imported, it answers 410).
      if (!(await this.userWritten(share.ownerId))) continue;
      if (share.folderId !== null) await this.folderWritten(share.folderId);
      await this.record({ type: "share", row: share });
    }
    const { skippedFiles: _, ...counts } = this.report;
    await this.out.text(encodeRecord({ type: "end", trailer: { ...counts, crc32c: this.out.checksum() } }));
    await this.out.flush();
    return this.report;
  }

  private async record(record: Exclude<ArchiveRecord, { type: "end" | "file" }>): Promise<void> {
    await this.out.text(encodeRecord(record));
    switch (record.type) {
      case "user":
        this.written.add(record.row.id);
        this.report.users++;
        await this.properties(record.row.id, "root");
        break;
      case "dav_property":
        this.report.davProperties++;
        break;
      case "upload_link":
        this.writtenLinks.add(record.row.id);
        this.report.uploadLinks++;
        break;
      case "key":
        this.report.keys++;
        break;
      case "session":
        this.report.sessions++;
        break;
      case "share":
        this.report.shares++;
        break;
      case "folder":
        this.writtenFolders.set(record.row.id, true);
        this.report.folders++;
        await this.properties(record.row.ownerId, `folder:${record.row.id}`);
        break;
    }
  }

  /** Writes the dead properties of a resource just written (at most the per-resource cap, one query). */
  private async properties(ownerId: string, resource: string): Promise<void> {
    for (const p of await this.deps.store.dav.properties(ownerId, resource)) await this.record({ type: "dav_property", row: { ownerId, resource, ...p } });
  }

  /**
   * Writes a folder's record as it is now, after its parent's and its owner's, unless it was
   * written already. @returns false when it no longer exists (nor, then, does what was in it)
   * @throws Error when the folders moved into a chain that meets itself while they were read
   */
  private async folderWritten(id: string): Promise<boolean> {
    const known = this.writtenFolders.get(id);
    if (known !== undefined) return known;
    if (this.writingFolders.has(id)) throw new Error(`folder ${id}: the folders were moved while they were exported; run the export again`);
    this.writingFolders.add(id);
    try {
      const folder: FolderRow | undefined = await this.deps.store.folders.get(id);
      const present =
        folder !== undefined && (folder.parentId === null || (await this.folderWritten(folder.parentId))) && (await this.userWritten(folder.ownerId));
      if (present) await this.record({ type: "folder", row: folder });
      else this.writtenFolders.set(id, false);
      return present;
    } finally {
      this.writingFolders.delete(id);
    }
  }

  /**
   * Writes the user's record, with their quota and disabled state as they are now, if it was not
   * written yet. @returns false when the user no longer exists
   */
  private async userWritten(id: string): Promise<boolean> {
    if (this.written.has(id)) return true;
    const user = await this.deps.store.users.account(id);
    if (user === undefined) return false;
    await this.record({ type: "user", row: user });
    return true;
  }

  /** Writes a guest upload link's record (and its owner's before it) unless its owner is gone. */
  private async link(link: UploadLinkRow): Promise<void> {
    if (await this.userWritten(link.ownerId)) await this.record({ type: "upload_link", row: link });
  }

  /**
   * Writes the link a file arrived through if it was not written yet (it appeared after the links
   * were read). @returns false when the link no longer exists (only with its owner, who owns the file)
   */
  private async linkWritten(id: string): Promise<boolean> {
    if (this.writtenLinks.has(id)) return true;
    const link = await this.deps.store.uploadLinks.get(id);
    if (link === undefined) return false;
    await this.link(link);
    return this.writtenLinks.has(id);
  }

  /** Writes a file's record and content, following a concurrent replace or delete. */
  private async file(first: FileRecord): Promise<void> {
    let row = first;
    for (let attempt = 1; ; attempt++) {
      const chunks = this.deps.blobs.read(row.blob, { start: 0, length: row.size }, READ_PLAN)[Symbol.asyncIterator]();
      let head: IteratorResult<BlobChunk>;
      try {
        // Opening the blob is what fails when it is gone; once open, it reads to the end.
        head = await chunks.next();
      } catch (err) {
        const now = await this.deps.store.files.get(row.id);
        if (now === undefined) {
          this.report.skippedFiles++;
          return;
        }
        if (now.blob === row.blob || attempt === MAX_ATTEMPTS) {
          throw new Error(`file ${row.id}: cannot read its blob ${row.blob} (${(err as Error).message}); run cubby fsck`, { cause: err });
        }
        row = now;
        continue;
      }
      try {
        await this.content(row, head, chunks);
      } finally {
        await chunks.return?.();
      }
      return;
    }
  }

  private async content(row: FileRecord, head: IteratorResult<BlobChunk>, chunks: AsyncIterator<BlobChunk>): Promise<void> {
    if (!(await this.userWritten(row.ownerId))) {
      // The owner was deleted, and their files with them, after this row was read.
      this.report.skippedFiles++;
      return;
    }
    if (row.uploadLinkId !== null && !(await this.linkWritten(row.uploadLinkId))) {
      // A link goes only with its owner, and the file with them: deleted after the owner was read.
      this.report.skippedFiles++;
      return;
    }
    const folderId = (await this.deps.store.folders.folderOf(row.id)) ?? null;
    const { blob: _, ...fields } = row;
    const archived = { ...fields, folderId: folderId !== null && (await this.folderWritten(folderId)) ? folderId : null };
    await this.out.text(encodeRecord({ type: "file", row: archived }));
    let crc = 0;
    let size = 0;
    for (let next = head; next.done !== true; next = await chunks.next()) {
      const chunk = next.value;
      crc = crc32cUpdate(crc, chunk.bytes);
      size += chunk.bytes.byteLength;
      await this.out.bytes(chunk.bytes);
      chunk.release();
    }
    const checksum = checksumToBase64(crc);
    if (size !== row.size || checksum !== row.checksum) {
      throw new Error(
        `file ${row.id}: its blob ${row.blob} holds ${size} bytes with CRC32C ${checksum}, its row records ${row.size} bytes with ${row.checksum}; run cubby fsck`,
      );
    }
    await this.out.text("\n");
    this.report.files++;
    this.report.bytes += size;
    await this.properties(row.ownerId, `file:${row.id}`);
  }
}
