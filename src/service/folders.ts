/**
 * Folders (CONTRACT §12): each user's tree of named collections, and which folder each file is
 * in, beside the File object and never in it. Every transport (REST, RPC, MCP, WebDAV) goes
 * through here, so the rules are written once:
 *
 * - owner only: another user's folder answers exactly like a missing one (not_found); reads need
 *   files.read, changes files.write (CONTRACT §10);
 * - within one folder the names of its files and sub-folders are unique (already_exists); at the
 *   top, folder names are unique among folders, and files keep the flat list's freedom (WebDAV
 *   shows a clash as `name (id).ext`); a file with no name ("") never clashes;
 * - a folder cannot move into itself or below itself (invalid_argument);
 * - a non-empty folder is deleted only when asked to be recursive (failed_precondition), and its
 *   files' blobs are removed only after the commit (CONTRACT §6).
 *
 * Each change runs in one transaction that first locks the owner's row (UserTable.account: on
 * PostgreSQL `FOR NO KEY UPDATE`, on SQLite the write lock), so that concurrent changes of one
 * user's tree, by any worker or instance, apply one after another and every check above holds.
 */
import { AppError } from "../errors.ts";
import type { FileRecord } from "../domain/file.ts";
import type { FilePage } from "../domain/file-page.ts";
import { checkFolderName, type FolderPage, type FolderRow, type FolderView } from "../domain/folder.ts";
import { isIdShaped, newFileId } from "../domain/ids.ts";
import type { PageCursor } from "../domain/params.ts";
import { NEWEST_FIRST, type FileCursor, type FileOrder } from "../domain/file-order.ts";
import { requireScope, type Principal } from "../domain/principal.ts";
import type { Clock } from "../domain/time.ts";
import type { BlobStore, MetadataStore, MetadataTables } from "../storage/ports.ts";
import { pageOf, readInChunks, type FileService } from "./files.ts";
import { assertNameFree } from "./folder-names.ts";
import type { WebhookService } from "./webhooks.ts";
import { Slicer } from "../slices.ts";

export interface FolderServiceDeps {
  store: MetadataStore;
  blobs: BlobStore;
  clock: Clock;
  files: FileService;
  webhooks: WebhookService;
}

/** A new folder: its name and where it goes (null or absent: at the top). */
export interface FolderInput {
  name: string;
  parentId?: string | null | undefined;
}

/** A folder's changes; an absent field is kept. `parentId: null` moves it to the top. */
export interface FolderPatch {
  name?: string | undefined;
  parentId?: string | null | undefined;
}

/**
 * A page of a shared folder's page ({@link FolderService.shareListing}): the trail from the
 * shared folder down to the one shown, its sub-folders and live files on this page, and the
 * cursor of the next page (undefined on the last).
 */
export interface ShareListing {
  trail: FolderRow[];
  folders: FolderRow[];
  files: FileRecord[];
  next: string | undefined;
}

/** What a folder holds under one name: a sub-folder or a file. */
export type FolderEntry = { kind: "folder"; folder: FolderRow } | { kind: "file"; file: FileRecord };

/** Reads of a tree whose root's ownership was checked (FolderService.treeReader). */
export interface TreeReader {
  /** A folder's live files, `limit` at a time after `after`, in `order`. */
  files(folderId: string, limit: number, after: FileCursor | undefined, order: FileOrder): Promise<FilePage>;
  /** A folder's sub-folders in the byte order of `name + "/"`, after `afterKey`. */
  foldersByKey(folderId: string, limit: number, afterKey: string | undefined): Promise<FolderRow[]>;
}

/** Rows read per query when a folder is walked (a share's ZIP, a recursive delete). */
const WALK_PAGE = 500;

/** Entries (sub-folders, then files) on one page of a shared folder's page. */
export const SHARE_PAGE_ENTRIES = 100;

/** Files read per query when a recursive delete walks a folder. */
const DELETE_BATCH = 500;

const folderNotFound = () => new AppError("not_found", "folder not found");

/** The folder use cases over the metadata store (see the module comment for the rules). */
export class FolderService {
  constructor(private readonly deps: FolderServiceDeps) {}

