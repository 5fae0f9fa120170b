/**
 * Guest upload links ("file requests", CONTRACT §8) as the REST API shows them, and the IDs and
 * tokens of links and resumable uploads.
 */
import { nanoid } from "nanoid";
import { formatExpiry } from "./expiry.ts";
import { formatTimestamp } from "./time.ts";
import type { Visibility } from "./file.ts";

/**
 * A guest upload link ("file request") as stored (storage/upload-ports.ts's UploadLinkTable)
 * and as the service sees it: declared here, as FileRecord is, so that domain/ imports nothing
 * from storage/. Counters count committed files only; sizes are bytes, times Unix microseconds.
 */
export interface UploadLinkRow {
  id: string;
  ownerId: string;
  /** The secret of `/u/{token}` (≥ 128 random bits). */
  token: string;
  name: string;
  /** Visibility of the files uploaded through it. */
  visibility: Visibility;
  expiresAt: number | null;
  maxFiles: number | null;
  maxBytes: number | null;
  filesUploaded: number;
  bytesUploaded: number;
  createdAt: number;
  /** Set by DELETE: the link answers 410 from then on. */
  deletedAt: number | null;
}

/** The JSON of an upload link (CONTRACT §8), field for field. */
export interface UploadLinkJson {
  id: string;
  url: string;
  name: string;
  /** RFC 3339, or "" for never. */
  expire_time: string;
  /** null: no limit. */
  max_files: number | null;
  max_bytes: number | null;
  files_uploaded: number;
  bytes_uploaded: number;
  created_at: string;
  /** RFC 3339 time the link was deleted (revoked), or "" while it is not (AIP-164's `delete_time`). */
  delete_time: string;
}

/** A link token: 32 URL-safe characters, 192 random bits (CONTRACT §8 asks for ≥ 128). */
export const UPLOAD_LINK_TOKEN = /^[A-Za-z0-9_-]{32}$/;

/** A fresh link token (see {@link UPLOAD_LINK_TOKEN}). */
export function newUploadLinkToken(): string {
  return nanoid(32);
}

/** A fresh upload link ID (21 URL-safe characters, as file IDs). */
export function newUploadLinkId(): string {
  return nanoid(21);
}

/** A fresh resumable upload ID: 26 URL-safe characters (156 random bits), part of the upload URL. */
export function newUploadId(): string {
  return nanoid(26);
}

/** The page of a link: `{HOSTNAME}/u/{token}`. */
export function uploadLinkUrl(baseUrl: string, token: string): string {
  return `${baseUrl}/u/${token}`;
}

/** The JSON of a link for its owner. */
export function toUploadLinkJson(baseUrl: string, link: UploadLinkRow): UploadLinkJson {
  return {
    id: link.id,
    url: uploadLinkUrl(baseUrl, link.token),
    name: link.name,
    expire_time: formatExpiry(link.expiresAt),
    max_files: link.maxFiles,
    max_bytes: link.maxBytes,
    files_uploaded: link.filesUploaded,
    bytes_uploaded: link.bytesUploaded,
    created_at: formatTimestamp(link.createdAt),
    delete_time: formatExpiry(link.deletedAt),
  };
}
