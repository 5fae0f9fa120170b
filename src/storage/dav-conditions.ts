/**
 * The dead-property and lock rules both metadata stores share (sqlite-dav.ts, pg-dav.ts):
 * drizzle's operators work on either dialect's columns, so each is written once.
 */
import { asc, sql, type Column, type SQL } from "drizzle-orm";
import type { DavPropertyRow, DavResourcePropertyRow } from "./ports.ts";

/**
 * One page of dead properties in primary-key order (export), on either dialect's table: the
 * columns an exported property has, the rows after the key `after` (a row value), and the order.
 */
export function propertiesInKeyOrder<T extends { ownerId: Column; resource: Column; namespace: Column; name: Column; value: Column }>(
  t: T,
  after: (DavResourcePropertyRow & { ownerId: string }) | undefined,
): { columns: Pick<T, "ownerId" | "resource" | "namespace" | "name" | "value">; where: SQL | undefined; order: SQL[] } {
  return {
    columns: { ownerId: t.ownerId, resource: t.resource, namespace: t.namespace, name: t.name, value: t.value },
    where: after === undefined ? undefined : sql`(${t.ownerId}, ${t.resource}, ${t.namespace}, ${t.name}) > (${after.ownerId}, ${after.resource}, ${after.namespace}, ${after.name})`,
    order: [asc(t.ownerId), asc(t.resource), asc(t.namespace), asc(t.name)],
  };
}

/** The (low, high) bounds, exclusive, of the lock paths strictly below `path` in byte order ("/a" → "/a/" … "/a0"). */
export function belowRange(path: string): [string, string] {
  if (path === "/") return ["/", "0"];
  return [`${path}/`, `${path}0`];
}

/** The UTF-8 bytes a dead property counts against its owner's quota: namespace, name and value. */
export function propertyBytes(p: DavPropertyRow): number {
  return Buffer.byteLength(p.namespace) + Buffer.byteLength(p.name) + Buffer.byteLength(p.value);
}

/** The file or folder a property key names (`file:{id}`, `folder:{id}`), for the foreign keys. */
export function targetOf(resource: string): { fileId: string | null; folderId: string | null } {
  if (resource.startsWith("file:")) return { fileId: resource.slice(5), folderId: null };
  if (resource.startsWith("folder:")) return { fileId: null, folderId: resource.slice(7) };
  return { fileId: null, folderId: null };
}
