/**
 * The two storage ports the services are written against (hexagonal "ports and adapters", as
 * PicoShare's `store.Store`): a **metadata store** for rows (users, API keys, sessions, files)
 * and a **blob store** for content. They say what `service/` needs and are declared here, at
 * the storage boundary, so that no import goes upward: `service/` imports them, and the
 * implementations beside them implement them. SQLite (`storage/sqlite-metadata.ts`) and the local disk
 * (`storage/disk-blobs.ts`) are the first implementations; PostgreSQL and S3-compatible object
 * storage are the next (CONTRACT §7). Everything is asynchronous because those are.
 *
 * The one durability rule both serve (CONTRACT §6): content is written durably under a fresh
 * blob name first, the row that refers to it is committed after, and a blob no row refers to
 * any more is removed only after that commit.
 */
import type { FileRecord } from "../domain/file.ts";
import type { ShareDownloadRow, ShareRow } from "../domain/share.ts";
import type { FolderRow } from "../domain/folder.ts";
import type { PageCursor } from "../domain/params.ts";
import type { FileCursor, FileOrder } from "../domain/file-order.ts";
import type { WebhookAttemptRow, WebhookRow } from "../domain/webhook.ts";
import type { PartialUploads, UploadLinkTable, UploadTable } from "./upload-ports.ts";

// --- metadata ---

/** A user row. Times are Unix microseconds. */
export interface UserRow {
  id: string;
  email: string;
  /** The OpenID issuer and subject the user signed in with; null for users made by the CLI. */
  issuer: string | null;
  subject: string | null;
  createdAt: number;
}

/**
 * A user's row with the administrative state beside the identity (CONTRACT §9). Times are Unix
 * microseconds.
 */
export interface UserAccount extends UserRow {
  /** Storage quota in bytes; null follows QUOTA_BYTES; {@link NO_QUOTA} is no quota at all. */
  quotaBytes: number | null;
  /** When `cubby users disable` disabled the user; null while enabled. */
  disabledAt: number | null;
  /** The last authenticated request, by key or session (at most a minute behind); null: never. */
  lastSeenAt: number | null;
  /** The name shares and folder pages show (CONTRACT §15); null: the e-mail's local part. */
  displayName: string | null;
  /** Whether share pages also show the e-mail. */
  showEmailOnShares: boolean;
  /** Made an administrator with `cubby users promote` (ADMIN_EMAILS counts too: service/user-admin.ts). */
  admin: boolean;
}

/** The stored {@link UserAccount.quotaBytes} of a user with no quota, whatever QUOTA_BYTES says. */
export const NO_QUOTA = -1;

/** What counts against a user's quota (CONTRACT §9). Bytes. */
export interface UserUsage {
  /** Live files (not past their expiry). */
  files: number;
  /** Their sizes, summed. */
  fileBytes: number;
  /** Upload-Length of the user's unfinished, unexpired resumable uploads: reserved at creation. */
  reservedBytes: number;
  /** WebDAV dead properties and the DAV:owner elements of live locks, UTF-8 bytes (CONTRACT §14). */
  davBytes: number;
}

/** Everything else a user has, counted (`cubby users list` and `delete`). */
export interface UserHoldings {
  keys: number;
  sessions: number;
  /** Share links not deleted. */
  shares: number;
  /** Guest upload links not deleted. */
  uploadLinks: number;
  /** Resumable uploads not finished. */
  unfinishedUploads: number;
}

/** An API key row: the secret itself is never stored, only SHA-256 of it. */
export interface ApiKeyRow {
  id: string;
  userId: string;
  name: string;
  secretHash: Uint8Array;
  createdAt: number;
  lastUsedAt: number | null;
  /** What the key may do, space-separated (domain/principal.ts SCOPES). */
  scopes: string;
  /** After this the key counts as unknown; null: never. */
  expiresAt: number | null;
  /** An S3 access key's secret (CONTRACT §16: the server must recompute HMACs); null for an API key. */
  s3Secret: string | null;
}

/** A dashboard session row: SHA-256 of the token's secret part. */
export interface SessionRow {
  id: string;
  userId: string;
  secretHash: Uint8Array;
  createdAt: number;
  expiresAt: number;
}

