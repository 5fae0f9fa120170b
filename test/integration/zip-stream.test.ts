// test-lists: default
// What a streamed ZIP (src/serving/zip-stream.ts) holds, as the tools people unpack it with see
// it: Info-ZIP's unzip, 7-Zip (Debian's p7zip-full) and Python's zipfile. Members are read from
// this run's blob store (a disk store; an S3 store with CUBBY_TEST_BACKEND=postgres-s3) through
// blobBytes, as a folder's files are. The archive past 4 GiB, through the server, is test/integration/folder-zip-big.test.ts.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { blobBytes, zipLength, zipStream, ZipNames, type ZipMember } from "../../src/serving/zip-stream.ts";
import { DiskBlobStore } from "../../src/storage/disk-blobs.ts";
import { S3BlobStore } from "../../src/storage/s3-blobs.ts";
import type { BlobStore } from "../../src/storage/ports.ts";
import { BACKEND, backendEnv } from "../support/backend.ts";
import { testNeeding } from "../support/tools.ts";

const missing = [
  ...(Bun.which("unzip") === null ? ["unzip (apt-get install unzip)"] : []),
  ...(Bun.which("7z") === null ? ["7z (apt-get install p7zip-full)"] : []),
  ...(Bun.which("python3") === null ? ["python3"] : []),
];
const toolTest = testNeeding("the ZIP tool checks", missing);

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

/** Python's view of an archive: testzip()'s verdict and each entry's name, size, method, flags and time. */
const PYTHON = `
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(json.dumps({
  "bad": z.testzip(),
  "entries": [[i.filename, i.file_size, i.compress_type, i.flag_bits & 0x0808, list(i.date_time), i.CRC] for i in z.infolist()],
}))
`;

/**
 * Checks `zip` with the three tools.
 * @returns Python's entries: [name, size, method, bits 3 and 11, date_time, CRC-32]
 */
async function checkWithTools(zip: string): Promise<[string, number, number, number, number[], number][]> {
  // The three at once: each only reads the archive.
  const [unzip, sevenZip, python] = await Promise.all([run(["unzip", "-t", "-qq", zip]), run(["7z", "t", zip]), run(["python3", "-c", PYTHON, zip])]);
  expect({ unzip: unzip.code, sevenZip: sevenZip.code, sevenZipOk: sevenZip.output.includes("Everything is Ok"), python: python.code }, `${unzip.output}\n${sevenZip.output}\n${python.output}`).toEqual({
    unzip: 0,
    sevenZip: 0,
    sevenZipOk: true,
    python: 0,
  });
  const view = JSON.parse(python.output) as { bad: string | null; entries: [string, number, number, number, number[], number][] };
  expect(view.bad).toBeNull();
  return view.entries;
}

/** Writes the stream to `file`, one chunk at a time. @returns bytes written */
async function writeTo(file: string, stream: ReadableStream<Uint8Array>): Promise<number> {
  const handle = await fs.promises.open(file, "w");
  let bytes = 0;
  try {
    for await (const chunk of stream) {
      await handle.write(chunk);
      bytes += chunk.byteLength;
    }
  } finally {
    await handle.close();
  }
  return bytes;
}

/** MS-DOS date and time (local, 2-second steps) as Python's `date_time` gives it. */
function dosTime(modifiedMicros: number): number[] {
  const d = new Date(modifiedMicros / 1000);
  return [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds() & ~1];
}

