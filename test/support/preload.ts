// Loaded before every test file (bunfig.toml): hooks for the whole run.
import { afterAll } from "bun:test";
import { stopBackend } from "./backend.ts";

afterAll(stopBackend);
