// test-lists: default
// The single executable: `npm run build` → dist/cubby, copied alone into an empty directory,
// runs there with no node_modules and serves uploads and downloads (issue 2, item 9); it starts
// and serves with TMPDIR on a noexec mount, writing nothing executable there (issue 25, item 7).
import { afterAll, beforeAll, expect, test } from "bun:test";
import encodeJpeg from "@jsquash/jpeg/encode";
import fs from "node:fs";
import path from "node:path";
import { checksumOf } from "../../src/domain/checksum.ts";
import { staticAssets, vendoredAssets } from "../../src/http/static.ts";
import { client, ROOT, runCli, startServer, tempDir } from "../support/server.ts";
import { testNeeding } from "../support/tools.ts";
import { waitFor } from "../support/wait.ts";

let bin: string;
const dir = tempDir("cubby-bin-");
afterAll(() => dir[Symbol.dispose]());

beforeAll(async () => {
  const build = Bun.spawn([process.execPath, "scripts/build.ts"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited]);
  if (code !== 0) throw new Error(`build failed:\n${out}\n${err}`);
  bin = path.join(dir.path, "cubby");
  fs.copyFileSync(path.join(ROOT, "dist/cubby"), bin);
  fs.chmodSync(bin, 0o755);
}, 120_000);

test("runs alone from an empty directory: migrations, web page and CRC32C all embedded", async () => {
  expect(fs.readdirSync(dir.path)).toEqual(["cubby"]);
  const env = { PATH: "/usr/bin:/bin", NODE_PATH: "" };
  expect((await runCli(["version"], { executable: bin, cwd: dir.path, env })).code).toBe(0);

  await using server = await startServer({ executable: bin, cwd: dir.path, dataDir: path.join(dir.path, "data"), env });
  const api = client(server, await server.mintKey("bin@example.com"));
  const bytes = crypto.getRandomValues(new Uint8Array(3_000_000));
  const file = await api.upload(bytes, "?visibility=public&name=r.bin");
  expect(file.checksum).toBe(checksumOf(bytes));
  const back = new Uint8Array(await (await fetch(file.url)).arrayBuffer());
  expect(Buffer.compare(back, bytes)).toBe(0);
  const page = await fetch(`${server.url}/`);
  expect({ status: page.status, type: page.headers.get("content-type"), hasTitle: (await page.text()).includes("<title>cubby</title>") }).toEqual({
    status: 200,
    type: "text/html; charset=utf-8",
    hasTitle: true,
  });
  // Every embedded static file (the dashboard's, its icon, the vendored libraries) is served from the lone binary.
  const assets = { ...staticAssets, ...vendoredAssets };
  const served = await Promise.all(Object.keys(assets).map(async (p) => [p, await fetch(`${server.url}${p}`).then((r) => `${r.status} ${r.headers.get("content-type")}`)]));
  expect(Object.fromEntries(served)).toEqual(Object.fromEntries(Object.entries(assets).map(([p, a]) => [p, `200 ${a.type}`])));
});

test("start to first /healthz 200, and size (printed for the record)", async () => {
  using data = tempDir();
  const started = performance.now();
  await using server = await startServer({ executable: bin, cwd: dir.path, dataDir: data.path });
  const res = await waitFor(async () => {
    const r = await fetch(`${server.url}/healthz`);
    return r.status === 200 ? r : undefined;
  }, "/healthz to answer 200", { pollMs: 0 });
  const ms = performance.now() - started;
  const mib = fs.statSync(bin).size / 1024 / 1024;
  console.log(`dist/cubby: ${mib.toFixed(1)} MiB; spawn to first /healthz 200: ${ms.toFixed(0)} ms (includes the test's own spawn overhead)`);
  expect(res.status).toBe(200);
});

/** Runs a command to its end. @returns its exit code and stderr */
function sh(cmd: string[]): { code: number; err: string } {
  const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, err: r.stderr.toString() };
}

