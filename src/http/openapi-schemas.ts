/**
 * The resources of the REST API as JSON Schema 2020-12 (the dialect of OpenAPI 3.1), for
 * `components` of /openapi.json (http/openapi.ts). Each object schema is closed
 * (`additionalProperties: false`, every field required) and its property list is checked at
 * compile time against the TypeScript type the routes answer with (`satisfies Record<keyof T,
 * …>`: a field added to or removed from `FileJson`, the Share or the upload link breaks the build
 * until the schema follows); the error bodies come from errors.ts's own table.
 */
import { VISIBILITIES, type FileJson } from "../domain/file.ts";
import { SCOPES } from "../domain/principal.ts";
import type { UploadLinkJson } from "../domain/upload-link.ts";
import { grpcCodeOf, httpStatusOf, type ErrorCode } from "../errors.ts";
import type { FilePageJson } from "../domain/file-page.ts";
import type { ShareJson } from "../domain/share.ts";
import type { FolderJson, FolderPageJson } from "../domain/folder.ts";
import type { UnfinishedUploadJson, UnfinishedUploadPageJson } from "./uploads-routes.ts";
import type { UsageJson } from "./usage-routes.ts";
import { EVENT_TYPES, MAX_WEBHOOK_URL_CHARS, type NewWebhookJson, type WebhookAttemptJson, type WebhookJson } from "../domain/webhook.ts";

/** A JSON Schema 2020-12 object (OpenAPI 3.1 Schema Object). */
export type Schema = { [keyword: string]: unknown };

/** `{"$ref": "#/components/schemas/<name>"}`. */
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/**
 * A closed object schema: exactly `properties`, all required, nothing else
 * (`additionalProperties: false`).
 */
export function closedObject(properties: Record<string, Schema>, description?: string): Schema {
  return {
    type: "object",
    ...(description === undefined ? {} : { description }),
    properties,
    required: Object.keys(properties),
    additionalProperties: false,
  };
}

/** RFC 3339 in UTC with `Z`, up to nanoseconds: how every timestamp is sent. */
const TIMESTAMP_PATTERN = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z$";
const timestamp: Schema = { type: "string", format: "date-time", pattern: TIMESTAMP_PATTERN };
/** An expiry as sent: a timestamp, or "" for never (CONTRACT §8). */
/** `schema` with `optional` no longer required (an answer that leaves the field out when it has nothing to say). */
function withOptional(schema: Schema, ...optional: string[]): Schema {
  return { ...schema, required: (schema.required as string[]).filter((name) => !optional.includes(name)) };
}

/** `next_page_token` of every paged listing. */
const nextPage: Schema = { type: "string", description: "Pass as `page_token` for the next page; \"\" on the last page" };
const expiry: Schema = { type: "string", pattern: `^$|${TIMESTAMP_PATTERN}`, description: "RFC 3339 (UTC, `Z`), or \"\" for never" };
const limit = (description: string): Schema => ({ type: ["integer", "null"], minimum: 1, description });
const count: Schema = { type: "integer", minimum: 0 };

/** Path and body patterns shared with the parsers (domain/params.ts, the specification's Limits). */
export const PATTERNS = {
  fileId: "^[A-Za-z0-9_-]{21}$",
  slug: "^[A-Za-z0-9._~-]*$",
  name: "^[^/\\x00-\\x1F\\x7F]*$",
  /** domain/folder.ts checkFolderName: a file name's rule, not empty, and not "." or "..". */
  folderName: "^(?!\\.\\.?$)[^/\\x00-\\x1F\\x7F]+$",
  /** domain/expiry.ts parseTtl: a whole number and one unit. */
  ttl: "^[1-9][0-9]{0,9}[smhd]$",
} as const;

