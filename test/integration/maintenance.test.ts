// test-lists: workers
// fsck (bitrot detection and quarantine) and online backup / restore, through the real CLI.
import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import fs from "node:fs";
import path from "node:path";
import { checksumOf } from "../../src/domain/checksum.ts";
import { client, runCli, startServer, tempDir, type FileJson } from "../support/server.ts";

function blobOf(dataDir: string, id: string): string {
  const db = new Database(path.join(dataDir, "cubby.db"), { readonly: true });
  const row = db.query<{ blob: string }, [string]>("SELECT blob FROM files WHERE id = ?").get(id)!;
  db.close();
  return path.join(dataDir, "blobs", row.blob);
}

test("fsck finds flipped, truncated and missing blobs; --repair quarantines them; then all is well", async () => {
  await using server = await startServer();
  const api = client(server, await server.mintKey("fsck@example.com"));
  const files: FileJson[] = [];
  for (let i = 0; i < 5; i++) files.push(await api.upload(crypto.getRandomValues(new Uint8Array(10_000 + i)), "?visibility=public"));
  const run = (...args: string[]) => runCli(["fsck", ...args, "--data-dir", server.dataDir]);

  expect(await run()).toMatchObject({ code: 0, stdout: expect.stringContaining("checked 5 file(s), 50010 bytes: all well") });

  const flipped = blobOf(server.dataDir, files[0]!.id);
  const bytes = fs.readFileSync(flipped);
  bytes[1234]! ^= 0x01;
  fs.writeFileSync(flipped, bytes);
  fs.truncateSync(blobOf(server.dataDir, files[1]!.id), 100);
  fs.rmSync(blobOf(server.dataDir, files[2]!.id));

  const found = await run();
  expect(found.code).toBe(1);
  const kinds = found.stdout.split("\n").filter((l) => /mismatch|missing/.test(l)).map((l) => `${l.split("\t")[0]} ${l.split("\t")[1]}`).sort();
  expect(kinds).toEqual(
    [`checksum_mismatch file ${files[0]!.id}`, `size_mismatch file ${files[1]!.id}`, `missing file ${files[2]!.id}`].sort(),
  );

  const repaired = await run("--repair");
  expect(repaired.code).toBe(1);
  expect(repaired.stdout).toContain("3 problem(s), quarantined in");
  expect(fs.readdirSync(path.join(server.dataDir, "quarantine")).filter((f) => f.endsWith(".json")).length).toBe(3);
  expect(await run()).toMatchObject({ code: 0, stdout: expect.stringContaining("checked 2 file(s)") });
  expect((await fetch(files[0]!.url)).status).toBe(404);
  expect((await fetch(files[3]!.url)).status).toBe(200);
});

test("fsck --repair removes blobs no file refers to once they are an hour old, and keeps younger ones", async () => {
  await using server = await startServer();
  const key = await server.mintKey("orphans@example.com");
  const kept = await client(server, key).upload("kept", "?visibility=public");
  const blobs = path.join(server.dataDir, "blobs");
  // Left by crashes between a blob's write and its commit: one two hours ago, one just now
  // (that one may still be an upload about to commit).
  fs.writeFileSync(path.join(blobs, "old-orphan"), "x");
  const twoHoursAgo = new Date(Date.now() - 2 * 3600 * 1000);
  fs.utimesSync(path.join(blobs, "old-orphan"), twoHoursAgo, twoHoursAgo);
  fs.writeFileSync(path.join(blobs, "young-orphan"), "y");
  const checked = await runCli(["fsck", "--data-dir", server.dataDir]);
  expect(checked.stdout).toContain("orphan\tblob old-orphan\tno file refers to it (removed by");
  expect(fs.readdirSync(blobs)).toContain("old-orphan");
  const repaired = await runCli(["fsck", "--repair", "--data-dir", server.dataDir]);
  expect(repaired.stdout).toContain("orphan\tblob old-orphan\tno file refers to it: removed");
  expect(repaired.stdout).toContain("orphan\tblob young-orphan\tno file refers to it (removed by");
  expect(fs.readdirSync(blobs)).toContain("young-orphan");
  expect(fs.readdirSync(blobs)).not.toContain("old-orphan");
  expect(await (await fetch(kept.url)).text()).toBe("kept");
});

test("backup while uploads run, then restore: the copy is consistent and every file reads back", async () => {
  await using server = await startServer();
  const api = client(server, await server.mintKey("backup@example.com"));
  for (let i = 0; i < 20; i++) await api.upload(crypto.getRandomValues(new Uint8Array(5_000 + i * 100)), "?visibility=public");
  using dest = tempDir();
  const target = path.join(dest.path, "snapshot");

  let uploading = true;
  let during = 0;
  const writer = (async () => {
    while (uploading) {
      await api.upload(crypto.getRandomValues(new Uint8Array(50_000)), "?visibility=public");
      during++;
    }
  })();
  const result = await runCli(["backup", target, "--data-dir", server.dataDir]);
  uploading = false;
  await writer;
  expect(result).toMatchObject({ code: 0, stderr: expect.stringMatching(/^backed up \d+ file\(s\)/) });
  expect(during).toBeGreaterThan(0);

  using restoredDir = tempDir();
  const restoredData = path.join(restoredDir.path, "data");
  const restored = await runCli(["restore", target, "--data-dir", restoredData]);
  expect(restored).toMatchObject({ code: 0, stdout: expect.stringContaining("all well") });

  await using copy = await startServer({ dataDir: restoredData });
  const db = new Database(path.join(restoredData, "cubby.db"), { readonly: true });
  const rows = db.query<{ id: string; size: number; checksum: string }, []>("SELECT id, size, checksum FROM files").all();
  db.close();
  expect(rows.length).toBeGreaterThanOrEqual(20);
  for (const r of rows) {
    const body = new Uint8Array(await (await fetch(`${copy.url}/${r.id}`)).arrayBuffer());
    expect({ id: r.id, size: body.byteLength, checksum: checksumOf(body) }).toEqual({ id: r.id, size: r.size, checksum: r.checksum });
  }
});

test("restore refuses a non-empty data directory and a directory that is not a backup", async () => {
  using dir = tempDir();
  fs.writeFileSync(path.join(dir.path, "something"), "x");
  expect(await runCli(["restore", dir.path, "--data-dir", dir.path])).toMatchObject({ code: 2, stderr: expect.stringContaining("is not a cubby backup") });
  using other = tempDir();
  fs.mkdirSync(path.join(other.path, "blobs"));
  fs.writeFileSync(path.join(other.path, "cubby.db"), "");
  expect(await runCli(["restore", other.path, "--data-dir", dir.path])).toMatchObject({ code: 2, stderr: expect.stringContaining("must not exist or be an empty directory") });
});
