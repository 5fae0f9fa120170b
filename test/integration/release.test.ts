// test-lists: default
// The release executables (issue 15, item 6): every target of scripts/release.ts builds through
// scripts/build.ts's one build function into an executable of the right format and architecture,
// made for the right Bun runtime (the x64 ones baseline: no AVX2 needed, issue 25 item 8),
// SHA256SUMS checks with `sha256sum -c`, and the linux-arm64 executable runs `cubby version` and
// serves /healthz and an upload (CRC32C in WebAssembly, no native addon) under qemu-aarch64-static,
// also from nothing but the files of the arm64 container image (scripts/image.ts).
// Without qemu, Debian's aarch64 libraries or sha256sum, those tests skip with the reason, or fail
// when CI is set.
import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { hostTarget, TARGETS, type Target } from "../../scripts/build.ts";
import { IMAGE_EXECUTABLE, interpreterOf, stageRootfs } from "../../scripts/image.ts";
import { buildRelease, writeChecksums } from "../../scripts/release.ts";
import { checksumOf } from "../../src/domain/checksum.ts";
import { client, ROOT, startServer, tempDir } from "../support/server.ts";
import { testNeeding } from "../support/tools.ts";

const dir = tempDir("cubby-release-");
afterAll(() => dir[Symbol.dispose]());
const releaseDir = path.join(dir.path, "release");

const QEMU = Bun.which("qemu-aarch64-static");
const SYSROOT = "/usr/aarch64-linux-gnu";
const qemuMissing = [
  ...(QEMU === null ? ["qemu-aarch64-static (apt-get install qemu-user-static)"] : []),
  ...["lib/ld-linux-aarch64.so.1", "lib/libc.so.6"].filter((f) => !fs.existsSync(path.join(SYSROOT, f))).map((f) => `${SYSROOT}/${f} (apt-get install libc6-arm64-cross)`),
  // No libgcc_s: Bun's arm64 runtime links only libc, libm, libdl and libpthread (readelf -d),
  // and the CRC32C addon that needed it is gone (issue 25, item 7).
];

/**
 * The Bun runtime each target is built for. x64: baseline (Nehalem: SSE4.2, no AVX), because
 * Bun's default x64 runtime may use AVX2, which Proxmox's kvm64 / x86-64-v2-AES vCPUs and
 * Celeron/Atom NAS boards lack (CONTRACT §10). qemu-user runs AVX2 code whatever -cpu says, so
 * this is checked on the build, not by running it on an old CPU.
 */
const RUNTIME: Record<Target, string> = {
  "linux-x64": "bun-linux-x64-baseline",
  "linux-arm64": "bun-linux-arm64",
  "linux-x64-musl": "bun-linux-x64-baseline-musl",
  "linux-arm64-musl": "bun-linux-arm64-musl",
  "darwin-arm64": "bun-darwin-arm64",
};
const { version: VERSION } = (await Bun.file(path.join(ROOT, "package.json")).json()) as { version: string };

/** What each target's file must start with: ELF machine and dynamic loader, or Mach-O arm64 and signed. */
const FORMAT: Record<Target, string> = {
  "linux-x64": "ELF x86-64 /lib64/ld-linux-x86-64.so.2",
  "linux-arm64": "ELF aarch64 /lib/ld-linux-aarch64.so.1",
  "linux-x64-musl": "ELF x86-64 /lib/ld-musl-x86_64.so.1",
  "linux-arm64-musl": "ELF aarch64 /lib/ld-musl-aarch64.so.1",
  "darwin-arm64": "Mach-O arm64 signed",
};