const fileProperties = {
  id: { type: "string", pattern: PATTERNS.fileId, description: "Unique file ID" },
  slug: { type: "string", maxLength: 128, pattern: PATTERNS.slug, description: "Last URL segment; \"\" when not set" },
  url: { type: "string", format: "uri", description: "Canonical URL: `{HOSTNAME}/{id}` or `{HOSTNAME}/{id}/{slug}`" },
  name: { type: "string", maxLength: 255, pattern: PATTERNS.name, description: "Original file name; \"\" when not set" },
  content_type: { type: "string", minLength: 1, description: "Media type of the upload, with its parameters" },
  size: { type: "string", pattern: "^(0|[1-9][0-9]*)$", description: "Size in bytes (int64 as a decimal string)" },
  checksum: { type: "string", pattern: "^([A-Za-z0-9+/]{6}==)?$", description: "CRC32C of the content, 4 bytes big-endian, base64" },
  visibility: { type: "string", enum: [...VISIBILITIES], description: "Who can open the file by its URL" },
  created_at: { ...timestamp, description: "Creation time" },
  updated_at: { ...timestamp, description: "Last change (content or metadata)" },
} satisfies Record<keyof FileJson, Schema>;

const folderProperties = {
  id: { type: "string", pattern: PATTERNS.fileId, description: "Unique folder ID (the shape of a file ID)" },
  name: { type: "string", minLength: 1, maxLength: 255, pattern: PATTERNS.folderName, description: "Unique among the names of its parent's files and sub-folders" },
  parent_id: { type: "string", pattern: `^$|${PATTERNS.fileId}`, description: "The folder it is in; \"\" at the top" },
  url: { type: "string", format: "uri", description: "Where the dashboard shows it: `{HOSTNAME}/?folder={id}`" },
  file_count: { ...count, description: "Files directly in it (not in its sub-folders)" },
  bytes: { type: "string", pattern: "^(0|[1-9][0-9]*)$", description: "Their sizes, summed (int64 as a decimal string)" },
  created_at: timestamp,
  updated_at: { ...timestamp, description: "Last rename or move" },
} satisfies Record<keyof FolderJson, Schema>;

const folderPageProperties = {
  folders: { type: "array", items: ref("Folder"), description: "Newest first" },
  next_page_token: nextPage,
} satisfies Record<keyof FolderPageJson, Schema>;

const shareProperties = {
  id: { type: "string", minLength: 1 },
  file_id: { type: "string", pattern: "^$|" + PATTERNS.fileId, description: "the shared file; \"\" for a folder's share or a share of several items" },
  folder_id: { type: "string", description: "the shared folder (CONTRACT §12); \"\" for a file's share or a share of several items" },
  url: { type: "string", format: "uri", description: "`{HOSTNAME}/s/{token}`: serves the file's content (or the folder's or the items' page) to whoever has it" },
  expire_time: expiry,
  max_downloads: limit("null: no limit"),
  download_count: count,
  has_password: { type: "boolean" },
  created_at: timestamp,
} satisfies Record<keyof ShareJson, Schema>;

const uploadLinkProperties = {
  id: { type: "string", pattern: PATTERNS.fileId },
  url: { type: "string", format: "uri", description: "`{HOSTNAME}/u/{token}`: the guest upload page" },
  name: { type: "string", maxLength: 255 },
  expire_time: expiry,
  max_files: limit("null: no limit"),
  max_bytes: limit("null: no limit"),
  files_uploaded: count,
  bytes_uploaded: count,
  created_at: timestamp,
  delete_time: { ...expiry, description: "When the link was deleted (revoked), or \"\" while it is not (AIP-164)" },
} satisfies Record<keyof UploadLinkJson, Schema>;

const filePageProperties = {
  files: { type: "array", items: ref("File"), description: "Newest first" },
  next_page_token: nextPage,
} satisfies Record<keyof FilePageJson, Schema>;

