/**
 * The metadata store on SQLite (`bun:sqlite` through drizzle-orm): the first implementation of
 * the {@link MetadataStore} port. Two connections to one WAL database: reads go through one,
 * every write through the other, one transaction at a time in this process (a promise queue)
 * and `BEGIN IMMEDIATE` against other processes (the CLI). A read therefore never sees a
 * transaction that has not committed, even one paused at an `await`, and a write never waits
 * on a lock this process holds itself.
 */
import { and, asc, desc, eq, gt, isNull, lte, sql, type SQL } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import fs from "node:fs";
import path from "node:path";
import type { FileRecord } from "../domain/file.ts";
import type { PageCursor } from "../domain/params.ts";
import type {
  ApiKeyRow,
  FileTable,
  KeyTable,
  LoginLinkTable,
  MetadataStore,
  MetadataTables,
  ShareTable,
  SessionRow,
  SessionTable,
  UserAccount,
  UserHoldings,
  UserRow,
  UserTable,
  UserUsage,
  WebhookTable,
  FolderTable,
  DavTable,
  ThumbnailTable,
} from "./ports.ts";
import { ChangeWatch } from "./change-watch.ts";
import { WalCheckpointer } from "./wal-checkpointer.ts";
import { openDb, type Db, type WriteRunner } from "./db.ts";
import { SqliteShares } from "./sqlite-shares.ts";
import { SqliteThumbnails } from "./sqlite-thumbnails.ts";
import { SqliteFolders } from "./sqlite-folders.ts";
import { SqliteDav } from "./sqlite-dav.ts";
import { migrate } from "./migrate.ts";
import { containsPattern, fileOrderTerms, inIdOrder, newestFirstAfter, PAGE_ROWS } from "./paging.ts";
import { NEWEST_FIRST, type FileCursor, type FileOrder } from "../domain/file-order.ts";
import { apiKeys, davLocks, davProperties, fileColumns, files, sessions, shares, uploadLinks, uploads, users } from "./schema.ts";
import { countAll, liveFilesOf, reservingUploadsOf, sumOf } from "./user-conditions.ts";
import { SqliteUploadLinks, SqliteUploads } from "./sqlite-uploads.ts";
import { SqliteLoginLinks } from "./login-links.ts";
import { SqliteRateLimits } from "./rate-limits.ts";
import { SqliteWebhooks } from "./sqlite-webhooks.ts";
import type { UploadLinkTable, UploadTable } from "./upload-ports.ts";

/**
 * A transaction that ran longer than this (ms) has its WAL flushed off the event loop before
 * its COMMIT ({@link SqliteMetadataStore.transaction}): one that breathed in slices.
 */
const LONG_TRANSACTION_MS = 20;

/** Opens (creating and migrating if needed) the SQLite metadata store in `dataDir`. */
export function openSqliteMetadata(dataDir: string): SqliteMetadataStore {
  const writer = openDb(dataDir);
  migrate(writer);
  return new SqliteMetadataStore(openDb(dataDir), writer, new ChangeWatch(path.join(dataDir, "cubby.db-shm")), new SqliteRateLimits(dataDir), path.join(dataDir, "cubby.db-wal"));
}

/**
 * The {@link MetadataStore} port on one SQLite database in WAL mode (see the module comment).
 * Inside {@link transaction}, use the tables it hands in: the store's own tables queue their
 * writes behind the open transaction, and would wait for it forever.
 */
export class SqliteMetadataStore implements MetadataStore {
  readonly files: FileTable;
  readonly keys: KeyTable;
  readonly users: UserTable;
  readonly sessions: SessionTable;
  readonly shares: ShareTable;
  readonly uploads: UploadTable;
  readonly uploadLinks: UploadLinkTable;
  readonly loginLinks: LoginLinkTable;
  readonly webhooks: WebhookTable;
  readonly folders: FolderTable;
  readonly dav: DavTable;
  readonly thumbnails: ThumbnailTable;
  /** Told after commits that added webhook deliveries ({@link onEnqueued}). */
  private readonly enqueueListeners: (() => void)[] = [];
  /** Whether the open transaction added webhook deliveries. */
  private enqueuedInTransaction = false;
  /** The tables as a transaction sees them: on the write connection, writes run at once. */
  private readonly inTransaction: MetadataTables;
  /** Settles when the last queued write has finished. */
  private queue: Promise<unknown> = Promise.resolve();

