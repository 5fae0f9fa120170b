// RPC and one-port benchmark (issue 3). Prints requests/s and ratios against anchors measured
// in the same run, alternating runs so machine drift cancels:
//   - GetFile over Connect (HTTP/1.1) and over gRPC (h2c): cubby vs @connectrpc/connect-node on Node.js
//   - REST GET /v1/files/{id}: cubby's one port vs the same app on a bare Bun.serve
// Needs h2load and wrk: apt-get install nghttp2-client wrk.
// Usage: bun scripts/bench/rpc.ts [--seconds N] [--rounds N] [--markdown FILE]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { Subprocess } from "bun";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "5" }, rounds: { type: "string", default: "3" }, markdown: { type: "string" } },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const root = path.resolve(import.meta.dir, "../..");

for (const tool of ["h2load", "wrk", "node"]) {
  if (Bun.which(tool) === null) {
    console.error(`missing ${tool}: apt-get install nghttp2-client wrk (node comes with the machine)`);
    process.exit(2);
  }
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-bench-"));
const children: Subprocess[] = [];
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
  fs.rmSync(work, { recursive: true, force: true });
});

/** Spawns a process and resolves with the first stdout match of `ready`; stdout keeps draining. */
async function spawnReady(cmd: string[], ready: RegExp): Promise<RegExpExecArray> {
  const proc = Bun.spawn(cmd, { cwd: root, stdout: "pipe", stderr: "inherit" });
  children.push(proc);
  const decoder = new TextDecoder();
  let seen = "";
  const reader = proc.stdout.getReader();
  while (true) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${cmd.join(" ")} exited before ${ready}: ${seen}`);
    seen += decoder.decode(value);
    const m = ready.exec(seen);
    if (m) {
      void (async () => {
        while (!(await reader.read()).done);
      })();
      return m;
    }
  }
}

async function run(cmd: string[]): Promise<string> {
  const proc = Bun.spawn(cmd, { cwd: root, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (${code}): ${err}${out}`);
  return out;
}

// --- setup: cubby, a key, a file; the bare Bun.serve; the Node anchor ---
const dataDir = path.join(work, "data");
const bun = process.execPath;
const cubbyPort = Number((await spawnReady([bun, "src/main.ts", "serve", "--port", "0", "--data-dir", dataDir], /listening on port (\d+)/))[1]);
const key = (await run([bun, "src/main.ts", "keys", "create", "--email", "bench@example.com", "--data-dir", dataDir])).trim();
const created = await fetch(`http://127.0.0.1:${cubbyPort}/v1/files?visibility=public`, {
  method: "POST",
  body: new Uint8Array(4096),
  headers: { authorization: `Bearer ${key}` },
});
const fileId = ((await created.json()) as { id: string }).id;
const barePort = Number((await spawnReady([bun, "scripts/bench/bare-server.ts", dataDir], /listening on port (\d+)/))[1]);
const anchorJs = path.join(work, "node-anchor.mjs");
await run([bun, "build", "scripts/bench/node-anchor.ts", "--target=node", "--format=esm", `--outfile=${anchorJs}`]);
const anchor = await spawnReady(["node", anchorJs], /h1=(\d+) h2=(\d+)/);
const [nodeH1, nodeH2] = [Number(anchor[1]), Number(anchor[2])];

// Request bodies: Connect unary JSON, and a gRPC length-prefixed message (GetFileRequest{id}).
const connectBody = path.join(work, "connect.json");
fs.writeFileSync(connectBody, JSON.stringify({ id: fileId }));
const idBytes = Buffer.from(fileId);
const message = Buffer.concat([Buffer.from([0x0a, idBytes.length]), idBytes]);
const grpcFrame = Buffer.alloc(5 + message.length);
grpcFrame.writeUInt32BE(message.length, 1);
message.copy(grpcFrame, 5);
const grpcBody = path.join(work, "grpc.bin");
fs.writeFileSync(grpcBody, grpcFrame);

const auth = `authorization: Bearer ${key}`;
const path_ = "/cubby.v1.FileService/GetFile";

