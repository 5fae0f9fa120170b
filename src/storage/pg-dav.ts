/**
 * WebDAV locks and dead properties (CONTRACT §12, §14) on PostgreSQL: the {@link DavTable} part
 * of the PostgreSQL metadata store, query for query the SQLite one (sqlite-dav.ts); the rules both share are in dav-conditions.ts.
 */
import { and, asc, eq, gt, inArray, lte, sql } from "drizzle-orm";
import type { PgDb } from "./pg-metadata.ts";
import type { DavLockRow, DavPropertyCursor, DavPropertyRow, DavResourcePropertyRow, DavTable } from "./ports.ts";
import { liveTopFilesNamed, sharedNames, topFoldersNamed } from "./folder-conditions.ts";
import { davLocks, davProperties, files, folders } from "./pg-schema.ts";
import { belowRange, propertiesInKeyOrder, propertyBytes, targetOf } from "./dav-conditions.ts";
import { allInKeyOrder } from "./paging.ts";

/** Rows per multi-row statement (8 parameters each, far below PostgreSQL's 65 535). */
const BATCH_ROWS = 1000;

/** Lock and property rows on PostgreSQL, on the pool or inside a transaction (whichever `db` is). */
export class PgDav implements DavTable {
  constructor(private readonly db: PgDb) {}

  async locksAt(ownerId: string, paths: readonly string[], now: number): Promise<DavLockRow[]> {
    if (paths.length === 0) return [];
    const out: DavLockRow[] = [];
    for (let i = 0; i < paths.length; i += BATCH_ROWS) {
      const rows = await this.db
        .select()
        .from(davLocks)
        .where(and(eq(davLocks.ownerId, ownerId), inArray(davLocks.path, paths.slice(i, i + BATCH_ROWS)), gt(davLocks.expiresAt, now)));
      out.push(...rows.map(lockOf));
    }
    return out;
  }

  async locksBelow(ownerId: string, path: string, now: number): Promise<DavLockRow[]> {
    // Byte order (COLLATE "C"), as SQLite compares: the owner's locks are capped (locks.ts), so
    // the rest of the range is filtered within the owner's part of the index.
    const [low, high] = belowRange(path);
    const rows = await this.db
      .select()
      .from(davLocks)
      .where(and(eq(davLocks.ownerId, ownerId), sql`${davLocks.path} COLLATE "C" > ${low}`, sql`${davLocks.path} COLLATE "C" < ${high}`, gt(davLocks.expiresAt, now)));
    return rows.map(lockOf);
  }

  async lockTotals(ownerId: string, now: number): Promise<{ count: number; ownerBytes: number }> {
    const [row] = await this.db
      .select({ count: sql<number>`count(*)`.mapWith(Number), ownerBytes: sql<number>`coalesce(sum(octet_length(${davLocks.ownerXml})), 0)`.mapWith(Number) })
      .from(davLocks)
      .where(and(eq(davLocks.ownerId, ownerId), gt(davLocks.expiresAt, now)));
    return row!;
  }

  async insertLock(lock: DavLockRow): Promise<void> {
    await this.db.insert(davLocks).values({ ...lock, exclusive: lock.exclusive ? 1 : 0 });
  }

  async refreshLock(token: string, timeoutSeconds: number, expiresAt: number): Promise<boolean> {
    return (await this.db.update(davLocks).set({ timeoutSeconds, expiresAt }).where(eq(davLocks.token, token)).returning({ token: davLocks.token })).length > 0;
  }

  async deleteLock(token: string): Promise<boolean> {
    return (await this.db.delete(davLocks).where(eq(davLocks.token, token)).returning({ token: davLocks.token })).length > 0;
  }

  async deleteLocks(tokens: readonly string[]): Promise<void> {
    for (let i = 0; i < tokens.length; i += BATCH_ROWS) await this.db.delete(davLocks).where(inArray(davLocks.token, tokens.slice(i, i + BATCH_ROWS)));
  }

  async deleteExpiredLocks(now: number): Promise<number> {
    return (await this.db.delete(davLocks).where(lte(davLocks.expiresAt, now)).returning({ token: davLocks.token })).length;
  }

  properties(ownerId: string, resource: string): Promise<DavPropertyRow[]> {
    return this.db
      .select({ namespace: davProperties.namespace, name: davProperties.name, value: davProperties.value })
      .from(davProperties)
      .where(and(eq(davProperties.ownerId, ownerId), eq(davProperties.resource, resource)))
      .orderBy(asc(davProperties.namespace), asc(davProperties.name));
  }