  /** A descriptor of the WAL, for {@link flushWal}; opened when first needed, closed with the store. */
  private walFd: number | undefined;
  /** The WAL checkpoint thread of a serving process ({@link housekeepInBackground}). */
  private checkpointer: WalCheckpointer | undefined;

  constructor(
    private readonly reader: Db,
    private readonly writer: Db,
    private readonly changes: ChangeWatch,
    readonly rateLimits: SqliteRateLimits,
    /** The database's `-wal` file. */
    private readonly walPath: string,
  ) {
    const queued: WriteRunner = (write) => this.exclusive(async () => write(writer));
    const now: WriteRunner = async (write) => write(writer);
    this.files = new SqliteFiles(reader, queued);
    this.keys = new SqliteKeys(reader, queued);
    this.users = new SqliteUsers(reader, queued);
    this.sessions = new SqliteSessions(reader, queued);
    this.shares = new SqliteShares(reader, queued);
    this.uploads = new SqliteUploads(reader, queued);
    this.uploadLinks = new SqliteUploadLinks(reader, queued);
    this.loginLinks = new SqliteLoginLinks(reader, queued);
    this.webhooks = new SqliteWebhooks(reader, queued, () => this.notifyEnqueued());
    this.folders = new SqliteFolders(reader, queued);
    this.dav = new SqliteDav(reader, queued);
    this.thumbnails = new SqliteThumbnails(reader, queued);
    this.inTransaction = {
      files: new SqliteFiles(writer, now),
      keys: new SqliteKeys(writer, now),
      users: new SqliteUsers(writer, now),
      sessions: new SqliteSessions(writer, now),
      shares: new SqliteShares(writer, now),
      uploads: new SqliteUploads(writer, now),
      uploadLinks: new SqliteUploadLinks(writer, now),
      webhooks: new SqliteWebhooks(writer, now, () => void (this.enqueuedInTransaction = true)),
      folders: new SqliteFolders(writer, now),
      dav: new SqliteDav(writer, now),
      thumbnails: new SqliteThumbnails(writer, now),
    };
  }

  /**
   * Runs `work` in one IMMEDIATE transaction on the write connection. A transaction that ran
   * for longer than {@link LONG_TRANSACTION_MS} (a recursive delete, a sweep: work done in slices
   * that breathe) has its WAL flushed to disk first, off the event loop ({@link flushWal}): the
   * pages SQLite spilled to the WAL while it ran (its page cache holds 2 MiB) would otherwise
   * all be fsynced inside the synchronous COMMIT (CONTRACT §14). The COMMIT then fsyncs only what
   * it writes itself: 14–20 ms after a delete of 10 000 entries, with the WAL's checkpoint on its
   * own thread ({@link housekeepInBackground}; 94–120 ms before both).
   */
  transaction<T>(work: (tx: MetadataTables) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      this.writer.$client.exec("BEGIN IMMEDIATE");
      const started = performance.now();
      this.enqueuedInTransaction = false;
      try {
        const result = await work(this.inTransaction);
        if (performance.now() - started > LONG_TRANSACTION_MS) await this.flushWal();
        this.writer.$client.exec("COMMIT");
        if (this.enqueuedInTransaction) this.notifyEnqueued();
        return result;
      } catch (err) {
        this.writer.$client.exec("ROLLBACK");
        throw err;
      }
    });
  }

  /**
   * fdatasync(2) of the WAL in libuv's thread pool: what a transaction spilled to it so far
   * reaches the disk without holding the event loop. Best effort: without a WAL yet, or on an
   * error, the COMMIT's own fsync does it all, as it always may. Closing this descriptor drops no
   * lock of SQLite's (WAL mode locks `-shm` and the database file, never `-wal`).
   */
  private async flushWal(): Promise<void> {
    try {
      this.walFd ??= fs.openSync(this.walPath, "r");
      const fd = this.walFd;
      await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
    } catch {
      // The COMMIT's fsync covers it.
    }
  }

  /**
   * Checkpoints the WAL on a thread of its own from now on (storage/wal-checkpointer.ts) and
   * turns the automatic checkpoint off on this store's write connection: a COMMIT no longer copies
   * the WAL into the database and fsyncs it on the event loop.
   */
  async housekeepInBackground(): Promise<void> {
    if (this.checkpointer !== undefined) return;
    this.checkpointer = await WalCheckpointer.start(this.walPath.replace(/-wal$/, ""));
    // Only a committing connection checkpoints: the reader never commits.
    this.writer.$client.exec("PRAGMA wal_autocheckpoint = 0");
  }

  onEnqueued(listener: () => void): void {
    this.enqueueListeners.push(listener);
  }

  private notifyEnqueued(): void {
    for (const listener of this.enqueueListeners) listener();
  }

  version(): number {
    return this.changes.version();
  }

  /** Writes a transactionally consistent copy of the database to `file` (`VACUUM INTO`). */
  snapshotTo(file: string): void {
    this.reader.$client.prepare("VACUUM INTO ?").run(file);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.queue.catch(() => {});
    await this.checkpointer?.stop();
    await this.rateLimits.close();
    this.reader.$client.close();
    this.writer.$client.close();
    if (this.walFd !== undefined) fs.closeSync(this.walFd);
    // Last: closing its descriptor of `-shm` drops the process's POSIX locks on the file
    // (change-watch.ts), which SQLite holds while a connection is open.
    this.changes.close();
  }

  /**
   * Runs `job` once every write queued before it has finished. When it has, the change watch
   * reads the header afresh: what this process just wrote must be seen within the same turn.
   */
  private exclusive<T>(job: () => Promise<T>): Promise<T> {
    const run = this.queue.then(job, job).finally(() => this.changes.wrote());
    this.queue = run.catch(() => {});
    return run;
  }
}

