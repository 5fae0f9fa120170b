// A streamed ZIP past 4 GiB (src/serving/zip-stream.ts, APPNOTE 4.5): one member of 4 GiB +
// 1 MiB, made on the fly, then a small one at an offset past 4 GiB and an empty one; unzip,
// 7-Zip and Python's zipfile accept it and find the big member's CRC-32 equal to the one of
// the bytes that went in. None of the three reads a ZIP from a pipe (7-Zip and zipfile seek to
// the central directory; p7zip's `7z t -si` says "Can't open as archive"), so the archive is
// written to a temporary file and removed after. Slow by nature (4 GiB written, then read by
// three tools): one archive only, and a generous timeout.
import { afterAll, expect } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { zipLength, zipStream, type ZipMember } from "../../src/serving/zip-stream.ts";
import { testNeeding } from "../support/tools.ts";

const missing = [
  ...(Bun.which("unzip") === null ? ["unzip (apt-get install unzip)"] : []),
  ...(Bun.which("7z") === null ? ["7z (apt-get install p7zip-full)"] : []),
  ...(Bun.which("python3") === null ? ["python3"] : []),
];

const MiB = 1024 * 1024;
const BIG = 4 * 1024 * MiB + MiB;
/** Distinct 1 MiB blocks, cycled: a chunk lost, repeated or out of order changes the CRC-32. */
const BLOCKS = Array.from({ length: 17 }, () => crypto.getRandomValues(new Uint8Array(MiB)));
const MODIFIED = Date.UTC(2026, 2, 3, 4, 5, 6) * 1000;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-zip64-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs a tool to its end: exit code and what it printed. */
async function run(cmd: string[]): Promise<{ code: number; output: string }> {
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" });
  try {
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, output: out + err };
  } finally {
    p.kill("SIGKILL"); // no-op once it has exited; a test that fails while it runs leaves nothing
  }
}

/** This process's resident set (`VmRSS`) or its peak (`VmHWM`), bytes. */
function memory(field: "VmRSS" | "VmHWM"): number {
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(fs.readFileSync("/proc/self/status", "utf8"))![1]) * 1024;
}

testNeeding("the ZIP64 check", missing)(
  "a member of 4 GiB + 1 MiB and one past 4 GiB into the archive: unzip, 7-Zip and Python accept it, with the CRC-32 of what went in, in constant memory",
  async () => {
    let crc = 0;
    const small = new TextEncoder().encode("after the big one\n");
    const members: ZipMember[] = [
      {
        name: "big.bin",
        size: BIG,
        modified: MODIFIED,
        async *content() {
          for (let i = 0; i < BIG / MiB; i++) {
            const block = BLOCKS[i % BLOCKS.length]!;
            crc = Bun.hash.crc32(block, crc);
            yield block;
          }
        },
      },
      {
        name: "after.txt",
        size: small.byteLength,
        modified: MODIFIED,
        async *content() {
          yield small;
        },
      },
      { name: "empty", size: 0, modified: MODIFIED, async *content() {} },
    ];

    const zip = path.join(dir, "big.zip");
    Bun.gc(true);
    const idle = memory("VmRSS");
    fs.writeFileSync("/proc/self/clear_refs", "5"); // VmHWM starts again from here
    const started = performance.now();
    const handle = await fs.promises.open(zip, "w");
    let written = 0;
    try {
      for await (const chunk of zipStream(members)) {
        await handle.write(chunk);
        written += chunk.byteLength;
      }
    } finally {
      await handle.close();
    }
    const streamed = { seconds: (performance.now() - started) / 1000, peakOverIdle: memory("VmHWM") - idle };
    console.log(`ZIP64 archive of ${written} bytes streamed in ${streamed.seconds.toFixed(1)} s, peak RSS ${(streamed.peakOverIdle / MiB).toFixed(1)} MiB over idle`);
    expect(zipLength(members)).toBe(written);
    expect(streamed.peakOverIdle).toBeLessThan(64 * MiB);

    // At once: unzip alone takes most of the time (~25 s here, its CRC-32 is slow), the others ~2 s.
    const [unzip, sevenZip, python] = await Promise.all([
      run(["unzip", "-t", "-qq", zip]),
      run(["7z", "t", zip]),
      run([
        "python3",
        "-c",
        "import json, sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nprint(json.dumps({'bad': z.testzip(), 'entries': [[i.filename, i.file_size, i.compress_type, i.CRC] for i in z.infolist()]}))",
        zip,
      ]),
    ]);
    expect({ unzip: unzip.code, sevenZip: sevenZip.code, sevenZipOk: sevenZip.output.includes("Everything is Ok"), python: python.code }, `${unzip.output}\n${sevenZip.output}\n${python.output}`).toEqual({
      unzip: 0,
      sevenZip: 0,
      sevenZipOk: true,
      python: 0,
    });
    expect(JSON.parse(python.output)).toEqual({
      bad: null,
      entries: [
        ["big.bin", BIG, 0, crc],
        ["after.txt", small.byteLength, 0, Bun.hash.crc32(small)],
        ["empty", 0, 0, 0],
      ],
    });
    fs.rmSync(zip);
  },
  10 * 60_000,
);