/** The shares table. */
export interface ShareTable {
  insert(share: ShareRow): Promise<void>;
  byToken(token: string): Promise<ShareRow | undefined>;
  byId(id: string): Promise<ShareRow | undefined>;
  /** Up to `limit` of a file's shares that are not deleted, newest first, after `after` (keyset). */
  listByFile(fileId: string, limit: number, after: PageCursor | undefined): Promise<ShareRow[]>;
  /** Up to `limit` of a folder's shares that are not deleted, newest first, after `after` (keyset). */
  listByFolder(folderId: string, limit: number, after: PageCursor | undefined): Promise<ShareRow[]>;
  /** Up to `limit` of an owner's shares that are not deleted, newest first, after `after` (keyset). */
  listByOwner(ownerId: string, limit: number, after: PageCursor | undefined): Promise<ShareRow[]>;
  /**
   * Changes a live share of `ownerId`'s: each field given (expiry and limit null for none;
   * `passwordHash` null removes the password; `items` with `fileId` "" and `folderId` null make
   * it a share of several items).
   * @returns the share as it is now; undefined when `ownerId` has no such live share
   */
  update(id: string, ownerId: string, changes: Partial<Pick<ShareRow, "expiresAt" | "maxDownloads" | "passwordHash" | "items" | "fileId" | "folderId">>): Promise<ShareRow | undefined>;
  /** Appends a counted download to its share's access log (CONTRACT §15). */
  recordDownload(row: Omit<ShareDownloadRow, "seq">): Promise<void>;
  /** Up to `limit` of a share's log, newest first, after `after` (its `at` and `seq`; keyset). */
  downloads(shareId: string, limit: number, after: { at: number; seq: number } | undefined): Promise<ShareDownloadRow[]>;
  /** Removes up to `limit` log rows from before `before` (Unix microseconds). @returns how many */
  pruneDownloads(before: number, limit: number): Promise<number>;
  /** Marks `ownerId`'s share deleted at `now`, once. @returns whether it was live and is now deleted */
  markDeleted(id: string, ownerId: string, now: number): Promise<boolean>;
  /**
   * Counts one download, only while the share is live and below its limit, in one conditional
   * UPDATE, so concurrent downloads never pass `max_downloads`; records `now` as its last download.
   * @returns whether it was counted
   */
  countDownload(id: string, now: number): Promise<boolean>;
  /** Every row, deleted ones too, in ID order (export). */
  all(): AsyncIterable<ShareRow>;
}

/** The files table. */
export interface FileTable {
  get(id: string): Promise<FileRecord | undefined>;
  /**
   * Up to `limit` of an owner's files in `order` (default newest first: created_at, then id,
   * both descending), after `after`; with `nameContains` not empty, only those whose name
   * contains it, ASCII letters in either case and `%`, `_`, `\` literally (paging.ts containsPattern).
   */
  listByOwner(ownerId: string, limit: number, after: FileCursor | undefined, nameContains?: string, order?: FileOrder): Promise<FileRecord[]>;
  /** Up to `limit` files that arrived through guest upload link `linkId`, newest first, after `after`. */
  listByUploadLink(linkId: string, limit: number, after: PageCursor | undefined): Promise<FileRecord[]>;
  insert(file: FileRecord): Promise<void>;
  /** Writes every field of `file` but its ID, owner and creation time. */
  update(file: FileRecord): Promise<void>;
  /** Deletes the row if it still refers to `blob`. @returns whether a row was deleted */
  delete(id: string, blob: string): Promise<boolean>;
  /** Every row, in ID order (fsck, export). */
  all(): AsyncIterable<FileRecord>;
  /** Deletes every file of `ownerId` (`cubby users delete`). @returns the blobs they referred to */
  deleteByOwner(ownerId: string): Promise<string[]>;
  /** Every blob name a row refers to (the orphan sweep). */
  blobNames(): Promise<Set<string>>;
  /** How many files there are and the sum of their sizes in bytes (metrics). */
  totals(): Promise<{ files: number; bytes: number }>;
  /** Up to `limit` files whose expiry is at or before `now` (Unix microseconds), soonest first. */
  dueToExpire(now: number, limit: number): Promise<FileRecord[]>;
}

/** What a folder holds directly, counted: live files and their bytes. */
export interface FolderCounts {
  files: number;
  bytes: number;
}

/**
 * The folders table and file membership (CONTRACT §12). Writers that must keep names unique in
 * a folder run in a transaction that locked the owner's row first (UserTable.account), as every
 * change of a user's tree does; sub-folder names are also held unique by the store's indexes.
 */
