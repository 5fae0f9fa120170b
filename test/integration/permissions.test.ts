// test-lists: default
// Issue 11: everything cubby writes is readable by its owner only — files 0600, directories
// 0700 — in the data directory (database, its -wal and -shm, blobs, tmp, quarantine) and in
// backups; a data directory left looser by an earlier version is tightened at start.
import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import fs from "node:fs";
import path from "node:path";
import { client, runCli, startServer, tempDir } from "../support/server.ts";

/** Every path under `root` (itself as "."), with "d" or "f" and its permission bits in octal. */
function modes(root: string): Record<string, string> {
  const tree: Record<string, string> = {};
  const walk = (p: string) => {
    const st = fs.lstatSync(p);
    tree[path.relative(root, p) || "."] = `${st.isDirectory() ? "d" : "f"}${(st.mode & 0o777).toString(8)}`;
    if (st.isDirectory()) for (const entry of fs.readdirSync(p)) walk(path.join(p, entry));
  };
  walk(root);
  return tree;
}

/** The same tree with every directory 0700 and every file 0600: what `modes` must equal. */
function ownerOnly(tree: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(tree).map(([p, m]) => [p, m.startsWith("d") ? "d700" : "f600"]));
}

function blobNames(dataDir: string): string[] {
  const db = new Database(path.join(dataDir, "cubby.db"), { readonly: true });
  const rows = db.query<{ blob: string }, []>("SELECT blob FROM files ORDER BY blob").all();
  db.close();
  return rows.map((r) => r.blob);
}

test("a data directory cubby creates holds only 0600 files and 0700 directories, quarantine included", async () => {
  using parent = tempDir();
  // A path that does not exist yet, so cubby creates the data directory itself.
  const dataDir = path.join(parent.path, "data");
  await using server = await startServer({ dataDir });
  const api = client(server, await server.mintKey("modes@example.com"));
  for (let i = 0; i < 2; i++) await api.upload(crypto.getRandomValues(new Uint8Array(10_000)), "?visibility=public");
  // A blob that fails fsck --repair lands in quarantine/ with a JSON report beside it.
  const [victim, kept] = blobNames(dataDir);
  fs.truncateSync(path.join(dataDir, "blobs", victim!), 10);
  expect(await runCli(["fsck", "--repair", "--data-dir", dataDir])).toMatchObject({ code: 1 });

  // Taken while the server runs, so cubby.db-wal and cubby.db-shm exist.
  const tree = modes(dataDir);
  expect(Object.keys(tree).sort()).toEqual(
    [".", "cubby.db", "cubby.db-wal", "cubby.db-shm", "blobs", `blobs/${kept}`, "tmp", "uploads", "quarantine", `quarantine/${victim}`, `quarantine/${victim}.json`, "server.json"].sort(),
  );
  expect(tree).toEqual(ownerOnly(tree));
});

test("start-up tightens a data directory left with 0755 directories and 0644 files, and says so once", async () => {
  using parent = tempDir();
  const dataDir = path.join(parent.path, "data");
  {
    await using first = await startServer({ dataDir });
    await client(first, await first.mintKey("loose@example.com")).upload(new Uint8Array([1, 2, 3]), "?visibility=public");
    // Killed, so cubby.db-wal and cubby.db-shm stay behind (with content) as after a crash.
    await first.kill9();
  }
  // What an earlier version left: SQLite's default 0644 files, 0755 directories, and a
  // quarantine written by fsck under a 022 umask.
  fs.mkdirSync(path.join(dataDir, "quarantine"));
  fs.writeFileSync(path.join(dataDir, "quarantine", "old-report.json"), "{}\n");
  for (const dir of [".", "blobs", "tmp", "quarantine"]) fs.chmodSync(path.join(dataDir, dir), 0o755);
  for (const file of ["cubby.db", "cubby.db-wal", "cubby.db-shm", "quarantine/old-report.json"]) fs.chmodSync(path.join(dataDir, file), 0o644);
  const before = modes(dataDir);
  expect(before).toMatchObject({ ".": "d755", blobs: "d755", tmp: "d755", "cubby.db": "f644", "cubby.db-wal": "f644", "cubby.db-shm": "f644" });

  {
    await using second = await startServer({ dataDir });
    const tree = modes(dataDir);
    expect(Object.keys(tree)).toEqual(expect.arrayContaining(["cubby.db-wal", "cubby.db-shm"]));
    expect(tree).toEqual(ownerOnly(tree));
    expect(second.errors()).toContain(
      `tightened to owner-only access in ${dataDir}: . 755→700, blobs 755→700, tmp 755→700, quarantine 755→700, ` +
        "cubby.db 644→600, cubby.db-wal 644→600, cubby.db-shm 644→600, quarantine/old-report.json 644→600",
    );
    // The store still works after the change.
    const files = (await (await client(second, await second.mintKey("loose@example.com")).fetch("/v1/files")).json()) as { files: unknown[] };
    expect(files.files.length).toBe(1);
    await second.stop();
  }

  // Nothing left to tighten: the next start says nothing about it.
  await using third = await startServer({ dataDir });
  expect(third.errors()).not.toContain("tightened");
});

test("cubby backup and cubby restore write only 0600 files and 0700 directories", async () => {
  await using server = await startServer();
  const api = client(server, await server.mintKey("backup-modes@example.com"));
  for (let i = 0; i < 3; i++) await api.upload(crypto.getRandomValues(new Uint8Array(1_000 + i)), "?visibility=public");
  using out = tempDir();

  // Into a path that does not exist, and into an empty directory someone made 0755.
  const fresh = path.join(out.path, "fresh", "snapshot");
  const existing = path.join(out.path, "existing");
  fs.mkdirSync(existing, { mode: 0o755 });
  fs.chmodSync(existing, 0o755);
  for (const dest of [fresh, existing]) {
    expect(await runCli(["backup", dest, "--data-dir", server.dataDir])).toMatchObject({ code: 0 });
    const tree = modes(dest);
    expect(Object.keys(tree).length).toBe(2 + 1 + 3); // ., cubby.db, blobs/, three blobs
    expect(tree).toEqual(ownerOnly(tree));
  }
  expect(modes(path.join(out.path, "fresh"))["."]).toBe("d700");

  const restored = path.join(out.path, "restored");
  expect(await runCli(["restore", fresh, "--data-dir", restored])).toMatchObject({ code: 0, stdout: expect.stringContaining("all well") });
  const tree = modes(restored);
  expect(Object.keys(tree)).toEqual(expect.arrayContaining(["cubby.db", "blobs", "tmp"]));
  expect(tree).toEqual(ownerOnly(tree));
});
