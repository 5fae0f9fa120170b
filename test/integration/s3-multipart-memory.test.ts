// test-lists: postgres-s3
// Issue 42: a 1 GiB S3 multipart upload sent as `aws s3 cp` sends it (8 MiB parts, ten at once,
// each part's SHA-256 signed) keeps the serving process's peak RSS within 64 MiB over idle on
// SQLite + disk: every part's body is read ahead and held until written within the process's
// body budget (src/body-budget.ts), and the chunks Bun's node:http parses are freed at once
// (server/body-reader.ts freeParsedChunks). On PostgreSQL + S3 the peak of 256 MiB sent the same way
// is reported, not held to the limit (the S3 store buffers each part whole on its way out,
// storage/s3-object-writer.ts; a 1 GiB upload there takes ~100 s against Swift on a small
// machine: it peaked 72 MiB over idle with WORKERS=2, 87 before issue 42's budget; 256 MiB, 61).
// The object is then a File of the right size and CRC32C.
import { expect, test } from "bun:test";
import fs from "node:fs";
import { AwsClient } from "aws4fetch";
import { checksumToBase64, crc32cCombine, crc32cUpdate } from "../../src/domain/checksum.ts";
import { BACKEND } from "../support/backend.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";

const MIB = 1024 * 1024;
/** The AWS CLI's defaults (multipart_chunksize, max_concurrent_requests). */
const PART_BYTES = 8 * MIB;
const AT_ONCE = 10;
const LIMIT_MIB = 64;
const DISK = BACKEND === "sqlite-disk";
/** Parts of the measured upload (1 GiB on disk) and of the first one, whose peak is not counted. */
const PARTS = DISK ? 128 : 32;
const WARM_PARTS = DISK ? 32 : 10;
const SIZE = PARTS * PART_BYTES === 1024 * MIB ? "1 GiB" : `${(PARTS * PART_BYTES) / MIB} MiB`;

function statusKiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]);
}

/**
 * Part `n` (from 1) of an object: 1 MiB blocks of one random block, each stamped with its offset
 * in the object (so no two are equal and a part out of place changes the checksum).
 */
function partBytes(block: Uint8Array, n: number): Uint8Array {
  const part = new Uint8Array(PART_BYTES);
  for (let at = 0; at < PART_BYTES; at += MIB) {
    part.set(block, at);
    new DataView(part.buffer).setFloat64(at, (n - 1) * PART_BYTES + at);
  }
  return part;
}

/**
 * Uploads `parts` parts to `url` as one multipart upload, {@link AT_ONCE} at a time, each signed
 * with its SHA-256 (aws4fetch hashes the body, as the AWS CLI does over plain HTTP).
 * @returns the object's CRC32C (base64)
 */
async function multipartUpload(s3: AwsClient, url: string, parts: number): Promise<string> {
  const created = await s3.fetch(`${url}?uploads`, { method: "POST" });
  expect(created.status).toBe(200);
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await created.text())![1]!;
  const block = crypto.getRandomValues(new Uint8Array(MIB));
  const etags: string[] = [];
  const crcs: number[] = [];
  let next = 1;
  const sender = async () => {
    for (let n = next++; n <= parts; n = next++) {
      const body = partBytes(block, n);
      crcs[n] = crc32cUpdate(0, body);
      const res = await s3.fetch(`${url}?partNumber=${n}&uploadId=${encodeURIComponent(uploadId)}`, { method: "PUT", body });
      if (res.status !== 200) throw new Error(`part ${n}: ${res.status} ${await res.text()}`);
      etags[n] = res.headers.get("etag")!;
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, sender));
  const listed = etags.slice(1).map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${etag}</ETag></Part>`);
  const completed = await s3.fetch(`${url}?uploadId=${encodeURIComponent(uploadId)}`, { method: "POST", body: `<CompleteMultipartUpload>${listed.join("")}</CompleteMultipartUpload>` });
  if (completed.status !== 200) throw new Error(`complete: ${completed.status} ${await completed.text()}`);
  let crc = crcs[1]!;
  for (let n = 2; n <= parts; n++) crc = crc32cCombine(crc, crcs[n]!, PART_BYTES);
  return checksumToBase64(crc);
}

/** The file at bucket `mem`'s `name`, as REST lists it. */
async function fileNamed(server: RunningServer, apiKey: string, name: string): Promise<FileJson | undefined> {
  const listed = (await (await client(server, apiKey).fetch(`/v1/files?q=${encodeURIComponent(name)}`)).json()) as { files: FileJson[] };
  return listed.files.find((f) => f.name === name);
}

test(
  `a ${SIZE} S3 multipart upload, ${AT_ONCE} parts of 8 MiB at once, peaks within ${LIMIT_MIB} MiB over idle (SQLite + disk; reported on PostgreSQL + S3)`,
  async () => {
    await using server = await startServer({ checkResponses: false });
    const [id, secret] = (await server.mintKey("mem@example.com", "--s3")).split("\n").map((l) => l.slice(l.indexOf("=") + 1)) as [string, string];
    const apiKey = await server.mintKey("mem@example.com");
    const s3 = new AwsClient({ accessKeyId: id, secretAccessKey: secret, service: "s3", region: "us-east-1" });
    expect((await s3.fetch(`${server.url}/mem`, { method: "PUT" })).status).toBe(200);
    // Idle: after a first multipart upload (256 MiB on disk), so that what the first one loads
    // once (the code the upload runs, compiled by the JIT as it gets hot: ~10 MiB of the peak of
    // a cold server, docs/benchmarks.md) counts as idle, as the WebDAV PUT test counts a first PUT.
    await multipartUpload(s3, `${server.url}/mem/warm.bin`, WARM_PARTS);
    const pids = server.servingPids();
    // VmHWM is reset to the present RSS (proc(5), clear_refs "5"): the peak read after is the upload's.
    for (const pid of pids) fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
    const idleKiB = pids.map((pid) => statusKiB(pid, "VmRSS"));
    const started = performance.now();
    const checksum = await multipartUpload(s3, `${server.url}/mem/big.bin`, PARTS);
    const seconds = (performance.now() - started) / 1000;
    // With several workers the parts spread over them: the largest rise counts.
    const overMiB = Math.max(...pids.map((pid, i) => statusKiB(pid, "VmHWM") - idleKiB[i]!)) / 1024;
    console.log(`${SIZE} S3 multipart upload (${BACKEND}, ${pids.length} serving process(es)): peak RSS ${overMiB.toFixed(1)} MiB over idle, ${seconds.toFixed(1)} s`);
    const file = await fileNamed(server, apiKey, "big.bin");
    expect({ size: file?.size, checksum: file?.checksum }).toEqual({ size: String(PARTS * PART_BYTES), checksum });
    if (DISK) expect(overMiB).toBeLessThanOrEqual(LIMIT_MIB);
  },
  // About twice what it took here on 2 cores shared with other tests (2026-11-29): 22–30 s on
  // disk, 31–41 s on PostgreSQL + S3.
  { timeout: DISK ? 60_000 : 90_000 },
);