export interface FolderTable {
  insert(folder: FolderRow): Promise<void>;
  get(id: string): Promise<FolderRow | undefined>;
  /** Writes name, parent and updated time. */
  update(folder: FolderRow): Promise<void>;
  /**
   * Deletes a folder with its sub-folders (cascade); files still in them are left at the top
   * (ON DELETE SET NULL). @returns whether it existed
   */
  delete(id: string): Promise<boolean>;
  /**
   * Up to `limit` of an owner's folders in `parentId` (null: at the top), newest first
   * (created_at, then id, both descending), after `after`.
   */
  listByParent(ownerId: string, parentId: string | null, limit: number, after: PageCursor | undefined): Promise<FolderRow[]>;
  /**
   * Up to `limit` sub-folders of `parentId` in the store's name order (ascending), after the
   * name `afterName` (a shared folder's walk and page), through folders_parent_name_unique.
   */
  subfoldersByName(parentId: string, limit: number, afterName: string | undefined): Promise<FolderRow[]>;
  /**
   * Up to `limit` of an owner's folders in `parentId` (null: at the top) in the byte order of
   * `name + "/"` (an S3 key prefix, CONTRACT §16), those whose `name + "/"` is after `afterKey`
   * when given, through folders_parent_key_idx / folders_top_key_idx.
   */
  childrenByKey(ownerId: string, parentId: string | null, limit: number, afterKey: string | undefined): Promise<FolderRow[]>;
  /**
   * Which of the folders `ids` hold any file (live or not) and which any sub-folder: one query
   * for a page of folders, so a walk reads only the folders that hold something.
   */
  occupied(ids: string[]): Promise<{ withFiles: Set<string>; withFolders: Set<string> }>;
  /** The owner's sub-folder of `parentId` (null: at the top) named exactly `name`. */
  byName(ownerId: string, parentId: string | null, name: string): Promise<FolderRow | undefined>;
  /** Live files (not expired at `now`) and their bytes directly in each folder of `ids`; absent: none. */
  counts(ids: string[], now: number): Promise<Map<string, FolderCounts>>;
  /** The folder a file is in, or undefined at the top. */
  folderOf(fileId: string): Promise<string | undefined>;
  /** Puts a file in a folder (replacing any folder it was in), or at the top (null). */
  setFolder(fileId: string, folderId: string | null): Promise<void>;
  /**
   * Up to `limit` files of `ownerId` directly in `folderId` (null: those in no folder), in
   * `order` (default newest first), after `after`; expired ones included (the caller filters).
   */
  listFiles(ownerId: string, folderId: string | null, limit: number, after: FileCursor | undefined, order?: FileOrder): Promise<FileRecord[]>;
  /** The owner's files named exactly `name` directly in `folderId` (null: in no folder). */
  filesNamed(ownerId: string, folderId: string | null, name: string): Promise<FileRecord[]>;
  /** Every folder, in ID order (export). */
  all(): AsyncIterable<FolderRow>;
  /** Every membership, in file ID order (export). */
  memberships(): AsyncIterable<{ fileId: string; folderId: string }>;
}

/** The api_keys table. */
export interface KeyTable {
  byHash(secretHash: Uint8Array): Promise<ApiKeyRow | undefined>;
  /** Up to `limit` of a user's keys, newest first, after `after` (keyset). */
  listByUser(userId: string, limit: number, after: PageCursor | undefined): Promise<ApiKeyRow[]>;
  insert(key: ApiKeyRow): Promise<void>;
  /** Deletes a key, only if it is `userId`'s when given. @returns whether one was deleted */
  delete(id: string, userId: string | undefined): Promise<boolean>;
  touch(id: string, lastUsedAt: number): Promise<void>;
  byId(id: string): Promise<ApiKeyRow | undefined>;
  /** Every row, in ID order (export). */
  all(): AsyncIterable<ApiKeyRow>;
}

