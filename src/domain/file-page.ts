/**
 * A page of a file listing (`GET /v1/files`, `GET /v1/upload-links/{id}/files`, MCP's
 * list_files) and its JSON form, which REST and MCP both send.
 */
import { toFileJson, type FileJson, type FileRecord } from "./file.ts";
import { encodeFileToken, NEWEST_FIRST, type FileCursor, type FileOrder } from "./file-order.ts";
import type { PageCursor } from "./params.ts";

/** A page of files in listing order. */
export interface FilePage {
  files: FileRecord[];
  /** Where the next page starts (the last file's ID and the fields an order reads), or undefined on the last page. */
  next: (PageCursor & Required<FileCursor>) | undefined;
}

/** A page as REST sends it: `{"files": [File…], "next_page_token": ""}` ("" on the last page). */
export interface FilePageJson {
  files: FileJson[];
  /** An opaque token for `page_token`; "" on the last page. */
  next_page_token: string;
}

/**
 * The JSON of a page.
 * @param baseUrl public origin without trailing slash (HOSTNAME), for each file's URL
 * @param order the listing's order, which its next page's token is for
 */
export function toFilePageJson(baseUrl: string, page: FilePage, order: FileOrder = NEWEST_FIRST): FilePageJson {
  return {
    files: page.files.map((f) => toFileJson(baseUrl, f)),
    next_page_token: page.next === undefined ? "" : encodeFileToken(order, page.next),
  };
}
