CREATE TABLE "share_downloads" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"share_id" text NOT NULL,
	"at" bigint NOT NULL,
	"item" text NOT NULL,
	"bytes" bigint NOT NULL,
	"completed" boolean NOT NULL,
	"client" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "share_downloads" ADD CONSTRAINT "share_downloads_share_id_shares_id_fk" FOREIGN KEY ("share_id") REFERENCES "public"."shares"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "share_downloads_share_at_idx" ON "share_downloads" USING btree ("share_id","at" DESC,"seq" DESC);--> statement-breakpoint
CREATE INDEX "share_downloads_at_idx" ON "share_downloads" USING btree ("at");