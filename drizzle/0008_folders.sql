CREATE TABLE `dav_locks` (
	`token` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`path` text NOT NULL,
	`depth` integer NOT NULL,
	`exclusive` integer NOT NULL,
	`owner_xml` text DEFAULT '' NOT NULL,
	`timeout_seconds` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`owner_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `dav_locks_owner_path_idx` ON `dav_locks` (`owner_id`,`path`);--> statement-breakpoint
CREATE INDEX `dav_locks_expires_idx` ON `dav_locks` (`expires_at`);--> statement-breakpoint
CREATE TABLE `dav_properties` (
	`owner_id` text NOT NULL,
	`resource` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`owner_id`, `resource`, `namespace`, `name`),
	FOREIGN KEY (`owner_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `dav_properties_owner_idx` ON `dav_properties` (`owner_id`);--> statement-breakpoint
CREATE TABLE `folder_files` (
	`file_id` text PRIMARY KEY NOT NULL,
	`folder_id` text NOT NULL,
	FOREIGN KEY (`file_id`) REFERENCES `files`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`folder_id`) REFERENCES `folders`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `folder_files_folder_idx` ON `folder_files` (`folder_id`);--> statement-breakpoint
CREATE TABLE `folders` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`parent_id` text,
	`name` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`owner_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`parent_id`) REFERENCES `folders`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `folders_parent_name_unique` ON `folders` (`parent_id`,`name`) WHERE "folders"."parent_id" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `folders_top_name_unique` ON `folders` (`owner_id`,`name`) WHERE "folders"."parent_id" IS NULL;--> statement-breakpoint
CREATE INDEX `folders_owner_created_idx` ON `folders` (`owner_id`,"created_at" DESC,"id" DESC);--> statement-breakpoint
ALTER TABLE `shares` ADD `folder_id` text;--> statement-breakpoint
CREATE INDEX `shares_folder_idx` ON `shares` (`folder_id`);