class SqliteFiles implements FileTable {
  private readonly byId;

  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {
    this.byId = db.select(fileColumns).from(files).where(eq(files.id, sql.placeholder("id"))).prepare();
  }

  async get(id: string): Promise<FileRecord | undefined> {
    return this.byId.get({ id }) as FileRecord | undefined;
  }

  async listByOwner(ownerId: string, limit: number, after: FileCursor | undefined, nameContains = "", order: FileOrder = NEWEST_FIRST): Promise<FileRecord[]> {
    // SQLite's lower() folds ASCII letters only (no ICU here), as containsPattern expects.
    const named = nameContains === "" ? undefined : sql`lower(${files.name}) LIKE ${containsPattern(nameContains)} ESCAPE '\\'`;
    const terms = fileOrderTerms(files, order, after);
    return this.db.select(fileColumns).from(files).where(and(eq(files.ownerId, ownerId), terms.after, named)).orderBy(...terms.orderBy).limit(limit).all() as FileRecord[];
  }

  async listByUploadLink(linkId: string, limit: number, after: PageCursor | undefined): Promise<FileRecord[]> {
    const where = and(eq(files.uploadLinkId, linkId), newestFirstAfter(files, after));
    return this.db.select(fileColumns).from(files).where(where).orderBy(desc(files.createdAt), desc(files.id)).limit(limit).all() as FileRecord[];
  }

  insert(file: FileRecord): Promise<void> {
    return this.write((db) => void db.insert(files).values(file).run());
  }

  update(file: FileRecord): Promise<void> {
    const { id, ownerId: _owner, createdAt: _created, ...fields } = file;
    return this.write((db) => void db.update(files).set(fields).where(eq(files.id, id)).run());
  }

  delete(id: string, blob: string): Promise<boolean> {
    return this.write((db) => db.delete(files).where(and(eq(files.id, id), eq(files.blob, blob))).returning({ id: files.id }).all().length > 0);
  }

  all(): AsyncIterable<FileRecord> {
    return inIdOrder((after) => this.db.select(fileColumns).from(files).where(gt(files.id, after)).orderBy(asc(files.id)).limit(PAGE_ROWS).all() as FileRecord[]);
  }

  async blobNames(): Promise<Set<string>> {
    return new Set(this.db.select({ blob: files.blob }).from(files).all().map((r) => r.blob));
  }

  deleteByOwner(ownerId: string): Promise<string[]> {
    return this.write((db) => db.delete(files).where(eq(files.ownerId, ownerId)).returning({ blob: files.blob }).all().map((r) => r.blob));
  }

