/**
 * The caps of WebDAV (CONTRACT §14: per request and per resource, each over-cap answer a 4xx
 * whose body names the cap). The numbers leave every client we test against far inside them
 * (litmus, rclone, davfs2, Finder and Windows set a handful of properties and hold a few locks)
 * while bounding what one request can make the server store, read or compute.
 */
import { DavError } from "./errors.ts";

/** Dead properties one resource may have (RFC 4918 §9.2.1: 507 when they do not fit). */
export const MAX_PROPERTIES_PER_RESOURCE = 10_000;
/**
 * UTF-8 bytes of one resource's dead properties (namespaces, names and values as stored, each
 * value with the namespace declarations it inherits), 2 MiB: what the largest PROPPATCH body
 * (1 MiB, xml.ts) can set, with room for those declarations.
 */
export const MAX_PROPERTY_BYTES_PER_RESOURCE = 2 * 1024 * 1024;
/** Property names one PROPFIND may ask for (DAV:prop's children). */
export const MAX_PROPFIND_NAMES = 10_000;
/** Lists in one `If` header (RFC 4918 §10.4). */
export const MAX_IF_LISTS = 256;
/** Conditions in one `If` header, all lists together. */
export const MAX_IF_CONDITIONS = 1024;
/** Distinct resources the tagged lists of one `If` header may name. */
export const MAX_IF_RESOURCES = 64;
/** Live locks one user may hold. */
export const MAX_LOCKS_PER_USER = 1000;
/** UTF-8 bytes of a lock's DAV:owner element. */
export const MAX_LOCK_OWNER_BYTES = 4096;

/** The error of a cap: `status`, a message that names the cap and its value. */
export function overCap(status: 400 | 403 | 413 | 507, what: string, cap: string, value: number): DavError {
  return new DavError(status, `${what} (cap ${cap} = ${value})`);
}
