/**
 * The bounded soak (issue 5): several concurrent clients upload, replace, read, range-read,
 * delete and call the RPC API against one server for a fixed time. Each client owns its files
 * and keeps a model of their bytes, so every read is checked against the last acknowledged
 * write (read-after-write); a final audit lists everything, reads it back, and runs `cubby fsck`.
 * The server's resident memory is sampled once a second and must stay flat (runs of two
 * minutes or more).
 *
 *   bun scripts/soak.ts                  # 5 minutes
 *   bun scripts/soak.ts --seconds 20     # a short run (CI)
 *
 * Exit status 1 on any error, lost or torn file, or memory growth (see {@link memoryVerdict}).
 */
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import fs from "node:fs";
import { parseArgs } from "node:util";
import { checksumOf } from "../src/domain/checksum.ts";
import { FileService } from "../src/gen/cubby/v1/files_pb.ts";
import { runCli, startServer } from "../test/support/server.ts";

const { values: flags } = parseArgs({
  options: { seconds: { type: "string", default: "300" }, clients: { type: "string", default: "8" } },
});
const SECONDS = Number(flags.seconds);
const CLIENTS = Number(flags.clients);
/** Files one client keeps at most; past it, it deletes. */
const MAX_OWNED = 25;

// Contents are slices of one random pool, at random offsets and lengths.
const POOL = crypto.getRandomValues(new Uint8Array(8 * 1024 * 1024 + 4096));
function randomContent(): Uint8Array {
  const r = Math.random();
  const size = r < 0.7 ? randInt(0, 64 * 1024) : r < 0.95 ? randInt(64 * 1024, 1024 * 1024) : randInt(1024 * 1024, 8 * 1024 * 1024);
  const start = randInt(0, POOL.byteLength - size);
  return POOL.subarray(start, start + size);
}
function randInt(lo: number, hi: number): number {
  return lo + Math.floor(Math.random() * (hi - lo + 1));
}
function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
}

const server = await startServer();
const key = await server.mintKey("soak@example.com");
const auth = { authorization: `Bearer ${key}` };
const errors: string[] = [];
const counts = new Map<string, number>();
const fail = (what: string) => {
  errors.push(what);
  if (errors.length <= 20) console.error(`error: ${what}`);
};
/** Data that was wrong, as opposed to a request that failed: lost, torn, stale or resurrected. */
let damaged = 0;
const damage = (what: string) => {
  damaged++;
  fail(what);
};
const count = (op: string) => counts.set(op, (counts.get(op) ?? 0) + 1);

// Memory: the server's VmRSS once a second, summed over its serving processes (WORKERS).
const rss: number[] = [];
const sampler = setInterval(() => {
  let bytes = 0;
  for (const pid of server.servingPids()) {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    bytes += Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
  }
  rss.push(bytes);
}, 1000);

const deadline = Date.now() + SECONDS * 1000;
const models: Map<string, Uint8Array>[] = [];
await Promise.all(
  Array.from({ length: CLIENTS }, (_, i) => {
    const owned = new Map<string, Uint8Array>();
    models.push(owned);
    // Two of the clients speak RPC for their reads and deletes: Connect on HTTP/1.1 and gRPC on h2c.
    const rpc =
      i === 0
        ? createClient(FileService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }))
        : i === 1
          ? createClient(FileService, createGrpcTransport({ baseUrl: server.url }))
          : undefined;
    return runClient(owned, rpc);
  }),
);
clearInterval(sampler);

// The final audit: exactly the modelled files exist, each reads back whole.
const expected = new Map<string, Uint8Array>();
for (const m of models) for (const [id, bytes] of m) expected.set(id, bytes);
const listed = new Set<string>();
let token = "";
do {
  const page = (await (await fetch(`${server.url}/v1/files?page_size=100&page_token=${token}`, { headers: auth })).json()) as {
    files: { id: string }[];
    next_page_token: string;
  };
  for (const f of page.files) listed.add(f.id);
  token = page.next_page_token;
} while (token !== "");
for (const id of listed) if (!expected.has(id)) damage(`audit: ${id} exists but was deleted or never acknowledged`);
for (const [id, bytes] of expected) {
  if (!listed.has(id)) damage(`audit: ${id} was lost`);
  const body = new Uint8Array(await (await fetch(`${server.url}/${id}`, { headers: auth })).arrayBuffer());
  if (!same(body, bytes)) damage(`audit: ${id} does not read back`);
}
const stopCode = await server.stop();
if (stopCode !== 0) fail(`the server stopped with ${stopCode}`);
const fsck = await runCli(["fsck", "--data-dir", server.dataDir]);
if (fsck.code !== 0) fail(`fsck: ${fsck.stdout}${fsck.stderr}`);
fs.rmSync(server.dataDir, { recursive: true, force: true });

const total = [...counts.values()].reduce((a, b) => a + b, 0);
const memory = memoryVerdict(rss);
console.log(`\nsoak: ${SECONDS} s, ${CLIENTS} clients, ${total} operations (${(total / SECONDS).toFixed(0)}/s)`);
console.log([...counts].map(([op, n]) => `${op} ${n}`).join(", "));
console.log(`files at the end: ${expected.size}; errors: ${errors.length}; lost, torn or stale: ${damaged}`);
console.log(`memory: ${memory.text}`);
// The server's own account of any failure (internal errors are logged with their cause).
if (errors.length > 0 && server.errors().trim() !== "") console.error(`server stderr:\n${server.errors().trim().split("\n").slice(-40).join("\n")}`);
process.exit(errors.length === 0 && memory.flat ? 0 : 1);

