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

/**
 * Every member of a collection with the name it shows under (sub-folders, then files).
 * @throws AppError permission_denied without files.read; not_found (the folder went)
 */
export async function membersOf(deps: TreeDeps, principal: Principal, c: Collection): Promise<Member[]> {
  const folderId = folderIdOf(c);
  const folders: FolderRow[] = [];
  for (let after = undefined as Parameters<FolderService["list"]>[3]; ; ) {
    const page = await deps.folders.list(principal, folderId, PAGE, after);
    folders.push(...page.folders);
    if (page.next === undefined) break;
    after = page.next;
  }
  const files: FileRecord[] = [];
  for (let after = undefined as Parameters<FolderService["listFiles"]>[3]; ; ) {
    const page = await deps.folders.listFiles(principal, folderId, PAGE, after);
    files.push(...page.files);
    if (page.next === undefined) break;
    after = page.next;
  }
  const taken = new Map<string, number>();
  for (const f of folders) taken.set(f.name, (taken.get(f.name) ?? 0) + 1);
  for (const f of files) taken.set(f.name, (taken.get(f.name) ?? 0) + 1);
  return [
    ...folders.map((folder): Member => ({ name: folder.name, resource: { kind: "folder", folder } })),
    ...files.map((file): Member => ({ name: memberName(file, (taken.get(file.name) ?? 0) > 1), resource: { kind: "file", file, folderId } })),
  ];
}

/** The key of a resource's dead properties (dav_properties.resource). */
export function propertyKey(r: Resource): string {
  return r.kind === "root" ? "root" : r.kind === "folder" ? `folder:${r.folder.id}` : `file:${r.file.id}`;
}
