/**
 * The database schema (drizzle-orm, SQLite). `drizzle-kit generate` turns changes here into SQL
 * migrations under drizzle/. Times are INTEGER Unix microseconds.
 */
import { sql } from "drizzle-orm";
import { blob, index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    /** Lower-cased e-mail address. */
    email: text("email").notNull(),
    /** OpenID issuer and subject once the user has signed in; null for users the CLI created. */
    issuer: text("issuer"),
    subject: text("subject"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("users_email_unique").on(t.email),
    uniqueIndex("users_issuer_subject_unique").on(t.issuer, t.subject),
  ],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull().default(""),
    /** SHA-256 of the whole key; the key itself is never stored. */
    secretHash: blob("secret_hash", { mode: "buffer" }).notNull(),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at"),
  },
  (t) => [uniqueIndex("api_keys_secret_hash_unique").on(t.secretHash), index("api_keys_user_idx").on(t.userId)],
);

export const files = sqliteTable(
  "files",
  {
    id: text("id").primaryKey(),
    ownerId: text("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "restrict" }),
    slug: text("slug").notNull().default(""),
    name: text("name").notNull().default(""),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    checksum: text("checksum").notNull(),
    visibility: text("visibility", { enum: ["private", "internal", "public"] }).notNull(),
    /** File name of the content under DATA_DIR/blobs; replaced, never overwritten. */
    blob: text("blob").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    index("files_owner_created_idx").on(t.ownerId, sql`${t.createdAt} DESC`, sql`${t.id} DESC`),
    uniqueIndex("files_blob_unique").on(t.blob),
  ],
);

export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** SHA-256 of the session secret; the token (id.secret) lives only in the browser's cookie. */
    secretHash: blob("secret_hash", { mode: "buffer" }).notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("sessions_user_idx").on(t.userId), index("sessions_expires_idx").on(t.expiresAt)],
);
