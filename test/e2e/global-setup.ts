// Playwright's global setup: builds dist/cubby once for the whole run (each test file used to
// build it again, ~5 s each); the path reaches the test files' processes in the environment.
import { buildBinary } from "./fixtures.ts";

export default function globalSetup(): void {
  buildBinary();
}
