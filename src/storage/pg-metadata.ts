/**
 * The metadata store on PostgreSQL (drizzle-orm pg-core), the second implementation of the
 * {@link MetadataStore} port (CONTRACT §7), for several cubby instances sharing one database.
 *
 * - Transactions are PostgreSQL's (READ COMMITTED); a use case that reads then writes one row
 *   locks it first (`SELECT … FOR UPDATE`, see {@link PgFiles.get} inside a transaction), so two
 *   instances replacing one file serialise as on SQLite.
 * - Read caches trust `sharedVersion()`, the current snapshot read from PostgreSQL, which changes
 *   the moment any instance's write commits. `version()` moves when this process commits (at once) and when
 *   any process commits (the `cubby_changes` notification every table's trigger sends, see
 *   drizzle-pg/0001_notify_changes.sql). The store pings itself on the channel every 5 s; while
 *   its pings have not come back for 12 s (the listening connection is down), every call
 *   returns a new version, so nothing is cached, and it subscribes again.
 * - Migrations run under a transaction-scoped advisory lock, so instances starting together
 *   apply them once.
 */
import { PgShares } from "./pg-shares.ts";
import { PgThumbnails } from "./pg-thumbnails.ts";
import { PgFolders } from "./pg-folders.ts";
import { PgDav } from "./pg-dav.ts";
import { and, asc, desc, eq, gt, isNull, lte, sql, type SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT, PgTable } from "drizzle-orm/pg-core";
import type { FileRecord } from "../domain/file.ts";
import type { PageCursor } from "../domain/params.ts";
import { migrations } from "../../drizzle-pg/index.ts";
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
import { containsPattern, fileOrderTerms, inIdOrder, newestFirstAfter, PAGE_ROWS } from "./paging.ts";
import { NEWEST_FIRST, type FileCursor, type FileOrder } from "../domain/file-order.ts";
import * as schema from "./pg-schema.ts";
import { PgUploadLinks, PgUploads } from "./pg-uploads.ts";
import { PgLoginLinks } from "./login-links.ts";
import { PgRateLimits } from "./rate-limits.ts";
import { PgWebhooks } from "./pg-webhooks.ts";
import { countAll, liveFilesOf, reservingUploadsOf, sumOf } from "./user-conditions.ts";
import type { UploadLinkTable, UploadTable } from "./upload-ports.ts";

const { apiKeys, davLocks, davProperties, fileColumns, files, NAME_IN_C, sessions, shares, uploadLinks, uploads, users } = schema;

/** A drizzle PostgreSQL database or transaction over whichever driver. */
export type PgDb = PgDatabase<PgQueryResultHKT, typeof schema>;

/** What the store needs of a driver beyond drizzle: notifications and closing. */
export interface PgDriver {
  db: PgDb;
  /** LISTEN on `channel`; `onListen` runs on every (re)subscription. */
  listen(channel: string, onNotify: (payload: string) => void, onListen: () => void): Promise<{ unlisten(): Promise<void> }>;
  /** Closes every connection. */
  end(): Promise<void>;
}

/** The channel the tables' triggers notify (drizzle-pg/0001_notify_changes.sql). */
const CHANGES_CHANNEL = "cubby_changes";
/** pg_advisory_xact_lock key for migrations: any constant other applications will not use. */
const MIGRATION_LOCK = 0x63756262; // "cubb"
/** How often the store checks that its notifications still arrive (a ping to itself), ms. */
const HEARTBEAT_MS = 5_000;
/** Past this long without hearing its own ping, the store caches nothing and listens anew, ms. */
const DEAF_AFTER_MS = 12_000;

/**
 * Applies pending migrations of drizzle-pg/ in one transaction under an advisory lock, using
 * drizzle's `__drizzle_migrations` bookkeeping (as storage/migrate.ts does on SQLite).
 * @returns how many were applied
 */
export async function migratePg(db: PgDb, list = migrations): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    await tx.execute(sql`CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`);
    const rows = (await tx.execute(sql`SELECT created_at FROM "__drizzle_migrations" ORDER BY created_at DESC LIMIT 1`)) as unknown as { created_at: string | number }[];
    const last = rows[0] === undefined ? undefined : Number(rows[0].created_at);
    const pending = list.filter((m) => last === undefined || last < m.when);
    for (const m of pending) {
      for (const statement of m.sql.split("--> statement-breakpoint")) {
        if (statement.trim() !== "") await tx.execute(sql.raw(statement));
      }
      const hash = new Bun.CryptoHasher("sha256").update(m.sql).digest("hex");
      await tx.execute(sql`INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (${hash}, ${m.when})`);
    }
    return pending.length;
  });
}

