/**
 * File use cases shared by every transport (REST, RPC): create, read, list, replace content,
 * update metadata, publish, unpublish, delete, and access to content by URL. Authorization
 * follows CONTRACT §2: a file another user may not see answers exactly like a missing one.
 */
import type { Statement } from "bun:sqlite";
import { and, desc, eq, lt, or } from "drizzle-orm";
import { AppError } from "../errors.ts";
import type { FileRecord, Visibility } from "../domain/file.ts";
import { newFileId } from "../domain/ids.ts";
import type { PageCursor } from "../domain/params.ts";
import type { Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import type { BlobStore, StagedBlob } from "../storage/blobs.ts";
import { ReadCache, type ChangeWatch } from "../storage/change-watch.ts";
import type { Db } from "../storage/db.ts";
import { files } from "../storage/schema.ts";

export interface FileServiceDeps {
  db: Db;
  blobs: BlobStore;
  clock: Clock;
  /** Largest content accepted, in bytes (MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
  /** Tells read paths when a cached lookup may be stale (any commit, by any process). */
  changes: ChangeWatch;
}

/** File lookups kept for the read paths (each entry is one row, well under a kilobyte). */
const CACHED_LOOKUPS = 10_000;

/** Raw content of an upload: an async stream of byte chunks, or null for an empty body. */
export type Content = AsyncIterable<Uint8Array> | null;

export interface CreateFileInput {
  slug: string;
  name: string;
  visibility: Visibility;
  contentType: string;
  /** CRC32C the client declared (base64); the upload fails if the content differs. */
  expectedChecksum?: string | undefined;
  content: Content;
  /**
   * The call's cancellation: once it fires (the client's deadline passed, the call was
   * cancelled or its stream reset), nothing is committed and the upload fails with its reason.
   */
  signal?: AbortSignal | undefined;
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

export interface FilePage {
  files: FileRecord[];
  /** Where the next page starts, or undefined on the last page. */
  next: PageCursor | undefined;
}

const notFound = () => new AppError("not_found", "file not found");

/** Column list mapping the files table onto FileRecord, for hand-written queries. */
export const FILE_COLUMNS =
  "id, owner_id AS ownerId, slug, name, content_type AS contentType, size, checksum, visibility, blob, created_at AS createdAt, updated_at AS updatedAt";

export class FileService {
  /** Lookup by ID is on every read path: prepared once, not rebuilt by the query builder. */
  /** Lookups by ID for reads, valid until the next commit anywhere. */
  private readonly readable: ReadCache<FileRecord | undefined>;
  private readonly byId: Statement<FileRecord, [string]>;

  constructor(private readonly deps: FileServiceDeps) {
    this.byId = deps.db.$client.prepare<FileRecord, [string]>(`SELECT ${FILE_COLUMNS} FROM files WHERE id = ?`);
    this.readable = new ReadCache(deps.changes, CACHED_LOOKUPS);
  }

  /**
   * Stores new content durably, then commits its metadata (CONTRACT §6).
   * @throws payload_too_large, invalid_argument (checksum), unavailable (disk full)
   */
  async create(principal: Principal, input: CreateFileInput): Promise<FileRecord> {
    const staged = await this.deps.blobs.write(input.content, {
      maxBytes: this.deps.maxUploadBytes,
      expectedChecksum: input.expectedChecksum,
    });
    const now = this.deps.clock.nowMicros();
    const record: FileRecord = {
      id: newFileId(),
      ownerId: principal.userId,
      slug: input.slug,
      name: input.name,
      contentType: input.contentType,
      size: staged.size,
      checksum: staged.checksum,
      visibility: input.visibility,
      blob: staged.name,
      createdAt: now,
      updatedAt: now,
    };
    await this.commitOrDiscard(staged, input.signal, () => {
      this.deps.db.insert(files).values(record).run();
    });
    return record;
  }

  /** Metadata of a file the caller may see (owner, or internal/public for any signed-in user). */
  get(principal: Principal, id: string): FileRecord {
    const file = this.findForRead(id);
    if (file === undefined || !canSee(principal, file)) throw notFound();
    return file;
  }

  /** The caller's own files, newest first, `pageSize` at a time (keyset pagination). */
  list(principal: Principal, pageSize: number, after: PageCursor | undefined): FilePage {
    const owner = eq(files.ownerId, principal.userId);
    const where =
      after === undefined
        ? owner
        : and(
            owner,
            or(lt(files.createdAt, after.createdAt), and(eq(files.createdAt, after.createdAt), lt(files.id, after.id))),
          );
    const rows = this.deps.db
      .select()
      .from(files)
      .where(where)
      .orderBy(desc(files.createdAt), desc(files.id))
      .limit(pageSize + 1)
      .all() as FileRecord[];
    const more = rows.length > pageSize;
    const page = more ? rows.slice(0, pageSize) : rows;
    const last = page[page.length - 1];
    return { files: page, next: more && last ? { createdAt: last.createdAt, id: last.id } : undefined };
  }

  /**
   * Replaces a file's content entirely; ID and URL stay. The new blob is written under a new
   * name; the old one is removed only after the commit, so readers see old or new, never a mix.
   */
  async replaceContent(principal: Principal, id: string, input: ReplaceContentInput): Promise<FileRecord> {
    // Refuse before reading the body when the caller may not write.
    this.ownedForWrite(principal, id);
    const staged = await this.deps.blobs.write(input.content, {
      maxBytes: this.deps.maxUploadBytes,
      expectedChecksum: input.expectedChecksum,
    });
    let updated!: FileRecord;
    let oldBlob = "";
    await this.commitOrDiscard(staged, input.signal, () => {
      const file = this.ownedForWrite(principal, id);
      oldBlob = file.blob;
      updated = {
        ...file,
        contentType: input.contentType,
        size: staged.size,
        checksum: staged.checksum,
        blob: staged.name,
        updatedAt: this.nextUpdate(file),
      };
      this.deps.db
        .update(files)
        .set({
          contentType: updated.contentType,
          size: updated.size,
          checksum: updated.checksum,
          blob: updated.blob,
          updatedAt: updated.updatedAt,
        })
        .where(eq(files.id, id))
        .run();
    });
    this.deps.blobs.removeLater(oldBlob);
    return updated;
  }

  /** Sets or clears slug and name, or changes visibility. Fields left undefined are kept. */
  update(principal: Principal, id: string, patch: FilePatch): FileRecord {
    return this.deps.db.transaction(
      () => {
        const file = this.ownedForWrite(principal, id);
        const next: FileRecord = {
          ...file,
          slug: patch.slug ?? file.slug,
          name: patch.name ?? file.name,
          visibility: patch.visibility ?? file.visibility,
        };
        if (next.slug === file.slug && next.name === file.name && next.visibility === file.visibility) return file;
        next.updatedAt = this.nextUpdate(file);
        this.deps.db
          .update(files)
          .set({ slug: next.slug, name: next.name, visibility: next.visibility, updatedAt: next.updatedAt })
          .where(eq(files.id, id))
          .run();
        return next;
      },
      { behavior: "immediate" },
    );
  }

  /** Makes a file public. */
  publish(principal: Principal, id: string): void {
    this.update(principal, id, { visibility: "public" });
  }

  /** Undoes publish: visibility becomes `internal`, the create default (CONTRACT §2). */
  unpublish(principal: Principal, id: string): void {
    this.update(principal, id, { visibility: "internal" });
  }

  /** Deletes a file (owner only); its blob is removed after the commit. */
  delete(principal: Principal, id: string): void {
    const blob = this.deps.db.transaction(
      () => {
        const file = this.ownedForWrite(principal, id);
        this.deps.db.delete(files).where(eq(files.id, id)).run();
        return file.blob;
      },
      { behavior: "immediate" },
    );
    this.deps.blobs.removeLater(blob);
  }

  /**
   * A file as served at its URL (CONTRACT §3): public to anyone, internal to any signed-in
   * user, private to its owner. `principalOf` is asked only for files that are not public, so
   * serving a public file never looks at credentials.
   * @throws not_found when there is no such file, or the signed-in caller may not see it;
   *   unauthenticated when an anonymous caller may not see it
   */
  openContent(principalOf: () => Principal | null, id: string): FileRecord {
    const file = this.findForRead(id);
    if (file === undefined) throw notFound();
    if (file.visibility === "public") return file;
    const principal = principalOf();
    if (principal === null) throw new AppError("unauthenticated", "sign in to open this file");
    if (!canSee(principal, file)) throw notFound();
    return file;
  }

  /** Every blob name some file refers to (for the start-up sweep). */
  referencedBlobs(): Set<string> {
    return new Set(
      this.deps.db
        .select({ blob: files.blob })
        .from(files)
        .all()
        .map((r) => r.blob),
    );
  }

  /** The row as stored now (inside a write transaction, as that transaction sees it). */
  private find(id: string): FileRecord | undefined {
    return this.byId.get(id) ?? undefined;
  }

  /**
   * The row for a read outside any transaction, from the cache while nothing has committed
   * since it was read. Never for writes: a transaction's own uncommitted changes do not move
   * the version.
   */
  private findForRead(id: string): FileRecord | undefined {
    return this.readable.get(id, () => this.find(id));
  }

  /** The file if `principal` owns it; 404 when they cannot see it, 403 when they can but do not own it. */
  private ownedForWrite(principal: Principal, id: string): FileRecord {
    const file = this.find(id);
    if (file === undefined || !canSee(principal, file)) throw notFound();
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
   * staged blob is removed so nothing is orphaned.
   */
  private async commitOrDiscard(staged: StagedBlob, signal: AbortSignal | undefined, commit: () => void): Promise<void> {
    try {
      signal?.throwIfAborted();
      this.deps.db.transaction(commit, { behavior: "immediate" });
    } catch (err) {
      await this.deps.blobs.remove(staged.name).catch(() => {});
      throw err;
    }
  }
}

/** The metadata read rule: owners see their files; other signed-in users see internal and public ones. */
function canSee(principal: Principal, file: FileRecord): boolean {
  return file.ownerId === principal.userId || file.visibility !== "private";
}
