ALTER TABLE `users` ADD `quota_bytes` integer;--> statement-breakpoint
ALTER TABLE `users` ADD `disabled_at` integer;--> statement-breakpoint
ALTER TABLE `users` ADD `last_seen_at` integer;