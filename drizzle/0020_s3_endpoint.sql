ALTER TABLE `api_keys` ADD `s3_secret` text;--> statement-breakpoint
CREATE INDEX `folders_parent_key_idx` ON `folders` (`parent_id`,("name" || '/')) WHERE "folders"."parent_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `folders_top_key_idx` ON `folders` (`owner_id`,("name" || '/')) WHERE "folders"."parent_id" IS NULL;--> statement-breakpoint
CREATE INDEX `uploads_owner_group_idx` ON `uploads` (`owner_id`,`concat_group`);