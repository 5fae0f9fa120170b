// test-lists: default
// Storage faults: DATA_DIR on a small tmpfs that fills up (needs root to mount), and I/O errors
// injected with strace. Each is skipped where the machine cannot do it.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { checksumOf } from "../../src/domain/checksum.ts";
import { client, startServer, tempDir } from "../support/server.ts";
import { attach, canStrace } from "../support/strace.ts";

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

// I/O errors injected with strace into the running server (see test/support/strace.ts): the
// upload in flight fails with a clear 5xx, nothing of it remains, the server keeps serving, and
// once the fault is gone uploads succeed again.
const ioFaults = [
  { name: "EIO on fsync", inject: "inject=fsync,fdatasync:error=EIO", status: 500, message: "internal error", code: 13 },
  // Blob and SQLite writes are positional (pwrite64). Plain write(2) is left alone: the event
  // loop's wake-ups use it on an eventfd, and breaking those tests Bun, not cubby.
  { name: "EIO on write", inject: "inject=pwrite64,pwritev:error=EIO", status: 500, message: "internal error", code: 13 },
  { name: "EMFILE on open", inject: "inject=open,openat:error=EMFILE", status: 503, message: "too many open files; try again later", code: 14 },
];

describe.skipIf(!canStrace())("I/O errors", () => {
  for (const fault of ioFaults) {
    test(`${fault.name}: ${fault.status}, no metadata row, no temporary, and uploads work once it is gone`, async () => {
      // One serving process: strace injects the fault into the process it attaches to.
      await using server = await startServer({ env: { WORKERS: "1" } });
      const api = client(server, await server.mintKey("io@example.com"));
      const kept = await api.upload(crypto.getRandomValues(new Uint8Array(100_000)), "?visibility=public");
      const body = crypto.getRandomValues(new Uint8Array(300_000));

      const tracer = await attach(server.proc.pid, ["-e", fault.inject]);
      let failed: Response;
      try {
        failed = await api.fetch("/v1/files?name=doomed.bin", { method: "POST", body });
      } finally {
        await tracer.detach();
      }
      expect({ status: failed.status, body: await failed.json() }).toEqual({
        status: fault.status,
        body: { code: fault.code, message: fault.message, details: [] },
      });

      const listed = (await (await api.fetch("/v1/files")).json()) as { files: { id: string }[] };
      expect(listed.files.map((f) => f.id)).toEqual([kept.id]);
      expect(fs.readdirSync(path.join(server.dataDir, "tmp"))).toEqual([]);
      expect(fs.readdirSync(path.join(server.dataDir, "blobs")).length).toBe(1);
      const back = new Uint8Array(await (await fetch(kept.url)).arrayBuffer());
      expect(checksumOf(back)).toBe(kept.checksum);

      const again = await api.upload(body, "?name=again.bin");
      expect(again.checksum).toBe(checksumOf(body));
      const db = new Database(path.join(server.dataDir, "cubby.db"), { readonly: true });
      try {
        expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
      } finally {
        db.close();
      }
    });
  }
});
