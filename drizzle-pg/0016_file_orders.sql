CREATE INDEX "files_owner_order_name_idx" ON "files" USING btree ("owner_id","name" COLLATE "C","id");--> statement-breakpoint
CREATE INDEX "files_owner_order_size_idx" ON "files" USING btree ("owner_id","size","id");--> statement-breakpoint
CREATE INDEX "files_folder_order_name_idx" ON "files" USING btree ("folder_id","name" COLLATE "C","id");--> statement-breakpoint
CREATE INDEX "files_folder_order_size_idx" ON "files" USING btree ("folder_id","size","id");--> statement-breakpoint
CREATE INDEX "files_top_order_name_idx" ON "files" USING btree ("owner_id","name" COLLATE "C","id") WHERE "files"."folder_id" IS NULL;--> statement-breakpoint
CREATE INDEX "files_top_order_size_idx" ON "files" USING btree ("owner_id","size","id") WHERE "files"."folder_id" IS NULL;