  /**
   * Creates a folder of the caller's, at the top or in one of their folders.
   * @throws permission_denied without files.write; invalid_argument (name); not_found (parent);
   *   already_exists (the parent holds the name)
   */
  async create(principal: Principal, input: FolderInput): Promise<FolderView> {
    requireScope(principal, "files.write");
    const name = checkFolderName(input.name);
    const parentId = input.parentId ?? null;
    const now = this.deps.clock.nowMicros();
    const row: FolderRow = { id: newFileId(), ownerId: principal.userId, parentId, name, createdAt: now, updatedAt: now };
    await this.change(principal, async (tx) => {
      if (parentId !== null) await this.ownedIn(tx, principal, parentId);
      await assertNameFree(tx, principal.userId, parentId, name, { folderId: row.id }, this.deps.clock.nowMicros());
      await tx.folders.insert(row);
    });
    return { ...row, fileCount: 0, bytes: 0 };
  }

  /**
   * One of the caller's folders with its counts.
   * @throws permission_denied without files.read; not_found
   */
  async get(principal: Principal, id: string): Promise<FolderView> {
    requireScope(principal, "files.read");
    const row = await this.ownedIn(this.deps.store, principal, id);
    return (await this.withCounts([row]))[0]!;
  }

  /**
   * The caller's folders in `parentId` (null: at the top), newest first, `pageSize` at a time.
   * @throws permission_denied without files.read; not_found (parent)
   */
  async list(principal: Principal, parentId: string | null, pageSize: number, after: PageCursor | undefined): Promise<FolderPage> {
    requireScope(principal, "files.read");
    if (parentId !== null) await this.ownedIn(this.deps.store, principal, parentId);
    const rows = await this.deps.store.folders.listByParent(principal.userId, parentId, pageSize + 1, after);
    const more = rows.length > pageSize;
    const page = more ? rows.slice(0, pageSize) : rows;
    const last = page[page.length - 1];
    return { folders: await this.withCounts(page), next: more && last ? { createdAt: last.createdAt, id: last.id } : undefined };
  }

  /**
   * A reader of the tree below the caller's folder `rootId` for a walk that stays inside it (S3
   * listings): the folder's ownership and the scope are checked once, here; the reader's calls
   * then read the store directly, one query each (a folder inside an owned folder is owned).
   * Expired files are left out as {@link listFiles} does.
   * @throws permission_denied without files.read; not_found
   */
  async treeReader(principal: Principal, rootId: string): Promise<TreeReader> {
    await this.row(principal, rootId);
    const { store, clock } = this.deps;
    const owner = principal.userId;
    return {
      files: async (folderId, limit, after, order) => {
        const page = pageOf(await store.folders.listFiles(owner, folderId, limit + 1, after, order), limit);
        const now = clock.nowMicros();
        return { files: page.files.filter((f) => f.expiresAt === null || f.expiresAt > now), next: page.next };
      },
      foldersByKey: (folderId, limit, afterKey) => store.folders.childrenByKey(owner, folderId, limit, afterKey),
    };
  }

  /**
   * The caller's folders in `parentId` (null: at the top) in the byte order of `name + "/"`,
   * after `afterKey` (S3 listings, CONTRACT §16; no counts), `limit` at a time.
   * @throws permission_denied without files.read; not_found (parent)
   */
  async childrenByKey(principal: Principal, parentId: string | null, limit: number, afterKey: string | undefined): Promise<FolderRow[]> {
    requireScope(principal, "files.read");
    if (parentId !== null) await this.ownedIn(this.deps.store, principal, parentId);
    return this.deps.store.folders.childrenByKey(principal.userId, parentId, limit, afterKey);
  }

  /**
   * Renames a folder or moves it (to another of the caller's folders, or to the top with null).
   * @throws permission_denied; invalid_argument (name; a move into itself or below it);
   *   not_found (folder or new parent); already_exists (the new parent holds the name)
   */
  async update(principal: Principal, id: string, patch: FolderPatch): Promise<FolderView> {
    requireScope(principal, "files.write");
    if (patch.name !== undefined) checkFolderName(patch.name);
    const row = await this.change(principal, async (tx) => {
      const folder = await this.ownedIn(tx, principal, id);
      const name = patch.name ?? folder.name;
      const parentId = patch.parentId === undefined ? folder.parentId : patch.parentId;
      if (name === folder.name && parentId === folder.parentId) return folder;
      if (parentId !== null && parentId !== folder.parentId) {
        await this.ownedIn(tx, principal, parentId);
        // Walk up from the new parent: meeting the folder itself would make a cycle.
        for (let at: string | null = parentId; at !== null; at = (await tx.folders.get(at))?.parentId ?? null) {
          if (at === folder.id) throw new AppError("invalid_argument", "a folder cannot move into itself or one of its sub-folders");
        }
      }
      await assertNameFree(tx, principal.userId, parentId, name, { folderId: folder.id }, this.deps.clock.nowMicros());
      const next: FolderRow = { ...folder, name, parentId, updatedAt: Math.max(this.deps.clock.nowMicros(), folder.updatedAt + 1) };
      await tx.folders.update(next);
      return next;
    });
    return (await this.withCounts([row]))[0]!;
  }

