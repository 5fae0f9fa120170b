DROP INDEX "webhook_deliveries_due_idx";--> statement-breakpoint
DROP INDEX "webhooks_owner_idx";--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "served_at" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_webhook_due_idx" ON "webhook_deliveries" USING btree ("webhook_id","next_attempt_at") WHERE "webhook_deliveries"."delivered_at" IS NULL AND "webhook_deliveries"."failed_at" IS NULL;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_webhook_claimed_idx" ON "webhook_deliveries" USING btree ("webhook_id","claimed_until") WHERE "webhook_deliveries"."delivered_at" IS NULL AND "webhook_deliveries"."failed_at" IS NULL;--> statement-breakpoint
CREATE INDEX "webhooks_owner_idx" ON "webhooks" USING btree ("owner_id","served_at");