ALTER TABLE "api_keys" ADD COLUMN "s3_secret" text;--> statement-breakpoint
CREATE INDEX "folders_parent_key_idx" ON "folders" USING btree ("parent_id",(("name" || '/') COLLATE "C")) WHERE "folders"."parent_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "folders_top_key_idx" ON "folders" USING btree ("owner_id",(("name" || '/') COLLATE "C")) WHERE "folders"."parent_id" IS NULL;--> statement-breakpoint
CREATE INDEX "uploads_owner_group_idx" ON "uploads" USING btree ("owner_id","concat_group");