  /**
   * Deletes a folder. An empty one always; one that holds files or sub-folders only with
   * `recursive`, and then everything below it goes in the same transaction (each file as DELETE
   * deletes it, with its `file.deleted` event), and the blobs after the commit.
   * @throws permission_denied; not_found; failed_precondition (not empty, not recursive)
   */
  async delete(principal: Principal, id: string, opts: { recursive?: boolean } = {}): Promise<void> {
    requireScope(principal, "files.write");
    const slicer = new Slicer();
    const blobs = await this.change(principal, async (tx) => {
      const folder = await this.ownedIn(tx, principal, id);
      const { ids: tree, withFiles } = await subtreeOf(tx, folder.id, slicer);
      if (tree.length > 1 && opts.recursive !== true) throw new AppError("failed_precondition", "the folder is not empty; delete it with recursive=true");
      const removed: string[] = [];
      for (const folderId of withFiles) {
        for (;;) {
          await slicer.breathe();
          const batch = await tx.folders.listFiles(principal.userId, folderId, DELETE_BATCH, undefined);
          if (batch.length === 0) break;
          // A file past its expiry is gone for every reader already: it goes with the folder.
          const now = this.deps.clock.nowMicros();
          const live = batch.some((f) => f.expiresAt === null || f.expiresAt > now);
          if (live && opts.recursive !== true) throw new AppError("failed_precondition", "the folder is not empty; delete it with recursive=true");
          for (const file of batch) {
            if (await tx.files.delete(file.id, file.blob)) await this.deps.webhooks.fileDeleted(tx, file, "deleted");
            removed.push(file.blob);
            await slicer.breathe();
          }
        }
      }
      // Children before their parents, one row each: no statement cascades over the whole tree.
      for (let i = tree.length - 1; i > 0; i--) {
        await tx.folders.delete(tree[i]!);
        await slicer.breathe();
      }
      await tx.folders.delete(folder.id);
      return removed;
    });
    for (const blob of blobs) this.deps.blobs.removeLater(blob);
  }

  /**
   * Puts one of the caller's files in one of their folders (PUT /v1/folders/{id}/files/{file_id}),
   * out of any folder it was in; `folderId` null puts it at the top.
   * @throws permission_denied; not_found (folder, or a file the caller cannot see);
   *   already_exists (the folder holds the file's name)
   */
  async moveFile(principal: Principal, folderId: string | null, fileId: string): Promise<void> {
    requireScope(principal, "files.write");
    await this.change(principal, async (tx) => {
      if (folderId !== null) await this.ownedIn(tx, principal, folderId);
      const file = await this.deps.files.ownedIn(tx, principal, fileId);
      if ((await tx.folders.folderOf(file.id)) === (folderId ?? undefined)) return;
      await assertNameFree(tx, principal.userId, folderId, file.name, { fileId: file.id }, this.deps.clock.nowMicros());
      await tx.folders.setFolder(file.id, folderId);
    });
  }

  /**
   * Takes a file out of a folder, to the top (DELETE /v1/folders/{id}/files/{file_id}).
   * @throws permission_denied; not_found (the folder, or the file is not in it)
   */
  async removeFile(principal: Principal, folderId: string, fileId: string): Promise<void> {
    requireScope(principal, "files.write");
    await this.change(principal, async (tx) => {
      await this.ownedIn(tx, principal, folderId);
      if (!isIdShaped(fileId) || (await tx.folders.folderOf(fileId)) !== folderId) throw new AppError("not_found", "the file is not in this folder");
      await tx.folders.setFolder(fileId, null);
    });
  }

  /**
   * The caller's live files directly in a folder (null: in none), in `order` (default newest
   * first; CONTRACT §15 order_by), `pageSize` at a time.
   * @throws permission_denied without files.read; not_found (folder)
   */
  async listFiles(principal: Principal, folderId: string | null, pageSize: number, after: FileCursor | undefined, order: FileOrder = NEWEST_FIRST): Promise<FilePage> {
    requireScope(principal, "files.read");
    if (folderId !== null) await this.ownedIn(this.deps.store, principal, folderId);
    const now = this.deps.clock.nowMicros();
    // Expired files are gone already (the sweep deletes them within a minute): skip them, but
    // page by the rows read so that a run of them cannot end the listing early.
    const rows = await readInChunks(pageSize + 1, after, (limit, from) => this.deps.store.folders.listFiles(principal.userId, folderId, limit, from, order));
    const page = pageOf(rows, pageSize);
    return { files: page.files.filter((f) => f.expiresAt === null || f.expiresAt > now), next: page.next };
  }

