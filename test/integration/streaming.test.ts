// test-lists: postgres-s3
// Uploads and downloads stream: a 1 GiB round trip keeps the server's peak RSS (VmHWM) under
// 200 MiB (issue 2, item 8). The content is generated on the fly and never held whole.
import { expect, test } from "bun:test";
import fs from "node:fs";
import http2 from "node:http2";
import { crc32cUpdate, checksumToBase64 } from "../../src/domain/checksum.ts";
import { client, startServer, type FileJson } from "../support/server.ts";
import { generated } from "../support/generated.ts";
import { davFetch } from "../support/dav.ts";
import { BACKEND } from "../support/backend.ts";

const GIB = 1024 ** 3;
const S3 = BACKEND === "postgres-s3";
const CHUNK = 1024 * 1024;

function vmHwmKiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]);
}

function vmRssKiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]);
}

test(
  "1 GiB upload and download stream with bounded memory",
  async () => {
    await using server = await startServer();
    const api = client(server, await server.mintKey("big@example.com"));
    let sentCrc = 0;
    const upload = await api.fetch("/v1/files?name=big.bin&visibility=public", {
      method: "POST",
      body: generated(GIB, (c) => (sentCrc = crc32cUpdate(sentCrc, c))),
      duplex: "half",
      headers: { "content-type": "application/octet-stream" },
    } as RequestInit);
    expect(upload.status).toBe(200);
    const file = (await upload.json()) as FileJson;
    expect({ size: file.size, checksum: file.checksum }).toEqual({ size: String(GIB), checksum: checksumToBase64(sentCrc) });

    const download = await fetch(file.url);
    let size = 0;
    let gotCrc = 0;
    for await (const chunk of download.body!) {
      size += chunk.byteLength;
      gotCrc = crc32cUpdate(gotCrc, chunk);
    }
    expect({ size, checksum: checksumToBase64(gotCrc) }).toEqual({ size: GIB, checksum: file.checksum });

    // With several workers the transfers may each have had their own: the largest peak counts.
    const peakMiB = Math.max(...server.servingPids().map(vmHwmKiB)) / 1024;
    console.log(`server peak RSS (VmHWM) after a 1 GiB upload + download: ${peakMiB.toFixed(1)} MiB`);
    // 185–230 MiB on PostgreSQL + S3 while the connection was read before the body's first pull
    // (node-bridge.ts pauses it from the start now): queries before the read let it fill up.
    expect(peakMiB).toBeLessThan(200);
  },
  { timeout: 180_000 },
);

// Issue 38: a WebDAV PUT went to its worker as the raw request, read as fast as it arrived
// (512 MiB peaked 331 MiB over idle); it reads through the exchange's one body reader now, with
// back-pressure on the connection, as a REST upload does.
test(
  "a 1 GiB WebDAV PUT streams with back-pressure (peak RSS bounded, 64 MiB over idle on disk) and stores every byte",
  async () => {
    await using server = await startServer();
    const key = await server.mintKey("davbig@example.com");
    // Idle: after a first small request, so what any request loads once is counted as idle.
    expect((await davFetch(server.url, key, "/dav/warm.txt", { method: "PUT", body: "warm" })).status).toBe(201);
    // VmHWM is the peak since start (migrations, first queries): it is reset to the present RSS
    // (proc(5), clear_refs "5"), so that the peak read after is the PUT's.
    const pids = server.servingPids();
    for (const pid of pids) fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
    const idleKiB = pids.map(vmRssKiB);
    let sentCrc = 0;
    const put = await davFetch(server.url, key, "/dav/big.bin", {
      method: "PUT",
      body: generated(GIB, (c) => (sentCrc = crc32cUpdate(sentCrc, c))),
      duplex: "half",
    } as RequestInit & { headers?: Record<string, string> });
    expect(put.status).toBe(201);
    // With several workers one served the PUT: the largest rise counts.
    const overMiB = Math.max(...pids.map((pid, i) => vmHwmKiB(pid) - idleKiB[i]!)) / 1024;
    const listed = (await (await client(server, key).fetch("/v1/files?q=big.bin")).json()) as { files: FileJson[] };
    expect(listed.files.map((f) => ({ size: f.size, checksum: f.checksum }))).toEqual([{ size: String(GIB), checksum: checksumToBase64(sentCrc) }]);
    console.log(`WebDAV PUT of 1 GiB (${S3 ? "S3" : "disk"}): peak RSS ${overMiB.toFixed(1)} MiB over idle`);
    // Disk: 21–25 MiB measured since issue 42 freed the chunks node:http parses and the appender
    // kept the body's chunks instead of copying them (48–67 before, 71.5 once in a full run);
    // issue 38 asks ≤ 64. On S3 the writer also holds its part buffers (5 of 5 MiB) and fetch's
    // for the parts in flight: 96 MiB measured with WORKERS=2.
    expect(overMiB).toBeLessThanOrEqual(S3 ? 128 : 64);
  },
  { timeout: 180_000 },
);

test("a slow reader gets every byte over HTTP/1.1 and HTTP/2 (download buffers are reused only once sent)", async () => {
  await using server = await startServer();
  const api = client(server, await server.mintKey("slow@example.com"));
  let crc = 0;
  const total = 8 * CHUNK;
  const file = await api.upload(generated(total, (c) => (crc = crc32cUpdate(crc, c))), "?visibility=public");
  const expected = { size: total, checksum: checksumToBase64(crc) };
  // The reader stops for a moment every 512 KiB, so the server's writes back up and wait.
  const pauseEvery = 512 * 1024;
  const check = async (chunks: AsyncIterable<Uint8Array>) => {
    let size = 0;
    let got = 0;
    let sincePause = 0;
    for await (const chunk of chunks) {
      size += chunk.byteLength;
      got = crc32cUpdate(got, chunk);
      sincePause += chunk.byteLength;
      if (sincePause >= pauseEvery) {
        sincePause = 0;
        await Bun.sleep(5); // the slow reader itself, not a wait for a condition
      }
    }
    return { size, checksum: checksumToBase64(got) };
  };
  expect(await check((await fetch(file.url)).body!)).toEqual(expected);
  const session = http2.connect(server.url);
  try {
    const stream = session.request({ ":path": new URL(file.url).pathname });
    expect(await check(stream)).toEqual(expected);
  } finally {
    session.close();
  }
});