/**
 * Memory is flat when the median RSS of the last half is no more than 10% + 16 MiB above the
 * median of the first half (after a warm-up of one tenth): growth past that is a leak, not noise.
 * Medians, because single samples swing with the 8 MiB uploads in flight. Runs shorter than two
 * minutes are reported but not judged: the heap is still finding its size.
 */
function memoryVerdict(samples: number[]): { flat: boolean; text: string } {
  const mib = (b: number) => `${(b / 1048576).toFixed(0)} MiB`;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const warm = Math.max(1, Math.floor(samples.length / 10));
  const mid = Math.floor(samples.length / 2);
  const first = median(samples.slice(warm, Math.max(mid, warm + 1)));
  const second = median(samples.slice(mid));
  const judged = SECONDS >= 120;
  const flat = !judged || second <= first * 1.1 + 16 * 1048576;
  const verdict = !judged ? "too short to judge" : flat ? "flat" : "GROWING";
  return {
    flat,
    text: `median RSS ${mib(first)} in the first half, ${mib(second)} in the second; peak ${mib(Math.max(...samples))}, ${mib(samples.at(-1)!)} at the end (${samples.length} samples) → ${verdict}`,
  };
}

/** One client: random operations on its own files until the deadline, checking each answer. */
async function runClient(owned: Map<string, Uint8Array>, rpc: Client<typeof FileService> | undefined): Promise<void> {
  const pick = () => [...owned.keys()][randInt(0, owned.size - 1)]!;
  while (Date.now() < deadline) {
    const r = Math.random();
    try {
      if (owned.size === 0 || (r < 0.2 && owned.size < MAX_OWNED)) {
        const bytes = randomContent();
        const res = await fetch(`${server.url}/v1/files?name=soak.bin`, { method: "POST", body: bytes, headers: auth });
        if (res.status !== 200) fail(`upload: ${res.status} ${await res.text()}`);
        else {
          const f = (await res.json()) as { id: string; size: string; checksum: string };
          if (f.size !== String(bytes.byteLength) || f.checksum !== checksumOf(bytes)) damage(`upload ${f.id}: metadata does not match`);
          owned.set(f.id, bytes);
        }
        count("upload");
      } else if (r < 0.35) {
        const id = pick();
        const bytes = randomContent();
        const res = await fetch(`${server.url}/v1/files/${id}/content`, { method: "PUT", body: bytes, headers: auth });
        if (res.status !== 200) fail(`replace ${id}: ${res.status} ${await res.text()}`);
        else {
          await res.arrayBuffer();
          owned.set(id, bytes);
        }
        count("replace");
      } else if (r < 0.45 || owned.size >= MAX_OWNED) {
        const id = pick();
        if (rpc !== undefined) {
          await rpc.deleteFile({ id }, { headers: auth });
        } else {
          const res = await fetch(`${server.url}/v1/files/${id}`, { method: "DELETE", headers: auth });
          if (res.status !== 200) fail(`delete ${id}: ${res.status}`);
          await res.arrayBuffer();
        }
        owned.delete(id);
        const gone = await fetch(`${server.url}/${id}`, { headers: auth });
        await gone.arrayBuffer();
        if (gone.status !== 404) fail(`deleted ${id} still answers ${gone.status}`);
        count("delete");
      } else if (r < 0.7) {
        const id = pick();
        const want = owned.get(id)!;
        let body: Uint8Array;
        if (rpc !== undefined) {
          const parts: Uint8Array[] = [];
          for await (const m of rpc.getFileContent({ id }, { headers: auth })) parts.push(m.content);
          body = Buffer.concat(parts);
          count("rpc read");
        } else {
          const res = await fetch(`${server.url}/${id}`, { headers: auth });
          body = new Uint8Array(await res.arrayBuffer());
          if (res.status !== 200) fail(`read ${id}: ${res.status}`);
          count("read");
        }
        if (!same(body, want)) damage(`read ${id}: torn or stale (${body.byteLength} bytes, want ${want.byteLength})`);
      } else if (r < 0.85) {
        const id = pick();
        const want = owned.get(id)!;
        if (want.byteLength === 0) continue;
        const start = randInt(0, want.byteLength - 1);
        const end = randInt(start, want.byteLength - 1);
        const res = await fetch(`${server.url}/${id}`, { headers: { ...auth, range: `bytes=${start}-${end}` } });
        const body = new Uint8Array(await res.arrayBuffer());
        if (res.status !== 206 || !same(body, want.subarray(start, end + 1))) damage(`range ${id} ${start}-${end}: ${res.status}, torn or stale`);
        count("range read");
      } else {
        const id = pick();
        const want = owned.get(id)!;
        let size: string;
        let checksum: string;
        if (rpc !== undefined) {
          const { file } = await rpc.getFile({ id }, { headers: auth });
          size = String(file!.size);
          checksum = file!.checksum;
          count("rpc get");
        } else {
          const res = await fetch(`${server.url}/v1/files/${id}`, { headers: auth });
          const f = (await res.json()) as { size: string; checksum: string };
          size = f.size;
          checksum = f.checksum;
          count("get");
        }
        if (size !== String(want.byteLength) || checksum !== checksumOf(want)) damage(`get ${id}: stale metadata`);
      }
    } catch (err) {
      fail(`client: ${err}`);
    }
  }
}
