/**
 * The database schema (drizzle-orm, SQLite). `drizzle-kit generate` turns changes here into SQL
 * migrations under drizzle/. Times are INTEGER Unix microseconds.
 */
import { getTableColumns, sql } from "drizzle-orm";
import type { ShareItemJson } from "../domain/share.ts";
import { type AnySQLiteColumn, blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    /** Lower-cased e-mail address. */
    email: text("email").notNull(),
    /** OpenID issuer and subject once the user has signed in; null for users the CLI created. */
    issuer: text("issuer"),
    subject: text("subject"),
    createdAt: integer("created_at").notNull(),
    /**
     * Storage quota in bytes (`cubby users set-quota`, CONTRACT §9): null follows QUOTA_BYTES,
     * -1 is no quota at all.
     */
    quotaBytes: integer("quota_bytes"),
    /** Set by `cubby users disable`: the user's keys and sessions are refused from then on. */
    disabledAt: integer("disabled_at"),
    /** The last authenticated request by key or session (written at most once a minute). */
    lastSeenAt: integer("last_seen_at"),
    /** The name shares and folder pages show (CONTRACT §15); null: the e-mail's local part. */
    displayName: text("display_name"),
    /** Whether share pages also show the e-mail (the user's choice, CONTRACT §15). */
    showEmailOnShares: integer("show_email_on_shares", { mode: "boolean" }).notNull().default(false),
    /** Made an administrator by `cubby users promote` (ADMIN_EMAILS makes admins too, CONTRACT §15). */
    admin: integer("admin", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [
    uniqueIndex("users_email_unique").on(t.email),
    uniqueIndex("users_issuer_subject_unique").on(t.issuer, t.subject),
  ],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull().default(""),
    /** SHA-256 of the whole key; the key itself is never stored. */
    secretHash: blob("secret_hash", { mode: "buffer" }).notNull(),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at"),
    /** What the key may do (CONTRACT §8), space-separated: files.read, files.write. */
    scopes: text("scopes").notNull().default("files.read files.write"),
    /** After this the key is refused as unknown (401); null: never. */
    expiresAt: integer("expires_at"),
    /**
     * An S3 access key's secret access key (CONTRACT §16), kept so that Signature Version 4's
     * HMACs can be checked; null for an API key. docs/s3.md says how it is kept.
     */
    s3Secret: text("s3_secret"),
  },
  (t) => [uniqueIndex("api_keys_secret_hash_unique").on(t.secretHash), index("api_keys_user_created_idx").on(t.userId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`)],
);

export const files = sqliteTable(
  "files",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "restrict" }),
    slug: text("slug").notNull().default(""),
    name: text("name").notNull().default(""),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    checksum: text("checksum").notNull(),
    visibility: text("visibility", { enum: ["private", "internal", "public"] }).notNull(),
    /** File name of the content under DATA_DIR/blobs; replaced, never overwritten. */
    blob: text("blob").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /** When the expiry sweep deletes the file as DELETE does (CONTRACT §8); null: never. Not part of the File object. */
    expiresAt: integer("expires_at"),
    /**
     * The guest upload link the file arrived through (GET /v1/upload-links/{id}/files); null for
     * any other upload. Not a foreign key: a link's row outlives its deletion anyway. Not part of
     * the File object.
     */
    uploadLinkId: text("upload_link_id"),
    /**
     * The folder the file is in (CONTRACT §12: at most one); null at the top. Not part of the
     * File object, and not of FileRecord either: read through the folder table's methods, and
     * never written by a file's update ({@link fileColumns}). A folder's deletion leaves its files
     * at the top (the service deletes them first when it deletes recursively).
     */
    folderId: text("folder_id").references((): AnySQLiteColumn => folders.id, { onDelete: "set null" }),
  },
  (t) => [
    index("files_expires_idx").on(t.expiresAt),
    index("files_owner_created_idx").on(t.ownerId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    // A folder's files newest first, a page at a time; the same for the files at the top
    // (folder_id NULL), per owner. files_folder_created_idx also serves the foreign key's ON
    // DELETE SET NULL when folders go. By name (a path's step), the name-order indexes below.
    index("files_folder_created_idx").on(t.folderId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    index("files_top_created_idx").on(t.ownerId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`).where(sql`${t.folderId} IS NULL`),
    index("files_upload_link_created_idx").on(t.uploadLinkId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    uniqueIndex("files_blob_unique").on(t.blob),
    // The other orders of an owner's, a folder's and the top's files (order_by, CONTRACT §15):
    // a range of one of these each, the ID last so equal values page without gaps. The folder's
    // and the top's by name also find a name in a folder (a path's step; SQLite's BINARY is
    // the order's collation too, so one index serves both; PostgreSQL needs two, pg-schema.ts).
    index("files_owner_order_name_idx").on(t.ownerId, t.name, t.id),
    index("files_owner_order_size_idx").on(t.ownerId, t.size, t.id),
    index("files_folder_order_name_idx").on(t.folderId, t.name, t.id),
    index("files_folder_order_size_idx").on(t.folderId, t.size, t.id),
    index("files_top_order_name_idx").on(t.ownerId, t.name, t.id).where(sql`${t.folderId} IS NULL`),
    index("files_top_order_size_idx").on(t.ownerId, t.size, t.id).where(sql`${t.folderId} IS NULL`),
  ],
);

/**
 * The columns a {@link FileRecord} is read from: every column of `files` but `folder_id`, which
 * the folder table reads and writes alone, so that a file's update written from a record read
 * earlier can never move it back to the folder it was in then.
 */
export const fileColumns = (({ folderId: _folder, ...columns }) => columns)(getTableColumns(files));

export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** SHA-256 of the session secret; the token (id.secret) lives only in the browser's cookie. */
    secretHash: blob("secret_hash", { mode: "buffer" }).notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("sessions_user_idx").on(t.userId), index("sessions_expires_idx").on(t.expiresAt)],
);

