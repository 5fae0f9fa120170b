// drizzle-kit configuration for PostgreSQL: `npm run db:generate` writes SQL migrations from
// src/storage/pg-schema.ts to drizzle-pg/.
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./src/storage/pg-schema.ts",
  out: "./drizzle-pg",
});
