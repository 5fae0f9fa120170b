ALTER TABLE "files" ADD COLUMN "folder_id" text;--> statement-breakpoint
ALTER TABLE "files" ADD CONSTRAINT "files_folder_id_folders_id_fk" FOREIGN KEY ("folder_id") REFERENCES "public"."folders"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
UPDATE "files" SET "folder_id" = "folder_files"."folder_id" FROM "folder_files" WHERE "folder_files"."file_id" = "files"."id";--> statement-breakpoint
DROP TABLE "folder_files" CASCADE;--> statement-breakpoint
DROP INDEX "folders_owner_created_idx";--> statement-breakpoint
CREATE INDEX "files_folder_created_idx" ON "files" USING btree ("folder_id","created_at" DESC,"id" DESC);--> statement-breakpoint
CREATE INDEX "files_folder_name_idx" ON "files" USING btree ("folder_id","name");--> statement-breakpoint
CREATE INDEX "files_top_created_idx" ON "files" USING btree ("owner_id","created_at" DESC,"id" DESC) WHERE "files"."folder_id" IS NULL;--> statement-breakpoint
CREATE INDEX "files_top_name_idx" ON "files" USING btree ("owner_id","name") WHERE "files"."folder_id" IS NULL;--> statement-breakpoint
CREATE INDEX "folders_owner_parent_created_idx" ON "folders" USING btree ("owner_id","parent_id","created_at" DESC,"id" DESC);