/** Migrates, starts listening for changes, and returns the store. */
export async function openPgMetadata(driver: PgDriver, timing?: { heartbeatMs: number; deafAfterMs: number }): Promise<PgMetadataStore> {
  await migratePg(driver.db);
  const store = new PgMetadataStore(driver, timing);
  await store.listen();
  return store;
}

/** The {@link MetadataStore} port on PostgreSQL (see the module comment); made by {@link openPgMetadata}. */
export class PgMetadataStore implements MetadataStore {
  readonly files: FileTable;
  readonly keys: KeyTable;
  readonly users: UserTable;
  readonly sessions: SessionTable;
  readonly shares: ShareTable;
  readonly uploads: UploadTable;
  readonly uploadLinks: UploadLinkTable;
  readonly rateLimits: PgRateLimits;
  readonly loginLinks: LoginLinkTable;
  readonly webhooks: WebhookTable;
  readonly folders: FolderTable;
  readonly dav: DavTable;
  readonly thumbnails: ThumbnailTable;
  /** Told after commits that added webhook deliveries ({@link onEnqueued}). */
  private readonly enqueueListeners: (() => void)[] = [];
  private current = 0;
  /** When this store last heard a notification on the channel (its own ping or a change), ms. */
  private lastHeard = 0;
  private subscription: { unlisten(): Promise<void> } | undefined;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  /** This store's pings carry its own name, so other instances do not take them for changes. */
  private readonly ping = `ping:${crypto.randomUUID()}`;

  constructor(
    private readonly driver: PgDriver,
    /** The heartbeat's period and how long without a ping back counts as deaf (ms; tests shorten them). */
    private readonly timing = { heartbeatMs: HEARTBEAT_MS, deafAfterMs: DEAF_AFTER_MS },
  ) {
    const changed = () => void this.current++;
    this.files = new PgFiles(driver.db, changed, false);
    this.keys = new PgKeys(driver.db, changed);
    this.users = new PgUsers(driver.db, changed);
    this.sessions = new PgSessions(driver.db, changed);
    this.shares = new PgShares(driver.db);
    this.uploads = new PgUploads(driver.db, changed);
    this.uploadLinks = new PgUploadLinks(driver.db, changed);
    this.rateLimits = new PgRateLimits(driver.db);
    this.loginLinks = new PgLoginLinks(driver.db);
    this.webhooks = new PgWebhooks(driver.db, () => this.notifyEnqueued());
    this.folders = new PgFolders(driver.db);
    this.dav = new PgDav(driver.db);
    this.thumbnails = new PgThumbnails(driver.db);
  }

  onEnqueued(listener: () => void): void {
    this.enqueueListeners.push(listener);
  }

  private notifyEnqueued(): void {
    for (const listener of this.enqueueListeners) listener();
  }

  /**
   * Subscribes to the change notifications and starts the heartbeat that checks they still
   * arrive (called once by {@link openPgMetadata}). postgres-js re-subscribes after a dropped
   * connection only once; the heartbeat subscribes again for as long as it takes.
   */
  async listen(): Promise<void> {
    await this.subscribe();
    this.heartbeat = setInterval(() => void this.beat(), this.timing.heartbeatMs);
    this.heartbeat.unref();
  }

  private async subscribe(): Promise<void> {
    await this.subscription?.unlisten().catch(() => {});
    this.subscription = await this.driver.listen(
      CHANGES_CHANNEL,
      (payload) => {
        if (payload === this.ping) this.lastHeard = Date.now();
        else if (!payload.startsWith("ping:")) {
          this.current++;
          this.lastHeard = Date.now();
        }
      },
      () => {
        // (Re)subscribed: whatever was committed while the connection was down is unknown.
        this.current++;
        this.lastHeard = Date.now();
      },
    );
  }

  private async beat(): Promise<void> {
    try {
      if (Date.now() - this.lastHeard > this.timing.deafAfterMs) await this.subscribe();
      await this.driver.db.execute(sql`SELECT pg_notify(${CHANGES_CHANNEL}, ${this.ping})`);
    } catch {
      // The database is unreachable: version() caches nothing until the pings come back.
    }
  }

  async transaction<T>(work: (tx: MetadataTables) => Promise<T>): Promise<T> {
    let enqueued = false;
    try {
      const result = await this.driver.db.transaction(async (tx) => {
        const none = () => {};
        return work({
          files: new PgFiles(tx, none, true),
          keys: new PgKeys(tx, none),
          users: new PgUsers(tx, none, true),
          sessions: new PgSessions(tx, none),
          shares: new PgShares(tx),
          uploads: new PgUploads(tx, none),
          uploadLinks: new PgUploadLinks(tx, none),
          webhooks: new PgWebhooks(tx, () => void (enqueued = true)),
          folders: new PgFolders(tx),
          dav: new PgDav(tx),
          thumbnails: new PgThumbnails(tx),
        });
      });
      if (enqueued) this.notifyEnqueued();
      return result;
    } finally {
      this.current++;
    }
  }

