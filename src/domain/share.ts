/**
 * Share links (CONTRACT §8): the stored row and the Share object REST and MCP answer with.
 */
import net from "node:net";
import { formatExpiry } from "./expiry.ts";
import { embeddedIPv4, ipv6Bytes } from "./host-allowlist.ts";
import { formatTimestamp } from "./time.ts";

/**
 * A share link row (CONTRACT §8), as the shares table (storage/ports.ts) stores it; declared here,
 * as FileRecord is, so that domain/ imports nothing from storage/. Deleting a share keeps the row (deletedAt), so its URL answers
 * 410 rather than 404. Times are Unix microseconds.
 */
export interface ShareRow {
  id: string;
  /** The shared file; "" for a folder's share. */
  fileId: string;
  /** The shared folder (CONTRACT §12); null for a file's share. */
  folderId: string | null;
  ownerId: string;
  /** The URL's secret. */
  token: string;
  expiresAt: number | null;
  maxDownloads: number | null;
  downloadCount: number;
  /** When a download was last counted (CONTRACT §15); null: never. Unix microseconds. */
  lastDownloadAt: number | null;
  /** PHC string (argon2id); null: no password. */
  passwordHash: string | null;
  createdAt: number;
  deletedAt: number | null;
  /**
   * What a share of several items holds (CONTRACT §15 `POST /v1/shares`), in the order given;
   * null for a file's or a folder's share. Such a share has `fileId` "" and `folderId` null.
   */
  items: ShareItemJson[] | null;
}

/** The Share object of CONTRACT §8, field for field; never the token's hash or the password. */
export interface ShareJson {
  id: string;
  /** "" for a folder's share. */
  file_id: string;
  /** The shared folder (CONTRACT §12); "" for a file's share. */
  folder_id: string;
  /** `{HOSTNAME}/s/{token}`. */
  url: string;
  /** RFC 3339, or "" for never. */
  expire_time: string;
  /** null: no limit. */
  max_downloads: number | null;
  download_count: number;
  has_password: boolean;
  created_at: string;
}

/**
 * The Share object for a row.
 * @param baseUrl public origin without trailing slash (HOSTNAME)
 */
export function toShareJson(baseUrl: string, s: ShareRow): ShareJson {
  return {
    id: s.id,
    file_id: s.fileId,
    folder_id: s.folderId ?? "",
    url: `${baseUrl}/s/${s.token}`,
    expire_time: formatExpiry(s.expiresAt),
    max_downloads: s.maxDownloads,
    download_count: s.downloadCount,
    has_password: s.passwordHash !== null,
    created_at: formatTimestamp(s.createdAt),
  };
}

/**
 * Items one share holds at most (CONTRACT §15): its page lists them all at once (a page of a
 * folder's share holds SHARE_PAGE_ENTRIES of service/folders.ts, the same 100), and opening the link looks each up.
 */
export const MAX_SHARE_ITEMS = 100;

/** One item a share holds (CONTRACT §15): a file or a folder. */
export type ShareItemJson = { file_id: string } | { folder_id: string };

/**
 * A Share as `GET /v1/shares` lists it (CONTRACT §15): the Share object, when a download was
 * last counted (RFC 3339, "" for never) and the items it holds (a file's share one file, a
 * folder's one folder).
 */
export interface ShareDetailJson extends ShareJson {
  last_download_time: string;
  items: ShareItemJson[];
}

/**
 * The listing form of a row ({@link ShareDetailJson}).
 * @param baseUrl public origin without trailing slash (HOSTNAME)
 */
export function toShareDetailJson(baseUrl: string, s: ShareRow): ShareDetailJson {
  return {
    ...toShareJson(baseUrl, s),
    last_download_time: s.lastDownloadAt === null ? "" : formatTimestamp(s.lastDownloadAt),
    items: s.items ?? (s.folderId !== null ? [{ folder_id: s.folderId }] : [{ file_id: s.fileId }]),
  };
}

/** One counted download of a share (CONTRACT §15 access log), as the share_downloads table keeps it. Times Unix microseconds. */
export interface ShareDownloadRow {
  /** Its place in the log (ascending). */
  seq: number;
  shareId: string;
  /** When the answer ended. */
  at: number;
  /** What was sent: a file's name, or a folder's ZIP (`{name}.zip`). */
  item: string;
  bytes: number;
  /** Whether every byte of the answer went out. */
  completed: boolean;
  /** The client's address, shortened unless SHARE_LOG_FULL_ADDRESS (service/shares.ts logAddress). */
  client: string;
}

/** An access log entry as `GET /v1/shares/{id}/downloads` answers it. */
export interface ShareDownloadJson {
  time: string;
  item: string;
  bytes: number;
  completed: boolean;
  client_address: string;
}

/** The JSON of a log row. */
export function toShareDownloadJson(d: ShareDownloadRow): ShareDownloadJson {
  return { time: formatTimestamp(d.at), item: d.item, bytes: d.bytes, completed: d.completed, client_address: d.client };
}

/**
 * A client address as a share's access log keeps it (CONTRACT §15): the /24 of an IPv4 address
 * (an IPv4-mapped IPv6 one too) and the /48 of an IPv6 one, enough to tell networks apart and
 * not a person's line; the address itself with `full` (SHARE_LOG_FULL_ADDRESS=true). Anything
 * else (a Unix socket's "") as it is.
 */
export function logAddress(address: string, full: boolean): string {
  if (full) return address;
  const v4 = net.isIPv4(address) ? address : address.toLowerCase().startsWith("::ffff:") ? embeddedIPv4(address)?.[0] : undefined;
  if (v4 !== undefined) return `${v4.split(".").slice(0, 3).join(".")}.0/24`;
  const b = ipv6Bytes(address);
  if (b === undefined) return address;
  const groups = [0, 2, 4].map((i) => ((b[i]! << 8) | b[i + 1]!).toString(16));
  while (groups.at(-1) === "0") groups.pop();
  return `${groups.join(":")}::/48`;
}
