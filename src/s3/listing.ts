/**
 * ListObjectsV2 and ListObjects over the tree (CONTRACT §16, §14): a bucket's keys in S3's order
 * (bytes of UTF-8), from a prefix, after a key, with or without the `/` delimiter, read a page
 * at a time through indexes. A folder's members are two keyset streams, its files by name
 * (files' name-order index) and its sub-folders by `name + "/"` (folders_parent_key_idx),
 * merged; without a delimiter the walk enters each sub-folder where it sorts (depth first), so
 * resuming after any key reads only the folders on that key's path and what follows.
 */
import type { FileRecord } from "../domain/file.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { Principal } from "../domain/principal.ts";
import type { FolderService, TreeReader } from "../service/folders.ts";
import { Slicer } from "../slices.ts";

/**
 * One listed entry: an object (a file) or, with the delimiter, a common prefix (a folder); or a
 * pause: the walk has entered {@link MAX_FOLDER_VISITS} folders for this page and stops before
 * the next, whose contents follow every key after `key` (`folder/`), where the next page resumes.
 */
export type ListEntry = { key: string; file: FileRecord; pause?: undefined } | { key: string; file: undefined; pause?: undefined } | { key: string; file: undefined; pause: true };

/** Rows read per query of either stream. */
const ROWS = 200;
/**
 * Folders a walk without a delimiter enters for one page (each costs a few queries, empty or
 * not): past it the page ends early, truncated, as S3 may end one (CONTRACT §14: a page's cost
 * is bounded, however many empty folders a bucket holds).
 */
export const MAX_FOLDER_VISITS = 100;

/**
 * Byte order of UTF-8 (S3's order), which is code point order. JavaScript compares UTF-16 code
 * units, which agrees except where a surrogate (U+D800–DFFF, half of a character past U+FFFF)
 * meets a unit of U+E000–FFFF: the character past U+FFFF sorts after. No allocation.
 * @returns negative, 0 or positive, as `a` sorts before, with or after `b`
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  const x = a.charCodeAt(i);
  const y = b.charCodeAt(i);
  const xs = x >= 0xd800 && x <= 0xdfff;
  const ys = y >= 0xd800 && y <= 0xdfff;
  if (xs !== ys && (xs ? y : x) >= 0xe000) return xs ? 1 : -1;
  return x - y;
}

/**
 * The entries of the bucket folder `bucketId` whose keys start with `prefix` and sort after
 * `after` (undefined: from the first), in key order. With `delimited` (delimiter `/`), a
 * sub-folder is one common prefix `…/name/` instead of its contents.
 * @throws what FolderService throws (files.read; a folder that went)
 */
export async function* listEntries(folders: FolderService, principal: Principal, bucketId: string, prefix: string, after: string | undefined, delimited: boolean): AsyncIterable<ListEntry> {
  // The prefix's whole segments name folders below the bucket; its last, partial one filters.
  const cut = prefix.lastIndexOf("/") + 1;
  const dir = prefix.slice(0, cut);
  const partial = prefix.slice(cut);
  const tree = await folders.treeReader(principal, bucketId);
  let folderId = bucketId;
  for (const segment of dir.split("/").slice(0, -1)) {
    const sub = segment === "" ? undefined : await folderNamed(folders, principal, folderId, segment);
    if (sub === undefined) return;
    folderId = sub.id;
  }
  // Where to start in that folder, relative to it: after `after` when it is at or past the prefix.
  let from: string | undefined;
  if (after !== undefined && after.startsWith(dir) && compareKeys(after, prefix) >= 0) from = after.slice(cut);
  else if (after !== undefined && compareKeys(after, prefix) > 0) return; // after every key with the prefix
  yield* walk(folders, principal, folderId, dir, from, partial, delimited, { tree, slicer: new Slicer(), visits: 0 });
}

/**
 * The caller's folder `name` in `parentId` (null: at the top), or undefined when there is none
 * (a file of that name is not one).
 * @throws what FolderService.entriesNamed throws (files.read; the parent went)
 */
export async function folderNamed(folders: FolderService, principal: Principal, parentId: string | null, name: string): Promise<FolderRow | undefined> {
  const entry = (await folders.entriesNamed(principal, parentId, name)).find((e) => e.kind === "folder");
  return entry?.kind === "folder" ? entry.folder : undefined;
}