  /**
   * What the read caches trust on PostgreSQL: the current snapshot (`pg_current_snapshot()`,
   * `xmin:xmax:xip…`), one round trip. Two equal snapshots see exactly the same committed rows,
   * and any write transaction that commits (or starts writing) anywhere changes it. A cache
   * stamps an entry with the snapshot read before its row was loaded, so the stamp is never newer
   * than the data: an entry is given back only while no write has committed since. Unlike
   * {@link version}, it sees another instance's commit on the very next request. It also moves
   * with any transaction id the cluster hands out, the heartbeat's NOTIFY included (every 5 s per
   * instance): a cache entry then costs one more read, never a stale answer.
   */
  async sharedVersion(): Promise<string> {
    const rows = await this.driver.db.execute<{ snapshot: string }>(sql`SELECT pg_current_snapshot()::text AS snapshot`);
    return (rows as unknown as { snapshot: string }[])[0]!.snapshot;
  }

  /**
   * Moves with every commit of this process at once and of others when their notification
   * arrives; while the notifications are not known to arrive, on every call. The read caches
   * trust {@link sharedVersion} instead (a notification can arrive after the next request).
   */
  /** Nothing to move: PostgreSQL's checkpoints and vacuum are the database's own work. */
  async housekeepInBackground(): Promise<void> {}

  version(): number {
    return Date.now() - this.lastHeard <= this.timing.deafAfterMs ? this.current : ++this.current;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    clearInterval(this.heartbeat);
    this.lastHeard = 0;
    await this.subscription?.unlisten().catch(() => {});
    await this.driver.end();
  }
}

class PgFiles implements FileTable {
  constructor(
    private readonly db: PgDb,
    private readonly changed: () => void,
    /** Inside a transaction: `get` locks the row for the rest of it. */
    private readonly forUpdate: boolean,
  ) {}

  async get(id: string): Promise<FileRecord | undefined> {
    const query = this.db.select(fileColumns).from(files).where(eq(files.id, id));
    const rows = this.forUpdate ? await query.for("update") : await query;
    return rows[0] as FileRecord | undefined;
  }

  async listByOwner(ownerId: string, limit: number, after: FileCursor | undefined, nameContains = "", order: FileOrder = NEWEST_FIRST): Promise<FileRecord[]> {
    // lower() under the "C" collation folds ASCII letters only, whatever the database's locale,
    // as containsPattern expects (and as SQLite does).
    const named = nameContains === "" ? undefined : sql`lower(${files.name} COLLATE "C") LIKE ${containsPattern(nameContains)} ESCAPE '\\'`;
    const terms = fileOrderTerms(files, order, after, NAME_IN_C);
    return (await this.db.select(fileColumns).from(files).where(and(eq(files.ownerId, ownerId), terms.after, named)).orderBy(...terms.orderBy).limit(limit)) as FileRecord[];
  }

  async listByUploadLink(linkId: string, limit: number, after: PageCursor | undefined): Promise<FileRecord[]> {
    const where = and(eq(files.uploadLinkId, linkId), newestFirstAfter(files, after));
    return (await this.db.select(fileColumns).from(files).where(where).orderBy(desc(files.createdAt), desc(files.id)).limit(limit)) as FileRecord[];
  }

  async insert(file: FileRecord): Promise<void> {
    await this.db.insert(files).values(file);
    this.changed();
  }

  async update(file: FileRecord): Promise<void> {
    const { id, ownerId: _owner, createdAt: _created, ...fields } = file;
    await this.db.update(files).set(fields).where(eq(files.id, id));
    this.changed();
  }

  async delete(id: string, blob: string): Promise<boolean> {
    const deleted = await this.db.delete(files).where(and(eq(files.id, id), eq(files.blob, blob))).returning({ id: files.id });
    this.changed();
    return deleted.length > 0;
  }

  all(): AsyncIterable<FileRecord> {
    return inIdOrder(async (after) => (await this.db.select(fileColumns).from(files).where(gt(files.id, after)).orderBy(asc(files.id)).limit(PAGE_ROWS)) as FileRecord[]);
  }

  async blobNames(): Promise<Set<string>> {
    return new Set((await this.db.select({ blob: files.blob }).from(files)).map((r) => r.blob));
  }