/** The users table. */
export interface UserTable {
  byId(id: string): Promise<UserRow | undefined>;
  byEmail(email: string): Promise<UserRow | undefined>;
  byIdentity(issuer: string, subject: string): Promise<UserRow | undefined>;
  insert(user: UserRow): Promise<void>;
  update(user: UserRow): Promise<void>;
  /** Every row, in ID order (export). */
  all(): AsyncIterable<UserRow>;
  /**
   * The user's row with its administrative state. Inside a transaction on PostgreSQL this locks
   * the row for the rest of it (`FOR NO KEY UPDATE`), which is how quota checks serialise per
   * user; SQLite's transactions are serial already.
   */
  account(id: string): Promise<UserAccount | undefined>;
  /** Sets the quota (bytes, null: QUOTA_BYTES, {@link NO_QUOTA}: none). @returns whether the user exists */
  setQuota(id: string, quotaBytes: number | null): Promise<boolean>;
  /** Disables (at a time) or enables (null) a user. @returns whether the user exists */
  setDisabled(id: string, disabledAt: number | null): Promise<boolean>;
  /** Records an authenticated request at `now`. */
  touch(id: string, now: number): Promise<void>;
  /** Sets what is given of the user's profile (CONTRACT §15). @returns whether the user exists */
  setProfile(id: string, profile: Partial<Pick<UserAccount, "displayName" | "showEmailOnShares">>): Promise<boolean>;
  /** Makes the user an administrator, or not. @returns whether the user exists */
  setAdmin(id: string, admin: boolean): Promise<boolean>;
  /** Up to `limit` accounts by e-mail after `afterEmail` ("" for the first page; keyset on users_email_unique). */
  accountsByEmail(limit: number, afterEmail: string): Promise<UserAccount[]>;
  /** What counts against the user's quota at `now` (see {@link UserUsage}). */
  usage(id: string, now: number): Promise<UserUsage>;
  /** The user's keys, sessions, links and unfinished uploads, counted. */
  holdings(id: string): Promise<UserHoldings>;
  /**
   * Deletes the user with their keys, sessions, share links, upload links and uploads (by the
   * foreign keys' cascade); their files must be deleted first. @returns whether one was deleted
   */
  delete(id: string): Promise<boolean>;
}

/** The sessions table. */
export interface SessionTable {
  get(id: string): Promise<SessionRow | undefined>;
  insert(session: SessionRow): Promise<void>;
  extend(id: string, expiresAt: number): Promise<void>;
  delete(id: string): Promise<void>;
  /** @returns how many were deleted */
  deleteExpired(now: number): Promise<number>;
  /** Every row, in ID order, expired ones included (export). */
  all(): AsyncIterable<SessionRow>;
}

/** A one-time sign-in link (`cubby login-link`, CONTRACT §11); the token itself is never stored. */
export interface LoginLinkRow {
  /** SHA-256 of the token. */
  tokenHash: Uint8Array;
  /** Lower-cased e-mail address of who the link signs in. */
  email: string;
  createdAt: number;
  expiresAt: number;
}

/**
 * The login links table: written outside transactions, each call one atomic statement. A used
 * link's row is deleted; an expired one stays until the sweep ({@link deleteExpiredBefore}), so
 * that its URL can answer 410 rather than 404 meanwhile (CONTRACT §11).
 */
export interface LoginLinkTable {
  insert(link: LoginLinkRow): Promise<void>;
  /** The link with this token hash (expired or not), or undefined when there is none (used, swept or never minted). */
  find(tokenHash: Uint8Array): Promise<LoginLinkRow | undefined>;
  /**
   * Deletes the link with this token hash if it has not expired at `now` (Unix µs) and returns
   * it, or undefined. The delete is the claim: of two concurrent calls (any processes, any
   * instances) one gets the row.
   */
  take(tokenHash: Uint8Array, now: number): Promise<LoginLinkRow | undefined>;
  /**
   * Deletes up to `limit` links that expired at or before `before` (Unix µs), through the
   * index on `expires_at`.
   * @returns how many were deleted (fewer than `limit`: none is left)
   */
  deleteExpiredBefore(before: number, limit: number): Promise<number>;
}

/**
 * A WebDAV lock (RFC 4918 §6): a write lock on a path of its owner's `/dav/` namespace. Times
 * are Unix microseconds.
 */
export interface DavLockRow {
  /** The lock token, a URI (`urn:uuid:…`, RFC 4918 §6.5). */
  token: string;
  ownerId: string;
  /** The lock's root: a decoded path, "/" for the top, no trailing slash otherwise. */
  path: string;
  /** 0, or -1 for infinity (RFC 4918 §10.2). */
  depth: 0 | -1;
  /** Exclusive (true) or shared (false) (RFC 4918 §6.1). */
  exclusive: boolean;
  /** The client's DAV:owner element as XML, "" when none. */
  ownerXml: string;
  /** The timeout granted, seconds. */
  timeoutSeconds: number;
  expiresAt: number;
  createdAt: number;
}

