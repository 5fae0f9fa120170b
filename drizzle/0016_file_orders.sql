CREATE INDEX `files_owner_order_name_idx` ON `files` (`owner_id`,`name`,`id`);--> statement-breakpoint
CREATE INDEX `files_owner_order_size_idx` ON `files` (`owner_id`,`size`,`id`);--> statement-breakpoint
CREATE INDEX `files_folder_order_name_idx` ON `files` (`folder_id`,`name`,`id`);--> statement-breakpoint
CREATE INDEX `files_folder_order_size_idx` ON `files` (`folder_id`,`size`,`id`);--> statement-breakpoint
CREATE INDEX `files_top_order_name_idx` ON `files` (`owner_id`,`name`,`id`) WHERE "files"."folder_id" IS NULL;--> statement-breakpoint
CREATE INDEX `files_top_order_size_idx` ON `files` (`owner_id`,`size`,`id`) WHERE "files"."folder_id" IS NULL;