const unfinishedUploadProperties = {
  id: { type: "string", pattern: "^[A-Za-z0-9_-]{26}$" },
  url: { type: "string", format: "uri", description: "The tus upload URL: HEAD, PATCH and DELETE it" },
  name: { type: "string", description: "Upload-Metadata `filename`; \"\" when none" },
  offset: { ...count, description: "Bytes received (Upload-Offset)" },
  length: { ...count, description: "Upload-Length, bytes" },
  upload_link_id: { type: ["string", "null"], description: "The guest upload link it comes through; null for the caller's own" },
  expire_time: { ...timestamp, description: "When it is swept unless finished" },
  created_at: timestamp,
} satisfies Record<keyof UnfinishedUploadJson, Schema>;

const unfinishedUploadPageProperties = {
  uploads: { type: "array", items: ref("UnfinishedUpload"), description: "Newest first" },
  next_page_token: nextPage,
} satisfies Record<keyof UnfinishedUploadPageJson, Schema>;

const usageProperties = {
  files: count,
  file_bytes: { ...count, description: "Bytes of the caller's files" },
  reserved_bytes: { ...count, description: "Bytes of unfinished resumable uploads" },
  dav_bytes: { ...count, description: "Bytes of WebDAV dead properties and of the owner elements of live WebDAV locks" },
  used_bytes: { ...count, description: "file_bytes + reserved_bytes + dav_bytes: what the quota is checked against" },
  quota_bytes: { type: ["integer", "null"], minimum: 0, description: "null: no quota" },
} satisfies Record<keyof UsageJson, Schema>;

const webhookProperties = {
  id: { type: "string", pattern: "^wh_[A-Za-z0-9_-]{21}$" },
  url: { type: "string", format: "uri", maxLength: MAX_WEBHOOK_URL_CHARS, description: "Where events are POSTed" },
  events: { type: "array", items: { type: "string", enum: [...EVENT_TYPES] }, minItems: 1, uniqueItems: true },
  created_at: timestamp,
} satisfies Record<keyof WebhookJson, Schema>;

const newWebhookProperties = {
  ...webhookProperties,
  secret: { type: "string", pattern: "^whsec_[A-Za-z0-9+/]{43}=$", description: "Standard Webhooks signing secret, shown this once" },
} satisfies Record<keyof NewWebhookJson, Schema>;

const webhookAttemptProperties = {
  event_id: { type: "string", pattern: "^evt_", description: "The `webhook-id` header of the delivery" },
  type: { type: "string", enum: [...EVENT_TYPES] },
  attempted_at: timestamp,
  status: { type: ["integer", "null"], description: "The receiver's HTTP status; null when none came" },
  error: { type: "string", description: "Why the attempt failed; \"\" when it delivered" },
  duration_ms: count,
} satisfies Record<keyof WebhookAttemptJson, Schema>;

const apiKeyProperties = {
  id: { type: "string", minLength: 1, description: "The key's ID (for DELETE /auth/keys/{id}); not the secret" },
  name: { type: "string" },
  scopes: { type: "array", items: { type: "string", enum: [...SCOPES] }, uniqueItems: true },
  expire_time: expiry,
  created_at: timestamp,
  last_used_at: { anyOf: [timestamp, { type: "null" }] },
  access_key_id: { type: "string", pattern: "^CUBBY[0-9A-Z]{16}$", description: "An S3 access key's access key ID (CONTRACT §16); absent for an API key" },
};

