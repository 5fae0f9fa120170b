// test-lists: postgres-s3
// The `cubby` command line (CONTRACT §1): keys create / list / revoke, version, exit statuses,
// and a clean stop on SIGTERM.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import fs from "node:fs";
import path from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { BACKEND } from "../support/backend.ts";
import { runCli, startServer, tempDir } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";

test("version", async () => {
  // From source it says so; an executable names the Bun runtime it was built for (release.test.ts).
  expect(await runCli(["version"])).toEqual({ code: 0, stdout: `cubby ${pkg.version} (from source, Bun ${Bun.version})\n`, stderr: "" });
});

test("checksum prints each file's CRC32C as x-goog-hash takes it; a missing file is one line and exit 2", async () => {
  using dir = tempDir();
  fs.writeFileSync(path.join(dir.path, "check.txt"), "123456789"); // RFC 3720's check value: 0xE3069283
  fs.writeFileSync(path.join(dir.path, "empty"), "");
  const r = await runCli(["checksum", path.join(dir.path, "check.txt"), path.join(dir.path, "empty")]);
  expect(r).toEqual({ code: 0, stdout: `crc32c=4waSgw==  ${path.join(dir.path, "check.txt")}\ncrc32c=AAAAAA==  ${path.join(dir.path, "empty")}\n`, stderr: "" });
  const missing = await runCli(["checksum", path.join(dir.path, "nope")]);
  expect({ code: missing.code, stderr: missing.stderr }).toEqual({ code: 2, stderr: expect.stringContaining(`cubby: checksum: cannot read ${path.join(dir.path, "nope")}`) });
});

test("healthcheck: 0 while the server on PORT answers /healthz, 1 once it is stopped (CONTRACT §17)", async () => {
  const server = await startServer();
  try {
    const up = await runCli(["healthcheck"], { env: { PORT: String(server.port) } });
    expect({ code: up.code, stdout: up.stdout }).toEqual({ code: 0, stdout: `healthy: http://127.0.0.1:${server.port}/healthz answered 200\n` });
  } finally {
    await server[Symbol.asyncDispose]();
  }
  const down = await runCli(["healthcheck", "--port", String(server.port)]);
  expect(down.code).toBe(1);
  expect(down.stderr).toStartWith(`unhealthy: http://127.0.0.1:${server.port}/healthz`);
});

describe("the CLI cannot act on the wrong data (CONTRACT §17)", () => {
  test.skipIf(BACKEND !== "sqlite-disk")("a data directory with no cubby data is refused with its name (exit 2), unless --init; nothing is created there", async () => {
    using dir = tempDir();
    const empty = path.join(dir.path, "data");
    for (const args of [["keys", "create", "--email", "a@example.com"], ["login-link", "--email", "a@example.com"], ["users", "list"], ["fsck"], ["export", "-"]]) {
      const r = await runCli([...args, "--data-dir", empty]);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
      expect(r.stderr).toStartWith(`cubby: ${empty} holds no cubby data; point at the server's data directory with --data-dir DIR or DATA_DIR`);
      expect(fs.existsSync(empty)).toBe(false);
    }
    // The default ./data of another working directory, as a newcomer met it.
    const elsewhere = await runCli(["keys", "create", "--email", "a@example.com"], { cwd: dir.path });
    expect({ code: elsewhere.code, stderr: elsewhere.stderr }).toEqual({ code: 2, stderr: expect.stringContaining(`${path.join(dir.path, "data")} holds no cubby data`) });
    const made = await runCli(["keys", "create", "--email", "a@example.com", "--init", "--data-dir", empty]);
    expect(made.code).toBe(0);
    expect(fs.existsSync(path.join(empty, "cubby.db"))).toBe(true);
    expect((await runCli(["version", "--init"])).code).toBe(2);
  });

  test("login-link from another directory prints a URL on the port of the server that owns the data; the start-up hint names the data directory", async () => {
    await using server = await startServer();
    using dir = tempDir();
    const r = await runCli(["login-link", "--email", "elsewhere@example.com", "--data-dir", server.dataDir], { cwd: dir.path });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^http://localhost:${server.port}/auth/link/[A-Za-z0-9_-]+\\n$`));
    expect(server.output() + server.errors()).toContain(`run: cubby login-link --email you@example.com --data-dir ${server.dataDir}`);
  });

  test("a busy port is one line and exit 2, whatever WORKERS is", async () => {
    await using server = await startServer();
    using dir = tempDir();
    for (const workers of ["1", "2"]) {
      const r = await runCli(["serve", "--port", String(server.port), "--data-dir", path.join(dir.path, `w${workers}`)], { env: { WORKERS: workers } });
      expect({ workers, code: r.code, stderr: r.stderr }).toEqual({
        workers,
        code: 2,
        stderr: `cubby: port ${server.port} is already in use by another program; stop it, or serve on another port with PORT=N or --port N\n`,
      });
    }
  });
});