  /**
   * The folder one of the caller's files is in; null at the top.
   * @throws what FileService.owned throws (files.read)
   */
  async folderOf(principal: Principal, fileId: string): Promise<string | null> {
    const file = await this.deps.files.owned(principal, fileId, "files.read");
    return (await this.deps.store.folders.folderOf(file.id)) ?? null;
  }

  /**
   * The caller's folder by ID, with no counts (a path lookup's step).
   * @throws permission_denied without files.read; not_found
   */
  async row(principal: Principal, id: string): Promise<FolderRow> {
    requireScope(principal, "files.read");
    return this.ownedIn(this.deps.store, principal, id);
  }

  /**
   * A folder's ancestors and itself, top first (breadcrumbs, a path for WebDAV and ZIP entries).
   * @throws permission_denied without files.read; not_found
   */
  async ancestry(principal: Principal, id: string): Promise<FolderRow[]> {
    const chain = [await this.row(principal, id)];
    while (chain[0]!.parentId !== null) {
      const parent = await this.deps.store.folders.get(chain[0]!.parentId);
      if (parent === undefined) break;
      chain.unshift(parent);
    }
    return chain;
  }

  /**
   * What the caller's folder `parentId` (null: the top) holds under `name`: the sub-folder
   * first, else the live files of that name (several only at the top, where files may share a
   * name).
   * @throws permission_denied without files.read; not_found (parent)
   */
  async entriesNamed(principal: Principal, parentId: string | null, name: string): Promise<FolderEntry[]> {
    requireScope(principal, "files.read");
    if (parentId !== null) await this.ownedIn(this.deps.store, principal, parentId);
    const out: FolderEntry[] = [];
    const folder = name === "" ? undefined : await this.deps.store.folders.byName(principal.userId, parentId, name);
    if (folder !== undefined) out.push({ kind: "folder", folder });
    const now = this.deps.clock.nowMicros();
    for (const file of await this.deps.store.folders.filesNamed(principal.userId, parentId, name)) {
      if (file.expiresAt === null || file.expiresAt > now) out.push({ kind: "file", file });
    }
    return out;
  }

  /**
   * A folder by ID with no access check, for a share link's holder (the share is the access);
   * undefined when it does not exist.
   */
  forShare(id: string): Promise<FolderRow | undefined> {
    return this.deps.store.folders.get(id);
  }