/**
 * Share links (CONTRACT §8): `/s/{token}` serves a file to whoever has the token. A deleted share
 * keeps its row (deletedAt) so that its URL answers 410 Gone rather than 404, and so does a share
 * whose file is gone: fileId is not a foreign key, the file's DELETE leaves the share behind.
 */
export const shares = sqliteTable(
  "shares",
  {
    id: text("id").primaryKey(),
    /** The shared file's ID; "" for a folder's share. */
    fileId: text("file_id").notNull(),
    /**
     * The shared folder's ID (CONTRACT §12); null for a file's share. Not a foreign key, as
     * fileId: a deleted folder's shares answer 410.
     */
    folderId: text("folder_id"),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The secret of the URL (≥ 128 random bits); kept, since listings show the URL. */
    token: text("token").notNull(),
    expiresAt: integer("expires_at"),
    maxDownloads: integer("max_downloads"),
    downloadCount: integer("download_count").notNull().default(0),
    /** When a download was last counted (CONTRACT §15); null: never. */
    lastDownloadAt: integer("last_download_at"),
    /** A password hash in PHC string format (argon2id by Bun.password); null: no password. */
    passwordHash: text("password_hash"),
    createdAt: integer("created_at").notNull(),
    deletedAt: integer("deleted_at"),
    /**
     * A share of several items (CONTRACT §15): its files and folders as JSON, at most
     * MAX_SHARE_ITEMS (service/shares.ts); null for a file's or a folder's share. Like fileId
     * and folderId, no foreign key: a deleted item leaves the share, which serves the others.
     */
    items: text("items", { mode: "json" }).$type<ShareItemJson[]>(),
  },
  // The listings of a file's, a folder's and an owner's live shares, newest first, are ranges of
  // these (CONTRACT §14: keyset-paged through an index).
  (t) => [
    uniqueIndex("shares_token_unique").on(t.token),
    index("shares_file_live_idx").on(t.fileId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`).where(sql`${t.deletedAt} IS NULL`),
    index("shares_folder_live_idx").on(t.folderId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`).where(sql`${t.deletedAt} IS NULL`),
    index("shares_owner_live_idx").on(t.ownerId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`).where(sql`${t.deletedAt} IS NULL`),
    // Every share of an owner, deleted ones too: what deleting the user removes (the foreign key's cascade).
    index("shares_owner_idx").on(t.ownerId),
  ],
);

/**
 * A share's access log (CONTRACT §15 `GET /v1/shares/{id}/downloads`): one row per counted
 * download, written when its answer ended; kept 90 days (service/shares.ts).
 */
export const shareDownloads = sqliteTable(
  "share_downloads",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    shareId: text("share_id")
      .notNull()
      .references(() => shares.id, { onDelete: "cascade" }),
    /** When the answer ended, Unix microseconds. */
    at: integer("at").notNull(),
    /** What was sent: the file's name, or the folder's ZIP ("{name}.zip"). */
    item: text("item").notNull(),
    bytes: integer("bytes").notNull(),
    /** Whether every byte of the answer went out. */
    completed: integer("completed", { mode: "boolean" }).notNull(),
    /** The client's address, shortened to /24 or /48 unless SHARE_LOG_FULL_ADDRESS. */
    client: text("client").notNull(),
  },
  (t) => [index("share_downloads_share_at_idx").on(t.shareId, sql`${t.at} DESC`, sql`${t.seq} DESC`), index("share_downloads_at_idx").on(t.at)],
);

/**
 * Guest upload links ("file requests", CONTRACT §8): `/u/{token}` takes uploads into the owner's
 * account within the limits; the counters move in the transaction that commits each file.
 */
export const uploadLinks = sqliteTable(
  "upload_links",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    token: text("token").notNull(),
    name: text("name").notNull().default(""),
    visibility: text("visibility", { enum: ["private", "internal", "public"] }).notNull(),
    expiresAt: integer("expires_at"),
    maxFiles: integer("max_files"),
    maxBytes: integer("max_bytes"),
    filesUploaded: integer("files_uploaded").notNull().default(0),
    bytesUploaded: integer("bytes_uploaded").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    deletedAt: integer("deleted_at"),
  },
  // The owner's links newest first, live ones only or all (AIP-164 show_deleted), each a range of one index.
  (t) => [
    uniqueIndex("upload_links_token_unique").on(t.token),
    index("upload_links_owner_created_idx").on(t.ownerId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    index("upload_links_owner_live_idx").on(t.ownerId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`).where(sql`${t.deletedAt} IS NULL`),
  ],
);

