/**
 * The name rule of folders (CONTRACT §12), shared by the folder use cases (folders.ts) and the
 * file use cases that name or place a file (files.ts): within one folder the names of its files
 * and sub-folders are unique.
 */
import { AppError } from "../errors.ts";
import type { FileRecord } from "../domain/file.ts";
import type { MetadataTables } from "../storage/ports.ts";

/**
 * Refuses `name`, for the folder `except.folderId` or the file `except.fileId`, in `ownerId`'s
 * folder `parentId` (null: the top) when another sub-folder holds it, or, inside a folder,
 * another live file does (one expired at `now`, Unix microseconds, is gone already for every
 * reader, though the sweep may not have deleted its row yet). At the top a file never clashes,
 * nor does a file's empty name. Call with the owner's row locked.
 * @throws already_exists
 */
export async function assertNameFree(
  tx: MetadataTables,
  ownerId: string,
  parentId: string | null,
  name: string,
  except: { folderId?: string; fileId?: string },
  now: number,
): Promise<void> {
  // At the top only folders keep their names to themselves: files there are the flat list's.
  if (name === "" || (parentId === null && except.folderId === undefined)) return;
  const folder = await tx.folders.byName(ownerId, parentId, name);
  if (folder !== undefined && folder.id !== except.folderId) throw new AppError("already_exists", `a folder named "${name}" is here already`);
  if (parentId === null) return;
  const files = await tx.folders.filesNamed(ownerId, parentId, name);
  if (files.some((f) => f.id !== except.fileId && (f.expiresAt === null || f.expiresAt > now))) throw new AppError("already_exists", `a file named "${name}" is in this folder already`);
}

/**
 * Inside the transaction that commits a new file of `ownerId`, puts it in `folderId` (one of the
 * owner's folders) if its name is free there at `now` (Unix microseconds); locks the owner's row first.
 * @throws not_found (no such folder of the owner's); already_exists
 */
export async function placeInFolder(tx: MetadataTables, ownerId: string, folderId: string, file: FileRecord, now: number): Promise<void> {
  await tx.users.account(ownerId);
  const folder = await tx.folders.get(folderId);
  if (folder === undefined || folder.ownerId !== ownerId) throw new AppError("not_found", "folder not found");
  await assertNameFree(tx, ownerId, folderId, file.name, { fileId: file.id }, now);
  await tx.folders.setFolder(file.id, folderId);
}
