DROP INDEX `dav_properties_owner_idx`;--> statement-breakpoint
ALTER TABLE `dav_properties` ADD `bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `dav_properties` ADD `file_id` text REFERENCES files(id) ON DELETE cascade;--> statement-breakpoint
ALTER TABLE `dav_properties` ADD `folder_id` text REFERENCES folders(id) ON DELETE cascade;--> statement-breakpoint
CREATE INDEX `dav_properties_owner_bytes_idx` ON `dav_properties` (`owner_id`,`bytes`);--> statement-breakpoint
CREATE INDEX `dav_properties_file_idx` ON `dav_properties` (`file_id`);--> statement-breakpoint
CREATE INDEX `dav_properties_folder_idx` ON `dav_properties` (`folder_id`);--> statement-breakpoint
DELETE FROM `dav_properties` WHERE (`resource` LIKE 'file:%' AND substr(`resource`, 6) NOT IN (SELECT `id` FROM `files`)) OR (`resource` LIKE 'folder:%' AND substr(`resource`, 8) NOT IN (SELECT `id` FROM `folders`));--> statement-breakpoint
UPDATE `dav_properties` SET `bytes` = length(CAST(`namespace` AS BLOB)) + length(CAST(`name` AS BLOB)) + length(CAST(`value` AS BLOB)), `file_id` = CASE WHEN `resource` LIKE 'file:%' THEN substr(`resource`, 6) END, `folder_id` = CASE WHEN `resource` LIKE 'folder:%' THEN substr(`resource`, 8) END;