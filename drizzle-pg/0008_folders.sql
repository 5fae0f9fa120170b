CREATE TABLE "dav_locks" (
	"token" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"path" text NOT NULL,
	"depth" integer NOT NULL,
	"exclusive" integer NOT NULL,
	"owner_xml" text DEFAULT '' NOT NULL,
	"timeout_seconds" integer NOT NULL,
	"expires_at" bigint NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "dav_properties" (
	"owner_id" text NOT NULL,
	"resource" text NOT NULL,
	"namespace" text NOT NULL,
	"name" text NOT NULL,
	"value" text NOT NULL,
	CONSTRAINT "dav_properties_owner_id_resource_namespace_name_pk" PRIMARY KEY("owner_id","resource","namespace","name")
);
--> statement-breakpoint
CREATE TABLE "folder_files" (
	"file_id" text PRIMARY KEY NOT NULL,
	"folder_id" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "folders" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"parent_id" text,
	"name" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "shares" ADD COLUMN "folder_id" text;--> statement-breakpoint
ALTER TABLE "dav_locks" ADD CONSTRAINT "dav_locks_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "dav_properties" ADD CONSTRAINT "dav_properties_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "folder_files" ADD CONSTRAINT "folder_files_file_id_files_id_fk" FOREIGN KEY ("file_id") REFERENCES "public"."files"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "folder_files" ADD CONSTRAINT "folder_files_folder_id_folders_id_fk" FOREIGN KEY ("folder_id") REFERENCES "public"."folders"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "folders" ADD CONSTRAINT "folders_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "folders" ADD CONSTRAINT "folders_parent_id_folders_id_fk" FOREIGN KEY ("parent_id") REFERENCES "public"."folders"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "dav_locks_owner_path_idx" ON "dav_locks" USING btree ("owner_id","path");--> statement-breakpoint
CREATE INDEX "dav_locks_expires_idx" ON "dav_locks" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "dav_properties_owner_idx" ON "dav_properties" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "folder_files_folder_idx" ON "folder_files" USING btree ("folder_id");--> statement-breakpoint
CREATE UNIQUE INDEX "folders_parent_name_unique" ON "folders" USING btree ("parent_id","name") WHERE "folders"."parent_id" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "folders_top_name_unique" ON "folders" USING btree ("owner_id","name") WHERE "folders"."parent_id" IS NULL;--> statement-breakpoint
CREATE INDEX "folders_owner_created_idx" ON "folders" USING btree ("owner_id","created_at" DESC,"id" DESC);--> statement-breakpoint
CREATE INDEX "shares_folder_idx" ON "shares" USING btree ("folder_id");