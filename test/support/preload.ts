// Loaded before every test file (bunfig.toml): hooks for the whole run.
import { afterAll, beforeAll } from "bun:test";
import { startBackend, stopBackend } from "./backend.ts";
import { removePostgresTemplate } from "./postgres.ts";

// Starting PostgreSQL and Swift takes a few seconds, more than a test hook's default timeout.
beforeAll(startBackend, 60_000);
afterAll(async () => {
  await stopBackend();
  // bun test runs no process exit handlers: the template cluster (~40 MiB in /dev/shm) goes here.
  await removePostgresTemplate();
});