/**
 * Resumable uploads (tus 1.0.0, CONTRACT §8). The row holds the authoritative offset; the bytes
 * live in the blob store under the upload's ID until the last one arrives and the upload becomes
 * a file (fileId). Unfinished uploads are swept after expiresAt.
 */
export const uploads = sqliteTable(
  "uploads",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The guest upload link the upload came through, if any. */
    uploadLinkId: text("upload_link_id"),
    /** Upload-Length: bytes. */
    length: integer("length").notNull(),
    /** Upload-Offset: bytes stored so far. */
    offset: integer("offset").notNull().default(0),
    /** The decoded Upload-Metadata as a JSON object of strings. */
    metadata: text("metadata").notNull().default("{}"),
    /** The File the upload became, once complete. */
    fileId: text("file_id"),
    /**
     * Upload-Concat (tus concatenation): null for a plain upload; `partial` for a part that
     * never becomes a file by itself; `final;/v1/uploads/a /v1/uploads/b …` for the upload made
     * of finished partials, in order.
     */
    concat: text("concat"),
    /** A guest's partial upload's concatenation (Upload-Metadata `group`), or an S3 multipart upload's (s3/multipart.ts); null otherwise (upload-ports.ts UploadRow). */
    concatGroup: text("concat_group"),
    /**
     * CRC32C of the bytes before the offset, carried chunk by chunk so the finished upload is
     * not read back to checksum it (signed 32-bit as stored; null when unknown: rows made
     * before it was kept, whose bytes are read once at the end instead).
     */
    crc32c: integer("crc32c"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("uploads_expires_idx").on(t.expiresAt), index("uploads_owner_idx").on(t.ownerId), index("uploads_owner_group_idx").on(t.ownerId, t.concatGroup)],
);

/**
 * One-time sign-in links (`cubby login-link`, CONTRACT §11): only SHA-256 of the token is kept.
 * A link is deleted when it is used (single use: the delete that returns it is the claim) and
 * swept once expired. Keyed by e-mail, not user: the user is created when the link is used.
 */
export const loginLinks = sqliteTable(
  "login_links",
  {
    tokenHash: blob("token_hash", { mode: "buffer" }).primaryKey(),
    /** Lower-cased e-mail address of who the link signs in. */
    email: text("email").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("login_links_expires_idx").on(t.expiresAt)],
);

