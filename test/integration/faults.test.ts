// Storage faults: DATA_DIR on a small tmpfs that fills up. Needs root (mount); skipped otherwise.
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { checksumOf } from "../../src/domain/checksum.ts";
import { client, startServer, tempDir } from "../support/server.ts";

function canMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  const probe = fs.mkdtempSync("/tmp/cubby-mount-probe-");
  const ok = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", probe]).exitCode === 0;
  if (ok) Bun.spawnSync(["umount", probe]);
  fs.rmdirSync(probe);
  return ok;
}

test.skipIf(!canMount())("disk full: 503, nothing partial left, reads keep working, uploads work again once space is freed", async () => {
  using mnt = tempDir("cubby-full-");
  expect(Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt.path]).exitCode).toBe(0);
  try {
    await using server = await startServer({ dataDir: path.join(mnt.path, "data") });
    const api = client(server, await server.mintKey("full@example.com"));
    const kept = crypto.getRandomValues(new Uint8Array(2 * 1024 * 1024));
    const keptFile = await api.upload(kept, "?visibility=public");

    const tooBig = crypto.getRandomValues(new Uint8Array(5 * 1024 * 1024));
    const full = await api.fetch("/v1/files", { method: "POST", body: tooBig });
    expect({ status: full.status, body: await full.json() }).toEqual({ status: 503, body: { code: 14, message: "storage is full; try again later", details: [] } });
    expect(fs.readdirSync(path.join(server.dataDir, "tmp"))).toEqual([]);
    expect(fs.readdirSync(path.join(server.dataDir, "blobs")).length).toBe(1);

    const back = new Uint8Array(await (await fetch(keptFile.url)).arrayBuffer());
    expect(checksumOf(back)).toBe(keptFile.checksum);
    const listed = (await (await api.fetch("/v1/files")).json()) as { files: unknown[] };
    expect(listed.files.length).toBe(1);

    // Free space: delete the kept file (its blob goes after the grace period, so restart to sweep).
    expect((await api.fetch(`/v1/files/${keptFile.id}`, { method: "DELETE" })).status).toBe(200);
    await server.stop();
    await using again = await startServer({ dataDir: server.dataDir });
    const api2 = client(again, await again.mintKey("full@example.com"));
    const ok = await api2.upload(tooBig.subarray(0, 3 * 1024 * 1024), "?visibility=public");
    expect(ok.size).toBe(String(3 * 1024 * 1024));
  } finally {
    Bun.spawnSync(["umount", "-l", mnt.path]);
  }
});
