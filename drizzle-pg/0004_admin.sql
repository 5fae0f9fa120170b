ALTER TABLE "users" ADD COLUMN "quota_bytes" bigint;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "disabled_at" bigint;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "last_seen_at" bigint;