/**
 * Webhook endpoints (CONTRACT §13): where a user's events are POSTed. The secret signs every
 * delivery (Standard Webhooks HMAC-SHA256), so it is kept as it was shown: a hash could not sign.
 */
export const webhooks = sqliteTable(
  "webhooks",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    /** The event types it receives, space-separated (domain/webhook.ts EVENT_TYPES). */
    events: text("events").notNull(),
    /** `whsec_` + base64 of 32 random bytes. */
    secret: text("secret").notNull(),
    createdAt: integer("created_at").notNull(),
    /**
     * When the deliverer last claimed one of its deliveries (µs; 0: never): the round-robin
     * order of webhooks, and through the owner's latest, of users (service/webhook-deliverer.ts).
     */
    servedAt: integer("served_at").notNull().default(0),
  },
  (t) => [index("webhooks_owner_idx").on(t.ownerId, t.servedAt)],
);

/**
 * The outbox (CONTRACT §13): one row per event and webhook, inserted in the transaction of the
 * change it reports, delivered by whichever serving process claims it (claimedBy until
 * claimedUntil), retried until deliveredAt or, past 24 h, failedAt. `seq` orders the events of
 * one subject (a file) for one webhook: a row waits while an earlier one of its subject is
 * neither delivered nor given up.
 */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    /** The `webhook-id` header: the same on every attempt, so a receiver can drop duplicates. */
    eventId: text("event_id").notNull(),
    webhookId: text("webhook_id")
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    type: text("type").notNull(),
    /** What the event is about (a file ID): the unit of ordering. */
    subject: text("subject").notNull(),
    /** The body as sent, JSON `{"type","timestamp","data"}`: signed afresh on each attempt. */
    payload: text("payload").notNull(),
    createdAt: integer("created_at").notNull(),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    attempts: integer("attempts").notNull().default(0),
    claimedBy: text("claimed_by"),
    claimedUntil: integer("claimed_until"),
    deliveredAt: integer("delivered_at"),
    failedAt: integer("failed_at"),
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_event_webhook_unique").on(t.eventId, t.webhookId),
    // The claim's (storage/*-webhooks.ts claim): which webhooks have pending deliveries, each one's
    // due ones, and its attempts in flight (leases still running), each through its own index.
    index("webhook_deliveries_webhook_due_idx").on(t.webhookId, t.nextAttemptAt).where(sql`${t.deliveredAt} IS NULL AND ${t.failedAt} IS NULL`),
    index("webhook_deliveries_webhook_claimed_idx").on(t.webhookId, t.claimedUntil).where(sql`${t.deliveredAt} IS NULL AND ${t.failedAt} IS NULL`),
    index("webhook_deliveries_subject_idx").on(t.webhookId, t.subject, t.seq),
    index("webhook_deliveries_created_idx").on(t.createdAt),
  ],
);

/** Each delivery attempt, for GET /v1/webhooks/{id}/deliveries (CONTRACT §13). */
export const webhookAttempts = sqliteTable(
  "webhook_attempts",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    webhookId: text("webhook_id")
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    eventId: text("event_id").notNull(),
    type: text("type").notNull(),
    attemptedAt: integer("attempted_at").notNull(),
    /** The receiver's HTTP status; null when none came (refused target, timeout, connection error). */
    status: integer("status"),
    /** Why it failed ("" when it did not). */
    error: text("error").notNull().default(""),
    durationMs: integer("duration_ms").notNull(),
  },
  (t) => [index("webhook_attempts_webhook_idx").on(t.webhookId, t.seq), index("webhook_attempts_time_idx").on(t.attemptedAt)],
);

/**
 * Folders (CONTRACT §12): each user's tree. Names are unique within a parent (the partial unique
 * indexes below, for sub-folders; a file's name against its folder's other names is checked by
 * the service, under the owner's lock). Deleting a folder deletes its sub-folders (cascade); the
 * service deletes or moves out their files first.
 */
