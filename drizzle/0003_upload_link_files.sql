ALTER TABLE `files` ADD `upload_link_id` text;--> statement-breakpoint
CREATE INDEX `files_upload_link_created_idx` ON `files` (`upload_link_id`,"created_at" DESC,"id" DESC);