/** requests/s from h2load, failing on any non-2xx or error. */
async function h2load(url: string, args: string[]): Promise<number> {
  const out = await run(["h2load", "-D", String(SECONDS), "--warm-up-time=1", ...args, url]);
  const rps = /finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(out);
  const status = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  const reqs = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(out);
  if (!rps || !status || !reqs) throw new Error(`unexpected h2load output:\n${out}`);
  if (status[3] !== "0" || status[4] !== "0" || reqs[2] !== "0" || reqs[3] !== "0") throw new Error(`h2load saw failures:\n${out}`);
  return Number(rps[1]);
}

/** requests/s from wrk, failing on non-2xx responses. */
async function wrk(url: string, headers: string[]): Promise<number> {
  const out = await run(["wrk", "-t", "1", "-c", "32", "-d", `${SECONDS}s`, ...headers.flatMap((h) => ["-H", h]), url]);
  if (/Non-2xx or 3xx responses/.test(out)) throw new Error(`wrk saw errors:\n${out}`);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]);
}

const connectArgs = ["--h1", "-c", "32", "-d", connectBody, "-H", "content-type: application/json", "-H", auth];
const grpcArgs = ["-c", "8", "-m", "16", "-d", grpcBody, "-H", "content-type: application/grpc", "-H", "te: trailers", "-H", auth];

interface Row {
  workload: string;
  subject: string;
  anchorName: string;
  subjectRps: number[];
  anchorRps: number[];
  target: number;
}
const rows: Row[] = [
  { workload: "GetFile, Connect over HTTP/1.1 (32 conns)", subject: "cubby", anchorName: "connect-node on Node.js", subjectRps: [], anchorRps: [], target: 1.5 },
  { workload: "GetFile, gRPC over h2c (8 conns × 16 streams)", subject: "cubby", anchorName: "connect-node on Node.js", subjectRps: [], anchorRps: [], target: 1.5 },
  { workload: "REST GET /v1/files/{id} (32 conns)", subject: "cubby one port", anchorName: "same app on bare Bun.serve", subjectRps: [], anchorRps: [], target: 0.8 },
];
const measure: [() => Promise<number>, () => Promise<number>][] = [
  [() => h2load(`http://127.0.0.1:${cubbyPort}${path_}`, connectArgs), () => h2load(`http://127.0.0.1:${nodeH1}${path_}`, connectArgs)],
  [() => h2load(`http://127.0.0.1:${cubbyPort}${path_}`, grpcArgs), () => h2load(`http://127.0.0.1:${nodeH2}${path_}`, grpcArgs)],
  [() => wrk(`http://127.0.0.1:${cubbyPort}/v1/files/${fileId}`, [auth]), () => wrk(`http://127.0.0.1:${barePort}/v1/files/${fileId}`, [auth])],
];

for (let round = 0; round < ROUNDS; round++) {
  for (const [i, [subject, anchorRun]] of measure.entries()) {
    // Alternate which side goes first so drift does not favour one.
    if (round % 2 === 0) {
      rows[i]!.subjectRps.push(await subject());
      rows[i]!.anchorRps.push(await anchorRun());
    } else {
      rows[i]!.anchorRps.push(await anchorRun());
      rows[i]!.subjectRps.push(await subject());
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const lines = [
  `| workload | ${"subject"} req/s | anchor | anchor req/s | ratio | target |`,
  "|---|---|---|---|---|---|",
  ...rows.map((r) => {
    const s = median(r.subjectRps);
    const a = median(r.anchorRps);
    const ratio = s / a;
    return `| ${r.workload} | ${s.toFixed(0)} | ${r.anchorName} | ${a.toFixed(0)} | ${ratio.toFixed(2)}× | ≥ ${r.target}× ${ratio >= r.target ? "✓" : "✗"} |`;
  }),
];
const header = `RPC / one-port benchmark: ${ROUNDS} alternating rounds of ${SECONDS}s each, medians; ${os.cpus().length} cores, Bun ${Bun.version}, ${(await run(["node", "--version"])).trim()}`;
console.log(`${header}\n\n${lines.join("\n")}`);
if (values.markdown) fs.writeFileSync(values.markdown, `${header}\n\n${lines.join("\n")}\n`);
process.exit(0);
