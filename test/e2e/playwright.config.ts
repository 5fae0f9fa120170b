// Playwright runs the dashboard tests (*.e2e.ts) in Debian's Chromium against the compiled binary.
import { defineConfig } from "@playwright/test";
import fs from "node:fs";

const chromium = process.env.CHROMIUM_PATH ?? (fs.existsSync("/usr/bin/chromium") ? "/usr/bin/chromium" : undefined);

export default defineConfig({
  testDir: ".",
  testMatch: "*.e2e.ts",
  globalSetup: "./global-setup.ts",
  outputDir: "../../test-results/e2e",
  timeout: 60_000,
  // Two browsers at once on two cores (issue 39, CI time): each file starts its own server, data
  // directory and provider on fresh ports, so files share nothing. E2E_WORKERS=1 runs one at a time.
  workers: Number(process.env.E2E_WORKERS ?? 2),
  reporter: [["list"]],
  use: {
    browserName: "chromium",
    launchOptions: {
      executablePath: chromium,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
    },
    viewport: { width: 1100, height: 800 },
    screenshot: "only-on-failure",
  },
});
