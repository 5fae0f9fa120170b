// Loaded before every test file (bunfig.toml): hooks for the whole run.
import { afterAll, beforeAll, setDefaultTimeout } from "bun:test";
import { startBackend, stopBackend } from "./backend.ts";
import { removePostgresTemplate } from "./postgres.ts";

// A test that runs out of time has every process its file started killed by bun test (the
// file's server too), so one slow test on a busy machine failed the rest of its file: 5 s, the
// default, was too short for PostgreSQL + S3 under CI load (file-search.test.ts, six CLI runs at
// once). A test that really hangs still fails, after 30 s.
setDefaultTimeout(30_000);

// Starting PostgreSQL and Swift takes a few seconds, more than a test hook's default timeout.
beforeAll(startBackend, 60_000);
afterAll(async () => {
  await stopBackend();
  // bun test runs no process exit handlers: the template cluster (~40 MiB in /dev/shm) goes here.
  await removePostgresTemplate();
});
