// test-lists: workers
// Durability (CONTRACT §6): a crash mid-upload leaves nothing visible or on disk after a
// restart; replaces are atomic for concurrent readers; acknowledged files survive kill -9.
import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import fs from "node:fs";
import path from "node:path";
import { checksumOf } from "../../src/domain/checksum.ts";
import { client, startServer, tempDir, type FileJson } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";

test("kill -9 during an upload: after restart no partial file, no temporaries, acknowledged files intact", async () => {
  using data = tempDir();
  const first = await startServer({ dataDir: data.path });
  const key = await first.mintKey("crash@example.com");
  const api = client(first, key);
  const acknowledged = await api.upload("acknowledged before the crash", "?visibility=public");

  // Start a large upload that never finishes, wait until its temporary file is on disk, then crash.
  let sent = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new Uint8Array(256 * 1024).fill(7));
      sent += 256 * 1024;
    },
  });
  const pending = api
    .fetch("/v1/files?name=partial.bin", { method: "POST", body: endless, duplex: "half" } as RequestInit)
    .catch((e: unknown) => e);
  const tmpDir = path.join(data.path, "tmp");
  await waitFor(() => fs.readdirSync(tmpDir).some((f) => fs.statSync(path.join(tmpDir, f)).size > 4 * 1024 * 1024), "4 MiB of the upload on disk", 10_000, 0);
  await first.kill9();
  expect(await pending).toBeInstanceOf(Error);
  expect(fs.readdirSync(tmpDir).length).toBe(1); // the crash left a temporary behind

  await using second = await startServer({ dataDir: data.path });
  await second.waitForOutput("swept 1 temporary");
  expect(fs.readdirSync(tmpDir)).toEqual([]);
  const api2 = client(second, key);
  const files = ((await (await api2.fetch("/v1/files")).json()) as { files: FileJson[] }).files;
  expect(files.map((f) => f.id)).toEqual([acknowledged.id]);
  const res = await fetch(`${second.url}/${acknowledged.id}`);
  expect(await res.text()).toBe("acknowledged before the crash");
  expect(fs.readdirSync(path.join(data.path, "blobs")).length).toBe(1);
  expect(sent).toBeGreaterThan(4 * 1024 * 1024);
});

test("an orphaned blob (crash between rename and commit) is swept at start", async () => {
  using data = tempDir();
  const first = await startServer({ dataDir: data.path });
  await first.stop();
  fs.writeFileSync(path.join(data.path, "blobs", "orphan-from-a-crash"), "x");
  await using second = await startServer({ dataDir: data.path });
  await second.waitForOutput("swept 0 temporary and 1 unreferenced");
  expect(fs.readdirSync(path.join(data.path, "blobs"))).toEqual([]);
});

test("every acknowledged upload survives kill -9 with its size and checksum", async () => {
  using data = tempDir();
  const first = await startServer({ dataDir: data.path });
  const key = await first.mintKey("many@example.com");
  const api = client(first, key);
  const made = await Promise.all(
    Array.from({ length: 20 }, (_, i) => api.upload(crypto.getRandomValues(new Uint8Array(1000 + i * 5000)), "?visibility=public")),
  );
  await first.kill9();
  await using second = await startServer({ dataDir: data.path });
  for (const f of made) {
    const body = new Uint8Array(await (await fetch(`${second.url}/${f.id}`)).arrayBuffer());
    expect({ id: f.id, size: String(body.byteLength), checksum: checksumOf(body) }).toEqual({ id: f.id, size: f.size, checksum: f.checksum });
  }
  const db = new Database(path.join(data.path, "cubby.db"), { readonly: true });
  expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
  db.close();
});

test("concurrent readers during repeated replaces see wholly old or wholly new content", async () => {
  await using server = await startServer();
  const api = client(server, await server.mintKey("race@example.com"));
  // Versions differ in every byte and in length, so a mix of two is detectable.
  const version = (n: number) => new Uint8Array(200_000 + n * 1000).fill(n);
  const file = await api.upload(version(0), "?visibility=public");
  const versions = new Map<string, number>([[checksumOf(version(0)), 0]]);
  let replacing = true;
  const writer = (async () => {
    for (let n = 1; n <= 30; n++) {
      versions.set(checksumOf(version(n)), n);
      const res = await api.fetch(`/v1/files/${file.id}/content`, { method: "PUT", body: version(n) });
      expect(res.status).toBe(200);
    }
    replacing = false;
  })();
  const seen: number[] = [];
  const torn: string[] = [];
  const reader = async () => {
    while (replacing) {
      const res = await fetch(file.url);
      const body = new Uint8Array(await res.arrayBuffer());
      const n = versions.get(checksumOf(body));
      if (res.status !== 200 || n === undefined || body.some((b) => b !== n)) torn.push(`${res.status}:${body.byteLength}`);
      else seen.push(n);
    }
  };
  await Promise.all([writer, reader(), reader(), reader(), reader()]);
  expect(torn).toEqual([]);
  expect(new Set(seen).size).toBeGreaterThan(1);
});