/** A WebDAV dead property (RFC 4918 §4.2): its expanded name and its element as XML. */
export interface DavPropertyRow {
  namespace: string;
  name: string;
  /** The whole property element, namespace declarations included. */
  value: string;
}

/** A dead property with the resource it belongs to (a page of several resources' properties). */
export interface DavResourcePropertyRow extends DavPropertyRow {
  resource: string;
}

/** Where a keyset page of properties resumes: after this (resource, namespace, name). */
export interface DavPropertyCursor {
  resource: string;
  namespace: string;
  name: string;
}

/**
 * WebDAV locks and dead properties (CONTRACT §12, §14), in the metadata store so that every
 * worker and instance sees the same ones. A property's resource is `file:{id}`, `folder:{id}` or
 * `root`, so properties follow a resource that moves; a file's or folder's go with it (foreign
 * keys). Every read is bounded: locks are read by path (the ancestors of what a request touches,
 * or below one path, through the (owner_id, path) index), properties by resource.
 */
export interface DavTable {
  /** The owner's locks rooted exactly at one of `paths`, not expired at `now`. */
  locksAt(ownerId: string, paths: readonly string[], now: number): Promise<DavLockRow[]>;
  /** The owner's locks rooted strictly below `path` ("/" : every one but the top's), not expired at `now`. */
  locksBelow(ownerId: string, path: string, now: number): Promise<DavLockRow[]>;
  /** How many locks the owner holds at `now`, and the UTF-8 bytes of their DAV:owner elements. */
  lockTotals(ownerId: string, now: number): Promise<{ count: number; ownerBytes: number }>;
  insertLock(lock: DavLockRow): Promise<void>;
  /** Sets a lock's timeout and expiry (a refresh). @returns whether the lock exists */
  refreshLock(token: string, timeoutSeconds: number, expiresAt: number): Promise<boolean>;
  /** @returns whether a lock was deleted */
  deleteLock(token: string): Promise<boolean>;
  /** Deletes the locks of these tokens (one statement). */
  deleteLocks(tokens: readonly string[]): Promise<void>;
  /** Deletes every lock expired at `now`. @returns how many */
  deleteExpiredLocks(now: number): Promise<number>;
  /** A resource's dead properties, by namespace then name (at most the per-resource cap). */
  properties(ownerId: string, resource: string): Promise<DavPropertyRow[]>;
  /**
   * Up to `limit` dead properties of any of `resources`, by resource, namespace, name, after
   * `after`: one query through the primary key for a page of PROPFIND's members.
   */
  propertiesOf(ownerId: string, resources: readonly string[], after: DavPropertyCursor | undefined, limit: number): Promise<DavResourcePropertyRow[]>;
  /** The count and bytes (namespace + name + value, UTF-8) of one resource's dead properties. */
  propertyTotals(ownerId: string, resource: string): Promise<{ count: number; bytes: number }>;
  /**
   * Removes the properties named in `remove`, then sets (inserts or replaces) those of `set`,
   * in a few multi-row statements (a PROPPATCH; the caller runs it in a transaction).
   */
  applyProperties(ownerId: string, resource: string, set: readonly DavPropertyRow[], remove: readonly { namespace: string; name: string }[]): Promise<void>;
  /** Copies every dead property of `from` to `to` (replacing same-named ones), in one statement. */
  copyProperties(ownerId: string, from: string, to: string): Promise<void>;
  /** Removes every dead property of the resources. */
  deleteProperties(ownerId: string, resources: readonly string[]): Promise<void>;
  /** Which of `names` are shown by more than one live member at the owner's top (files in no folder, and top-level folders), at `now`. */
  sharedTopNames(ownerId: string, names: readonly string[], now: number): Promise<Set<string>>;
  /** Every dead property, by owner, resource, namespace, name, after `after` (export). */
  allProperties(): AsyncIterable<DavResourcePropertyRow & { ownerId: string }>;
}

/** The tables, as reached inside or outside a transaction. */
export interface MetadataTables {
  files: FileTable;
  keys: KeyTable;
  users: UserTable;
  sessions: SessionTable;
  shares: ShareTable;
  uploads: UploadTable;
  uploadLinks: UploadLinkTable;
  webhooks: WebhookTable;
  folders: FolderTable;
  dav: DavTable;
  thumbnails: ThumbnailTable;
}