  /**
   * Every live file in `folder` and below it, for a share link's holder (its ZIP): each with its
   * path inside the folder ("" for the folder's own files, else `sub/sub2/`), depth first,
   * sub-folders in name order, files newest first within each. Walks with an explicit stack
   * that holds one page of sub-folders per level, so time is linear in the entries (two indexed
   * queries per folder, one per page of files) and memory in the depth, whatever the tree's
   * shape; the event loop breathes between queries (CONTRACT §14).
   */
  async *filesForShare(folder: FolderRow): AsyncIterable<{ path: string; file: FileRecord }> {
    const store = this.deps.store.folders;
    const slicer = new Slicer();
    const now = this.deps.clock.nowMicros();
    /**
     * A folder being walked: its sub-folders a page at a time, each page with which of them
     * hold files and which hold sub-folders (one query), so empty ones cost nothing more.
     */
    type Frame = { id: string; path: string; subs: FolderRow[]; lastName: string | undefined; subsDone: boolean; withFiles: Set<string>; withFolders: Set<string> };
    const enter = async function* (id: string, path: string): AsyncIterable<{ path: string; file: FileRecord }> {
      for (let after: PageCursor | undefined; ; ) {
        await slicer.breathe();
        const rows = await store.listFiles(folder.ownerId, id, WALK_PAGE, after);
        for (const file of rows) if (file.expiresAt === null || file.expiresAt > now) yield { path, file };
        const last = rows[rows.length - 1];
        if (rows.length < WALK_PAGE || last === undefined) return;
        after = { createdAt: last.createdAt, id: last.id };
      }
    };
    const frame = (id: string, path: string): Frame => ({ id, path, subs: [], lastName: undefined, subsDone: false, withFiles: new Set(), withFolders: new Set() });
    yield* enter(folder.id, "");
    const stack: Frame[] = [frame(folder.id, "")];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (top.subs.length === 0) {
        if (top.subsDone) {
          stack.pop();
          continue;
        }
        await slicer.breathe();
        top.subs = await store.subfoldersByName(top.id, WALK_PAGE, top.lastName);
        top.subsDone = top.subs.length < WALK_PAGE;
        top.lastName = top.subs[top.subs.length - 1]?.name;
        ({ withFiles: top.withFiles, withFolders: top.withFolders } = await store.occupied(top.subs.map((f) => f.id)));
        // Read back to front below: pop() takes them in name order.
        top.subs.reverse();
        continue;
      }
      const sub = top.subs.pop()!;
      const path = `${top.path}${sub.name}/`;
      if (top.withFiles.has(sub.id)) yield* enter(sub.id, path);
      if (top.withFolders.has(sub.id)) stack.push(frame(sub.id, path));
    }
  }

  /**
   * One page of a shared folder's page (CONTRACT §14: paged, its cost bounded by what it shows):
   * the folder `atId` inside the shared `root` (undefined: the root itself) with the trail from
   * the root down to it, then its sub-folders in name order followed by its live files newest
   * first, {@link SHARE_PAGE_ENTRIES} entries at most, from the cursor `after` (the `next` of the
   * page before; opaque to the client).
   * @throws not_found (`atId` is not the root or a folder below it); invalid_argument (a
   *   malformed cursor)
   */
  async shareListing(root: FolderRow, atId: string | undefined, after: string | undefined): Promise<ShareListing> {
    const store = this.deps.store.folders;
    const slicer = new Slicer();
    const trail = [root];
    if (atId !== undefined && atId !== root.id) {
      const at = isIdShaped(atId) ? await store.get(atId) : undefined;
      if (at === undefined || at.ownerId !== root.ownerId) throw new AppError("not_found", "no such folder in this shared folder");
      // Up from it to the root: a folder outside the share never reaches it.
      const up = [at];
      for (let parent = at.parentId; parent !== root.id; ) {
        if (parent === null) throw new AppError("not_found", "no such folder in this shared folder");
        await slicer.breathe();
        const row = await store.get(parent);
        if (row === undefined) throw new AppError("not_found", "no such folder in this shared folder");
        up.push(row);
        parent = row.parentId;
      }
      trail.push(...up.reverse());
    }
    const at = trail[trail.length - 1]!;
    const cursor = parseShareCursor(after);
    const out: ShareListing = { trail, folders: [], files: [], next: undefined };
    let room = SHARE_PAGE_ENTRIES;
    if (cursor.kind === "folders") {
      const subs = await store.subfoldersByName(at.id, room + 1, cursor.afterName);
      out.folders = subs.slice(0, room);
      if (subs.length > room) {
        out.next = `d${out.folders[out.folders.length - 1]!.name}`;
        return out;
      }
      room -= out.folders.length;
      if (room === 0) {
        // The page is full of folders: the files start on the next one.
        out.next = "f";
        return out;
      }
    }
    const rows = await store.listFiles(root.ownerId, at.id, room + 1, cursor.kind === "files" ? cursor.after : undefined);
    const page = rows.slice(0, room);
    const now = this.deps.clock.nowMicros();
    out.files = page.filter((f) => f.expiresAt === null || f.expiresAt > now);
    const last = page[page.length - 1];
    if (rows.length > room && last !== undefined) out.next = `f${last.createdAt}.${last.id}`;
    return out;
  }

  /**
   * A live file in `folder` or below it, for a share link's holder; undefined when there is no
   * such file there.
   */
  async fileForShare(folder: FolderRow, fileId: string): Promise<FileRecord | undefined> {
    if (!isIdShaped(fileId)) return undefined;
    const file = await this.deps.files.forShare(fileId);
    if (file === undefined || file.ownerId !== folder.ownerId) return undefined;
    for (let at = await this.deps.store.folders.folderOf(file.id); at !== undefined; at = (await this.deps.store.folders.get(at))?.parentId ?? undefined) {
      if (at === folder.id) return file;
    }
    return undefined;
  }

  /**
   * Which of `roots` (the folders of a share of several items, CONTRACT §15) holds folder
   * `folderId`, itself or below it; undefined when none does (or for no folder). Walks up from
   * it, one lookup by primary key a level, breathing between them.
   */
  async rootHolding(roots: readonly FolderRow[], folderId: string | undefined): Promise<FolderRow | undefined> {
    const byId = new Map(roots.map((r) => [r.id, r]));
    const slicer = new Slicer();
    for (let at = folderId !== undefined && isIdShaped(folderId) ? folderId : undefined; at !== undefined; ) {
      const root = byId.get(at);
      if (root !== undefined) return root;
      await slicer.breathe();
      at = (await this.deps.store.folders.get(at))?.parentId ?? undefined;
    }
    return undefined;
  }

  /**
   * A live file of a share of several items (CONTRACT §15): one of its `files`, or one in or
   * below one of its `folders` (of the same owner); undefined otherwise.
   */
  async fileAmong(items: { files: readonly FileRecord[]; folders: readonly FolderRow[] }, fileId: string): Promise<FileRecord | undefined> {
    const listed = items.files.find((f) => f.id === fileId);
    if (listed !== undefined || items.folders.length === 0 || !isIdShaped(fileId)) return listed;
    const file = await this.deps.files.forShare(fileId);
    if (file === undefined || file.ownerId !== items.folders[0]!.ownerId) return undefined;
    return (await this.rootHolding(items.folders, await this.deps.store.folders.folderOf(file.id))) === undefined ? undefined : file;
  }

  /** Folders with their counts, in the same order. */
  private async withCounts(rows: FolderRow[]): Promise<FolderView[]> {
    const counts = await this.deps.store.folders.counts(
      rows.map((r) => r.id),
      this.deps.clock.nowMicros(),
    );
    return rows.map((r) => ({ ...r, fileCount: counts.get(r.id)?.files ?? 0, bytes: counts.get(r.id)?.bytes ?? 0 }));
  }

  /** Runs a change of the caller's tree in one transaction, after locking their row. */
  private change<T>(principal: Principal, work: (tx: MetadataTables) => Promise<T>): Promise<T> {
    return this.deps.store.transaction(async (tx) => {
      await tx.users.account(principal.userId);
      return work(tx);
    });
  }

  /** The caller's folder `id` as `tables` see it. @throws not_found */
  private async ownedIn(tables: MetadataTables, principal: Principal, id: string): Promise<FolderRow> {
    const folder = isIdShaped(id) ? await tables.folders.get(id) : undefined;
    if (folder === undefined || folder.ownerId !== principal.userId) throw folderNotFound();
    return folder;
  }
}

