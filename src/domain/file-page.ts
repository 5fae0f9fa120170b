/**
 * A page of a file listing (`GET /v1/files`, `GET /v1/upload-links/{id}/files`, MCP's
 * list_files) and its JSON form, which REST and MCP both send.
 */
import { toFileJson, type FileJson, type FileRecord } from "./file.ts";
import { encodePageToken, type PageCursor } from "./params.ts";

/** A page of files in listing order. */
export interface FilePage {
  files: FileRecord[];
  /** Where the next page starts, or undefined on the last page. */
  next: PageCursor | undefined;
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
 */
export function toFilePageJson(baseUrl: string, page: FilePage): FilePageJson {
  return {
    files: page.files.map((f) => toFileJson(baseUrl, f)),
    next_page_token: page.next === undefined ? "" : encodePageToken(page.next),
  };
}
