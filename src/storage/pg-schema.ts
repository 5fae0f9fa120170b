/**
 * The database schema on PostgreSQL (drizzle-orm pg-core), table for table and column for
 * column the SQLite schema (schema.ts), so that both implement the same metadata store port.
 * `npm run db:generate` writes its migrations to drizzle-pg/. Times are BIGINT Unix
 * microseconds (below 2^53 until the year 2255, so they stay exact as JavaScript numbers).
 */
import { sql } from "drizzle-orm";
import { bigint, customType, index, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";

/** BYTEA as a Node Buffer. */
const bytea = customType<{ data: Buffer; driverData: Buffer }>({
  dataType: () => "bytea",
});

/** Microseconds since the Unix epoch. */
const micros = (name: string) => bigint(name, { mode: "number" });

export const users = pgTable(
  "users",
  {
    id: text("id").primaryKey(),
    /** Lower-cased e-mail address. */
    email: text("email").notNull(),
    /** OpenID issuer and subject once the user has signed in; null for users the CLI created. */
    issuer: text("issuer"),
    subject: text("subject"),
    createdAt: micros("created_at").notNull(),
  },
  (t) => [uniqueIndex("users_email_unique").on(t.email), uniqueIndex("users_issuer_subject_unique").on(t.issuer, t.subject)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull().default(""),
    /** SHA-256 of the whole key; the key itself is never stored. */
    secretHash: bytea("secret_hash").notNull(),
    createdAt: micros("created_at").notNull(),
    lastUsedAt: micros("last_used_at"),
  },
  (t) => [uniqueIndex("api_keys_secret_hash_unique").on(t.secretHash), index("api_keys_user_idx").on(t.userId)],
);

export const files = pgTable(
  "files",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "restrict" }),
    slug: text("slug").notNull().default(""),
    name: text("name").notNull().default(""),
    contentType: text("content_type").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    checksum: text("checksum").notNull(),
    visibility: text("visibility", { enum: ["private", "internal", "public"] }).notNull(),
    /** Name of the content's blob in the blob store; replaced, never overwritten. */
    blob: text("blob").notNull(),
    createdAt: micros("created_at").notNull(),
    updatedAt: micros("updated_at").notNull(),
  },
  (t) => [
    index("files_owner_created_idx").on(t.ownerId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    uniqueIndex("files_blob_unique").on(t.blob),
  ],
);

export const sessions = pgTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** SHA-256 of the session secret; the token (id.secret) lives only in the browser's cookie. */
    secretHash: bytea("secret_hash").notNull(),
    createdAt: micros("created_at").notNull(),
    expiresAt: micros("expires_at").notNull(),
  },
  (t) => [index("sessions_user_idx").on(t.userId), index("sessions_expires_idx").on(t.expiresAt)],
);