/** The resources: `components.schemas`. */
export const schemas: Record<string, Schema> = {
  File: closedObject(fileProperties, "The File object of the specification: exactly these ten fields, always present."),
  FilePage: closedObject(filePageProperties, "A page of a file listing."),
  Folder: closedObject(folderProperties, "A folder (CONTRACT §12); its counts are of what it holds directly."),
  FolderPage: closedObject(folderPageProperties, "A page of a folder listing."),
  Share: closedObject(shareProperties, "A share link (CONTRACT §8)."),
  ShareList: withOptional(closedObject({ shares: { type: "array", items: ref("Share") }, next_page_token: { ...nextPage, description: "Present only when there is a next page: pass it as `page_token`" } }), "next_page_token"),
  ShareDetail: closedObject(
    {
      ...shareProperties,
      last_download_time: { ...expiry, description: 'When a download was last counted (RFC 3339), or "" for never' },
      items: {
        type: "array",
        description: "What the share holds: a file, a folder, or several of either (POST /v1/shares), in order",
        items: { oneOf: [closedObject({ file_id: { type: "string" } }), closedObject({ folder_id: { type: "string" } })] },
      },
    },
    "A Share with what it holds and its last download (CONTRACT §15, GET /v1/shares); a share of several items has file_id and folder_id \"\".",
  ),
  ShareDownload: closedObject(
    {
      time: timestamp,
      item: { type: "string", description: "What was sent: a file's name, or a folder's ZIP (`{name}.zip`)" },
      bytes: count,
      completed: { type: "boolean", description: "Whether every byte of the answer went out" },
      client_address: { type: "string", description: "The client's network: an IPv4 /24 or an IPv6 /48 (the whole address with SHARE_LOG_FULL_ADDRESS=true)" },
    },
    "One counted download of a share (CONTRACT §15).",
  ),
  ShareDownloadList: closedObject({ downloads: { type: "array", items: ref("ShareDownload") }, next_page_token: nextPage }),
  ShareDetailList: closedObject({ shares: { type: "array", items: ref("ShareDetail") }, next_page_token: nextPage }),
  UploadLink: closedObject(uploadLinkProperties, "A guest upload link (CONTRACT §8)."),
  UploadLinkList: withOptional(closedObject({ upload_links: { type: "array", items: ref("UploadLink") }, next_page_token: { ...nextPage, description: "Present only when there is a next page: pass it as `page_token`" } }), "next_page_token"),
  UnfinishedUpload: closedObject(unfinishedUploadProperties, "An unfinished resumable upload (CONTRACT §10)."),
  UnfinishedUploadPage: closedObject(unfinishedUploadPageProperties, "A page of the caller's unfinished uploads."),
  Usage: closedObject(usageProperties, "The caller's storage use and quota (QUOTA_BYTES)."),
  Expiry: closedObject({ expire_time: expiry }, "When the file is deleted as by DELETE."),
  FileExpiry: closedObject({ file_id: { type: "string", pattern: PATTERNS.fileId }, expire_time: expiry }, "When one file deletes itself."),
  ExpiryList: closedObject({ expiries: { type: "array", items: ref("FileExpiry"), description: "The files asked for that the caller can see, in the order asked" } }, "When each of the files deletes itself."),
  ThumbnailList: closedObject(
    { file_ids: { type: "array", items: { type: "string", pattern: PATTERNS.fileId }, description: "Those of the files asked for that have a thumbnail to show, in the order asked" } },
    "Which files have a thumbnail (CONTRACT §15).",
  ),
  Webhook: closedObject(webhookProperties, "A webhook endpoint (CONTRACT §13): never its secret."),
  NewWebhook: closedObject(newWebhookProperties, "A webhook just created, with its signing secret."),
  WebhookList: closedObject({ webhooks: { type: "array", items: ref("Webhook") } }),
  WebhookDelivery: closedObject(webhookAttemptProperties, "One delivery attempt."),
  WebhookDeliveryList: closedObject({
    deliveries: { type: "array", items: ref("WebhookDelivery"), description: "Newest first" },
    next_page_token: nextPage,
  }),
  ApiKey: withOptional(closedObject(apiKeyProperties, "An API key or S3 access key as listed: never the secret."), "access_key_id"),
  NewApiKey: withOptional(
    closedObject(
      {
        ...apiKeyProperties,
        key: { type: "string", pattern: "^cubby_", description: "An API key's secret, shown this once" },
        secret_access_key: { type: "string", pattern: "^[0-9A-Za-z]{40}$", description: "An S3 access key's secret access key, shown this once" },
      },
      "A key just minted, with its secret: `key` for an API key, `access_key_id` and `secret_access_key` for an S3 access key.",
    ),
    "access_key_id",
    "key",
    "secret_access_key",
  ),
  Profile: closedObject(
    {
      email: { type: "string" },
      display_name: { type: "string", description: "The name share and folder pages show: your own, or your e-mail's local part" },
      show_email_on_shares: { type: "boolean" },
    },
    "Your profile (CONTRACT §15).",
  ),
  AdminUser: closedObject(
    {
      id: { type: "string", minLength: 1 },
      email: { type: "string" },
      display_name: { type: "string" },
      admin: { type: "boolean", description: "Promoted (cubby users promote), or listed in ADMIN_EMAILS" },
      disabled: { type: "boolean" },
      quota_bytes: { type: ["integer", "null"], minimum: 0, description: "The quota that applies; null: none" },
      quota_source: { enum: ["own", "default", "none"], description: "Their own, QUOTA_BYTES, or no quota set for them" },
      used_bytes: count,
      files: count,
      last_seen_time: { ...expiry, description: 'The last authenticated request (RFC 3339), "" for never' },
      created_at: timestamp,
    },
    "A user as an administrator sees them (CONTRACT §15).",
  ),
  AdminUserList: closedObject({ users: { type: "array", items: ref("AdminUser") }, next_page_token: nextPage }),
  ApiKeyList: withOptional(closedObject({ keys: { type: "array", items: ref("ApiKey") }, next_page_token: { ...nextPage, description: "Present only when there is a next page: pass it as `page_token`" } }), "next_page_token"),
  Session: closedObject(
    {
      sign_in_configured: { type: "boolean", description: "Whether an identity provider is configured" },
      signed_in: { type: "boolean" },
      email: { type: "string", description: "The signed-in user's address; \"\" when signed out" },
    },
    "Who the dashboard's session cookie belongs to.",
  ),
  Empty: { type: "object", maxProperties: 0, description: "`{}`" },
  Health: closedObject({ status: { const: "ok" } }),
  Status: closedObject(
    {
      code: { type: "integer", description: "gRPC status code" },
      message: { type: "string", description: "For people; never a secret" },
      details: { type: "array", maxItems: 0 },
    },
    "Every failure: `google.rpc.Status` JSON (CONTRACT §2).",
  ),
};

