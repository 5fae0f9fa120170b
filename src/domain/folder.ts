/**
 * Folders (CONTRACT §12): a tree of named collections per user, beside the File object, never in
 * it. A file is in at most one folder (or in none: "at the top"); within one folder the names
 * of its files and sub-folders are unique. The row, the Folder object REST and MCP answer with,
 * and the name rule.
 */
import { AppError } from "../errors.ts";
import { FILE_ID_PATTERN } from "./ids.ts";
import { encodePageToken, type PageCursor } from "./params.ts";
import { formatTimestamp } from "./time.ts";

/** A folder row. Times are Unix microseconds. */
export interface FolderRow {
  /** 21 characters of `A-Za-z0-9_-`, like a file ID (page tokens carry either). */
  id: string;
  ownerId: string;
  /** The folder it is in; null at the top. */
  parentId: string | null;
  name: string;
  createdAt: number;
  updatedAt: number;
}

/** A folder with what it holds directly (its own files, not its sub-folders'). */
export interface FolderView extends FolderRow {
  /** Files directly in the folder, live ones (not past their expiry). */
  fileCount: number;
  /** Their sizes, summed; bytes. */
  bytes: number;
}

/** The Folder object of CONTRACT §12, field for field. */
export interface FolderJson {
  id: string;
  name: string;
  /** "" at the top. */
  parent_id: string;
  /** Where the dashboard shows it: `{HOSTNAME}/?folder={id}`. */
  url: string;
  file_count: number;
  /** Bytes, as a decimal string (as the File object's `size`: int64 in proto3 JSON). */
  bytes: string;
  created_at: string;
  updated_at: string;
}

/** A page of folders in listing order (newest first, as files). */
export interface FolderPage {
  folders: FolderView[];
  next: PageCursor | undefined;
}

/** A page as REST sends it: `{"folders": [Folder…], "next_page_token": ""}`. */
export interface FolderPageJson {
  folders: FolderJson[];
  next_page_token: string;
}

/** A folder name's longest length, in UTF-16 code units, as a file's name (spec: max 255). */
export const MAX_FOLDER_NAME = 255;

/**
 * Checks a folder name: 1 to 255 characters, no `/`, no control characters (the spec's file name
 * rule, `^[^/\x00-\x1F\x7F]*$`, minus the empty name), and not `.` or `..`, which a path (WebDAV,
 * a ZIP, a mounted drive) cannot hold.
 * @throws AppError invalid_argument
 */
export function checkFolderName(name: string): string {
  if (name.length === 0 || name.length > MAX_FOLDER_NAME) throw new AppError("invalid_argument", `name: 1 to ${MAX_FOLDER_NAME} characters`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the rule is about control characters
  if (/[/\x00-\x1F\x7F]/.test(name)) throw new AppError("invalid_argument", "name: no '/' and no control characters");
  if (name === "." || name === "..") throw new AppError("invalid_argument", "name: '.' and '..' are not folder names");
  return name;
}

/**
 * A folder ID as sent: 21 characters of `A-Za-z0-9_-`, as a file ID.
 * @param field the parameter's name in the message (`id`, `parent_id`, `folder_id`)
 * @throws AppError invalid_argument
 */
export function parseFolderId(raw: string, field = "id"): string {
  if (!FILE_ID_PATTERN.test(raw)) {
    const shown = raw.length > 40 ? `${raw.slice(0, 40)}…` : raw;
    throw new AppError("invalid_argument", `${field}: "${shown}" is not a folder ID (21 characters of A-Z a-z 0-9 _ -)`);
  }
  return raw;
}

/**
 * Where a folder goes as sent: "" (and, in JSON, null) is the top; anything else a folder ID.
 * @throws AppError invalid_argument
 */
export function parseParentId(raw: string | null, field = "parent_id"): string | null {
  return raw === null || raw === "" ? null : parseFolderId(raw, field);
}

/**
 * The Folder object for a folder.
 * @param baseUrl public origin without trailing slash (HOSTNAME)
 */
export function toFolderJson(baseUrl: string, f: FolderView): FolderJson {
  return {
    id: f.id,
    name: f.name,
    parent_id: f.parentId ?? "",
    url: `${baseUrl}/?folder=${f.id}`,
    file_count: f.fileCount,
    bytes: String(f.bytes),
    created_at: formatTimestamp(f.createdAt),
    updated_at: formatTimestamp(f.updatedAt),
  };
}

/** The JSON of a page of folders. */
export function toFolderPageJson(baseUrl: string, page: FolderPage): FolderPageJson {
  return {
    folders: page.folders.map((f) => toFolderJson(baseUrl, f)),
    next_page_token: page.next === undefined ? "" : encodePageToken(page.next),
  };
}
