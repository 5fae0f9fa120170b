/**
 * The database schema on PostgreSQL (drizzle-orm pg-core), table for table and column for
 * column the SQLite schema (schema.ts), so that both implement the same metadata store port.
 * `npm run db:generate` writes its migrations to drizzle-pg/. Times are BIGINT Unix
 * microseconds (below 2^53 until the year 2255, so they stay exact as JavaScript numbers).
 */
import { getTableColumns, sql } from "drizzle-orm";
import type { ShareItemJson } from "../domain/share.ts";
import { type AnyPgColumn, bigint, bigserial, boolean, customType, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";

/** BYTEA as a Node Buffer. */
const bytea = customType<{ data: Buffer; driverData: Buffer }>({
  dataType: () => "bytea",
});

/** JSON kept as text (postgres-js would otherwise be handed a JSON string for a jsonb column and store it as a JSON string). */
const jsonText = <T>() =>
  customType<{ data: T; driverData: string }>({
    dataType: () => "text",
    toDriver: (value) => JSON.stringify(value),
    fromDriver: (value) => JSON.parse(value) as T,
  });

/** Microseconds since the Unix epoch. */
const micros = (name: string) => bigint(name, { mode: "number" });

export const users = pgTable(
  "users",
  {
    id: text("id").primaryKey(),
    /** Lower-cased e-mail address. */
    email: text("email").notNull(),
    /** OpenID issuer and subject once the user has signed in; null for users the CLI created. */
    issuer: text("issuer"),
    subject: text("subject"),
    createdAt: micros("created_at").notNull(),
    /**
     * Storage quota in bytes (`cubby users set-quota`, CONTRACT §9): null follows QUOTA_BYTES,
     * -1 is no quota at all.
     */
    quotaBytes: bigint("quota_bytes", { mode: "number" }),
    /** Set by `cubby users disable`: the user's keys and sessions are refused from then on. */
    disabledAt: micros("disabled_at"),
    /** The last authenticated request by key or session (written at most once a minute). */
    lastSeenAt: micros("last_seen_at"),
    /** The name shares and folder pages show (CONTRACT §15); null: the e-mail's local part. */
    displayName: text("display_name"),
    /** Whether share pages also show the e-mail (the user's choice, CONTRACT §15). */
    showEmailOnShares: boolean("show_email_on_shares").notNull().default(false),
    /** Made an administrator by `cubby users promote` (ADMIN_EMAILS makes admins too, CONTRACT §15). */
    admin: boolean("admin").notNull().default(false),
  },
  (t) => [uniqueIndex("users_email_unique").on(t.email), uniqueIndex("users_issuer_subject_unique").on(t.issuer, t.subject)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull().default(""),
    /** SHA-256 of the whole key; the key itself is never stored. */
    secretHash: bytea("secret_hash").notNull(),
    createdAt: micros("created_at").notNull(),
    lastUsedAt: micros("last_used_at"),
    /** What the key may do (CONTRACT §8), space-separated: files.read, files.write. */
    scopes: text("scopes").notNull().default("files.read files.write"),
    /** After this the key is refused as unknown (401); null: never. */
    expiresAt: micros("expires_at"),
    /**
     * An S3 access key's secret access key (CONTRACT §16), kept so that Signature Version 4's
     * HMACs can be checked; null for an API key. docs/s3.md says how it is kept.
     */
    s3Secret: text("s3_secret"),
  },
  (t) => [uniqueIndex("api_keys_secret_hash_unique").on(t.secretHash), index("api_keys_user_created_idx").on(t.userId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`)],
);

export const files = pgTable(
  "files",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "restrict" }),
    slug: text("slug").notNull().default(""),
    name: text("name").notNull().default(""),
    contentType: text("content_type").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    checksum: text("checksum").notNull(),
    visibility: text("visibility", { enum: ["private", "internal", "public"] }).notNull(),
    /** Name of the content's blob in the blob store; replaced, never overwritten. */
    blob: text("blob").notNull(),
    createdAt: micros("created_at").notNull(),
    updatedAt: micros("updated_at").notNull(),
    /** When the expiry sweep deletes the file as DELETE does (CONTRACT §8); null: never. Not part of the File object. */
    expiresAt: micros("expires_at"),
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
    folderId: text("folder_id").references((): AnyPgColumn => folders.id, { onDelete: "set null" }),
  },
  (t) => [
    index("files_expires_idx").on(t.expiresAt),
    index("files_owner_created_idx").on(t.ownerId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    // A folder's files newest first, a page at a time, and by name (a path's step); the same
    // two for the files at the top (folder_id NULL), per owner. files_folder_created_idx also
    // serves the foreign key's ON DELETE SET NULL when folders go.
    index("files_folder_created_idx").on(t.folderId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    index("files_folder_name_idx").on(t.folderId, t.name),
    index("files_top_created_idx").on(t.ownerId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`).where(sql`${t.folderId} IS NULL`),
    index("files_top_name_idx").on(t.ownerId, t.name).where(sql`${t.folderId} IS NULL`),
    index("files_upload_link_created_idx").on(t.uploadLinkId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    uniqueIndex("files_blob_unique").on(t.blob),
    // The other orders of an owner's, a folder's and the top's files (order_by, CONTRACT §15):
    // a range of one of these each, the ID last so equal values page without gaps.
    index("files_owner_order_name_idx").on(t.ownerId, sql`${t.name} COLLATE "C"`, t.id),
    index("files_owner_order_size_idx").on(t.ownerId, t.size, t.id),
    index("files_folder_order_name_idx").on(t.folderId, sql`${t.name} COLLATE "C"`, t.id),
    index("files_folder_order_size_idx").on(t.folderId, t.size, t.id),
    index("files_top_order_name_idx").on(t.ownerId, sql`${t.name} COLLATE "C"`, t.id).where(sql`${t.folderId} IS NULL`),
    index("files_top_order_size_idx").on(t.ownerId, t.size, t.id).where(sql`${t.folderId} IS NULL`),
  ],
);

/**
 * The columns a {@link FileRecord} is read from: every column of `files` but `folder_id`, which
 * the folder table reads and writes alone, so that a file's update written from a record read
 * earlier can never move it back to the folder it was in then.
 */
export const fileColumns = (({ folderId: _folder, ...columns }) => columns)(getTableColumns(files));

/**
 * What file names are ordered by (`order_by=name`, CONTRACT §15): the "C" collation, code point
 * order as SQLite's BINARY, whatever the database's locale, so both stores list alike; the name
 * order indexes are built on it.
 */
export const NAME_IN_C = sql`${files.name} COLLATE "C"`;

export const sessions = pgTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** SHA-256 of the session secret; the token (id.secret) lives only in the browser's cookie. */
    secretHash: bytea("secret_hash").notNull(),
    createdAt: micros("created_at").notNull(),
    expiresAt: micros("expires_at").notNull(),
  },
  (t) => [index("sessions_user_idx").on(t.userId), index("sessions_expires_idx").on(t.expiresAt)],
);