/**
 * A file's thumbnail as stored (CONTRACT §15; `file_thumbnails` in schema.ts). Times are Unix
 * microseconds.
 */
export interface ThumbnailRow {
  fileId: string;
  /** The file's blob (content) the thumbnail was made from: stale once the file's differs. */
  ofBlob: string;
  /** Made here from an image, sent by the uploading browser, or "failed": none can be made. */
  source: "server" | "browser" | "failed";
  /** A WebP's bytes; empty when `source` is "failed". */
  image: Uint8Array;
  createdAt: number;
}

/** File thumbnails: one row a file at most, removed with the file by its foreign key. */
export interface ThumbnailTable {
  get(fileId: string): Promise<ThumbnailRow | undefined>;
  /** What is stored for each of `fileIds` that has a row (no image bytes): at most a page's worth of IDs. */
  states(fileIds: readonly string[]): Promise<Map<string, Pick<ThumbnailRow, "ofBlob" | "source">>>;
  /**
   * Stores a file's thumbnail, replacing the one it had, provided the file still exists with
   * `row.ofBlob` as its content.
   * @returns false (nothing stored) when the file is gone or its content was replaced
   */
  put(row: ThumbnailRow): Promise<boolean>;
  /** Removes a file's thumbnail. @returns whether there was one */
  delete(fileId: string): Promise<boolean>;
}

export type { UploadLinkTable, UploadRow, UploadTable } from "./upload-ports.ts";

// --- rate limits (storage/rate-limits.ts implements them) ---

/** One key's current window. Times are Unix microseconds. */
export interface WindowCount {
  /** Events counted in the window, the one just charged included. */
  count: number;
  /** When the window ends (and the next charge starts a new one). */
  resetAt: number;
}

/** Counting windows shared by every process of a server (storage/rate-limits.ts: on SQLite, a file of its own; on PostgreSQL, an unlogged table). */
export interface RateLimitTable {
  /**
   * Counts one event of `key`: in its current window, or in a new one of `windowMicros` starting
   * at `now` when there is none or it has ended.
   * @returns the window after the charge
   */
  charge(key: string, now: number, windowMicros: number): Promise<WindowCount>;
  /** `key`'s window if one is running at `now`, without counting anything. */
  peek(key: string, now: number): Promise<WindowCount | undefined>;
  /** Takes back one event of `key`'s window ending `resetAt` (a no-op once another window began). */
  refund(key: string, resetAt: number): Promise<void>;
  /** Removes windows that ended at or before `now`. @returns how many */
  prune(now: number): Promise<number>;
  /** Closes what it opened. */
  close(): Promise<void>;
}


/**
 * Where rows live. Reads through the tables see every committed change. A change that reads
 * before it writes runs in {@link MetadataStore.transaction}, which serialises writers (SQLite
 * `BEGIN IMMEDIATE`; on PostgreSQL a row or advisory lock) and commits all or nothing.
 */
export interface MetadataStore extends MetadataTables, AsyncDisposable {
  /**
   * Called once by a serving process: moves the database's own housekeeping off its event loop
   * where it would run there (SQLite: WAL checkpoints on a thread, storage/wal-checkpointer.ts;
   * PostgreSQL: nothing, the database does it). Undone when the store closes.
   */
  housekeepInBackground(): Promise<void>;
  /**
   * Runs `work` in one write transaction; its tables see the transaction's own changes. Commits
   * when `work` resolves, rolls back when it throws (and rethrows).
   */
  transaction<T>(work: (tx: MetadataTables) => Promise<T>): Promise<T>;
  /**
   * A number that stays the same while nothing commits, by this process or another, and
   * changes once something has: a cached read stays true while the version it was read under
   * holds (see `ReadCache`).
   */
  version(): number;
  /**
   * Set where {@link version} cannot see another process's commit the moment it is made
   * (PostgreSQL: another instance's commit is known here only once its notification arrives,
   * which may be after the next request; CONTRACT §7 asks for that request to see it). Then the
   * read caches trust this instead: a value read from the store (one round trip) that stays the
   * same while nothing has committed anywhere and changes once something has, and they answer
   * nothing without waiting (`peek` misses).
   */
  sharedVersion?(): Promise<string>;
  /**
   * The rate-limit windows every process and instance shares (storage/rate-limits.ts): outside
   * transactions, outside the version above, and never exported.
   */
  readonly rateLimits: RateLimitTable;
  /** One-time sign-in links: outside transactions, never exported (they live minutes). */
  readonly loginLinks: LoginLinkTable;
  /**
   * Calls `listener` after each commit of this process that added webhook deliveries (a
   * transaction's or a lone {@link WebhookTable.enqueue}'s), so that the deliverer here wakes at
   * once; other processes find them when they poll.
   */
  onEnqueued(listener: () => void): void;
}

