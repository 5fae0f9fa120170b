/** WebDAV locks and dead properties (CONTRACT §12) on PostgreSQL: the {@link DavTable} part of the PostgreSQL metadata store. */
import { and, asc, eq, gt, inArray, lte } from "drizzle-orm";
import type { PgDb } from "./pg-metadata.ts";
import type { DavLockRow, DavPropertyRow, DavTable } from "./ports.ts";
import { davLocks, davProperties } from "./pg-schema.ts";

/** Lock and property rows on PostgreSQL, on the pool or inside a transaction (whichever `db` is). */
export class PgDav implements DavTable {
  constructor(private readonly db: PgDb) {}

  async locks(ownerId: string, now: number): Promise<DavLockRow[]> {
    const rows = await this.db
      .select()
      .from(davLocks)
      .where(and(eq(davLocks.ownerId, ownerId), gt(davLocks.expiresAt, now)));
    return rows.map((r) => ({ ...r, depth: r.depth === 0 ? 0 : -1, exclusive: r.exclusive !== 0 }));
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

  async setProperty(ownerId: string, resource: string, p: DavPropertyRow): Promise<void> {
    await this.db
      .insert(davProperties)
      .values({ ownerId, resource, ...p })
      .onConflictDoUpdate({ target: [davProperties.ownerId, davProperties.resource, davProperties.namespace, davProperties.name], set: { value: p.value } });
  }

  async removeProperty(ownerId: string, resource: string, namespace: string, name: string): Promise<void> {
    await this.db
      .delete(davProperties)
      .where(and(eq(davProperties.ownerId, ownerId), eq(davProperties.resource, resource), eq(davProperties.namespace, namespace), eq(davProperties.name, name)));
  }

  async deleteProperties(ownerId: string, resources: readonly string[]): Promise<void> {
    if (resources.length === 0) return;
    await this.db.delete(davProperties).where(and(eq(davProperties.ownerId, ownerId), inArray(davProperties.resource, [...resources])));
  }
}