/** Every error kind once (a new one in errors.ts does not compile until it is listed here). */
const ERROR_CODES = Object.keys({
  invalid_argument: 1,
  unsupported_media_type: 1,
  unauthenticated: 1,
  permission_denied: 1,
  not_found: 1,
  already_exists: 1,
  gone: 1,
  payload_too_large: 1,
  resource_exhausted: 1,
  aborted: 1,
  failed_precondition: 1,
  checksum_mismatch: 1,
  unavailable: 1,
  internal: 1,
} satisfies Record<ErrorCode, 1>) as ErrorCode[];

/** Every HTTP status an error can have, ascending (errors.ts's table). */
export const ERROR_STATUSES: number[] = [...new Set(ERROR_CODES.map(httpStatusOf))].sort((a, b) => a - b);

/** The gRPC codes the body of an error with HTTP `status` carries (e.g. 413 → [8]). */
export function grpcCodesOf(status: number): number[] {
  return [...new Set(ERROR_CODES.filter((c) => httpStatusOf(c) === status).map(grpcCodeOf))].sort((a, b) => a - b);
}

/** The `google.rpc.Status` schema of an error with HTTP `status`: its `code` is that status's gRPC code. */
export function statusSchema(status: number): Schema {
  const codes = grpcCodesOf(status);
  return { allOf: [ref("Status"), { properties: { code: codes.length === 1 ? { const: codes[0] } : { enum: codes } } }] };
}
