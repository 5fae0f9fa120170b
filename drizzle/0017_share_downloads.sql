CREATE TABLE `share_downloads` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`share_id` text NOT NULL,
	`at` integer NOT NULL,
	`item` text NOT NULL,
	`bytes` integer NOT NULL,
	`completed` integer NOT NULL,
	`client` text NOT NULL,
	FOREIGN KEY (`share_id`) REFERENCES `shares`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `share_downloads_share_at_idx` ON `share_downloads` (`share_id`,"at" DESC,"seq" DESC);--> statement-breakpoint
CREATE INDEX `share_downloads_at_idx` ON `share_downloads` (`at`);