// test-lists: default
// davfs2 mounts /dav/ (CONTRACT §12): ls, cp, mv and rm work through the mount, and a 1 GiB
// file copied in and out keeps its CRC32C (the File's checksum and a local CRC32C of the copy
// that came back, read through a fresh cache so that it is downloaded). Root only (mount), and
// /dev/fuse; the mount is removed in a finally, lazily if it must be.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { crc32c } from "@node-rs/crc32";
import fs from "node:fs";
import path from "node:path";
import { checksumToBase64 } from "../../src/domain/checksum.ts";
import { run, which } from "../support/dav.ts";
import { client, startServer, tempDir, type RunningServer } from "../support/server.ts";
import { testNeeding } from "../support/tools.ts";
import { waitFor } from "../support/wait.ts";

const missing: string[] = [];
if (process.getuid?.() !== 0) missing.push("root (mount needs it)");
if (!fs.existsSync("/dev/fuse")) missing.push("/dev/fuse");
if (which("mount.davfs") === null) missing.push("mount.davfs (apt-get install davfs2)");
const davfsTest = testNeeding("the davfs2 tests", missing);

const GIB = 1024 ** 3;

let server: RunningServer;
let key: string;

beforeAll(async () => {
  server = await startServer({ checkResponses: false });
  key = await server.mintKey("davfs2@example.com");
});
afterAll(() => server[Symbol.asyncDispose]());

/** CRC32C of a file, read in 8 MiB chunks, as the File object's base64 checksum. */
function crcOfFile(file: string): string {
  const fd = fs.openSync(file, "r");
  const buf = Buffer.allocUnsafe(8 * 1024 * 1024);
  let crc = 0;
  try {
    for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0; ) crc = crc32c(buf.subarray(0, n), crc);
  } finally {
    fs.closeSync(fd);
  }
  return checksumToBase64(crc);
}