/**
 * Share links (CONTRACT §8): `/s/{token}` serves a file to whoever has the token. A deleted share
 * keeps its row (deletedAt) so that its URL answers 410 Gone rather than 404, and so does a share
 * whose file is gone: fileId is not a foreign key, the file's DELETE leaves the share behind.
 */
export const shares = pgTable(
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
    expiresAt: micros("expires_at"),
    maxDownloads: bigint("max_downloads", { mode: "number" }),
    downloadCount: bigint("download_count", { mode: "number" }).notNull().default(0),
    /** When a download was last counted (CONTRACT §15); null: never. */
    lastDownloadAt: bigint("last_download_at", { mode: "number" }),
    /** A password hash in PHC string format (argon2id by Bun.password); null: no password. */
    passwordHash: text("password_hash"),
    createdAt: micros("created_at").notNull(),
    deletedAt: micros("deleted_at"),
    /** A share of several items (CONTRACT §15), as JSON text; null for a file's or a folder's share (schema.ts). */
    items: jsonText<ShareItemJson[]>()("items"),
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
export const shareDownloads = pgTable(
  "share_downloads",
  {
    seq: bigserial("seq", { mode: "number" }).primaryKey(),
    shareId: text("share_id")
      .notNull()
      .references(() => shares.id, { onDelete: "cascade" }),
    /** When the answer ended, Unix microseconds. */
    at: micros("at").notNull(),
    /** What was sent: the file's name, or the folder's ZIP ("{name}.zip"). */
    item: text("item").notNull(),
    bytes: bigint("bytes", { mode: "number" }).notNull(),
    /** Whether every byte of the answer went out. */
    completed: boolean("completed").notNull(),
    /** The client's address, shortened to /24 or /48 unless SHARE_LOG_FULL_ADDRESS. */
    client: text("client").notNull(),
  },
  (t) => [index("share_downloads_share_at_idx").on(t.shareId, sql`${t.at} DESC`, sql`${t.seq} DESC`), index("share_downloads_at_idx").on(t.at)],
);

/**
 * Guest upload links ("file requests", CONTRACT §8): `/u/{token}` takes uploads into the owner's
 * account within the limits; the counters move in the transaction that commits each file.
 */
export const uploadLinks = pgTable(
  "upload_links",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    token: text("token").notNull(),
    name: text("name").notNull().default(""),
    visibility: text("visibility", { enum: ["private", "internal", "public"] }).notNull(),
    expiresAt: micros("expires_at"),
    maxFiles: bigint("max_files", { mode: "number" }),
    maxBytes: bigint("max_bytes", { mode: "number" }),
    filesUploaded: bigint("files_uploaded", { mode: "number" }).notNull().default(0),
    bytesUploaded: bigint("bytes_uploaded", { mode: "number" }).notNull().default(0),
    createdAt: micros("created_at").notNull(),
    deletedAt: micros("deleted_at"),
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
export const uploads = pgTable(
  "uploads",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The guest upload link the upload came through, if any. */
    uploadLinkId: text("upload_link_id"),
    /** Upload-Length: bytes. */
    length: bigint("length", { mode: "number" }).notNull(),
    /** Upload-Offset: bytes stored so far. */
    offset: bigint("offset", { mode: "number" }).notNull().default(0),
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
    createdAt: micros("created_at").notNull(),
    expiresAt: micros("expires_at").notNull(),
  },
  (t) => [index("uploads_expires_idx").on(t.expiresAt), index("uploads_owner_idx").on(t.ownerId), index("uploads_owner_group_idx").on(t.ownerId, t.concatGroup)],
);

/** One-time sign-in links, as in schema.ts. */
export const loginLinks = pgTable(
  "login_links",
  {
    tokenHash: bytea("token_hash").primaryKey(),
    email: text("email").notNull(),
    createdAt: micros("created_at").notNull(),
    expiresAt: micros("expires_at").notNull(),
  },
  (t) => [index("login_links_expires_idx").on(t.expiresAt)],
);

/** Webhook endpoints, as in schema.ts. */
export const webhooks = pgTable(
  "webhooks",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    events: text("events").notNull(),
    secret: text("secret").notNull(),
    createdAt: micros("created_at").notNull(),
    servedAt: micros("served_at").notNull().default(0),
  },
  (t) => [index("webhooks_owner_idx").on(t.ownerId, t.servedAt)],
);