/** What one listing's walk carries down: its slicer and the folders it has entered. */
interface WalkState {
  tree: TreeReader;
  slicer: Slicer;
  visits: number;
}

/**
 * The entries of one folder whose keys (relative to it) sort after `from` and start with
 * `partial`, in key order; `base` is the folder's own key prefix.
 */
async function* walk(folders: FolderService, principal: Principal, folderId: string, base: string, from: string | undefined, partial: string, delimited: boolean, state: WalkState): AsyncIterable<ListEntry> {
  const { slicer } = state;
  // `from` inside a sub-folder (`name/rest`): that folder is resumed first, then what sorts after it.
  const slash = from === undefined ? -1 : from.indexOf("/");
  let resume: { name: string; rest: string } | undefined;
  let bound = from;
  if (from !== undefined && slash !== -1) {
    resume = { name: from.slice(0, slash), rest: from.slice(slash + 1) };
    bound = from.slice(0, slash + 1);
  }
  // Nothing sorts before the partial segment: start there when it is later than `from`.
  const startFiles = (x: string | undefined) => (x === undefined || compareKeys(x, partial) < 0 ? { name: partial, inclusive: true } : { name: x, inclusive: false });
  const fileStart = startFiles(bound);
  const folderStart = bound === undefined || compareKeys(bound, partial) < 0 ? partial : bound;
  if (resume !== undefined && !delimited && resume.name.startsWith(partial)) {
    const sub = await folderNamed(folders, principal, folderId, resume.name);
    if (sub !== undefined) yield* walk(folders, principal, sub.id, `${base}${resume.name}/`, resume.rest === "" ? undefined : resume.rest, "", false, state);
  }
  const files = fileStream(state.tree, folderId, fileStart, slicer);
  const subs = folderStream(state.tree, folderId, folderStart, slicer);
  let f = await files.next();
  let d = await subs.next();
  for (;;) {
    // Each step may have run queries (SQLite's are synchronous): yield once a slice has passed.
    await slicer.breathe();
    const fileName = f.done ? undefined : f.value.name;
    const folderKey = d.done ? undefined : `${d.value.name}/`;
    const fileIn = fileName !== undefined && fileName.startsWith(partial);
    const folderIn = folderKey !== undefined && folderKey.startsWith(partial);
    if (!fileIn && !folderIn) return;
    if (fileIn && (!folderIn || compareKeys(fileName!, folderKey!) < 0)) {
      yield { key: base + fileName!, file: (f as IteratorYieldResult<FileRecord>).value };
      f = await files.next();
    } else {
      const folder = (d as IteratorYieldResult<FolderRow>).value;
      if (delimited) yield { key: base + folderKey!, file: undefined };
      else {
        if (++state.visits > MAX_FOLDER_VISITS) {
          yield { key: base + folderKey!, file: undefined, pause: true };
          return;
        }
        yield* walk(folders, principal, folder.id, base + folderKey!, undefined, "", false, state);
      }
      d = await subs.next();
    }
  }
}

/**
 * A folder's live, named files in name order, from `start` (its name itself included or not), a
 * page at a time. Names are unique in a folder, so an excluded start is skipped by name.
 */
async function* fileStream(tree: TreeReader, folderId: string, start: { name: string; inclusive: boolean }, slicer: Slicer): AsyncGenerator<FileRecord> {
  // The name-order cursor is (name, id) > (name, id): the empty ID includes the name itself.
  let cursor = { name: start.name, id: "" };
  for (;;) {
    const page = await tree.files(folderId, ROWS, cursor, { field: "name", descending: false });
    for (const file of page.files) if (file.name !== "" && (start.inclusive || file.name !== start.name)) yield file;
    if (page.next === undefined) return;
    cursor = page.next;
    await slicer.breathe();
  }
}

/** A folder's sub-folders in the order of `name + "/"`, after `afterKey`, a page at a time. */
async function* folderStream(tree: TreeReader, folderId: string, afterKey: string, slicer: Slicer): AsyncGenerator<FolderRow> {
  let after: string | undefined = afterKey === "" ? undefined : afterKey;
  for (;;) {
    const rows = await tree.foldersByKey(folderId, ROWS, after);
    yield* rows;
    if (rows.length < ROWS) return;
    after = `${rows[rows.length - 1]!.name}/`;
    await slicer.breathe();
  }
}