/**
 * Whether `err` is a store refusing a row because a unique index already holds its key: SQLite's
 * SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY, PostgreSQL's SQLSTATE 23505 (unique_violation), also
 * when drizzle wraps the driver's error as its `cause`.
 */
export function isDuplicateKey(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === "23505" || code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY") return true;
  }
  return false;
}

// --- blobs ---

/** A blob written durably under its final name, not yet referenced by any row. */
export interface StagedBlob {
  name: string;
  /** Bytes. */
  size: number;
  /** CRC32C, base64 of the 4-byte big-endian value (RFC 4960 Appendix B polynomial). */
  checksum: string;
}

export interface WriteOptions {
  /** Uploads larger than this many bytes are refused with payload_too_large and leave nothing. */
  maxBytes: number;
  /** Checksum the client declared; a mismatch is invalid_argument and leaves nothing. */
  expectedChecksum?: string | undefined;
}

/**
 * One piece of a blob being read. `bytes` may live in a buffer the reader reuses: call
 * `release()` once done with it (for a network write, in the write's callback), and the reader
 * fills it again.
 */
export interface BlobChunk {
  bytes: Uint8Array;
  release(): void;
}

/** How a read is buffered: at most `buffers` chunks of `chunkBytes` unreleased at once. */
export interface ReadPlan {
  chunkBytes: number;
  buffers: number;
  /** Stops the read (and frees its buffers) when it fires, even while waiting for a release. */
  signal?: AbortSignal | undefined;
}

/** The bytes `start` to `start + length - 1` of a blob. */
export interface ByteRange {
  start: number;
  length: number;
}

/** Where content lives. Blobs are immutable; a new version of a file is a new blob. */
export interface BlobStore extends AsyncDisposable {
  /**
   * Streams `content` into a new durable blob under a fresh name.
   * @throws AppError payload_too_large past `maxBytes`; invalid_argument on a checksum mismatch;
   *   whatever the stream or the store throws. Nothing is left behind on failure.
   */
  write(content: AsyncIterable<Uint8Array> | null, opts: WriteOptions): Promise<StagedBlob>;
  /**
   * The whole content of a small blob (whose recorded size is `size`) from memory, if the
   * store keeps one; undefined means "read it".
   */
  cached(name: string, size: number): Uint8Array | undefined;
  /**
   * Reads `range` of a blob in chunks, as the plan says.
   * @throws (while iterating) when the blob is missing or shorter than the range
   */
  read(name: string, range: ByteRange, plan: ReadPlan): AsyncIterable<BlobChunk>;
  /** Size and CRC32C of a blob as stored now, or undefined when it is missing (fsck). */
  verify(name: string): Promise<{ size: number; checksum: string } | undefined>;
  /** Removes a blob now (one no row ever referred to). Missing is fine. */
  remove(name: string): Promise<void>;
  /**
   * Removes a blob after a grace period, so a reader that looked it up just before the commit
   * that dropped it can still read it. Pending removals run on dispose.
   */
  removeLater(name: string): void;
  /** Every blob in the store, with when it was written (Unix ms). */
  list(): AsyncIterable<{ name: string; writtenAt: number }>;
  /**
   * How long a blob no row refers to may still be an upload about to commit, by this or another
   * process: sweeps leave younger ones alone (ms). 0 when only this process writes the store.
   */
  readonly orphanGraceMs: number;
  /** Removes uploads left unfinished by a crash. @returns how many */
  sweepUnfinished(): Promise<number>;
  /** Moves a damaged blob aside with a note on why (fsck --repair). Missing is fine. */
  quarantine(name: string, note: unknown): Promise<void>;
  /** The bytes of unfinished resumable uploads (tus), by upload ID: see {@link PartialUploads}. */
  readonly partials: PartialUploads;
}

export type { AppendOptions, PartialUploads } from "./upload-ports.ts";

// --- webhooks (CONTRACT §13) ---

export type { WebhookAttemptRow, WebhookRow } from "../domain/webhook.ts";