let dir: string;
let blobs: BlobStore;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-zip-it-"));
  if (BACKEND === "sqlite-disk") {
    blobs = new DiskBlobStore(dir);
  } else {
    const env = await backendEnv(dir);
    blobs = new S3BlobStore({
      bucket: env.S3_BUCKET!,
      endpoint: env.S3_ENDPOINT,
      region: env.S3_REGION!,
      accessKeyId: env.S3_ACCESS_KEY_ID,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY,
      prefix: env.S3_PREFIX!,
      virtualHostedStyle: false,
    });
  }
});
afterAll(async () => {
  await blobs?.[Symbol.asyncDispose]();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe(`a folder's files as one ZIP (${BACKEND})`, () => {
  toolTest("small files, an empty one and UTF-8 names: unzip, 7-Zip and Python accept it, every entry STORED with bits 3 and 11, and unzip gives back the bytes", async () => {
    const files: { name: string; id: string; content: Uint8Array; modified: number }[] = [
      { name: "hello.txt", id: "f1", content: new TextEncoder().encode("Hello, world.\n"), modified: Date.UTC(2026, 0, 2, 3, 4, 5) * 1000 },
      { name: "empty.txt", id: "f2", content: new Uint8Array(0), modified: Date.UTC(2025, 11, 31, 23, 59, 58) * 1000 },
      { name: "Grüße aus Köln — naïve café.txt", id: "f3", content: crypto.getRandomValues(new Uint8Array(1000)), modified: Date.UTC(2026, 5, 1) * 1000 },
      { name: "日本語のファイル 🎉.bin", id: "f4", content: crypto.getRandomValues(new Uint8Array(300 * 1024 + 7)), modified: Date.UTC(2026, 5, 2) * 1000 },
      { name: "hello.txt", id: "f5", content: new TextEncoder().encode("another hello\n"), modified: Date.UTC(2026, 5, 3) * 1000 },
      { name: "", id: "V1StGXR8_Z5jdHi6B-myT", content: new TextEncoder().encode("no name\n"), modified: Date.UTC(2026, 5, 4) * 1000 },
      { name: "1979.txt", id: "f7", content: new TextEncoder().encode("before MS-DOS time\n"), modified: Date.UTC(1979, 0, 1) * 1000 },
    ];
    const stored = await Promise.all(
      files.map(async (f) => ({
        ...f,
        blob: (
          await blobs.write(
            (async function* () {
              yield f.content;
            })(),
            { maxBytes: Infinity },
          )
        ).name,
      })),
    );
    const names = new ZipNames();
    const members: ZipMember[] = stored.map((f) => ({
      name: names.take(f.name, f.id),
      size: f.content.byteLength,
      modified: f.modified,
      // Small reads: the 300 KiB file comes in many chunks.
      content: () => blobBytes(blobs.read(f.blob, { start: 0, length: f.content.byteLength }, { chunkBytes: 16 * 1024, buffers: 2 })),
    }));
    const zip = path.join(dir, "folder.zip");
    const written = await writeTo(zip, zipStream(members));
    expect(written).toBe(fs.statSync(zip).size);
    expect(zipLength(members)).toBe(written);

    const entries = await checkWithTools(zip);
    const expectedNames = ["hello.txt", "empty.txt", "Grüße aus Köln — naïve café.txt", "日本語のファイル 🎉.bin", "hello (2).txt", "V1StGXR8_Z5jdHi6B-myT", "1979.txt"];
    expect(entries.map(([name, size, method, bits, time]) => ({ name, size, method, bits, time }))).toEqual(
      members.map((m, i) => ({
        name: expectedNames[i]!,
        size: m.size,
        method: 0,
        bits: 0x0808,
        time: m.name === "1979.txt" ? [1980, 1, 1, 0, 0, 0] : dosTime(m.modified),
      })),
    );
    expect(entries.map(([, , , , , crc]) => crc)).toEqual(files.map((f) => Bun.hash.crc32(f.content)));

    const out = path.join(dir, "unzipped");
    expect((await run(["unzip", "-qq", zip, "-d", out])).code).toBe(0);
    for (const [i, m] of members.entries()) expect(Buffer.from(fs.readFileSync(path.join(out, m.name))).equals(files[i]!.content), m.name).toBe(true);
  });

  toolTest("70 000 entries (over the 65 535 of the end record, under 4 GiB): the ZIP64 end records are written and every tool sees every entry", async () => {
    const count = 70_000;
    const body = (i: number) => new TextEncoder().encode(`member ${i}\n`);
    function* members(): Iterable<ZipMember> {
      for (let i = 0; i < count; i++) {
        const bytes = body(i);
        yield {
          name: `many/${i}.txt`,
          size: bytes.byteLength,
          modified: Date.UTC(2026, 0, 2) * 1000,
          async *content() {
            yield bytes;
          },
        };
      }
    }
    const zip = path.join(dir, "many.zip");
    const written = await writeTo(zip, zipStream(members()));
    expect(zipLength(members())).toBe(written);
    const entries = await checkWithTools(zip);
    expect(entries.length).toBe(count);
    expect(entries.at(-1)!.slice(0, 2)).toEqual([`many/${count - 1}.txt`, body(count - 1).byteLength]);
    // The ZIP64 end of central directory locator (APPNOTE 4.3.15) sits right before the 22-byte end record.
    const tail = Buffer.alloc(42);
    const handle = await fs.promises.open(zip, "r");
    try {
      await handle.read(tail, 0, 42, written - 42);
    } finally {
      await handle.close();
    }
    expect({ locator: tail.readUInt32LE(0), end: tail.readUInt32LE(20), entries: tail.readUInt16LE(20 + 10) }).toEqual({ locator: 0x07064b50, end: 0x06054b50, entries: 0xffff });
    fs.rmSync(zip);
    // Three tools each testing 70 000 entries, at once: 46–60 s one after another on a quiet
    // machine of CI's kind (most of it the tools' system time), so its own limit, with margin,
    // not the suite's 30 s.
  }, 240_000);
});
