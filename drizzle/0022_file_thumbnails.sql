CREATE TABLE `file_thumbnails` (
	`file_id` text PRIMARY KEY NOT NULL,
	`of_blob` text NOT NULL,
	`source` text NOT NULL,
	`image` blob NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`file_id`) REFERENCES `files`(`id`) ON UPDATE no action ON DELETE cascade
);