/** The format of an executable, read from its header: ELF e_machine and PT_INTERP, or Mach-O CPU type and LC_CODE_SIGNATURE. */
function formatOf(file: string): string {
  const b = fs.readFileSync(file).subarray(0, 64 * 1024);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.subarray(0, 4).toString() === "\x7fELF") {
    const machine = { 0x3e: "x86-64", 0xb7: "aarch64" }[v.getUint16(18, true)] ?? `machine ${v.getUint16(18, true)}`;
    return `ELF ${machine} ${interpreterOf(file) ?? "static"}`;
  }
  if (v.getUint32(0, true) === 0xfeedfacf) {
    const cpu = v.getInt32(4, true) === 0x0100000c ? "arm64" : `cpu ${v.getInt32(4, true)}`;
    let signed = false;
    for (let i = 0, off = 32; i < v.getUint32(16, true); i++, off += v.getUint32(off + 4, true)) {
      if (v.getUint32(off, true) === 0x1d) signed = true; // LC_CODE_SIGNATURE
    }
    return `Mach-O ${cpu}${signed ? " signed" : " unsigned"}`;
  }
  return "unknown format";
}

describe("every release target builds", () => {
  for (const target of Object.keys(TARGETS) as Target[]) {
    test(
      `cubby-${target}: ${FORMAT[target]}`,
      async () => {
        const { file, bytes } = await buildRelease(target, releaseDir);
        console.log(`cubby-${target}: ${bytes} bytes (${(bytes / 1024 / 1024).toFixed(1)} MiB)`);
        // The Bun runtime it was built for, as `cubby version` prints it (scripts/build.ts's define).
        const runtime = fs.readFileSync(file).includes(`"${TARGETS[target]}"`) ? TARGETS[target] : "another runtime";
        expect({ format: formatOf(file), runtime, map: fs.existsSync(`${file}.map`) }).toEqual({ format: FORMAT[target], runtime: RUNTIME[target], map: false });
        if (target === hostTarget()) {
          const version = Bun.spawnSync([file, "version"], { env: { PATH: "/usr/bin:/bin" }, stdout: "pipe", stderr: "pipe" });
          expect({ code: version.exitCode, out: version.stdout.toString() }).toEqual({ code: 0, out: `cubby ${VERSION} (${RUNTIME[target]})\n` });
        }
        if (target !== "linux-arm64") fs.rmSync(file); // ~110 MB each; only linux-arm64 is run below
      },
      120_000, // the first build of a cross-target downloads its Bun runtime (~40 MB)
    );
  }
});

test(
  "a second build of the same sources is byte-identical (so SHA256SUMS can be checked by rebuilding)",
  async () => {
    const sha = (f: string) => new Bun.CryptoHasher("sha256").update(fs.readFileSync(f)).digest("hex");
    const first = path.join(releaseDir, "cubby-linux-arm64");
    if (!fs.existsSync(first)) await buildRelease("linux-arm64", releaseDir);
    const again = await buildRelease("linux-arm64", path.join(dir.path, "again"));
    expect(sha(again.file)).toBe(sha(first));
    fs.rmSync(again.file);
  },
  120_000,
);

describe("SHA256SUMS", () => {
  const sha256sum = Bun.which("sha256sum");
  testNeeding("the sha256sum check", sha256sum === null ? ["sha256sum (apt-get install coreutils)"] : [])("lists every executable; sha256sum -c checks it and catches a changed byte", async () => {
    using sums = tempDir("cubby-sums-");
    fs.writeFileSync(path.join(sums.path, "cubby-linux-x64"), "one");
    fs.writeFileSync(path.join(sums.path, "cubby-darwin-arm64"), "two");
    const text = writeChecksums(sums.path);
    expect(text).toBe(
      `${new Bun.CryptoHasher("sha256").update("two").digest("hex")}  cubby-darwin-arm64\n` +
        `${new Bun.CryptoHasher("sha256").update("one").digest("hex")}  cubby-linux-x64\n`,
    );
    const check = () => Bun.spawnSync([sha256sum!, "-c", "SHA256SUMS"], { cwd: sums.path, stdout: "pipe", stderr: "pipe" });
    expect({ code: check().exitCode, out: check().stdout.toString() }).toEqual({ code: 0, out: "cubby-darwin-arm64: OK\ncubby-linux-x64: OK\n" });
    fs.writeFileSync(path.join(sums.path, "cubby-linux-x64"), "One");
    expect({ code: check().exitCode, out: check().stdout.toString() }).toEqual({ code: 1, out: "cubby-darwin-arm64: OK\ncubby-linux-x64: FAILED\n" });
  });
});