/** Writes `bytes` of pseudo-random content (xorshift, 8 MiB at a time). */
function writeBig(file: string, bytes: number): void {
  const fd = fs.openSync(file, "w");
  const chunk = Buffer.allocUnsafe(8 * 1024 * 1024);
  let x = 0x9e3779b9;
  try {
    for (let written = 0; written < bytes; written += chunk.length) {
      for (let i = 0; i < chunk.length; i += 4) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        chunk.writeUInt32LE(x >>> 0, i);
      }
      fs.writeSync(fd, chunk, 0, Math.min(chunk.length, bytes - written));
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** A davfs2 mount of /dev/ with its own configuration, secrets and cache; unmounted by dispose. */
async function mount(dir: string, name: string): Promise<{ path: string } & AsyncDisposable> {
  const conf = path.join(dir, `${name}.conf`);
  const secrets = path.join(dir, `${name}.secrets`);
  const cache = path.join(dir, `${name}-cache`);
  const at = path.join(dir, `${name}-mnt`);
  fs.mkdirSync(at);
  // mount.davfs runs as the davfs2 user once mounted: its cache is root:davfs2, group-writable.
  fs.mkdirSync(cache, { mode: 0o775 });
  await run("chown", ["root:davfs2", cache]);
  fs.chmodSync(cache, 0o775);
  const url = `${server.url}/dav/`;
  fs.writeFileSync(secrets, `${url} anyone ${key}\n`, { mode: 0o600 });
  // buf_size 64 (KiB): Linux 6.16 and later refuse davfs2's directory reads with its default
  // (EINVAL); delay_upload 0: a closed file goes up at once.
  fs.writeFileSync(conf, `use_locks 1\ncache_dir ${cache}\nsecrets ${secrets}\nask_auth 0\nbuf_size 64\ndelay_upload 0\n`);
  const r = await run("mount.davfs", [url, at, "-o", `conf=${conf}`], { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`mount.davfs exited ${r.code}: ${r.stderr}`);
  return {
    path: at,
    async [Symbol.asyncDispose]() {
      const u = await run("umount", [at], { timeoutMs: 120_000 }).catch(() => ({ code: 1 }));
      if (u.code !== 0) {
        await run("fusermount", ["-u", at]).catch(() => undefined);
        await run("umount", ["-l", at]).catch(() => undefined);
      }
    },
  };
}

describe("davfs2", () => {
  davfsTest(
    "ls, cp, mv and rm through the mount; a 1 GiB file in and out keeps its CRC32C",
    async () => {
      using tmp = tempDir("cubby-davfs2-");
      fs.chmodSync(tmp.path, 0o755);
      const big = path.join(tmp.path, "big.bin");
      writeBig(big, GIB);
      const localCrc = crcOfFile(big);
      const api = client(server, key);
      let timing: Record<string, number> = {};
      {
        await using m = await mount(tmp.path, "first");
        fs.mkdirSync(path.join(m.path, "docs"));
        fs.writeFileSync(path.join(tmp.path, "note.txt"), "a note\n");
        expect((await run("cp", [path.join(tmp.path, "note.txt"), path.join(m.path, "docs", "note.txt")])).code).toBe(0);
        expect((await run("mv", [path.join(m.path, "docs", "note.txt"), path.join(m.path, "docs", "renamed.txt")])).code).toBe(0);
        expect((await run("ls", [path.join(m.path, "docs")])).stdout).toBe("renamed.txt\n");
        expect(fs.readFileSync(path.join(m.path, "docs", "renamed.txt"), "utf8")).toBe("a note\n");
        // davfs2 sends application/octet-stream for everything: the names give the types (CONTRACT §17).
        fs.writeFileSync(path.join(tmp.path, "photo.jpg"), new Uint8Array([0xff, 0xd8, 0xff, 0xe0]));
        expect((await run("cp", [path.join(tmp.path, "photo.jpg"), path.join(m.path, "docs", "photo.jpg")])).code).toBe(0);
        const photo = await waitFor(async () => ((await (await api.fetch("/v1/files?q=photo.jpg")).json()) as { files: { content_type: string }[] }).files[0], "photo.jpg committed", { timeoutMs: 30_000, pollMs: 100 });
        expect(photo.content_type).toBe("image/jpeg");
        expect((await run("rm", [path.join(m.path, "docs", "photo.jpg")])).code).toBe(0);
        expect((await run("cp", [path.join(tmp.path, "note.txt"), path.join(m.path, "gone.txt")])).code).toBe(0);
        expect((await run("rm", [path.join(m.path, "gone.txt")])).code).toBe(0);
        expect((await run("ls", [m.path])).stdout.split("\n").filter((n) => n !== "" && n !== "lost+found")).toEqual(["docs"]);

        const started = performance.now();
        expect((await run("cp", [big, path.join(m.path, "docs", "big.bin")], { timeoutMs: 600_000 })).code).toBe(0);
        const file = await waitFor(
          async () => {
            const page = (await (await api.fetch("/v1/files?q=big.bin")).json()) as { files: { size: string; checksum: string }[] };
            return page.files.find((f) => f.size === String(GIB));
          },
          "the 1 GiB file committed",
          { timeoutMs: 600_000, pollMs: 250 },
        );
        timing.inSeconds = (performance.now() - started) / 1000;
        expect(file.checksum).toBe(localCrc);
        // The server saw the moves and deletes too.
        const names = ((await (await api.fetch("/v1/files")).json()) as { files: { name: string }[] }).files.map((f) => f.name).sort();
        expect(names).toEqual(["big.bin", "renamed.txt"]);
      }
      {
        // A fresh cache: the copy out is a download.
        await using m = await mount(tmp.path, "second");
        const out = path.join(tmp.path, "out.bin");
        const started = performance.now();
        expect((await run("cp", [path.join(m.path, "docs", "big.bin"), out], { timeoutMs: 600_000 })).code).toBe(0);
        timing.outSeconds = (performance.now() - started) / 1000;
        expect(fs.statSync(out).size).toBe(GIB);
        expect(crcOfFile(out)).toBe(localCrc);
        fs.rmSync(out);
      }
      timing = Object.fromEntries(Object.entries(timing).map(([k, v]) => [k, Math.round(v * 10) / 10]));
      console.log(`davfs2 1 GiB: ${JSON.stringify(timing)} (seconds; in: cp until the File is committed, out: cp through a fresh cache)`);
    },
    1_200_000,
  );
});
