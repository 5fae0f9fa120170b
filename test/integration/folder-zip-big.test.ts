// test-lists: default
// A shared folder's ZIP at size (issue 29): 1 000 small files and one 5 GiB file, streamed
// through a real server from the run's blob store. unzip, 7-Zip and Python's zipfile accept the
// archive (ZIP64: one entry and the archive past 4 GiB); the serving process's peak RSS over
// idle stays ≤ 64 MiB while it streams; a client that stops reading releases everything (the
// blob read ends: its descriptor closes, on disk). Minutes, not seconds: the content is
// generated on the fly, and the archive is written to a temporary file once for the three tools.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { crc32cUpdate, checksumToBase64 } from "../../src/domain/checksum.ts";
import type { FolderJson } from "../../src/domain/folder.ts";
import type { ShareJson } from "../../src/domain/share.ts";
import { BACKEND } from "../support/backend.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { run as runTool, type RunResult } from "../support/dav.ts";
import { waitFor } from "../support/wait.ts";
import { generated } from "../support/generated.ts";

const MIB = 1024 ** 2;
const BIG = 5 * 1024 * MIB;
const SMALL_FILES = 1000;
/** How long one reader of the 5 GiB archive may take (ms): well inside the test's 600 s. */
const READ_TIMEOUT_MS = 400_000;

let server: RunningServer;
let key: string;
let dir: string;
let share: ShareJson;
/** The big file's CRC-32 (ZIP's, ISO 3309) as uploaded. */
let bigCrc32 = 0;

/** A field of /proc/PID/status, in KiB. */
function statusKiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
}

/** The serving process's open descriptors that are blobs (files under DATA_DIR/blobs). */
function openBlobs(pid: number): number {
  let n = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`).includes(`${path.sep}blobs${path.sep}`)) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

function run(cmd: string[]): { code: number; out: string } {
  const p = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode ?? -1, out: p.stdout.toString() + p.stderr.toString() };
}


beforeAll(async () => {
  // One serving process, so that its memory is the stream's.
  server = await startServer({ env: { WORKERS: "1" } });
  key = await server.mintKey("zip@example.com");
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-zip-big-"));
  const api = client(server, key);
  const made = await api.fetch("/v1/folders", { method: "POST", body: JSON.stringify({ name: "big" }), headers: { "content-type": "application/json" } });
  const folder = (await made.json()) as FolderJson;
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < SMALL_FILES; i = next++) {
        const res = await api.fetch(`/v1/files?folder_id=${folder.id}&name=small-${i}.txt`, { method: "POST", body: `small file ${i}\n`.repeat(1 + (i % 50)) });
        expect(res.status).toBe(200);
      }
    }),
  );
  let crc = 0;
  const big = await api.fetch(`/v1/files?folder_id=${folder.id}&name=big.bin`, {
    method: "POST",
    body: generated(BIG, (c) => {
      crc = crc32cUpdate(crc, c);
      bigCrc32 = Bun.hash.crc32(c, bigCrc32);
    }),
    duplex: "half",
    headers: { "content-type": "application/octet-stream" },
  } as RequestInit);
  expect(big.status).toBe(200);
  expect(((await big.json()) as FileJson).checksum).toBe(checksumToBase64(crc));
  const shared = await api.fetch(`/v1/folders/${folder.id}/shares`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
  share = (await shared.json()) as ShareJson;
}, 600_000);

afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
});

test(
  "the 5 GiB folder's ZIP: unzip, 7-Zip and Python accept it, every entry; peak RSS over idle ≤ 64 MiB",
  async () => {
    const [pid] = server.servingPids();
    const idleKiB = statusKiB(pid!, "VmRSS");
    fs.writeFileSync(`/proc/${pid}/clear_refs`, "5"); // VmHWM := VmRSS (proc(5))
    const zipPath = path.join(dir, "big.zip");
    const curl = run(["curl", "-sS", "-o", zipPath, "-w", "%{http_code}", `${share.url}?download=zip`]);
    expect(curl.out).toBe("200");
    const overIdleMiB = (statusKiB(pid!, "VmHWM") - idleKiB) / 1024;
    console.log(`ZIP of ${SMALL_FILES} small files + 5 GiB (${BACKEND}): ${(fs.statSync(zipPath).size / MIB).toFixed(0)} MiB; serving process peak RSS over idle ${overIdleMiB.toFixed(1)} MiB`);
    expect(overIdleMiB).toBeLessThanOrEqual(64);

    // The three readers at once (each reads the 5 GiB and checks every entry's CRC-32), and
    // the big entry's CRC-32 in the archive is the one of the bytes uploaded: so its bytes are.
    const [unzip, seven, py] = await Promise.all([
      runTool("unzip", ["-tq", zipPath], { timeoutMs: READ_TIMEOUT_MS }),
      runTool("7z", ["t", zipPath], { timeoutMs: READ_TIMEOUT_MS }),
      runTool("python3", ["-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; i = z.getinfo('big.bin'); print(len(z.infolist()), i.file_size, i.compress_type, i.CRC)", zipPath], { timeoutMs: READ_TIMEOUT_MS }),
    ]);
    const out = (r: RunResult) => r.stdout + r.stderr;
    expect(unzip.code, out(unzip)).toBe(0);
    expect(seven.code, out(seven)).toBe(0);
    expect(out(seven)).toContain(`Files: ${SMALL_FILES + 1}`);
    expect(py.code, out(py)).toBe(0);
    expect(out(py).trim()).toBe(`${SMALL_FILES + 1} ${BIG} 0 ${bigCrc32}`);
    fs.rmSync(zipPath);
  },
  { timeout: 600_000 },
);

test(
  "a client that stops reading mid-archive releases the blob it was reading",
  async () => {
    const [pid] = server.servingPids();
    const res = await fetch(`${share.url}?download=zip`);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let got = 0;
    while (got < 64 * MIB) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the archive ended early");
      got += value.byteLength;
    }
    if (BACKEND === "sqlite-disk") expect(openBlobs(pid!)).toBeGreaterThan(0); // the 5 GiB blob, being read
    await reader.cancel();
    if (BACKEND === "sqlite-disk") await waitFor(() => openBlobs(pid!) === 0, "the blob's descriptor closed", 10_000);
    // The server still answers, and the next ZIP starts from the beginning.
    const again = (await fetch(`${share.url}?download=zip`)).body!.getReader();
    const first = await again.read();
    await again.cancel();
    expect([...first.value!.subarray(0, 4)]).toEqual([0x50, 0x4b, 0x03, 0x04]);
  },
  { timeout: 120_000 },
);