/**
 * Folder `id` and every folder below it, parents before their children (breadth first): `ids`
 * all of them, `withFiles` those that hold a file (`id` always counted). Reads a page of
 * sub-folders at a time through folders_parent_name_unique, with one query per page saying
 * which hold anything, and breathes between queries: linear in the folders, whatever the
 * tree's shape, and empty folders cost no query of their own.
 */
async function subtreeOf(tables: MetadataTables, id: string, slicer: Slicer): Promise<{ ids: string[]; withFiles: Set<string> }> {
  const ids = [id];
  const withFiles = new Set([id]);
  const parents = [id];
  for (let i = 0; i < parents.length; i++) {
    for (let after: string | undefined; ; ) {
      await slicer.breathe();
      const subs = await tables.folders.subfoldersByName(parents[i]!, WALK_PAGE, after);
      const occupied = await tables.folders.occupied(subs.map((f) => f.id));
      for (const sub of subs) {
        ids.push(sub.id);
        if (occupied.withFiles.has(sub.id)) withFiles.add(sub.id);
        if (occupied.withFolders.has(sub.id)) parents.push(sub.id);
      }
      if (subs.length < WALK_PAGE) break;
      after = subs[subs.length - 1]!.name;
    }
  }
  return { ids, withFiles };
}

/**
 * A shared folder page's cursor: absent or `d{name}` (sub-folders after that name, then files),
 * `f` (files from the newest), `f{created_at}.{id}` (files after that one).
 * @throws invalid_argument (any other text)
 */
function parseShareCursor(after: string | undefined): { kind: "folders"; afterName: string | undefined } | { kind: "files"; after: PageCursor | undefined } {
  if (after === undefined || after === "") return { kind: "folders", afterName: undefined };
  if (after.startsWith("d")) return { kind: "folders", afterName: after.slice(1) };
  if (after === "f") return { kind: "files", after: undefined };
  const m = /^f(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/.exec(after);
  if (m === null) throw new AppError("invalid_argument", "after: not a cursor this page gave");
  return { kind: "files", after: { createdAt: Number(m[1]), id: m[2]! } };
}