  async propertiesOf(ownerId: string, resources: readonly string[], after: DavPropertyCursor | undefined, limit: number): Promise<DavResourcePropertyRow[]> {
    if (resources.length === 0) return [];
    const resume = after === undefined ? undefined : sql`(${davProperties.resource}, ${davProperties.namespace}, ${davProperties.name}) > (${after.resource}, ${after.namespace}, ${after.name})`;
    return this.db
      .select({ resource: davProperties.resource, namespace: davProperties.namespace, name: davProperties.name, value: davProperties.value })
      .from(davProperties)
      .where(and(eq(davProperties.ownerId, ownerId), inArray(davProperties.resource, [...resources]), resume))
      .orderBy(asc(davProperties.resource), asc(davProperties.namespace), asc(davProperties.name))
      .limit(limit);
  }

  async propertyTotals(ownerId: string, resource: string): Promise<{ count: number; bytes: number }> {
    const [row] = await this.db
      .select({ count: sql<number>`count(*)`.mapWith(Number), bytes: sql<number>`coalesce(sum(${davProperties.bytes}), 0)`.mapWith(Number) })
      .from(davProperties)
      .where(and(eq(davProperties.ownerId, ownerId), eq(davProperties.resource, resource)));
    return row!;
  }

  async applyProperties(ownerId: string, resource: string, set: readonly DavPropertyRow[], remove: readonly { namespace: string; name: string }[]): Promise<void> {
    const target = targetOf(resource);
    // One statement per batch, its rows passed as one JSON parameter (drizzle's multi-row
    // builder costs about 80 µs of CPU a row).
    for (let i = 0; i < remove.length; i += BATCH_ROWS) {
      const names = JSON.stringify(remove.slice(i, i + BATCH_ROWS).map((r) => [r.namespace, r.name]));
      await this.db.execute(sql`DELETE FROM ${davProperties} WHERE owner_id = ${ownerId} AND resource = ${resource}
        AND (namespace, name) IN (SELECT e ->> 0, e ->> 1 FROM jsonb_array_elements(${names}::jsonb) AS e)`);
    }
    for (let i = 0; i < set.length; i += BATCH_ROWS) {
      const rows = JSON.stringify(set.slice(i, i + BATCH_ROWS).map((p) => [p.namespace, p.name, p.value, propertyBytes(p)]));
      await this.db.execute(sql`INSERT INTO ${davProperties} (owner_id, resource, namespace, name, value, bytes, file_id, folder_id)
        SELECT ${ownerId}, ${resource}, e ->> 0, e ->> 1, e ->> 2, (e ->> 3)::int, ${target.fileId}::text, ${target.folderId}::text FROM jsonb_array_elements(${rows}::jsonb) AS e
        ON CONFLICT (owner_id, resource, namespace, name) DO UPDATE SET value = excluded.value, bytes = excluded.bytes`);
    }
  }

  async copyProperties(ownerId: string, from: string, to: string): Promise<void> {
    const target = targetOf(to);
    await this.db.execute(sql`INSERT INTO ${davProperties} (owner_id, resource, namespace, name, value, bytes, file_id, folder_id)
      SELECT owner_id, ${to}, namespace, name, value, bytes, ${target.fileId}::text, ${target.folderId}::text FROM ${davProperties} WHERE owner_id = ${ownerId} AND resource = ${from}
      ON CONFLICT (owner_id, resource, namespace, name) DO UPDATE SET value = excluded.value, bytes = excluded.bytes`);
  }

  async deleteProperties(ownerId: string, resources: readonly string[]): Promise<void> {
    for (let i = 0; i < resources.length; i += BATCH_ROWS) {
      await this.db.delete(davProperties).where(and(eq(davProperties.ownerId, ownerId), inArray(davProperties.resource, resources.slice(i, i + BATCH_ROWS))));
    }
  }

  async sharedTopNames(ownerId: string, names: readonly string[], now: number): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < names.length; i += BATCH_ROWS) {
      const some = [...new Set(names.slice(i, i + BATCH_ROWS))];
      const count = sql<number>`count(*)`.mapWith(Number);
      const topFiles = await this.db.select({ name: files.name, n: count }).from(files).where(liveTopFilesNamed(files, ownerId, some, now)).groupBy(files.name);
      const topFolders = await this.db.select({ name: folders.name }).from(folders).where(topFoldersNamed(folders, ownerId, some));
      for (const name of sharedNames(topFiles, topFolders)) out.add(name);
    }
    return out;
  }


  allProperties(): AsyncIterable<DavResourcePropertyRow & { ownerId: string }> {
    return allInKeyOrder((after) => {
      const page = propertiesInKeyOrder(davProperties, after);
      return this.db.select(page.columns).from(davProperties).where(page.where).orderBy(...page.order).limit(1000);
    });
  }
}

/** A row as the port has it. */
function lockOf(r: typeof davLocks.$inferSelect): DavLockRow {
  return { ...r, depth: r.depth === 0 ? 0 : -1, exclusive: r.exclusive !== 0 };
}