/** Every file under `dir` that could be executed or loaded as code: an execute bit, or ELF / Mach-O / WebAssembly content. */
function executablesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const head = fs.readFileSync(file).subarray(0, 4);
    const magic = ["7f454c46", "cffaedfe", "0061736d"].includes(head.toString("hex"));
    if ((fs.statSync(file).mode & 0o111) !== 0 || magic) found.push(path.relative(dir, file));
  }
  return found;
}

// CONTRACT §10 (hardened hosts): nothing it executes is written to disk at run time. Before
// issue 25 the executable wrote the CRC32C native addon into TMPDIR and dlopen()ed it there,
// which a noexec mount refuses (ERR_DLOPEN_FAILED: failed to map segment from shared object).
testNeeding("the noexec TMPDIR test", process.getuid?.() === 0 ? [] : ["root (to mount a noexec tmpfs; run as root)"])(
  "with TMPDIR on a noexec tmpfs: keys create and serve work, a JPEG's thumbnail is made (WebAssembly codecs in a child), and nothing executable is left in TMPDIR",
  async () => {
    using scratch = tempDir("cubby-noexec-");
    const tmp = path.join(scratch.path, "tmp");
    fs.mkdirSync(tmp);
    expect(sh(["mount", "-t", "tmpfs", "-o", "noexec,nosuid,nodev,size=64m,mode=1777", "tmpfs", tmp])).toEqual({ code: 0, err: "" });
    try {
      // The mount does refuse to execute (else this test would prove nothing).
      fs.copyFileSync("/bin/true", path.join(tmp, "true"));
      fs.chmodSync(path.join(tmp, "true"), 0o755);
      expect(() => Bun.spawnSync([path.join(tmp, "true")])).toThrow(/EACCES|permission denied/i);
      fs.rmSync(path.join(tmp, "true"));

      const env = { PATH: "/usr/bin:/bin", TMPDIR: tmp };
      const version = await runCli(["version"], { executable: bin, cwd: dir.path, env });
      expect({ code: version.code, err: version.stderr }).toEqual({ code: 0, err: "" });
      const data = path.join(scratch.path, "data");
      const keys = await runCli(["keys", "create", "--email", "noexec@example.com", "--init", "--data-dir", data], { executable: bin, cwd: dir.path, env });
      expect({ code: keys.code, err: keys.stderr }).toEqual({ code: 0, err: "" });
      {
        await using server = await startServer({ executable: bin, cwd: dir.path, dataDir: data, env });
        const bytes = crypto.getRandomValues(new Uint8Array(1_000_000));
        const file = await client(server, keys.stdout.trim()).upload(bytes, "?visibility=public&name=n.bin");
        const back = new Uint8Array(await (await fetch(file.url)).arrayBuffer());
        expect({ checksum: file.checksum, same: Buffer.compare(back, bytes) === 0 }).toEqual({ checksum: checksumOf(bytes), same: true });
        // Thumbnails run codecs compiled from C (CONTRACT §10, §15): WebAssembly inside the binary, never a native addon.
        const pixels = new Uint8ClampedArray(64 * 48 * 4).map((_, i) => (i % 4 === 3 ? 255 : (i * 7) % 256));
        const jpeg = new Uint8Array(await encodeJpeg({ data: pixels, width: 64, height: 48, colorSpace: "srgb" } as unknown as Parameters<typeof encodeJpeg>[0], { quality: 85 }));
        const photo = await client(server, keys.stdout.trim()).upload(jpeg, "?name=p.jpg", { "content-type": "image/jpeg" });
        const thumb = await client(server, keys.stdout.trim()).fetch(`/v1/files/${photo.id}/thumbnail`);
        expect({ status: thumb.status, type: thumb.headers.get("content-type"), riff: new TextDecoder().decode((await thumb.bytes()).subarray(0, 4)) }).toEqual({ status: 200, type: "image/webp", riff: "RIFF" });
      }
      expect(executablesUnder(tmp)).toEqual([]);
    } finally {
      // A lazy unmount when a process still holds it busy: the mount never outlives the test.
      if (sh(["umount", tmp]).code !== 0) sh(["umount", "-l", tmp]);
    }
  },
  60_000,
);