export const folders = sqliteTable(
  "folders",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The folder it is in; null at the top. */
    parentId: text("parent_id").references((): AnySQLiteColumn => folders.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("folders_parent_name_unique").on(t.parentId, t.name).where(sql`${t.parentId} IS NOT NULL`),
    uniqueIndex("folders_top_name_unique").on(t.ownerId, t.name).where(sql`${t.parentId} IS NULL`),
    index("folders_owner_parent_created_idx").on(t.ownerId, t.parentId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    // A folder's members as S3 keys (CONTRACT §16: `name/` sorts among its sibling files' names
    // in byte order), so ListObjects pages through an index (FolderTable.childrenByKey).
    index("folders_parent_key_idx").on(t.parentId, sql`(${t.name} || '/')`).where(sql`${t.parentId} IS NOT NULL`),
    index("folders_top_key_idx").on(t.ownerId, sql`(${t.name} || '/')`).where(sql`${t.parentId} IS NULL`),
  ],
);


/**
 * WebDAV locks (RFC 4918 §6, CONTRACT §12), in the metadata store so that every worker and
 * instance sees them. `path` is the lock's root in its owner's /dav/ namespace, decoded, "/"
 * for the root, no trailing slash otherwise.
 */
export const davLocks = sqliteTable(
  "dav_locks",
  {
    /** The lock token (a URI, e.g. `urn:uuid:…`). */
    token: text("token").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    path: text("path").notNull(),
    /** 0, or -1 for infinity. */
    depth: integer("depth").notNull(),
    /** 1: exclusive, 0: shared. */
    exclusive: integer("exclusive").notNull(),
    /** The client's DAV:owner element, as XML; "" when none. */
    ownerXml: text("owner_xml").notNull().default(""),
    /** The timeout the client was granted, seconds. */
    timeoutSeconds: integer("timeout_seconds").notNull(),
    expiresAt: integer("expires_at").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("dav_locks_owner_path_idx").on(t.ownerId, t.path), index("dav_locks_expires_idx").on(t.expiresAt)],
);

/**
 * WebDAV dead properties (RFC 4918 §4, PROPPATCH), per resource: `file:{id}`, `folder:{id}`, or
 * `root`. A file's or folder's properties also name it in `file_id` or `folder_id`, whose
 * foreign keys delete them with it however it goes (WebDAV, REST, the expiry sweep, a folder's
 * recursive delete). `bytes` (namespace, name and value, UTF-8) counts against the owner's
 * quota (CONTRACT §14); the (owner_id, bytes) index sums them without reading the values.
 */
export const davProperties = sqliteTable(
  "dav_properties",
  {
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    resource: text("resource").notNull(),
    namespace: text("namespace").notNull(),
    name: text("name").notNull(),
    /** The property element as XML, namespace declarations included. */
    value: text("value").notNull(),
    /** UTF-8 bytes of namespace, name and value: what the property counts against the quota. */
    bytes: integer("bytes").notNull().default(0),
    /** The file the property is of (resource `file:{id}`); null for a folder's or the top's. */
    fileId: text("file_id").references(() => files.id, { onDelete: "cascade" }),
    /** The folder the property is of (resource `folder:{id}`); null otherwise. */
    folderId: text("folder_id").references(() => folders.id, { onDelete: "cascade" }),
  },
  (t) => [
    primaryKey({ columns: [t.ownerId, t.resource, t.namespace, t.name] }),
    index("dav_properties_owner_bytes_idx").on(t.ownerId, t.bytes),
    index("dav_properties_file_idx").on(t.fileId),
    index("dav_properties_folder_idx").on(t.folderId),
  ],
);

/**
 * A file's thumbnail (CONTRACT §15): a small WebP kept beside the file, never in the File object.
 * Made on the server from an image's content, or sent by the uploading browser (a video's poster,
 * a PDF's first page) and re-encoded here. `of_blob` names the content it was made from: after
 * the content is replaced the row is stale and is made or sent anew. The foreign key removes it
 * with the file however the file goes. An image that cannot be made into one keeps a row with
 * `source` "failed" and no bytes, so that it is not decoded again for every request.
 */
export const fileThumbnails = sqliteTable("file_thumbnails", {
  fileId: text("file_id")
    .primaryKey()
    .references(() => files.id, { onDelete: "cascade" }),
  ofBlob: text("of_blob").notNull(),
  source: text("source", { enum: ["server", "browser", "failed"] }).notNull(),
  /** The WebP's bytes; empty when `source` is "failed". */
  image: blob("image", { mode: "buffer" }).notNull(),
  createdAt: integer("created_at").notNull(),
});
