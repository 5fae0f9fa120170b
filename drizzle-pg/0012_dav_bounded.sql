DROP INDEX "dav_properties_owner_idx";--> statement-breakpoint
ALTER TABLE "dav_properties" ADD COLUMN "bytes" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "dav_properties" ADD COLUMN "file_id" text;--> statement-breakpoint
ALTER TABLE "dav_properties" ADD COLUMN "folder_id" text;--> statement-breakpoint
ALTER TABLE "dav_properties" ADD CONSTRAINT "dav_properties_file_id_files_id_fk" FOREIGN KEY ("file_id") REFERENCES "public"."files"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "dav_properties" ADD CONSTRAINT "dav_properties_folder_id_folders_id_fk" FOREIGN KEY ("folder_id") REFERENCES "public"."folders"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "dav_properties_owner_bytes_idx" ON "dav_properties" USING btree ("owner_id","bytes");--> statement-breakpoint
CREATE INDEX "dav_properties_file_idx" ON "dav_properties" USING btree ("file_id");--> statement-breakpoint
CREATE INDEX "dav_properties_folder_idx" ON "dav_properties" USING btree ("folder_id");--> statement-breakpoint
DELETE FROM "dav_properties" WHERE ("resource" LIKE 'file:%' AND substr("resource", 6) NOT IN (SELECT "id" FROM "files")) OR ("resource" LIKE 'folder:%' AND substr("resource", 8) NOT IN (SELECT "id" FROM "folders"));--> statement-breakpoint
UPDATE "dav_properties" SET "bytes" = octet_length("namespace") + octet_length("name") + octet_length("value"), "file_id" = CASE WHEN "resource" LIKE 'file:%' THEN substr("resource", 6) END, "folder_id" = CASE WHEN "resource" LIKE 'folder:%' THEN substr("resource", 8) END;