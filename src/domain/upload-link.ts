/**
 * Guest upload links ("file requests", CONTRACT §8) as the REST API shows them, and the IDs and
 * tokens of links and resumable uploads.
 */
import { nanoid } from "nanoid";
import { formatExpiry } from "./expiry.ts";
import { formatTimestamp } from "./time.ts";
import type { UploadLinkRow } from "../storage/upload-ports.ts";

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
  };
}
