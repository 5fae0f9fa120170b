/**
 * WebDAV locks and dead properties (CONTRACT §12, §14) on SQLite: the {@link DavTable} part of
 * the SQLite metadata store. Locks are read by path through dav_locks_owner_path_idx, properties
 * by resource through the primary key; a PROPPATCH's rows go in multi-row statements.
 */
import { and, asc, eq, gt, inArray, lte, sql } from "drizzle-orm";
import { Slicer } from "../slices.ts";
import type { Db, WriteRunner } from "./db.ts";
import type { DavLockRow, DavPropertyCursor, DavPropertyRow, DavResourcePropertyRow, DavTable } from "./ports.ts";
import { belowRange, propertiesInKeyOrder, propertyBytes, targetOf } from "./dav-conditions.ts";
import { liveTopFilesNamed, sharedNames, topFoldersNamed } from "./folder-conditions.ts";
import { allInKeyOrder } from "./paging.ts";
import { davLocks, davProperties, files, folders } from "./schema.ts";

/** Rows per statement: a batch of a PROPPATCH's properties, or of names in IN (…) (far below SQLite's 32 766 parameters). */
const BATCH_ROWS = 500;

/** Lock and property rows on SQLite: reads on the given connection, writes through the store's write runner. */
export class SqliteDav implements DavTable {
  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {}

  async locksAt(ownerId: string, paths: readonly string[], now: number): Promise<DavLockRow[]> {
    if (paths.length === 0) return [];
    const out: DavLockRow[] = [];
    for (let i = 0; i < paths.length; i += BATCH_ROWS) {
      const rows = this.db
        .select()
        .from(davLocks)
        .where(and(eq(davLocks.ownerId, ownerId), inArray(davLocks.path, paths.slice(i, i + BATCH_ROWS)), gt(davLocks.expiresAt, now)))
        .all();
      out.push(...rows.map(lockOf));
    }
    return out;
  }

  async locksBelow(ownerId: string, path: string, now: number): Promise<DavLockRow[]> {
    const [low, high] = belowRange(path);
    return this.db
      .select()
      .from(davLocks)
      .where(and(eq(davLocks.ownerId, ownerId), gt(davLocks.path, low), sql`${davLocks.path} < ${high}`, gt(davLocks.expiresAt, now)))
      .all()
      .map(lockOf);
  }

  async lockTotals(ownerId: string, now: number): Promise<{ count: number; ownerBytes: number }> {
    const row = this.db
      .select({ count: sql<number>`count(*)`.mapWith(Number), ownerBytes: sql<number>`coalesce(sum(length(CAST(${davLocks.ownerXml} AS BLOB))), 0)`.mapWith(Number) })
      .from(davLocks)
      .where(and(eq(davLocks.ownerId, ownerId), gt(davLocks.expiresAt, now)))
      .get()!;
    return row;
  }

  insertLock(lock: DavLockRow): Promise<void> {
    return this.write((db) => void db.insert(davLocks).values({ ...lock, exclusive: lock.exclusive ? 1 : 0 }).run());
  }

  refreshLock(token: string, timeoutSeconds: number, expiresAt: number): Promise<boolean> {
    return this.write((db) => db.update(davLocks).set({ timeoutSeconds, expiresAt }).where(eq(davLocks.token, token)).returning({ token: davLocks.token }).all().length > 0);
  }

  deleteLock(token: string): Promise<boolean> {
    return this.write((db) => db.delete(davLocks).where(eq(davLocks.token, token)).returning({ token: davLocks.token }).all().length > 0);
  }

  deleteLocks(tokens: readonly string[]): Promise<void> {
    if (tokens.length === 0) return Promise.resolve();
    return this.write((db) => {
      for (let i = 0; i < tokens.length; i += BATCH_ROWS) db.delete(davLocks).where(inArray(davLocks.token, tokens.slice(i, i + BATCH_ROWS))).run();
    });
  }

  deleteExpiredLocks(now: number): Promise<number> {
    return this.write((db) => db.delete(davLocks).where(lte(davLocks.expiresAt, now)).returning({ token: davLocks.token }).all().length);
  }

  async properties(ownerId: string, resource: string): Promise<DavPropertyRow[]> {
    return this.db
      .select({ namespace: davProperties.namespace, name: davProperties.name, value: davProperties.value })
      .from(davProperties)
      .where(and(eq(davProperties.ownerId, ownerId), eq(davProperties.resource, resource)))
      .orderBy(asc(davProperties.namespace), asc(davProperties.name))
      .all();
  }

