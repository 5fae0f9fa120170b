-- Every committed change to a table tells each cubby instance (LISTEN cubby_changes) that its
-- read caches may be stale. Statement-level, and NOTIFY folds identical notifications of one
-- transaction into one, so a transaction costs one notification however many rows it touches.
CREATE FUNCTION cubby_notify_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cubby_changes', '');
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER users_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON users FOR EACH STATEMENT EXECUTE FUNCTION cubby_notify_changes();
--> statement-breakpoint
CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION cubby_notify_changes();
--> statement-breakpoint
CREATE TRIGGER files_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON files FOR EACH STATEMENT EXECUTE FUNCTION cubby_notify_changes();
--> statement-breakpoint
CREATE TRIGGER sessions_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON sessions FOR EACH STATEMENT EXECUTE FUNCTION cubby_notify_changes();
