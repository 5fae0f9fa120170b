CREATE TABLE "login_links" (
	"token_hash" "bytea" PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "login_links_expires_idx" ON "login_links" USING btree ("expires_at");