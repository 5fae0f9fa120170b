ALTER TABLE `users` ADD `display_name` text;--> statement-breakpoint
ALTER TABLE `users` ADD `show_email_on_shares` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `admin` integer DEFAULT false NOT NULL;