DROP INDEX `files_folder_name_idx`;--> statement-breakpoint
DROP INDEX `files_top_name_idx`;