/**
 * Opens the stores and builds the services over them: what `serve` and the CLI commands share.
 * Metadata is SQLite in DATA_DIR unless DATABASE_URL names PostgreSQL; blobs are files in
 * DATA_DIR unless S3_BUCKET names a bucket (CONTRACT §7; the two ports are in storage/ports.ts).
 */
import { THUMBNAIL_EDGE, THUMBNAIL_TIMEOUT_MS, ThumbnailService } from "./thumbnails.ts";
import { ThumbnailMaker } from "../thumbnail/maker.ts";
import fs from "node:fs";
import path from "node:path";
import { systemClock, type Clock } from "../domain/time.ts";
import { DiskBlobStore } from "../storage/disk-blobs.ts";
import { describeTightened, PRIVATE_DIR_MODE, tightenDataDir } from "../storage/permissions.ts";
import { connectPostgres } from "../storage/pg-driver.ts";
import { openPgMetadata } from "../storage/pg-metadata.ts";
import type { BlobStore, MetadataStore } from "../storage/ports.ts";
import { S3BlobStore, type S3Settings } from "../storage/s3-blobs.ts";
import { FileLocks, PgAdvisoryLocks } from "../storage/upload-locks.ts";
import { openSqliteMetadata } from "../storage/sqlite-metadata.ts";
import { FileService } from "./files.ts";
import { KeyService } from "./keys.ts";
import { LoginLinkService } from "./login-links.ts";
import { SessionService } from "./sessions.ts";
import { ShareService } from "./shares.ts";
import { FolderService } from "./folders.ts";
import { Quotas } from "./quota.ts";
import { UploadLinkService } from "./upload-links.ts";
import { GUEST_PART_MICROS, UploadService } from "./uploads.ts";
import { UserService } from "./users.ts";
import { UserAdmin } from "./user-admin.ts";
import { AccountStatus } from "./account-status.ts";
import { WebhookService } from "./webhooks.ts";
import { parseAllowedHosts } from "../domain/host-allowlist.ts";
import { logError } from "../log.ts";

/** The services and the stores under them; disposing flushes delayed blob removals and closes the stores. */
export interface Services extends AsyncDisposable {
  store: MetadataStore;
  blobs: BlobStore;
  clock: Clock;
  files: FileService;
  keys: KeyService;
  users: UserService;
  userAdmin: UserAdmin;
  sessions: SessionService;
  loginLinks: LoginLinkService;
  shares: ShareService;
  folders: FolderService;
  uploads: UploadService;
  uploadLinks: UploadLinkService;
  quotas: Quotas;
  webhooks: WebhookService;
  thumbnails: ThumbnailService;
}

export interface OpenOptions {
  dataDir: string;
  maxUploadBytes: number;
  /** PostgreSQL instead of SQLite in dataDir. */
  databaseUrl?: string | undefined;
  /** An S3-compatible bucket instead of files in dataDir. */
  s3?: S3Settings | undefined;
  clock?: Clock;
  /** Seconds an unfinished resumable upload lives; 24 h when absent. */
  uploadExpirySeconds?: number | undefined;
  /** QUOTA_BYTES: the quota of users without one of their own; absent or null: none. */
  quotaBytes?: number | null | undefined;
  /**
   * Tests only (CUBBY_TEST_REMOVAL_GRACE_MS): how long a replaced or deleted blob stays for
   * readers, ms; absent: REMOVAL_GRACE_MS (storage/blob-memory.ts).
   */
  testRemovalGraceMs?: number | undefined;
  /**
   * Tests only (CUBBY_TEST_GUEST_PART_MS): how long a guest's partial upload waits to be
   * concatenated, ms; absent: GUEST_PART_MICROS (service/uploads.ts, an hour).
   */
  testGuestPartMs?: number | undefined;
  /** WEBHOOK_ALLOWED_HOSTS' entries (host names, addresses, CIDR ranges); absent: public addresses only. */
  webhookAllowedHosts?: readonly string[] | undefined;
  /** SHARE_LOG_FULL_ADDRESS: share access logs keep whole client addresses, not /24 or /48 (CONTRACT §15). */
  shareLogFullAddress?: boolean | undefined;
  /** THUMBNAIL_MAX_PIXELS (config.ts, whose default `serve` passes): the largest image made a thumbnail of; 0 or absent: none (CONTRACT §15). */
  thumbnailMaxPixels?: number | undefined;
  /** ADMIN_EMAILS: administrators besides those promoted (CONTRACT §15). */
  adminEmails?: readonly string[] | undefined;
  /** HOSTNAME: the origin of file URLs in webhook events (else set once the server listens). */
  hostname?: string | undefined;
}

