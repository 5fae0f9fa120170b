import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { MIGRATION_SETS, renderMigrationIndex } from "../../scripts/db-generate.ts";
import { openDb } from "../../src/storage/db.ts";
import { migrate } from "../../src/storage/migrate.ts";
import { migrations } from "../../drizzle/index.ts";
import { tempDir } from "../support/server.ts";

const root = path.resolve(import.meta.dir, "../..");

describe.each(MIGRATION_SETS)("$folder", ({ folder, config }) => {
  test("index.ts embeds exactly the migrations of the journal", () => {
    const journal = JSON.parse(fs.readFileSync(path.join(root, folder, "meta/_journal.json"), "utf8"));
    expect(fs.readFileSync(path.join(root, folder, "index.ts"), "utf8")).toBe(renderMigrationIndex(journal));
  });

  test("the schema has no changes drizzle-kit has not turned into a migration", async () => {
    const proc = Bun.spawn([process.execPath, "x", "drizzle-kit", "check", "--config", config], { cwd: root, stdout: "pipe", stderr: "pipe" });
    expect(await proc.exited).toBe(0);
    // `generate` into a scratch copy must find nothing to write.
    using scratch = tempDir();
    fs.cpSync(path.join(root, folder), path.join(scratch.path, folder), { recursive: true });
    const { default: settings } = (await import(path.join(root, config))) as { default: { dialect: string; schema: string } };
    const scratchConfig = path.join(scratch.path, "drizzle.config.ts");
    fs.writeFileSync(
      scratchConfig,
      `export default { dialect: ${JSON.stringify(settings.dialect)}, schema: ${JSON.stringify(path.join(root, settings.schema))}, out: ${JSON.stringify(path.join(scratch.path, folder))} };\n`,
    );
    const gen = Bun.spawn([process.execPath, "x", "drizzle-kit", "generate", "--config", scratchConfig], { cwd: root, stdout: "pipe", stderr: "pipe" });
    expect(await gen.exited).toBe(0);
    const list = (dir: string) => fs.readdirSync(dir, { recursive: true }).map(String).sort();
    expect(list(path.join(scratch.path, folder))).toEqual(list(path.join(root, folder)));
  });
});

test("migrate applies everything once and is idempotent", () => {
  using dir = tempDir();
  const db = openDb(dir.path);
  const journal = JSON.parse(fs.readFileSync(path.join(root, "drizzle/meta/_journal.json"), "utf8"));
  expect(migrate(db)).toBe(journal.entries.length);
  expect(migrate(db)).toBe(0);
  const tables = db.$client
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .all()
    .map((r) => r.name);
  expect(tables).toEqual(["__drizzle_migrations", "api_keys", "dav_locks", "dav_properties", "file_thumbnails", "files", "folders", "login_links", "sessions", "share_downloads", "shares", "upload_links", "uploads", "users", "webhook_attempts", "webhook_deliveries", "webhooks"]);
  expect(db.$client.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
  db.$client.close();
});

test("a database made by an older release is upgraded in place, its data kept", () => {
  using dir = tempDir();
  const db = openDb(dir.path);
  expect(migrate(db, migrations.slice(0, 1))).toBe(1);
  db.$client.exec("INSERT INTO users (id, email, created_at) VALUES ('u1', 'old@example.com', 1)");
  expect(migrate(db)).toBe(migrations.length - 1);
  expect(db.$client.query("SELECT email FROM users").all()).toEqual([{ email: "old@example.com" }]);
  db.$client.close();
});

test("with nothing pending, migrate takes no write lock (a start while another process writes does not wait for it)", () => {
  using dir = tempDir();
  const db = openDb(dir.path);
  migrate(db);
  const other = openDb(dir.path);
  other.$client.exec("PRAGMA busy_timeout = 0");
  db.$client.exec("PRAGMA busy_timeout = 0");
  other.$client.exec("BEGIN IMMEDIATE");
  try {
    expect(migrate(db)).toBe(0); // "database is locked" if it asked for the write lock
  } finally {
    other.$client.exec("ROLLBACK");
    other.$client.close();
    db.$client.close();
  }
});

test("processes migrating one new database at once apply each migration once", async () => {
  // As a server and `cubby keys create` started together on an empty data directory: one waits
  // for the other's write lock, then finds nothing pending (each used to decide what was
  // pending before taking the lock, and the second failed with "table already exists").
  using dir = tempDir();
  const script = `
    const { openDb } = await import(${JSON.stringify(path.join(root, "src/storage/db.ts"))});
    const { migrate } = await import(${JSON.stringify(path.join(root, "src/storage/migrate.ts"))});
    const db = openDb(${JSON.stringify(dir.path)});
    await Bun.sleep(Number(process.argv[1]) - Date.now());
    console.log(migrate(db));`;
  const startAt = Date.now() + 1500;
  const procs = Array.from({ length: 4 }, () => Bun.spawn([process.execPath, "-e", script, String(startAt)], { stdout: "pipe", stderr: "pipe" }));
  const results = await Promise.all(procs.map(async (p) => ({ code: await p.exited, out: (await new Response(p.stdout).text()).trim(), err: await new Response(p.stderr).text() })));
  expect(results.map((r) => [r.code, r.err])).toEqual(results.map(() => [0, ""]));
  expect(results.map((r) => Number(r.out)).sort()).toEqual([0, 0, 0, migrations.length]);
});
