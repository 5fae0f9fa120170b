CREATE TABLE "file_thumbnails" (
	"file_id" text PRIMARY KEY NOT NULL,
	"of_blob" text NOT NULL,
	"source" text NOT NULL,
	"image" "bytea" NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "file_thumbnails" ADD CONSTRAINT "file_thumbnails_file_id_files_id_fk" FOREIGN KEY ("file_id") REFERENCES "public"."files"("id") ON DELETE cascade ON UPDATE no action;