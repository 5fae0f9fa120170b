DROP INDEX `webhook_deliveries_due_idx`;--> statement-breakpoint
CREATE INDEX `webhook_deliveries_webhook_due_idx` ON `webhook_deliveries` (`webhook_id`,`next_attempt_at`) WHERE "webhook_deliveries"."delivered_at" IS NULL AND "webhook_deliveries"."failed_at" IS NULL;--> statement-breakpoint
CREATE INDEX `webhook_deliveries_webhook_claimed_idx` ON `webhook_deliveries` (`webhook_id`,`claimed_until`) WHERE "webhook_deliveries"."delivered_at" IS NULL AND "webhook_deliveries"."failed_at" IS NULL;--> statement-breakpoint
DROP INDEX `webhooks_owner_idx`;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `served_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `webhooks_owner_idx` ON `webhooks` (`owner_id`,`served_at`);