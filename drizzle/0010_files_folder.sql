ALTER TABLE `files` ADD `folder_id` text REFERENCES folders(id) ON DELETE set null;--> statement-breakpoint
UPDATE `files` SET `folder_id` = (SELECT `folder_id` FROM `folder_files` WHERE `file_id` = `files`.`id`) WHERE `id` IN (SELECT `file_id` FROM `folder_files`);--> statement-breakpoint
DROP TABLE `folder_files`;--> statement-breakpoint
DROP INDEX `folders_owner_created_idx`;--> statement-breakpoint
CREATE INDEX `folders_owner_parent_created_idx` ON `folders` (`owner_id`,`parent_id`,"created_at" DESC,"id" DESC);--> statement-breakpoint
CREATE INDEX `files_folder_created_idx` ON `files` (`folder_id`,"created_at" DESC,"id" DESC);--> statement-breakpoint
CREATE INDEX `files_folder_name_idx` ON `files` (`folder_id`,`name`);--> statement-breakpoint
CREATE INDEX `files_top_created_idx` ON `files` (`owner_id`,"created_at" DESC,"id" DESC) WHERE "files"."folder_id" IS NULL;--> statement-breakpoint
CREATE INDEX `files_top_name_idx` ON `files` (`owner_id`,`name`) WHERE "files"."folder_id" IS NULL;