  async propertiesOf(ownerId: string, resources: readonly string[], after: DavPropertyCursor | undefined, limit: number): Promise<DavResourcePropertyRow[]> {
    if (resources.length === 0) return [];
    const resume = after === undefined ? undefined : sql`(${davProperties.resource}, ${davProperties.namespace}, ${davProperties.name}) > (${after.resource}, ${after.namespace}, ${after.name})`;
    return this.db
      .select({ resource: davProperties.resource, namespace: davProperties.namespace, name: davProperties.name, value: davProperties.value })
      .from(davProperties)
      .where(and(eq(davProperties.ownerId, ownerId), inArray(davProperties.resource, [...resources]), resume))
      .orderBy(asc(davProperties.resource), asc(davProperties.namespace), asc(davProperties.name))
      .limit(limit)
      .all();
  }

  async propertyTotals(ownerId: string, resource: string): Promise<{ count: number; bytes: number }> {
    return this.db
      .select({ count: sql<number>`count(*)`.mapWith(Number), bytes: sql<number>`coalesce(sum(${davProperties.bytes}), 0)`.mapWith(Number) })
      .from(davProperties)
      .where(and(eq(davProperties.ownerId, ownerId), eq(davProperties.resource, resource)))
      .get()!;
  }

  async applyProperties(ownerId: string, resource: string, set: readonly DavPropertyRow[], remove: readonly { namespace: string; name: string }[]): Promise<void> {
    const target = targetOf(resource);
    const slicer = new Slicer();
    // One statement per batch, its rows passed as one JSON parameter (drizzle's multi-row
    // builder took 0.8 s for 10 000 rows); the event loop breathes between batches.
    for (let i = 0; i < remove.length; i += BATCH_ROWS) {
      const names = JSON.stringify(remove.slice(i, i + BATCH_ROWS).map((r) => [r.namespace, r.name]));
      await this.write(
        (db) =>
          void db.run(sql`DELETE FROM ${davProperties} WHERE owner_id = ${ownerId} AND resource = ${resource}
            AND (namespace, name) IN (SELECT value ->> 0, value ->> 1 FROM json_each(${names}))`),
      );
      await slicer.breathe();
    }
    for (let i = 0; i < set.length; i += BATCH_ROWS) {
      const rows = JSON.stringify(set.slice(i, i + BATCH_ROWS).map((p) => [p.namespace, p.name, p.value, propertyBytes(p)]));
      await this.write(
        (db) =>
          void db.run(sql`INSERT INTO ${davProperties} (owner_id, resource, namespace, name, value, bytes, file_id, folder_id)
            SELECT ${ownerId}, ${resource}, value ->> 0, value ->> 1, value ->> 2, value ->> 3, ${target.fileId}, ${target.folderId} FROM json_each(${rows}) WHERE true
            ON CONFLICT (owner_id, resource, namespace, name) DO UPDATE SET value = excluded.value, bytes = excluded.bytes`),
      );
      await slicer.breathe();
    }
  }

  copyProperties(ownerId: string, from: string, to: string): Promise<void> {
    const target = targetOf(to);
    return this.write(
      (db) =>
        void db.run(sql`INSERT INTO ${davProperties} (owner_id, resource, namespace, name, value, bytes, file_id, folder_id)
          SELECT owner_id, ${to}, namespace, name, value, bytes, ${target.fileId}, ${target.folderId} FROM ${davProperties} WHERE owner_id = ${ownerId} AND resource = ${from}
          ON CONFLICT (owner_id, resource, namespace, name) DO UPDATE SET value = excluded.value, bytes = excluded.bytes`),
    );
  }

  deleteProperties(ownerId: string, resources: readonly string[]): Promise<void> {
    if (resources.length === 0) return Promise.resolve();
    return this.write((db) => {
      for (let i = 0; i < resources.length; i += BATCH_ROWS) db.delete(davProperties).where(and(eq(davProperties.ownerId, ownerId), inArray(davProperties.resource, resources.slice(i, i + BATCH_ROWS)))).run();
    });
  }

  async sharedTopNames(ownerId: string, names: readonly string[], now: number): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < names.length; i += BATCH_ROWS) {
      const some = [...new Set(names.slice(i, i + BATCH_ROWS))];
      const count = sql<number>`count(*)`.mapWith(Number);
      const topFiles = this.db.select({ name: files.name, n: count }).from(files).where(liveTopFilesNamed(files, ownerId, some, now)).groupBy(files.name).all();
      const topFolders = this.db.select({ name: folders.name }).from(folders).where(topFoldersNamed(folders, ownerId, some)).all();
      for (const name of sharedNames(topFiles, topFolders)) out.add(name);
    }
    return out;
  }


  allProperties(): AsyncIterable<DavResourcePropertyRow & { ownerId: string }> {
    return allInKeyOrder((after) => {
      const page = propertiesInKeyOrder(davProperties, after);
      return this.db.select(page.columns).from(davProperties).where(page.where).orderBy(...page.order).limit(1000)
        .all();
    });
  }
}

/** A row as the port has it. */
export function lockOf(r: typeof davLocks.$inferSelect): DavLockRow {
  return { ...r, depth: r.depth === 0 ? 0 : -1, exclusive: r.exclusive !== 0 };
}