  async deleteByOwner(ownerId: string): Promise<string[]> {
    const deleted = await this.db.delete(files).where(eq(files.ownerId, ownerId)).returning({ blob: files.blob });
    this.changed();
    return deleted.map((r) => r.blob);
  }

  async totals(): Promise<{ files: number; bytes: number }> {
    const [row] = await this.db.select({ files: sql<number>`count(*)`.mapWith(Number), bytes: sql<number>`coalesce(sum(${files.size}), 0)`.mapWith(Number) }).from(files);
    return row!;
  }

  async dueToExpire(now: number, limit: number): Promise<FileRecord[]> {
    return (await this.db.select(fileColumns).from(files).where(lte(files.expiresAt, now)).orderBy(asc(files.expiresAt)).limit(limit)) as FileRecord[];
  }
}

class PgKeys implements KeyTable {
  constructor(
    private readonly db: PgDb,
    private readonly changed: () => void,
  ) {}

  async byHash(secretHash: Uint8Array): Promise<ApiKeyRow | undefined> {
    return (await this.db.select().from(apiKeys).where(eq(apiKeys.secretHash, Buffer.from(secretHash))))[0];
  }

  async listByUser(userId: string, limit: number, after: PageCursor | undefined): Promise<ApiKeyRow[]> {
    const where = and(eq(apiKeys.userId, userId), newestFirstAfter(apiKeys, after));
    return this.db.select().from(apiKeys).where(where).orderBy(desc(apiKeys.createdAt), desc(apiKeys.id)).limit(limit);
  }

  async insert(key: ApiKeyRow): Promise<void> {
    await this.db.insert(apiKeys).values({ ...key, secretHash: Buffer.from(key.secretHash) });
    this.changed();
  }

  async delete(id: string, userId: string | undefined): Promise<boolean> {
    const where = userId === undefined ? eq(apiKeys.id, id) : and(eq(apiKeys.id, id), eq(apiKeys.userId, userId));
    const deleted = await this.db.delete(apiKeys).where(where).returning({ id: apiKeys.id });
    this.changed();
    return deleted.length > 0;
  }

  async touch(id: string, lastUsedAt: number): Promise<void> {
    await this.db.update(apiKeys).set({ lastUsedAt }).where(eq(apiKeys.id, id));
    this.changed();
  }

  async byId(id: string): Promise<ApiKeyRow | undefined> {
    return (await this.db.select().from(apiKeys).where(eq(apiKeys.id, id)))[0];
  }

  all(): AsyncIterable<ApiKeyRow> {
    return inIdOrder((after) => this.db.select().from(apiKeys).where(gt(apiKeys.id, after)).orderBy(asc(apiKeys.id)).limit(PAGE_ROWS));
  }
}

/** The columns of a {@link UserRow}: the identity, without the administrative state. */
const identity = { id: users.id, email: users.email, issuer: users.issuer, subject: users.subject, createdAt: users.createdAt };

class PgUsers implements UserTable {
  constructor(
    private readonly db: PgDb,
    private readonly changed: () => void,
    /** Inside a transaction: `account` locks the row for the rest of it. */
    private readonly forUpdate = false,
  ) {}

  async byId(id: string): Promise<UserRow | undefined> {
    return (await this.db.select(identity).from(users).where(eq(users.id, id)))[0];
  }

  async byEmail(email: string): Promise<UserRow | undefined> {
    return (await this.db.select(identity).from(users).where(eq(users.email, email)))[0];
  }

  async byIdentity(issuer: string, subject: string): Promise<UserRow | undefined> {
    return (await this.db.select(identity).from(users).where(and(eq(users.issuer, issuer), eq(users.subject, subject))))[0];
  }

  async insert(user: UserRow): Promise<void> {
    await this.db.insert(users).values(user);
    this.changed();
  }

  async update(user: UserRow): Promise<void> {
    const { id, email, issuer, subject, createdAt } = user;
    await this.db.update(users).set({ email, issuer, subject, createdAt }).where(eq(users.id, id));
    this.changed();
  }

  all(): AsyncIterable<UserRow> {
    return inIdOrder((after) => this.db.select(identity).from(users).where(gt(users.id, after)).orderBy(asc(users.id)).limit(PAGE_ROWS));
  }

  async account(id: string): Promise<UserAccount | undefined> {
    const query = this.db.select().from(users).where(eq(users.id, id));
    // NO KEY UPDATE, not UPDATE: it does not wait for the KEY SHARE lock a row referring to the
    // user takes (a session or key being inserted), only for another quota check of this user.
    return (this.forUpdate ? await query.for("no key update") : await query)[0];
  }

