DROP INDEX `api_keys_user_idx`;--> statement-breakpoint
CREATE INDEX `api_keys_user_created_idx` ON `api_keys` (`user_id`,"created_at" DESC,"id" DESC);--> statement-breakpoint
DROP INDEX `shares_file_idx`;--> statement-breakpoint
DROP INDEX `shares_folder_idx`;--> statement-breakpoint
CREATE INDEX `shares_file_live_idx` ON `shares` (`file_id`,"created_at" DESC,"id" DESC) WHERE "shares"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX `shares_folder_live_idx` ON `shares` (`folder_id`,"created_at" DESC,"id" DESC) WHERE "shares"."deleted_at" IS NULL;--> statement-breakpoint
DROP INDEX `upload_links_owner_idx`;--> statement-breakpoint
CREATE INDEX `upload_links_owner_created_idx` ON `upload_links` (`owner_id`,"created_at" DESC,"id" DESC);--> statement-breakpoint
CREATE INDEX `upload_links_owner_live_idx` ON `upload_links` (`owner_id`,"created_at" DESC,"id" DESC) WHERE "upload_links"."deleted_at" IS NULL;