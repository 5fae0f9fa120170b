// Loaded before every test file (bunfig.toml): hooks for the whole run.
import { afterAll, beforeAll } from "bun:test";
import { startBackend, stopBackend } from "./backend.ts";

// Starting PostgreSQL and Swift takes a few seconds, more than a test hook's default timeout.
beforeAll(startBackend, 60_000);
afterAll(stopBackend);