  async setQuota(id: string, quotaBytes: number | null): Promise<boolean> {
    const done = await this.db.update(users).set({ quotaBytes }).where(eq(users.id, id)).returning({ id: users.id });
    this.changed();
    return done.length > 0;
  }

  async setDisabled(id: string, disabledAt: number | null): Promise<boolean> {
    const done = await this.db.update(users).set({ disabledAt }).where(eq(users.id, id)).returning({ id: users.id });
    this.changed();
    return done.length > 0;
  }

  async touch(id: string, now: number): Promise<void> {
    await this.db.update(users).set({ lastSeenAt: now }).where(eq(users.id, id));
    this.changed();
  }

  async setProfile(id: string, profile: Partial<Pick<UserAccount, "displayName" | "showEmailOnShares">>): Promise<boolean> {
    if (Object.keys(profile).length === 0) return (await this.account(id)) !== undefined;
    const done = (await this.db.update(users).set(profile).where(eq(users.id, id)).returning({ id: users.id })).length > 0;
    this.changed();
    return done;
  }

  async setAdmin(id: string, admin: boolean): Promise<boolean> {
    const done = (await this.db.update(users).set({ admin }).where(eq(users.id, id)).returning({ id: users.id })).length > 0;
    this.changed();
    return done;
  }

  async accountsByEmail(limit: number, afterEmail: string): Promise<UserAccount[]> {
    return this.db.select().from(users).where(gt(users.email, afterEmail)).orderBy(asc(users.email)).limit(limit);
  }

  async usage(id: string, now: number): Promise<UserUsage> {
    const [stored] = await this.db.select({ files: countAll(), bytes: sumOf(files.size) }).from(files).where(liveFilesOf(files, id, now));
    const [reserved] = await this.db.select({ bytes: sumOf(uploads.length) }).from(uploads).where(reservingUploadsOf(uploads, id, now));
    const [properties] = await this.db.select({ bytes: sumOf(davProperties.bytes) }).from(davProperties).where(eq(davProperties.ownerId, id));
    const [lockOwners] = await this.db
      .select({ bytes: sql<number>`coalesce(sum(octet_length(${davLocks.ownerXml})), 0)`.mapWith(Number) })
      .from(davLocks)
      .where(and(eq(davLocks.ownerId, id), gt(davLocks.expiresAt, now)));
    return { files: stored!.files, fileBytes: stored!.bytes, reservedBytes: reserved!.bytes, davBytes: properties!.bytes + lockOwners!.bytes };
  }

  async holdings(id: string): Promise<UserHoldings> {
    const count = async (table: PgTable, where: SQL | undefined) => (await this.db.select({ n: countAll() }).from(table).where(where))[0]!.n;
    return {
      keys: await count(apiKeys, eq(apiKeys.userId, id)),
      sessions: await count(sessions, eq(sessions.userId, id)),
      shares: await count(shares, and(eq(shares.ownerId, id), isNull(shares.deletedAt))),
      uploadLinks: await count(uploadLinks, and(eq(uploadLinks.ownerId, id), isNull(uploadLinks.deletedAt))),
      unfinishedUploads: await count(uploads, and(eq(uploads.ownerId, id), isNull(uploads.fileId))),
    };
  }

  async delete(id: string): Promise<boolean> {
    const done = await this.db.delete(users).where(eq(users.id, id)).returning({ id: users.id });
    this.changed();
    return done.length > 0;
  }
}

class PgSessions implements SessionTable {
  constructor(
    private readonly db: PgDb,
    private readonly changed: () => void,
  ) {}

  async get(id: string): Promise<SessionRow | undefined> {
    return (await this.db.select().from(sessions).where(eq(sessions.id, id)))[0];
  }

  async insert(session: SessionRow): Promise<void> {
    await this.db.insert(sessions).values({ ...session, secretHash: Buffer.from(session.secretHash) });
    this.changed();
  }

  async extend(id: string, expiresAt: number): Promise<void> {
    await this.db.update(sessions).set({ expiresAt }).where(eq(sessions.id, id));
    this.changed();
  }

  async delete(id: string): Promise<void> {
    await this.db.delete(sessions).where(eq(sessions.id, id));
    this.changed();
  }

  async deleteExpired(now: number): Promise<number> {
    const deleted = await this.db.delete(sessions).where(lte(sessions.expiresAt, now)).returning({ id: sessions.id });
    this.changed();
    return deleted.length;
  }

  all(): AsyncIterable<SessionRow> {
    return inIdOrder((after) => this.db.select().from(sessions).where(gt(sessions.id, after)).orderBy(asc(sessions.id)).limit(PAGE_ROWS));
  }
}
