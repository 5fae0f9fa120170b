/**
 * The File resource of the specification and its JSON form. The JSON object has exactly the
 * spec's ten fields, always present, in the spec's order.
 */
import { formatTimestamp } from "./time.ts";

export const VISIBILITIES = ["private", "internal", "public"] as const;
/** Who can open a file by its URL (spec "Visibility meaning"). */
export type Visibility = (typeof VISIBILITIES)[number];

/** A stored file's metadata as the service layer sees it. Times are Unix microseconds. */
export interface FileRecord {
  id: string;
  ownerId: string;
  slug: string;
  name: string;
  contentType: string;
  size: number;
  /** CRC32C of the content, 4 bytes big-endian, base64 (8 characters). */
  checksum: string;
  visibility: Visibility;
  /** File name of the blob under the blob directory; a new one on every content change. */
  blob: string;
  createdAt: number;
  updatedAt: number;
  /**
   * When the expiry sweep deletes the file as DELETE does (CONTRACT §8); null: never. Beside the
   * File object, never in it: GET/PATCH /v1/files/{id}/expiry.
   */
  expiresAt: number | null;
  /**
   * The guest upload link the file arrived through (raw POST or tus with the link's token);
   * null for any other upload. Beside the File object, never in it: GET
   * /v1/upload-links/{id}/files. Archives do not carry it.
   */
  uploadLinkId: string | null;
}

/** The spec's File object as sent over REST (and, field for field, proto3 JSON of `File`). */
export interface FileJson {
  id: string;
  slug: string;
  url: string;
  name: string;
  content_type: string;
  size: string;
  checksum: string;
  visibility: Visibility;
  created_at: string;
  updated_at: string;
}

/**
 * The canonical URL: `{base}/{id}`, or `{base}/{id}/{slug}` when a slug is set.
 * @param baseUrl public origin without trailing slash (HOSTNAME)
 */
export function canonicalUrl(baseUrl: string, file: Pick<FileRecord, "id" | "slug">): string {
  return file.slug === "" ? `${baseUrl}/${file.id}` : `${baseUrl}/${file.id}/${file.slug}`;
}

/** The spec's File JSON object for a record. */
export function toFileJson(baseUrl: string, file: FileRecord): FileJson {
  return {
    id: file.id,
    slug: file.slug,
    url: canonicalUrl(baseUrl, file),
    name: file.name,
    content_type: file.contentType,
    size: String(file.size),
    checksum: file.checksum,
    visibility: file.visibility,
    created_at: formatTimestamp(file.createdAt),
    updated_at: formatTimestamp(file.updatedAt),
  };
}
