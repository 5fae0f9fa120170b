/** WebDAV locks and dead properties (CONTRACT §12) on SQLite: the {@link DavTable} part of the SQLite metadata store. */
import { and, asc, eq, gt, inArray, lte } from "drizzle-orm";
import type { Db, WriteRunner } from "./db.ts";
import type { DavLockRow, DavPropertyRow, DavTable } from "./ports.ts";
import { davLocks, davProperties } from "./schema.ts";

/** Lock and property rows on SQLite: reads on the given connection, writes through the store's write runner. */
export class SqliteDav implements DavTable {
  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
  ) {}

  async locks(ownerId: string, now: number): Promise<DavLockRow[]> {
    const rows = this.db
      .select()
      .from(davLocks)
      .where(and(eq(davLocks.ownerId, ownerId), gt(davLocks.expiresAt, now)))
      .all();
    return rows.map(lockOf);
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

  setProperty(ownerId: string, resource: string, p: DavPropertyRow): Promise<void> {
    return this.write(
      (db) =>
        void db
          .insert(davProperties)
          .values({ ownerId, resource, ...p })
          .onConflictDoUpdate({ target: [davProperties.ownerId, davProperties.resource, davProperties.namespace, davProperties.name], set: { value: p.value } })
          .run(),
    );
  }

  removeProperty(ownerId: string, resource: string, namespace: string, name: string): Promise<void> {
    const where = and(eq(davProperties.ownerId, ownerId), eq(davProperties.resource, resource), eq(davProperties.namespace, namespace), eq(davProperties.name, name));
    return this.write((db) => void db.delete(davProperties).where(where).run());
  }

  deleteProperties(ownerId: string, resources: readonly string[]): Promise<void> {
    if (resources.length === 0) return Promise.resolve();
    return this.write((db) => void db.delete(davProperties).where(and(eq(davProperties.ownerId, ownerId), inArray(davProperties.resource, [...resources]))).run());
  }
}

/** A row as the port has it. */
export function lockOf(r: typeof davLocks.$inferSelect): DavLockRow {
  return { ...r, depth: r.depth === 0 ? 0 : -1, exclusive: r.exclusive !== 0 };
}