describe("cubby-linux-arm64 under qemu-aarch64-static", () => {
  const qemuTest = testNeeding("the linux-arm64 tests under qemu", qemuMissing);
  /** The command that runs the arm64 executable (built by the tests above, or here when run alone). */
  const arm64 = async () => {
    const file = path.join(releaseDir, "cubby-linux-arm64");
    if (!fs.existsSync(file)) await buildRelease("linux-arm64", releaseDir);
    return [QEMU!, "-L", SYSROOT, file];
  };
  // One serving process: a worker is the same executable started again, which this machine can
  // only run through qemu-aarch64-static by hand (no binfmt_misc registration here).
  const env = { PATH: "/usr/bin:/bin", HOME: dir.path, WORKERS: "1" };

  qemuTest(
    "cubby version",
    async () => {
      const proc = Bun.spawn([...(await arm64()), "version"], { cwd: dir.path, env, stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      expect({ code, out, err }).toEqual({ code: 0, out: `cubby ${VERSION} (bun-linux-arm64)\n`, err: "" });
    },
    60_000,
  );

  // The arm64 container image's files (scripts/image.ts), checked without a container: with
  // them as qemu's only root, the loader finds every library where the image puts it.
  qemuTest(
    "the arm64 image's files alone run it: its loader at PT_INTERP, the libraries in /lib/aarch64-linux-gnu",
    async () => {
      const [qemu, , , file] = await arm64();
      using image = tempDir("cubby-arm64-rootfs-");
      stageRootfs(image.path, file!, "arm64");
      const inImage = path.join(image.path, IMAGE_EXECUTABLE);
      const list = Bun.spawnSync([qemu!, "-L", image.path, path.join(image.path, "lib/ld-linux-aarch64.so.1"), "--list", inImage], { env, stdout: "pipe", stderr: "pipe" });
      const found = list.stdout
        .toString()
        .split("\n")
        .flatMap((l) => /^\s*(lib\S+) => (\S+) /.exec(l)?.slice(1, 3).join(" => ") ?? [])
        .sort();
      expect({ code: list.exitCode, found }).toEqual({
        code: 0,
        found: ["libc.so.6", "libdl.so.2", "libm.so.6", "libpthread.so.0"].map((l) => `${l} => /lib/aarch64-linux-gnu/${l}`),
      });
      const version = Bun.spawnSync([qemu!, "-L", image.path, inImage, "version"], { env, stdout: "pipe", stderr: "pipe" });
      expect({ code: version.exitCode, out: version.stdout.toString() }).toEqual({ code: 0, out: `cubby ${VERSION} (bun-linux-arm64)\n` });
    },
    60_000,
  );

  qemuTest(
    "serves /healthz, and an upload whose CRC32C it computes",
    async () => {
      // Emulated, the runtime takes seconds to start (~10 s here against ~0.1 s natively).
      await using server = await startServer({ executable: await arm64(), cwd: dir.path, dataDir: path.join(dir.path, "data"), env, readyTimeoutMs: 60_000 });
      const health = await fetch(`${server.url}/healthz`);
      expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { status: "ok" } });

      const bytes = crypto.getRandomValues(new Uint8Array(200_000));
      const file = await client(server, await server.mintKey("arm@example.com")).upload(bytes, "?name=arm.bin");
      expect({ checksum: file.checksum, size: file.size }).toEqual({ checksum: checksumOf(bytes), size: String(bytes.byteLength) });
    },
    120_000,
  );
});
