CREATE TABLE "shares" (
	"id" text PRIMARY KEY NOT NULL,
	"file_id" text NOT NULL,
	"owner_id" text NOT NULL,
	"token" text NOT NULL,
	"expires_at" bigint,
	"max_downloads" bigint,
	"download_count" bigint DEFAULT 0 NOT NULL,
	"password_hash" text,
	"created_at" bigint NOT NULL,
	"deleted_at" bigint
);
--> statement-breakpoint
CREATE TABLE "upload_links" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"token" text NOT NULL,
	"name" text DEFAULT '' NOT NULL,
	"visibility" text NOT NULL,
	"expires_at" bigint,
	"max_files" bigint,
	"max_bytes" bigint,
	"files_uploaded" bigint DEFAULT 0 NOT NULL,
	"bytes_uploaded" bigint DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL,
	"deleted_at" bigint
);
--> statement-breakpoint
CREATE TABLE "uploads" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"upload_link_id" text,
	"length" bigint NOT NULL,
	"offset" bigint DEFAULT 0 NOT NULL,
	"metadata" text DEFAULT '{}' NOT NULL,
	"file_id" text,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "scopes" text DEFAULT 'files.read files.write' NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "expires_at" bigint;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "expires_at" bigint;--> statement-breakpoint
ALTER TABLE "shares" ADD CONSTRAINT "shares_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "upload_links" ADD CONSTRAINT "upload_links_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "uploads" ADD CONSTRAINT "uploads_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "shares_token_unique" ON "shares" USING btree ("token");--> statement-breakpoint
CREATE INDEX "shares_file_idx" ON "shares" USING btree ("file_id");--> statement-breakpoint
CREATE INDEX "shares_owner_idx" ON "shares" USING btree ("owner_id");--> statement-breakpoint
CREATE UNIQUE INDEX "upload_links_token_unique" ON "upload_links" USING btree ("token");--> statement-breakpoint
CREATE INDEX "upload_links_owner_idx" ON "upload_links" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "uploads_expires_idx" ON "uploads" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "uploads_owner_idx" ON "uploads" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "files_expires_idx" ON "files" USING btree ("expires_at");