/**
 * What a `/dav/` path names (CONTRACT §12): the top (the user's top-level folders and their
 * files in no folder), a folder, or a file, looked up segment by segment through FolderService,
 * so that every rule of the tree (owner only, scopes, names) is the one REST and RPC follow.
 */
import type { FileRecord } from "../domain/file.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { Principal } from "../domain/principal.ts";
import { AppError } from "../errors.ts";
import type { FileService } from "../service/files.ts";
import type { FolderService } from "../service/folders.ts";
import type { Clock } from "../domain/time.ts";
import type { MetadataStore } from "../storage/ports.ts";
import { decoratedId, memberName } from "./paths.ts";

/** A resource a path names. */
export type Resource = { kind: "root" } | { kind: "folder"; folder: FolderRow } | { kind: "file"; file: FileRecord; folderId: string | null };

/** A collection: the top or a folder. */
export type Collection = Extract<Resource, { kind: "root" | "folder" }>;

/** A path looked up: its resource (undefined: nothing there), and its parent collection (undefined: the parent is missing or not a collection). */
export interface Resolved {
  segments: string[];
  resource: Resource | undefined;
  parent: Collection | undefined;
}

/** One member of a collection, with the name it shows under. */
export interface Member {
  name: string;
  resource: Exclude<Resource, { kind: "root" }>;
}

/** Rows read per page when a collection is listed. */
const PAGE = 1000;

/** The ID of a collection's folder, or null for the top. */
export function folderIdOf(c: Collection): string | null {
  return c.kind === "root" ? null : c.folder.id;
}

/** What the two services give the WebDAV layer. */
export interface TreeDeps {
  files: FileService;
  folders: FolderService;
}

/**
 * Looks up `segments` for `principal`.
 * @throws AppError permission_denied without files.read
 */
export async function resolve(deps: TreeDeps, principal: Principal, segments: string[]): Promise<Resolved> {
  if (segments.length === 0) return { segments, resource: { kind: "root" }, parent: undefined };
  let parent: Collection = { kind: "root" };
  for (const segment of segments.slice(0, -1)) {
    const entries = await deps.folders.entriesNamed(principal, folderIdOf(parent), segment);
    const folder = entries.find((e) => e.kind === "folder");
    if (folder === undefined || folder.kind !== "folder") return { segments, resource: undefined, parent: undefined };
    parent = { kind: "folder", folder: folder.folder };
  }
  return { segments, resource: await memberOf(deps, principal, parent, segments[segments.length - 1]!), parent };
}

/** The member of `parent` shown under `name`, if any. */
async function memberOf(deps: TreeDeps, principal: Principal, parent: Collection, name: string): Promise<Exclude<Resource, { kind: "root" }> | undefined> {
  const folderId = folderIdOf(parent);
  const entries = await deps.folders.entriesNamed(principal, folderId, name);
  const folder = entries.find((e) => e.kind === "folder");
  if (folder?.kind === "folder") return { kind: "folder", folder: folder.folder };
  if (entries.length === 1 && entries[0]!.kind === "file") return { kind: "file", file: entries[0]!.file, folderId };
  // A file shown under its decorated name: `name (id).ext`, or its bare ID.
  const id = decoratedId(name);
  if (id === undefined) return undefined;
  let file: FileRecord;
  try {
    file = await deps.files.owned(principal, id, "files.read");
  } catch (err) {
    if (err instanceof AppError && (err.code === "not_found" || err.code === "permission_denied")) return undefined;
    throw err;
  }
  if ((await deps.folders.folderOf(principal, file.id)) !== folderId) return undefined;
  const shared = file.name !== "" && (await deps.folders.entriesNamed(principal, folderId, file.name)).length > 1;
  return memberName(file, shared) === name ? { kind: "file", file, folderId } : undefined;
}

/** What listing a collection a page at a time needs: the tree, and the store for name clashes at the top. */
export interface MemberDeps extends TreeDeps {
  store: MetadataStore;
  clock: Clock;
}

/**
 * The members of a collection with the names they show under, a page at a time (sub-folders,
 * then files, each keyset-paged through FolderService): a page's names that clash at the top
 * are found with one query (DavTable.sharedTopNames); inside a folder names are unique.
 * @throws AppError permission_denied without files.read; not_found (the folder went)
 */
export async function* memberPages(deps: MemberDeps, principal: Principal, c: Collection, pageSize = PAGE): AsyncIterable<Member[]> {
  const folderId = folderIdOf(c);
  for (let after = undefined as Parameters<FolderService["list"]>[3]; ; ) {
    const page = await deps.folders.list(principal, folderId, pageSize, after);
    if (page.folders.length > 0) yield page.folders.map((folder): Member => ({ name: folder.name, resource: { kind: "folder", folder } }));
    if (page.next === undefined) break;
    after = page.next;
  }
  for (let after = undefined as Parameters<FolderService["listFiles"]>[3]; ; ) {
    const page = await deps.folders.listFiles(principal, folderId, pageSize, after);
    const named = page.files.filter((f) => f.name !== "").map((f) => f.name);
    const shared = folderId === null && named.length > 0 ? await deps.store.dav.sharedTopNames(principal.userId, named, deps.clock.nowMicros()) : undefined;
    if (page.files.length > 0) yield page.files.map((file): Member => ({ name: memberName(file, shared?.has(file.name) ?? false), resource: { kind: "file", file, folderId } }));
    if (page.next === undefined) break;
    after = page.next;
  }
}

/** The key of a resource's dead properties (dav_properties.resource). */
export function propertyKey(r: Resource): string {
  return r.kind === "root" ? "root" : r.kind === "folder" ? `folder:${r.folder.id}` : `file:${r.file.id}`;
}
