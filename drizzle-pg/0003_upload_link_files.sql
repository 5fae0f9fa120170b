ALTER TABLE "files" ADD COLUMN "upload_link_id" text;--> statement-breakpoint
CREATE INDEX "files_upload_link_created_idx" ON "files" USING btree ("upload_link_id","created_at" DESC,"id" DESC);