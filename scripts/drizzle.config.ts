// drizzle-kit configuration: `npm run db:generate` writes SQL migrations from src/storage/schema.ts.
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./src/storage/schema.ts",
  out: "./drizzle",
});