  async totals(): Promise<{ files: number; bytes: number }> {
    return this.db.select({ files: sql<number>`count(*)`.mapWith(Number), bytes: sql<number>`coalesce(sum(${files.size}), 0)`.mapWith(Number) }).from(files).get()!;
  }

  async dueToExpire(now: number, limit: number): Promise<FileRecord[]> {
    return this.db.select(fileColumns).from(files).where(lte(files.expiresAt, now)).orderBy(asc(files.expiresAt)).limit(limit).all() as FileRecord[];
  }
}

class SqliteKeys implements KeyTable {
  private readonly byHashQuery;

  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {
    this.byHashQuery = db.select().from(apiKeys).where(eq(apiKeys.secretHash, sql.placeholder("hash"))).prepare();
  }

  async byHash(secretHash: Uint8Array): Promise<ApiKeyRow | undefined> {
    return this.byHashQuery.get({ hash: Buffer.from(secretHash.buffer, secretHash.byteOffset, secretHash.byteLength) });
  }

  async listByUser(userId: string, limit: number, after: PageCursor | undefined): Promise<ApiKeyRow[]> {
    const where = and(eq(apiKeys.userId, userId), newestFirstAfter(apiKeys, after));
    return this.db.select().from(apiKeys).where(where).orderBy(desc(apiKeys.createdAt), desc(apiKeys.id)).limit(limit).all();
  }

  insert(key: ApiKeyRow): Promise<void> {
    return this.write((db) => void db.insert(apiKeys).values({ ...key, secretHash: Buffer.from(key.secretHash) }).run());
  }

  delete(id: string, userId: string | undefined): Promise<boolean> {
    const where = userId === undefined ? eq(apiKeys.id, id) : and(eq(apiKeys.id, id), eq(apiKeys.userId, userId));
    return this.write((db) => db.delete(apiKeys).where(where).returning({ id: apiKeys.id }).all().length > 0);
  }

  touch(id: string, lastUsedAt: number): Promise<void> {
    return this.write((db) => void db.update(apiKeys).set({ lastUsedAt }).where(eq(apiKeys.id, id)).run());
  }

  async byId(id: string): Promise<ApiKeyRow | undefined> {
    return this.db.select().from(apiKeys).where(eq(apiKeys.id, id)).get();
  }

  all(): AsyncIterable<ApiKeyRow> {
    return inIdOrder((after) => this.db.select().from(apiKeys).where(gt(apiKeys.id, after)).orderBy(asc(apiKeys.id)).limit(PAGE_ROWS).all());
  }
}

/** The columns of a {@link UserRow}: the identity, without the administrative state. */
const identity = { id: users.id, email: users.email, issuer: users.issuer, subject: users.subject, createdAt: users.createdAt };

class SqliteUsers implements UserTable {
  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {}

  async byId(id: string): Promise<UserRow | undefined> {
    return this.db.select(identity).from(users).where(eq(users.id, id)).get();
  }

  async byEmail(email: string): Promise<UserRow | undefined> {
    return this.db.select(identity).from(users).where(eq(users.email, email)).get();
  }

  async byIdentity(issuer: string, subject: string): Promise<UserRow | undefined> {
    return this.db.select(identity).from(users).where(and(eq(users.issuer, issuer), eq(users.subject, subject))).get();
  }

  insert(user: UserRow): Promise<void> {
    return this.write((db) => void db.insert(users).values(user).run());
  }

  update(user: UserRow): Promise<void> {
    const { id, email, issuer, subject, createdAt } = user;
    return this.write((db) => void db.update(users).set({ email, issuer, subject, createdAt }).where(eq(users.id, id)).run());
  }

  all(): AsyncIterable<UserRow> {
    return inIdOrder((after) => this.db.select(identity).from(users).where(gt(users.id, after)).orderBy(asc(users.id)).limit(PAGE_ROWS).all());
  }

  async account(id: string): Promise<UserAccount | undefined> {
    return this.db.select().from(users).where(eq(users.id, id)).get();
  }

  setQuota(id: string, quotaBytes: number | null): Promise<boolean> {
    return this.write((db) => db.update(users).set({ quotaBytes }).where(eq(users.id, id)).returning({ id: users.id }).all().length > 0);
  }