/** An event for one webhook, as the outbox takes it. Times are Unix microseconds. */
export interface NewDelivery {
  /** The `webhook-id` header: one per event, the same for each of its webhooks and attempts. */
  eventId: string;
  webhookId: string;
  type: string;
  /** What it is about (a file ID): events of one subject are delivered in order. */
  subject: string;
  /** The exact body to send. */
  payload: string;
  createdAt: number;
}

/** A delivery claimed by one process, with where it goes and what signs it. */
export interface ClaimedDelivery extends NewDelivery {
  seq: number;
  /** Attempts made before this one. */
  attempts: number;
  url: string;
  secret: string;
}

/** One attempt's outcome for {@link WebhookTable.settleMany}. */
export interface SettledAttempt {
  delivery: ClaimedDelivery;
  outcome: AttemptOutcome;
}

/** An attempt as the log lists it, with its place in the log (the page cursor). */
export interface WebhookAttemptPageRow extends WebhookAttemptRow {
  /** Increases with each attempt recorded. */
  seq: number;
}

/** How an attempt ended, as {@link WebhookTable.settle} records it. Times are Unix microseconds. */
export interface AttemptOutcome {
  attemptedAt: number;
  /** The receiver's status; null when none came. */
  status: number | null;
  /** "" when delivered. */
  error: string;
  durationMs: number;
  /** A 2xx came back. */
  delivered: boolean;
  /** When to try again; null: give up (past the retry window). Ignored when delivered. */
  nextAttemptAt: number | null;
}

/**
 * The webhooks table, the outbox of their deliveries and the log of attempts (CONTRACT §13).
 * Outside transactions each method is one atomic step; {@link enqueue} belongs in the
 * transaction of the change the events report (MetadataTables.webhooks), so both commit or
 * neither does.
 */
export interface WebhookTable {
  insert(row: WebhookRow): Promise<void>;
  byId(id: string): Promise<WebhookRow | undefined>;
  /** A user's webhooks, oldest first. */
  listByOwner(ownerId: string): Promise<WebhookRow[]>;
  /** Deletes `ownerId`'s webhook with its pending deliveries and log. @returns whether one was deleted */
  delete(id: string, ownerId: string): Promise<boolean>;
  /** Adds deliveries to the outbox, due at once. */
  enqueue(deliveries: NewDelivery[]): Promise<void>;
  /**
   * Claims up to `limit` deliveries due at `now` for `claimer` until `leaseUntil`: those not
   * delivered, not given up, not claimed by a lease still running, and with no earlier delivery
   * of the same webhook and subject still pending. Fair (CONTRACT §14): no webhook gets more
   * than `perWebhook` attempts in flight (leases still running, whoever holds them), and the
   * webhooks with deliveries due are served round robin, across their owners first (the owner
   * served least recently goes first) then across an owner's webhooks (storage/webhook-claims.ts);
   * within a webhook, the earliest due first. Of any number of processes and instances one gets
   * each row, and the cap holds across them; a claimer that dies loses its rows when the lease
   * ends. Each claim looks at a bounded window of the webhooks with pending deliveries (rotating
   * through all of them over successive claims), so its cost grows neither with the number of
   * pending deliveries nor with the number of webhooks.
   * @returns the claimed deliveries, grouped by webhook in the order they were served
   */
  claim(claimer: string, now: number, leaseUntil: number, limit: number, perWebhook: number): Promise<ClaimedDelivery[]>;
  /**
   * Records an attempt of `delivery` in the log, and, if `claimer` still holds it, its outcome:
   * delivered, retried at `nextAttemptAt`, or given up. When delivered, the webhook's other
   * deliveries waiting for a retry become due at once (the receiver is up again). When the
   * webhook was deleted meanwhile, nothing is recorded (its log went with it), without error.
   */
  settle(delivery: ClaimedDelivery, claimer: string, outcome: AttemptOutcome): Promise<void>;
  /** {@link settle} for several attempts of `claimer`, in one transaction. */
  settleMany(claimer: string, settled: readonly SettledAttempt[]): Promise<void>;
  /**
   * A page of a webhook's attempts, newest first: up to `limit` with `seq` below `beforeSeq`
   * (all on the first page, undefined), through the index on (webhook_id, seq).
   */
  attempts(webhookId: string, limit: number, beforeSeq: number | undefined): Promise<WebhookAttemptPageRow[]>;
  /** Deletes delivered or given-up deliveries and attempts older than `before`. @returns how many rows */
  prune(before: number): Promise<number>;
}
