CREATE TABLE `login_links` (
	`token_hash` blob PRIMARY KEY NOT NULL,
	`email` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `login_links_expires_idx` ON `login_links` (`expires_at`);