/**
 * The outbox, as in schema.ts. `seq` is a sequence: for one subject it follows commit order,
 * because every change of a file locks its row first (the events of one file cannot interleave).
 */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    seq: bigserial("seq", { mode: "number" }).primaryKey(),
    eventId: text("event_id").notNull(),
    webhookId: text("webhook_id")
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    type: text("type").notNull(),
    subject: text("subject").notNull(),
    payload: text("payload").notNull(),
    createdAt: micros("created_at").notNull(),
    nextAttemptAt: micros("next_attempt_at").notNull(),
    attempts: integer("attempts").notNull().default(0),
    claimedBy: text("claimed_by"),
    claimedUntil: micros("claimed_until"),
    deliveredAt: micros("delivered_at"),
    failedAt: micros("failed_at"),
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

/** Delivery attempts, as in schema.ts. */
export const webhookAttempts = pgTable(
  "webhook_attempts",
  {
    seq: bigserial("seq", { mode: "number" }).primaryKey(),
    webhookId: text("webhook_id")
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    eventId: text("event_id").notNull(),
    type: text("type").notNull(),
    attemptedAt: micros("attempted_at").notNull(),
    status: integer("status"),
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
export const folders = pgTable(
  "folders",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The folder it is in; null at the top. */
    parentId: text("parent_id").references((): AnyPgColumn => folders.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    createdAt: micros("created_at").notNull(),
    updatedAt: micros("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("folders_parent_name_unique").on(t.parentId, t.name).where(sql`${t.parentId} IS NOT NULL`),
    uniqueIndex("folders_top_name_unique").on(t.ownerId, t.name).where(sql`${t.parentId} IS NULL`),
    index("folders_owner_parent_created_idx").on(t.ownerId, t.parentId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    // A folder's members as S3 keys (CONTRACT §16: `name/` sorts among its sibling files' names
    // in byte order), so ListObjects pages through an index (FolderTable.childrenByKey).
    index("folders_parent_key_idx").on(t.parentId, sql`((${t.name} || '/') COLLATE "C")`).where(sql`${t.parentId} IS NOT NULL`),
    index("folders_top_key_idx").on(t.ownerId, sql`((${t.name} || '/') COLLATE "C")`).where(sql`${t.parentId} IS NULL`),
  ],
);


/**
 * WebDAV locks (RFC 4918 §6, CONTRACT §12), in the metadata store so that every worker and
 * instance sees them. `path` is the lock's root in its owner's /dav/ namespace, decoded, "/"
 * for the root, no trailing slash otherwise.
 */
export const davLocks = pgTable(
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
    expiresAt: micros("expires_at").notNull(),
    createdAt: micros("created_at").notNull(),
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
export const davProperties = pgTable(
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

/** A file's thumbnail: as `file_thumbnails` in schema.ts. */
export const fileThumbnails = pgTable("file_thumbnails", {
  fileId: text("file_id")
    .primaryKey()
    .references(() => files.id, { onDelete: "cascade" }),
  ofBlob: text("of_blob").notNull(),
  source: text("source", { enum: ["server", "browser", "failed"] }).notNull(),
  image: bytea("image").notNull(),
  createdAt: micros("created_at").notNull(),
});