  setDisabled(id: string, disabledAt: number | null): Promise<boolean> {
    return this.write((db) => db.update(users).set({ disabledAt }).where(eq(users.id, id)).returning({ id: users.id }).all().length > 0);
  }

  touch(id: string, now: number): Promise<void> {
    return this.write((db) => void db.update(users).set({ lastSeenAt: now }).where(eq(users.id, id)).run());
  }

  setProfile(id: string, profile: Partial<Pick<UserAccount, "displayName" | "showEmailOnShares">>): Promise<boolean> {
    if (Object.keys(profile).length === 0) return this.account(id).then((a) => a !== undefined);
    return this.write((db) => db.update(users).set(profile).where(eq(users.id, id)).returning({ id: users.id }).all().length > 0);
  }

  setAdmin(id: string, admin: boolean): Promise<boolean> {
    return this.write((db) => db.update(users).set({ admin }).where(eq(users.id, id)).returning({ id: users.id }).all().length > 0);
  }

  async accountsByEmail(limit: number, afterEmail: string): Promise<UserAccount[]> {
    return this.db.select().from(users).where(gt(users.email, afterEmail)).orderBy(asc(users.email)).limit(limit).all();
  }

  async usage(id: string, now: number): Promise<UserUsage> {
    const stored = this.db.select({ files: countAll(), bytes: sumOf(files.size) }).from(files).where(liveFilesOf(files, id, now)).get()!;
    const reserved = this.db.select({ bytes: sumOf(uploads.length) }).from(uploads).where(reservingUploadsOf(uploads, id, now)).get()!;
    const properties = this.db.select({ bytes: sumOf(davProperties.bytes) }).from(davProperties).where(eq(davProperties.ownerId, id)).get()!;
    const lockOwners = this.db
      .select({ bytes: sql<number>`coalesce(sum(length(CAST(${davLocks.ownerXml} AS BLOB))), 0)`.mapWith(Number) })
      .from(davLocks)
      .where(and(eq(davLocks.ownerId, id), gt(davLocks.expiresAt, now)))
      .get()!;
    return { files: stored.files, fileBytes: stored.bytes, reservedBytes: reserved.bytes, davBytes: properties.bytes + lockOwners.bytes };
  }

  async holdings(id: string): Promise<UserHoldings> {
    const count = (table: SQLiteTable, where: SQL | undefined) => this.db.select({ n: countAll() }).from(table).where(where).get()!.n;
    return {
      keys: count(apiKeys, eq(apiKeys.userId, id)),
      sessions: count(sessions, eq(sessions.userId, id)),
      shares: count(shares, and(eq(shares.ownerId, id), isNull(shares.deletedAt))),
      uploadLinks: count(uploadLinks, and(eq(uploadLinks.ownerId, id), isNull(uploadLinks.deletedAt))),
      unfinishedUploads: count(uploads, and(eq(uploads.ownerId, id), isNull(uploads.fileId))),
    };
  }

  delete(id: string): Promise<boolean> {
    return this.write((db) => db.delete(users).where(eq(users.id, id)).returning({ id: users.id }).all().length > 0);
  }
}

class SqliteSessions implements SessionTable {
  private readonly byId;

  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {
    this.byId = db.select().from(sessions).where(eq(sessions.id, sql.placeholder("id"))).prepare();
  }

  async get(id: string): Promise<SessionRow | undefined> {
    return this.byId.get({ id });
  }

  insert(session: SessionRow): Promise<void> {
    return this.write((db) => void db.insert(sessions).values({ ...session, secretHash: Buffer.from(session.secretHash) }).run());
  }

  extend(id: string, expiresAt: number): Promise<void> {
    return this.write((db) => void db.update(sessions).set({ expiresAt }).where(eq(sessions.id, id)).run());
  }

  delete(id: string): Promise<void> {
    return this.write((db) => void db.delete(sessions).where(eq(sessions.id, id)).run());
  }

  deleteExpired(now: number): Promise<number> {
    return this.write((db) => db.delete(sessions).where(lte(sessions.expiresAt, now)).returning({ id: sessions.id }).all().length);
  }

  all(): AsyncIterable<SessionRow> {
    return inIdOrder((after) => this.db.select().from(sessions).where(gt(sessions.id, after)).orderBy(asc(sessions.id)).limit(PAGE_ROWS).all());
  }
}