/** A store that could not be reached or used at start: the message is one line for the operator. */
export class StoreUnavailableError extends Error {
  override name = "StoreUnavailableError";
}

/**
 * Creates DATA_DIR if needed (0700), takes group and other access away from what an earlier
 * version left there (one line on stderr when it changed anything: stdout may be a key), opens
 * the stores, applies pending migrations (idempotent; once when several instances start
 * together) and wires the services. Use with `await using`.
 * @throws StoreUnavailableError when PostgreSQL or the bucket cannot be reached or refuses the
 *   credentials
 */
export async function openServices(opts: OpenOptions): Promise<Services> {
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  // Before the database opens: SQLite gives a new -wal / -shm the database file's mode.
  const tightened = tightenDataDir(opts.dataDir);
  if (tightened.length > 0) logError(`tightened to owner-only access in ${opts.dataDir}: ${describeTightened(tightened)}`);
  const store = await openMetadata(opts);
  let blobs: BlobStore;
  try {
    blobs = await openBlobs(opts);
  } catch (err) {
    await store[Symbol.asyncDispose]();
    throw err;
  }
  const clock = opts.clock ?? systemClock();
  const accounts = new AccountStatus({ store, clock });
  const quotas = new Quotas({ store, clock, defaultQuotaBytes: opts.quotaBytes ?? null });
  const webhooks = new WebhookService({ store, clock, allowedHosts: parseAllowedHosts((opts.webhookAllowedHosts ?? []).join(",")) });
  if (opts.hostname !== undefined) webhooks.setBaseUrl(opts.hostname);
  const files = new FileService({ store, blobs, clock, maxUploadBytes: opts.maxUploadBytes, quotas, webhooks });
  const uploadLinks = new UploadLinkService({ store, clock, files, maxUploadBytes: opts.maxUploadBytes });
  const users = new UserService({ store, clock });
  const folders = new FolderService({ store, blobs, clock, files, webhooks });
  const expiryMicros = (opts.uploadExpirySeconds ?? 24 * 3600) * 1_000_000;
  // One machine shares DATA_DIR (flock); several instances share PostgreSQL (advisory locks).
  const locks = opts.databaseUrl === undefined ? new FileLocks(path.join(opts.dataDir, "uploads")) : new PgAdvisoryLocks(opts.databaseUrl);
  return {
    store,
    blobs,
    clock,
    files,
    thumbnails: new ThumbnailService({ store, files, clock, maker: new ThumbnailMaker({ maxEdge: THUMBNAIL_EDGE, timeoutMs: THUMBNAIL_TIMEOUT_MS }), maxPixels: opts.thumbnailMaxPixels ?? 0 }),
    shares: new ShareService({ store, files, folders, clock, webhooks, logFullAddresses: opts.shareLogFullAddress }),
    folders,
    webhooks,
    uploads: new UploadService({ store, blobs, clock, files, links: uploadLinks, quotas, maxUploadBytes: opts.maxUploadBytes, expiryMicros, guestPartMicros: opts.testGuestPartMs === undefined ? GUEST_PART_MICROS : opts.testGuestPartMs * 1000, locks }),
    uploadLinks,
    quotas,
    keys: new KeyService({ store, clock, accounts }),
    users,
    loginLinks: new LoginLinkService({ store, clock, users }),
    userAdmin: new UserAdmin({ store, blobs, clock, quotas, adminEmails: new Set(opts.adminEmails ?? []) }),
    sessions: new SessionService({ store, clock, accounts }),
    async [Symbol.asyncDispose]() {
      await locks.close();
      await blobs[Symbol.asyncDispose]();
      await store[Symbol.asyncDispose]();
    },
  };
}

async function openMetadata(opts: OpenOptions): Promise<MetadataStore> {
  if (opts.databaseUrl === undefined) return openSqliteMetadata(opts.dataDir);
  const driver = connectPostgres(opts.databaseUrl);
  try {
    return await openPgMetadata(driver);
  } catch (err) {
    await driver.end().catch(() => {});
    throw new StoreUnavailableError(`PostgreSQL at ${redactPassword(opts.databaseUrl)}: ${(err as Error).message}`);
  }
}

async function openBlobs(opts: OpenOptions): Promise<BlobStore> {
  if (opts.s3 === undefined) return new DiskBlobStore(opts.dataDir, opts.testRemovalGraceMs);
  const blobs = new S3BlobStore(opts.s3, opts.testRemovalGraceMs);
  try {
    await blobs.check();
  } catch (err) {
    throw new StoreUnavailableError((err as Error).message);
  }
  return blobs;
}

/** The URL with its password replaced by `***`, for messages. */
function redactPassword(url: string): string {
  const u = new URL(url);
  if (u.password !== "") u.password = "***";
  return u.toString();
}