test("keys create prints only the key; list shows it without the secret; revoke kills it", async () => {
  await using server = await startServer();
  const created = await runCli(["keys", "create", "--email", "Ops@Example.com", "--name", "backup script", "--data-dir", server.dataDir]);
  expect(created.code).toBe(0);
  expect(created.stdout).toMatch(/^cubby_[A-Za-z0-9_-]{43}\n$/);
  const key = created.stdout.trim();
  expect((await fetch(`${server.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);

  const listed = await runCli(["keys", "list", "--email", "ops@example.com", "--data-dir", server.dataDir]);
  const [header, row, ...rest] = listed.stdout.trimEnd().split("\n");
  expect({ code: listed.code, header, rest }).toEqual({ code: 0, header: "ID\tNAME\tSCOPES\tCREATED\tLAST USED\tEXPIRES", rest: [] });
  const [id, name, scopes, createdAt, lastUsed, expires] = row!.split("\t");
  expect({ name, scopes, createdAt, lastUsed, expires }).toEqual({
    name: "backup script",
    scopes: "files.read,files.write",
    createdAt: expect.stringMatching(/Z$/),
    lastUsed: expect.stringMatching(/Z$/),
    expires: "never",
  });
  expect(listed.stdout).not.toContain(key.slice(6));

  expect(await runCli(["keys", "revoke", id!, "--data-dir", server.dataDir])).toMatchObject({ code: 0 });
  // Revoked from another process: the running server refuses it at once.
  expect((await fetch(`${server.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
  expect(await runCli(["keys", "revoke", id!, "--data-dir", server.dataDir])).toEqual({
    code: 2,
    stdout: "",
    stderr: "cubby: API key not found\n",
  });
});

// Reads the SQLite file itself: the key's bytes are looked for in every row and page.
test.skipIf(BACKEND !== "sqlite-disk")("the database holds only a hash of each key", async () => {
  using dir = tempDir();
  const { stdout } = await runCli(["keys", "create", "--email", "h@example.com", "--init", "--data-dir", dir.path]);
  const key = stdout.trim();
  const db = new Database(path.join(dir.path, "cubby.db"), { readonly: true });
  const dump = db
    .query<{ secret_hash: Uint8Array; id: string; name: string }, []>("SELECT * FROM api_keys")
    .all()
    .map((r) => `${r.id} ${r.name} ${Buffer.from(r.secret_hash).toString("latin1")}`)
    .join("\n");
  db.close();
  const raw = await Bun.file(path.join(dir.path, "cubby.db")).bytes();
  const walPath = path.join(dir.path, "cubby.db-wal");
  const wal = (await Bun.file(walPath).exists()) ? await Bun.file(walPath).bytes() : new Uint8Array();
  const haystack = Buffer.concat([raw, wal]).toString("latin1") + dump;
  const secret = key.slice("cubby_".length);
  const leaks = [];
  for (let i = 0; i + 8 <= secret.length; i++) if (haystack.includes(secret.slice(i, i + 8))) leaks.push(secret.slice(i, i + 8));
  expect(leaks).toEqual([]);
});

test.each([
  [["frobnicate"], 'cubby: unknown command "frobnicate"; try cubby --help\n'],
  [["keys"], "cubby: keys needs a subcommand: create, list or revoke\n"],
  [["keys", "create"], "cubby: keys create needs --email\n"],
  [["keys", "create", "--email", "not-an-address"], 'cubby: "not-an-address" is not an e-mail address\n'],
  [["keys", "revoke"], "cubby: keys revoke takes exactly one key ID\n"],
  [["--bogus"], expect.stringMatching(/^cubby: Unknown option '--bogus'.*\n$/)],
  [["serve", "--port", "http"], 'cubby: --port must be a TCP port number from 0 to 65535 (got "http")\n'],
])("bad input %p exits 2 with one line", async (args, stderr) => {
  using dir = tempDir();
  expect(await runCli([...args, "--data-dir", dir.path])).toEqual({ code: 2, stdout: "", stderr });
});

test("a bad environment value stops serve with one line and status 2", async () => {
  expect(await runCli(["serve"], { env: { MAX_UPLOAD_BYTES: "lots" } })).toEqual({
    code: 2,
    stdout: "",
    stderr: 'cubby: MAX_UPLOAD_BYTES must be a size: bytes, or with a unit such as 10G or 500MiB (got "lots")\n',
  });
});

// Knows the upload is in flight from its temporary file on disk.
test.skipIf(BACKEND !== "sqlite-disk")("SIGTERM lets an in-flight upload finish, then exits 0", async () => {
  await using server = await startServer();
  const key = await server.mintKey("term@example.com");
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let step = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (step === 1) await gate;
      if (step === 2) return controller.close();
      controller.enqueue(new TextEncoder().encode(`part ${step} `));
      step++;
    },
  });
  const upload = fetch(`${server.url}/v1/files?visibility=public`, {
    method: "POST",
    body,
    duplex: "half",
    headers: { authorization: `Bearer ${key}` },
  } as RequestInit);
  // The upload is in flight once its temporary file exists.
  const tmp = path.join(server.dataDir, "tmp");
  await waitFor(() => fs.readdirSync(tmp).length > 0, "the upload's temporary file", { pollMs: 0 });
  server.proc.kill("SIGTERM");
  await server.waitForOutput("SIGTERM: stopping");
  release();
  const res = await upload;
  expect(res.status).toBe(200);
  expect(((await res.json()) as { size: string }).size).toBe("14");
  expect(await server.proc.exited).toBe(0);
  expect(server.output()).toContain("stopped");
});

test("keys create run six times at once for a new e-mail makes one user with six keys", async () => {
  using dir = tempDir();
  await runCli(["keys", "list", "--email", "first@example.com", "--init", "--data-dir", dir.path]); // the store exists
  const runs = await Promise.all(Array.from({ length: 6 }, () => runCli(["keys", "create", "--email", "same@example.com", "--data-dir", dir.path])));
  expect(runs.map((r) => [r.code, r.stderr])).toEqual(Array(6).fill([0, ""]));
  const listed = await runCli(["keys", "list", "--email", "same@example.com", "--data-dir", dir.path]);
  expect(listed.stdout.trim().split("\n").length).toBe(1 + 6);
});
