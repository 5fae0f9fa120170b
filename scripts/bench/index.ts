/**
 * `npm run bench`: builds dist/cubby, starts it on a fresh data directory and measures each
 * workload of issue 6 side by side with its anchor in the same run, alternating which goes
 * first in each round so machine drift cancels. Prints a table of absolute figures and ratios
 * (medians over the rounds), and writes it with an SVG bar chart of the ratios into
 * docs/benchmarks.md and docs/benchmarks.svg.
 *
 *   npm run bench                      # 3 rounds of 5 s per workload; writes docs/
 *   npm run bench -- --smoke           # 1 round of 1 s, small sizes, writes nothing (CI)
 *   npm run bench -- --seconds 10 --rounds 5 --no-build
 *   npm run bench -- --only 4,5 --binary ../old/dist/cubby   # another build, this harness
 *
 * Installs nothing: a missing tool is named with the command that installs it, and the rows
 * that need it are reported as skipped. Workload 18 (S3 against `aws s3 cp`) needs Debian's
 * `apt-get install awscli`, found at /usr/bin/aws before any other `aws` on PATH; workload 19
 * (WebDAV PROPFIND against `rclone serve webdav`) Debian's `apt-get install rclone`; workload 20
 * (cubby's own S3 endpoint) the AWS CLI again, and restic for its backup row.
 */
import { S3Client, type Subprocess } from "bun";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { chartSvg, markdownTable, type Row } from "./report.ts";
import { awsCli, awsCp, awsS3At, awsStartup, s3DirectUpload, s3DownloadSpeed, s3GetRate, startStores, storesInstalled, type S3Target } from "./stores.ts";
import * as tus from "tus-js-client";
// @ts-ignore: a browser module in plain JavaScript (web/ is not type-checked).
import { tusOptions as shippedTusOptions } from "../../web/tus-options.js";

const { values: flags } = parseArgs({
  options: {
    smoke: { type: "boolean", default: false },
    seconds: { type: "string" },
    rounds: { type: "string" },
    "no-build": { type: "boolean", default: false },
    /** Measures this executable (an older commit's build, say) instead of building dist/cubby. */
    binary: { type: "string" },
    only: { type: "string" },
  },
});
/** The dashboard's and guest page's tus settings for a file of `size` bytes, as they ship. */
const tusOptions = shippedTusOptions as (size: number) => { chunkSize: number; parallelUploads: number; retryDelays: number[] };
/** `--only 1,4`: just those numbered workloads (see the comments below); writes nothing. */
const ONLY = flags.only?.split(",").map(Number);
const want = (n: number) => ONLY === undefined || ONLY.includes(n);
const SMOKE = flags.smoke;
const SECONDS = Number(flags.seconds ?? (SMOKE ? 1 : 5));
const ROUNDS = Number(flags.rounds ?? (SMOKE ? 1 : 3));
const LARGE = SMOKE ? 64 * 2 ** 20 : 2 ** 30;
const HUGE = SMOKE ? 64 * 2 ** 20 : 4 * 2 ** 30;
/** The large file on PostgreSQL + S3 (issue 13's rows). */
const MEDIUM = SMOKE ? 16 * 2 ** 20 : 256 * 2 ** 20;
const LIST_FILES = SMOKE ? 1000 : 10_000;
const root = path.resolve(import.meta.dir, "../..");
const bun = process.execPath;
const cubby = flags.binary === undefined ? path.join(root, "dist/cubby") : path.resolve(flags.binary);

// --- tools ---
const TOOLS: Record<string, string> = {
  wrk: "apt-get install wrk",
  h2load: "apt-get install nghttp2-client",
  nginx: "apt-get install nginx-light",
  curl: "apt-get install curl",
  dd: "apt-get install coreutils",
  node: "install Node.js (https://nodejs.org)",
  aws: "apt-get install awscli",
  rclone: "apt-get install rclone",
  restic: "apt-get install restic",
};
const which = (tool: string) =>
  tool === "aws" ? (awsCli() ?? null) : (Bun.which(tool) ?? (tool === "nginx" && fs.existsSync("/usr/sbin/nginx") ? "/usr/sbin/nginx" : null));
const missing = Object.keys(TOOLS).filter((t) => which(t) === null);
for (const t of missing) console.error(`bench: ${t} is missing (${TOOLS[t]}); the rows that need it are skipped`);
if (missing.length > 0) console.error("bench: all anchors at once: apt-get install nginx-light wrk nghttp2-client");
const has = (...tools: string[]) => tools.every((t) => !missing.includes(t));

// --- processes and files ---
const work = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-bench-"));
const children = new Set<Subprocess>();
/**
 * SIGKILLs `proc`'s whole process group: every long-running child is spawned detached (a group
 * of its own), so nginx's workers and cubby's (WORKERS > 1) go with their master.
 */
const killGroup = (proc: Subprocess) => {
  try {
    process.kill(-proc.pid, "SIGKILL");
  } catch {
    proc.kill("SIGKILL");
  }
  children.delete(proc);
};
const cleanup = () => {
  for (const c of [...children]) killGroup(c);
  fs.rmSync(work, { recursive: true, force: true });
};
process.on("exit", cleanup);
// A stopped bench (Ctrl-C, `kill`, `timeout`) stops what it started too.
process.on("SIGINT", () => process.exit(130));
process.on("SIGTERM", () => process.exit(143));

let spawned = 0;
/**
 * Spawns a long-running process with its stdout (cubby's access log) in a file of the work
 * directory, as nginx's access log is: nothing in the bench reads it while the process serves.
 * Resolves with the first match of `ready` in it, watching the file for writes.
 * @throws when the process exits before printing it
 */
async function spawnReady(cmd: string[], ready: RegExp, env: Record<string, string> = {}): Promise<{ proc: Subprocess; match: RegExpExecArray }> {
  const log = path.join(work, `stdout-${++spawned}.log`);
  const fd = fs.openSync(log, "a");
  const proc = Bun.spawn(cmd, { cwd: root, stdout: fd, stderr: "inherit", env: { ...process.env, ...env }, detached: true });
  fs.closeSync(fd);
  children.add(proc);
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const watcher = fs.watch(log);
    const check = () => {
      const seen = fs.readFileSync(log, "utf8");
      const m = ready.exec(seen);
      if (m !== null || proc.exitCode !== null) watcher.close();
      if (m !== null) resolve(m);
      else if (proc.exitCode !== null) reject(new Error(`${cmd.join(" ")} exited before printing ${ready}: ${seen}`));
    };
    watcher.on("change", check);
    void proc.exited.then(check);
    check();
  });
  return { proc, match };
}

/** Runs a command to completion. @returns stdout and stderr @throws on a non-zero exit */
async function run(cmd: string[], opts: { stdin?: Blob; env?: Record<string, string> } = {}): Promise<{ out: string; err: string }> {
  const proc = Bun.spawn(cmd, { cwd: root, stdout: "pipe", stderr: "pipe", stdin: opts.stdin ?? "ignore", env: { ...process.env, ...opts.env } });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (${code}): ${err}${out}`);
  return { out, err };
}

/** A TCP port free right now (for servers that cannot be told to pick one). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Writes `size` bytes of incompressible data (a random 16 MiB block repeated) to `file`. */
function writeRandomFile(file: string, size: number): void {
  const block = crypto.getRandomValues(new Uint8Array(Math.min(size, 16 * 2 ** 20)));
  const fd = fs.openSync(file, "w");
  for (let off = 0; off < size; off += block.byteLength) fs.writeSync(fd, block, 0, Math.min(block.byteLength, size - off));
  fs.closeSync(fd);
}

// --- load generators ---
/** wrk at `connections`: requests/s, p50 and p99 in ms. @throws on any non-2xx answer or socket error */
async function wrk(url: string, opts: { connections: number; threads?: number; headers?: string[]; script?: string }): Promise<{ rps: number; p50: number; p99: number }> {
  const args = ["wrk", "-t", String(opts.threads ?? 1), "-c", String(opts.connections), "-d", `${SECONDS}s`, "--latency"];
  for (const h of opts.headers ?? []) args.push("-H", h);
  if (opts.script) args.push("-s", opts.script);
  const { out } = await run([...args, url]);
  if (/Non-2xx or 3xx responses/.test(out) || /Socket errors: connect \d+, read \d+, write \d+, timeout [1-9]/.test(out)) {
    throw new Error(`wrk saw errors:\n${out}`);
  }
  const ms = (label: string) => {
    const m = new RegExp(`${label}%\\s+([\\d.]+)(us|ms|s)`).exec(out);
    if (!m) return NaN;
    return Number(m[1]) * (m[2] === "us" ? 0.001 : m[2] === "s" ? 1000 : 1);
  };
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]), p50: ms("50"), p99: ms("99") };
}

/** h2load over h2c (or HTTP/1.1 with `--h1`): requests/s. @throws on any failure */
async function h2load(url: string, args: string[]): Promise<number> {
  const { out } = await run(["h2load", "-D", String(SECONDS), "--warm-up-time=1", ...args, url]);
  const rps = /finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(out);
  const status = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  const reqs = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(out);
  if (!rps || !status || !reqs) throw new Error(`unexpected h2load output:\n${out}`);
  if (status[3] !== "0" || status[4] !== "0" || reqs[2] !== "0" || reqs[3] !== "0") throw new Error(`h2load saw failures:\n${out}`);
  return Number(rps[1]);
}

/** One curl transfer: MB/s (10^6 bytes per second) from curl's own measurement. */
async function curlSpeed(args: string[], field: "speed_download" | "speed_upload"): Promise<number> {
  const { out } = await run(["curl", "-sS", "--fail", "-o", "/dev/null", "-w", `%{${field}}`, ...args]);
  return Number(out) / 1e6;
}

/** 1073741824 → "1 GiB", 67108864 → "64 MiB". */
const size = (bytes: number) => (bytes >= 2 ** 30 ? `${bytes / 2 ** 30} GiB` : `${bytes / 2 ** 20} MiB`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Runs subject and anchor ROUNDS times, alternating which goes first. @returns the medians */
async function pair(subject: () => Promise<number>, anchor: () => Promise<number>): Promise<[number, number]> {
  const s: number[] = [];
  const a: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      s.push(await subject());
      a.push(await anchor());
    } else {
      a.push(await anchor());
      s.push(await subject());
    }
  }
  return [median(s), median(a)];
}

// --- setup ---
if (flags.binary === undefined && (!flags["no-build"] || !fs.existsSync(cubby))) {
  console.error("bench: building dist/cubby");
  await run([bun, "scripts/build.ts"]);
}
const www = path.join(work, "www");
fs.mkdirSync(www);
const small = crypto.getRandomValues(new Uint8Array(4096));
fs.writeFileSync(path.join(www, "small.bin"), small);
writeRandomFile(path.join(www, "large.bin"), LARGE);

const dataDir = path.join(work, "data");
// One serving process, like the one-worker nginx and the bare Bun.serve it is compared with;
// workload 15 runs WORKERS=2 against nginx with two workers.
const cubbyEnv = { RATE_LIMIT_AUTH_FAILURES: "0", RATE_LIMIT_SIGN_INS: "0", WORKERS: "1" };
const server = await spawnReady([cubby, "serve", "--port", "0", "--data-dir", dataDir], /listening on port (\d+)/, cubbyEnv);
const base = `http://127.0.0.1:${server.match[1]}`;
const mintKey = async (email: string) => (await run([cubby, "keys", "create", "--email", email, "--data-dir", dataDir])).out.trim();
const key = await mintKey("bench@example.com");
const auth = `authorization: Bearer ${key}`;
const upload = async (body: ConstructorParameters<typeof Response>[0], query: string) => {
  const res = await fetch(`${base}/v1/files${query}`, { method: "POST", body, headers: { authorization: `Bearer ${key}` } });
  if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
};
const publicId = await upload(small, "?visibility=public");
const internalId = await upload(small, "?visibility=internal");
const largeId = await upload(Bun.file(path.join(www, "large.bin")), "?visibility=public");

/**
 * Starts nginx with `servers` in its http block, in `dir`, and waits until `probe` answers 200:
 * one process (no master) by default, else a master and `workers` workers, in a process group
 * of their own that {@link killGroup} stops whole. With `accessLog` (an anchor for cubby, which
 * logs every request) every request is logged to a file, buffered as cubby's log is batched.
 */
async function startNginx(dir: string, servers: string, probe: string, opts: { workers?: number; accessLog?: boolean } = {}): Promise<Subprocess> {
  const workers = opts.workers ?? 0;
  fs.mkdirSync(dir, { recursive: true });
  const conf = path.join(dir, "nginx.conf");
  const user = process.getuid?.() === 0 ? "user root root;" : "";
  fs.writeFileSync(
    conf,
    `${user}
${workers === 0 ? "master_process off;\nworker_processes 1;" : `worker_processes ${workers};`}
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log ${opts.accessLog === true ? `${dir}/access.log combined buffer=64k flush=1s` : "off"};
  client_body_temp_path ${dir}/nginx-body;
  proxy_temp_path ${dir}/nginx-proxy;
  fastcgi_temp_path ${dir}/nginx-fastcgi;
  uwsgi_temp_path ${dir}/nginx-uwsgi;
  scgi_temp_path ${dir}/nginx-scgi;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  default_type application/octet-stream;
${servers}
}
`,
  );
  const proc = Bun.spawn([which("nginx")!, "-c", conf, "-p", dir, "-g", "daemon off;"], { stderr: "inherit", detached: true });
  children.add(proc);
  for (let i = 0; ; i++) {
    if ((await fetch(probe).then((r) => r.status).catch(() => 0)) === 200) return proc;
    if (i === 500 || proc.exitCode !== null) throw new Error(`nginx did not come up: ${fs.readFileSync(path.join(dir, "nginx-error.log"), "utf8")}`);
    await Bun.sleep(10); // nginx has no readiness signal on stdout; poll its port
  }
}

let nginxPort: number | undefined;
if (has("nginx")) {
  nginxPort = await freePort();
  await startNginx(path.join(work, "nginx"), `  server { listen 127.0.0.1:${nginxPort}; root ${www}; }`, `http://127.0.0.1:${nginxPort}/small.bin`, { accessLog: true });
}
const bunFile = await spawnReady([bun, "scripts/bench/anchor-bun-file.ts", path.join(www, "small.bin")], /listening on port (\d+)/);
const bunFileH2 = await spawnReady([bun, "scripts/bench/anchor-bun-file.ts", path.join(www, "small.bin"), "--h2"], /listening on port (\d+)/);

const rows: Row[] = [];
const skip = (workload: string, tools: string[]) =>
  rows.push({ workload, how: "", value: NaN, unit: "", anchor: `skipped: ${tools.filter((t) => missing.includes(t)).join(", ")} missing` });
const step = (name: string) => console.error(`bench: ${name}`);

// 1. Small public GET over HTTP/1.1.
if (want(1) && has("wrk", "nginx")) {
  step("small public GET vs nginx");
  const [c, n] = await pair(
    async () => (await wrk(`${base}/${publicId}`, { connections: 32 })).rps,
    async () => (await wrk(`http://127.0.0.1:${nginxPort}/small.bin`, { connections: 32 })).rps,
  );
  rows.push({ workload: "small public GET (4 KiB)", how: "wrk, HTTP/1.1, 32 connections", value: c, unit: "req/s", anchor: "nginx static file", anchorValue: n, target: 0.6 });
} else if (ONLY === undefined) skip("small public GET (4 KiB) vs nginx", ["wrk", "nginx"]);
if (want(1) && has("wrk")) {
  step("small public GET vs Bun.serve + Bun.file");
  const [c, b] = await pair(
    async () => (await wrk(`${base}/${publicId}`, { connections: 32 })).rps,
    async () => (await wrk(`http://127.0.0.1:${bunFile.match[1]}/`, { connections: 32 })).rps,
  );
  rows.push({ workload: "small public GET (4 KiB)", how: "wrk, HTTP/1.1, 32 connections", value: c, unit: "req/s", anchor: "bare Bun.serve + Bun.file", anchorValue: b, target: 1.0 });
} else if (ONLY === undefined) skip("small public GET (4 KiB) vs Bun.serve", ["wrk"]);

// 2. Small GET over h2c.
if (want(2) && has("h2load")) {
  step("small GET over h2c");
  const args = ["-c", "8", "-m", "16"];
  const [c, b] = await pair(
    () => h2load(`${base}/${publicId}`, args),
    () => h2load(`http://127.0.0.1:${bunFileH2.match[1]}/`, args),
  );
  rows.push({ workload: "small public GET over h2c", how: "h2load, 8 connections × 16 streams", value: c, unit: "req/s", anchor: "bare Bun.serve (http2) + Bun.file", anchorValue: b, target: 0.6 });
} else if (ONLY === undefined) skip("small public GET over h2c", ["h2load"]);

// 3. Authenticated GET: the cost of a bearer key over the public GET.
if (want(3) && has("wrk")) {
  step("authenticated GET");
  const [a, p] = await pair(
    async () => (await wrk(`${base}/${internalId}`, { connections: 32, headers: [auth] })).rps,
    async () => (await wrk(`${base}/${publicId}`, { connections: 32 })).rps,
  );
  rows.push({ workload: "authenticated GET (4 KiB, bearer key)", how: "wrk, HTTP/1.1, 32 connections", value: a, unit: "req/s", anchor: "cubby's public GET", anchorValue: p, target: 0.8 });
} else if (ONLY === undefined) skip("authenticated GET", ["wrk"]);

// 4. Large download.
if (want(4) && has("curl", "nginx")) {
  step("large download");
  const [c, n] = await pair(
    () => curlSpeed([`${base}/${largeId}`], "speed_download"),
    () => curlSpeed([`http://127.0.0.1:${nginxPort}/large.bin`], "speed_download"),
  );
  rows.push({ workload: `large download (${size(LARGE)})`, how: "curl -o /dev/null", value: c, unit: "MB/s", anchor: "nginx static file", anchorValue: n, target: 0.8 });
} else if (ONLY === undefined) skip("large download", ["curl", "nginx"]);

// 5. Large upload, against dd writing the same bytes to the same disk with an fsync.
if (want(5) && has("curl", "dd")) {
  step("large upload");
  const src = path.join(www, "large.bin");
  const [c, d] = await pair(
    async () => {
      const { out } = await run(["curl", "-sS", "--fail", "-X", "POST", "-T", src, "-H", auth, "-w", "\n%{speed_upload}", `${base}/v1/files`]);
      const [json, speed] = out.split("\n");
      await fetch(`${base}/v1/files/${(JSON.parse(json!) as { id: string }).id}`, { method: "DELETE", headers: { authorization: `Bearer ${key}` } });
      return Number(speed) / 1e6;
    },
    async () => {
      const out = path.join(dataDir, "dd.out");
      const started = performance.now();
      await run(["dd", `if=${src}`, `of=${out}`, "bs=1M", "conv=fsync", "status=none"]);
      const seconds = (performance.now() - started) / 1000;
      fs.rmSync(out);
      return LARGE / seconds / 1e6;
    },
  );
  rows.push({ workload: `large upload (${size(LARGE)})`, how: "curl -T, POST /v1/files", value: c, unit: "MB/s", anchor: "dd bs=1M conv=fsync, same disk", anchorValue: d, target: 0.9 });
} else if (ONLY === undefined) skip("large upload", ["curl", "dd"]);

// 6. Small uploads: latency at 16 connections.
if (want(6) && has("wrk")) {
  step("small uploads");
  const script = path.join(work, "post.lua");
  fs.writeFileSync(script, `wrk.method = "POST"\nwrk.body = string.rep("x", 65536)\nwrk.headers["Content-Type"] = "application/octet-stream"\n`);
  const uploader = await mintKey("uploads@example.com");
  const r = await wrk(`${base}/v1/files`, { connections: 16, headers: [`authorization: Bearer ${uploader}`], script });
  rows.push({ workload: "small uploads (64 KiB)", how: "wrk POST /v1/files, 16 connections", value: r.rps, unit: "req/s", anchor: `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms` });
} else if (ONLY === undefined) skip("small uploads", ["wrk"]);

// 7. RPC unary against connect-node on Node.js.
if (want(7) && has("h2load", "node")) {
  step("RPC unary");
  const anchorJs = path.join(work, "node-anchor.mjs");
  await run([bun, "build", "scripts/bench/node-anchor.ts", "--target=node", "--format=esm", `--outfile=${anchorJs}`]);
  const nodeAnchor = await spawnReady(["node", anchorJs], /h1=(\d+) h2=(\d+)/);
  const connectBody = path.join(work, "connect.json");
  fs.writeFileSync(connectBody, JSON.stringify({ id: publicId }));
  const idBytes = Buffer.from(publicId);
  const message = Buffer.concat([Buffer.from([0x0a, idBytes.length]), idBytes]);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  const grpcBody = path.join(work, "grpc.bin");
  fs.writeFileSync(grpcBody, frame);
  const rpcPath = "/cubby.v1.FileService/GetFile";
  const connectArgs = ["--h1", "-c", "32", "-d", connectBody, "-H", "content-type: application/json", "-H", auth];
  const grpcArgs = ["-c", "8", "-m", "16", "-d", grpcBody, "-H", "content-type: application/grpc", "-H", "te: trailers", "-H", auth];
  const [cc, nc] = await pair(
    () => h2load(`${base}${rpcPath}`, connectArgs),
    () => h2load(`http://127.0.0.1:${nodeAnchor.match[1]}${rpcPath}`, connectArgs),
  );
  rows.push({ workload: "RPC GetFile, Connect (HTTP/1.1)", how: "h2load --h1, 32 connections", value: cc, unit: "req/s", anchor: "connect-node on Node.js", anchorValue: nc, target: 2 });
  const [cg, ng] = await pair(
    () => h2load(`${base}${rpcPath}`, grpcArgs),
    () => h2load(`http://127.0.0.1:${nodeAnchor.match[2]}${rpcPath}`, grpcArgs),
  );
  rows.push({ workload: "RPC GetFile, gRPC (h2c)", how: "h2load, 8 connections × 16 streams", value: cg, unit: "req/s", anchor: "connect-node on Node.js", anchorValue: ng, target: 2 });
} else if (ONLY === undefined) skip("RPC unary", ["h2load", "node"]);

// 8. List with LIST_FILES files in the store (one user's).
if (want(8) && has("h2load", "wrk")) {
  step(`list (seeding ${LIST_FILES} files)`);
  const lister = await mintKey("list@example.com");
  const body = path.join(work, "1k.bin");
  fs.writeFileSync(body, new Uint8Array(1024));
  await run(["h2load", "-n", String(LIST_FILES), "-c", "16", "-d", body, "-H", `authorization: Bearer ${lister}`, `${base}/v1/files`]);
  const r = await wrk(`${base}/v1/files?page_size=100`, { connections: 32, headers: [`authorization: Bearer ${lister}`] });
  rows.push({ workload: `list, page_size=100 (${LIST_FILES} files)`, how: "wrk, 32 connections", value: r.rps, unit: "req/s", anchor: `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms` });
} else if (ONLY === undefined) skip("list", ["h2load", "wrk"]);

// 9. Start: spawn → first /healthz 200 on an empty data directory; and the binary's size.
if (want(9)) {
  step("start");
  /** Median ms from spawn to the first /healthz 200 over fresh data directories, with `workers` serving processes. */
  const startTime = async (workers: string) => {
    const times: number[] = [];
    for (let i = 0; i < (SMOKE ? 2 : 7); i++) {
      const port = await freePort();
      const dir = path.join(work, `start-${workers}-${i}`);
      const started = performance.now();
      const proc = Bun.spawn([cubby, "serve", "--port", String(port), "--data-dir", dir], { stdout: "ignore", stderr: "inherit", env: { ...process.env, ...cubbyEnv, WORKERS: workers }, detached: true });
      children.add(proc);
      for (;;) {
        const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status === 200, () => false);
        if (ok) break;
        if (proc.exitCode !== null) throw new Error("cubby exited during the start measurement");
      }
      times.push(performance.now() - started);
      killGroup(proc);
      await proc.exited;
    }
    return { value: median(times), how: `median of ${times.length}, empty data dir` };
  };
  const one = await startTime("1");
  rows.push({ workload: "start to first /healthz 200", how: one.how, value: one.value, unit: "ms", anchor: "", target: 60, lowerIsBetter: true });
  const two = await startTime("2");
  rows.push({ workload: "start to first /healthz 200, WORKERS=2", how: `${two.how}; the first worker to listen answers`, value: two.value, unit: "ms", anchor: "", lowerIsBetter: true });
  rows.push({ workload: "binary size", how: "dist/cubby", value: fs.statSync(cubby).size / 2 ** 20, unit: "MiB", anchor: "" });
}

// 10. Memory: peak RSS of a fresh server while a HUGE upload and a HUGE download run at once.
if (want(10) && has("curl")) {
  step(`memory (${size(HUGE)} up and down at once)`);
  const dir = path.join(work, "memory");
  const mem = await spawnReady([cubby, "serve", "--port", "0", "--data-dir", dir], /listening on port (\d+)/, cubbyEnv);
  const memBase = `http://127.0.0.1:${mem.match[1]}`;
  const memKey = (await run([cubby, "keys", "create", "--email", "m@example.com", "--data-dir", dir])).out.trim();
  const hugeFile = path.join(work, "huge.bin");
  writeRandomFile(hugeFile, HUGE);
  const put = async () => {
    const { out } = await run(["curl", "-sS", "--fail", "-X", "POST", "-T", hugeFile, "-H", `authorization: Bearer ${memKey}`, `${memBase}/v1/files?visibility=public`]);
    return (JSON.parse(out) as { id: string }).id;
  };
  const hugeId = await put();
  // Reset the kernel's peak-RSS mark (VmHWM) so only the concurrent transfers count.
  const pid = mem.proc.pid;
  fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
  let sampled = 0;
  const sampler = setInterval(() => {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    if (m) sampled = Math.max(sampled, Number(m[1]) * 1024);
  }, 20);
  await Promise.all([put(), curlSpeed([`${memBase}/${hugeId}`], "speed_download")]);
  clearInterval(sampler);
  const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
  rows.push({
    workload: `peak RSS, ${size(HUGE)} upload + ${size(HUGE)} download at once`,
    how: "VmHWM after reset (clear_refs)",
    value: Math.max(hwm, sampled) / 2 ** 20,
    unit: "MiB",
    anchor: "",
    target: 128,
    lowerIsBetter: true,
  });
  killGroup(mem.proc);
  fs.rmSync(hugeFile);
} else if (ONLY === undefined) skip("memory", ["curl"]);

// 11. PostgreSQL + S3 (issue 13): the same workloads as on SQLite + disk, each against cubby on
// SQLite + disk and against the S3 store read or written directly with the same client
// (Bun.S3Client, the parts cubby uses); 12: GET through nginx to 1 and to 3 instances.
if ((want(11) || want(12) || want(18)) && has("wrk", "curl", "nginx") && storesInstalled()) {
  step("PostgreSQL + S3: starting PostgreSQL and Swift");
  await using stores = await startStores();
  // Behind nginx as docs/scale-out.md sets it up: the proxy is trusted (no per-client limit on it).
  const pgEnv = { ...cubbyEnv, ...stores.env, TRUSTED_PROXIES: "127.0.0.1" };
  const pgDir = path.join(work, "pg-s3");
  const instances: Awaited<ReturnType<typeof spawnReady>>[] = [];
  for (let i = 0; i < (want(12) ? 3 : 1); i++) {
    instances.push(await spawnReady([cubby, "serve", "--port", "0", "--data-dir", `${pgDir}-${i}`], /listening on port (\d+)/, pgEnv));
  }
  const pgBase = `http://127.0.0.1:${instances[0]!.match[1]}`;
  const pgKey = (await run([cubby, "keys", "create", "--email", "bench@example.com", "--data-dir", pgDir], { env: pgEnv })).out.trim();
  const pgUpload = async (file: string, query: string) => {
    const { out } = await run(["curl", "-sS", "--fail", "-X", "POST", "-T", file, "-H", `authorization: Bearer ${pgKey}`, `${pgBase}/v1/files${query}`]);
    return (JSON.parse(out) as { id: string }).id;
  };
  const smallFile = path.join(www, "small.bin");
  const pgPublicId = await pgUpload(smallFile, "?visibility=public");
  const s3 = new S3Client(stores.s3);
  const smallKey = await s3DirectUpload(s3, smallFile);

  if (want(11)) {
    step("PostgreSQL + S3: small public GET");
    const get = async () => (await wrk(`${pgBase}/${pgPublicId}`, { connections: 32 })).rps;
    const how = "wrk, HTTP/1.1, 32 connections";
    const [p1, d1] = await pair(get, async () => (await wrk(`${base}/${publicId}`, { connections: 32 })).rps);
    rows.push({ workload: "small public GET (4 KiB), PostgreSQL + S3", how, value: p1, unit: "req/s", anchor: "cubby on SQLite + disk", anchorValue: d1 });
    const [p2, s2] = await pair(get, () => s3GetRate(s3, smallKey, 32, SECONDS));
    rows.push({ workload: "small public GET (4 KiB), PostgreSQL + S3", how, value: p2, unit: "req/s", anchor: "S3 GET of the object, Bun.S3Client, 32 at once", anchorValue: s2 });

    step(`PostgreSQL + S3: ${size(MEDIUM)} download and upload`);
    const mediumFile = path.join(www, "medium.bin");
    writeRandomFile(mediumFile, MEDIUM);
    const pgMediumId = await pgUpload(mediumFile, "?visibility=public");
    const diskMediumId = await upload(Bun.file(mediumFile), "?visibility=public");
    const mediumKey = await s3DirectUpload(s3, mediumFile);
    const download = () => curlSpeed([`${pgBase}/${pgMediumId}`], "speed_download");
    const [p3, d3] = await pair(download, () => curlSpeed([`${base}/${diskMediumId}`], "speed_download"));
    rows.push({ workload: `large download (${size(MEDIUM)}), PostgreSQL + S3`, how: "curl -o /dev/null", value: p3, unit: "MB/s", anchor: "cubby on SQLite + disk", anchorValue: d3 });
    const [p4, s4] = await pair(download, () => s3DownloadSpeed(s3, mediumKey, MEDIUM));
    rows.push({ workload: `large download (${size(MEDIUM)}), PostgreSQL + S3`, how: "curl -o /dev/null", value: p4, unit: "MB/s", anchor: "S3 GET streamed, Bun.S3Client", anchorValue: s4 });
    const uploadTo = async (origin: string, bearer: string) => {
      const { out } = await run(["curl", "-sS", "--fail", "-X", "POST", "-T", mediumFile, "-H", `authorization: Bearer ${bearer}`, "-w", "\n%{speed_upload}", `${origin}/v1/files`]);
      const [json, speed] = out.split("\n");
      await fetch(`${origin}/v1/files/${(JSON.parse(json!) as { id: string }).id}`, { method: "DELETE", headers: { authorization: `Bearer ${bearer}` } });
      return Number(speed) / 1e6;
    };
    const [p5, d5] = await pair(() => uploadTo(pgBase, pgKey), () => uploadTo(base, key));
    rows.push({ workload: `large upload (${size(MEDIUM)}), PostgreSQL + S3`, how: "curl -T, POST /v1/files", value: p5, unit: "MB/s", anchor: "cubby on SQLite + disk", anchorValue: d5 });
    const [p6, s6] = await pair(() => uploadTo(pgBase, pgKey), async () => {
      const started = performance.now();
      const key = await s3DirectUpload(s3, mediumFile);
      const seconds = (performance.now() - started) / 1000;
      await s3.delete(key);
      return MEDIUM / seconds / 1e6;
    });
    rows.push({ workload: `large upload (${size(MEDIUM)}), PostgreSQL + S3`, how: "curl -T, POST /v1/files", value: p6, unit: "MB/s", anchor: "S3 multipart upload, Bun.S3Client, 5 MiB parts", anchorValue: s6 });
  }

  if (want(11) && has("curl")) {
    // Issue 13's memory bound: ≤ 64 MiB over idle RSS for a LARGE upload and download on S3, each alone.
    step(`PostgreSQL + S3: peak RSS of a ${size(LARGE)} upload and download`);
    const mem = await spawnReady([cubby, "serve", "--port", "0", "--data-dir", `${pgDir}-memory`], /listening on port (\d+)/, pgEnv);
    const memBase = `http://127.0.0.1:${mem.match[1]}`;
    const overIdle = async (transfer: () => Promise<unknown>) => {
      const status = () => fs.readFileSync(`/proc/${mem.proc.pid}/status`, "utf8");
      const idle = Number(/VmRSS:\s+(\d+) kB/.exec(status())![1]) * 1024;
      fs.writeFileSync(`/proc/${mem.proc.pid}/clear_refs`, "5");
      await transfer();
      return (Number(/VmHWM:\s+(\d+) kB/.exec(status())![1]) * 1024 - idle) / 2 ** 20;
    };
    let largeOnS3 = "";
    const up = await overIdle(async () => {
      const { out } = await run(["curl", "-sS", "--fail", "-X", "POST", "-T", path.join(www, "large.bin"), "-H", `authorization: Bearer ${pgKey}`, `${memBase}/v1/files?visibility=public`]);
      largeOnS3 = (JSON.parse(out) as { id: string }).id;
    });
    const down = await overIdle(() => curlSpeed([`${memBase}/${largeOnS3}`], "speed_download"));
    killGroup(mem.proc);
    const how = "VmHWM after reset (clear_refs) minus idle VmRSS";
    rows.push({ workload: `peak RSS over idle, ${size(LARGE)} upload, PostgreSQL + S3`, how, value: up, unit: "MiB", anchor: "", target: 64, lowerIsBetter: true });
    rows.push({ workload: `peak RSS over idle, ${size(LARGE)} download, PostgreSQL + S3`, how, value: down, unit: "MiB", anchor: "", target: 64, lowerIsBetter: true });
  }

  // 18. S3 at the speed of the AWS CLI (issue 28): the LARGE file uploaded with curl -T to cubby
  // on PostgreSQL + S3 and downloaded with curl, against `aws s3 cp` of the same file to and from
  // the same bucket with its default settings (8 MiB parts, 10 requests at once), timed from the
  // CLI's start to its exit; the download is written to a file, as a user of the CLI gets it.
  if (want(18) && has("aws")) {
    step(`PostgreSQL + S3: ${size(LARGE)} upload and download vs aws s3 cp`);
    const src = path.join(www, "large.bin");
    const bucket = `s3://${stores.s3.bucket}`;
    const startups: number[] = [];
    const [up, awsUp] = await pair(
      async () => {
        const { out } = await run(["curl", "-sS", "--fail", "-X", "POST", "-T", src, "-H", `authorization: Bearer ${pgKey}`, "-w", "\n%{speed_upload}", `${pgBase}/v1/files`]);
        const [json, speed] = out.split("\n");
        await fetch(`${pgBase}/v1/files/${(JSON.parse(json!) as { id: string }).id}`, { method: "DELETE", headers: { authorization: `Bearer ${pgKey}` } });
        return Number(speed) / 1e6;
      },
      async () => {
        const key = `aws/${crypto.randomUUID()}`;
        const seconds = await awsCp(stores, work, src, `${bucket}/${key}`);
        await s3.delete(key);
        startups.push(await awsStartup(stores, work));
        return LARGE / seconds / 1e6;
      },
    );
    const version = (await run([awsCli()!, "--version"])).out.split(" ")[0];
    // The CLI's time includes its start (Python importing botocore): said in the row, not taken off.
    const startup = () => `; its start-up (aws s3 ls) ${median(startups).toFixed(1)} s included`;
    rows.push({ workload: `large upload (${size(LARGE)}), PostgreSQL + S3`, how: "curl -T, POST /v1/files", value: up, unit: "MB/s", anchor: `aws s3 cp (${version}), 8 MiB parts, 10 at once${startup()}`, anchorValue: awsUp, target: 1.0 });
    const pgLargeId = await pgUpload(src, "?visibility=public");
    const largeKey = `aws/${crypto.randomUUID()}`;
    await awsCp(stores, work, src, `${bucket}/${largeKey}`);
    const downloaded = path.join(work, "aws-download.bin");
    const [down, awsDown] = await pair(
      () => curlSpeed([`${pgBase}/${pgLargeId}`], "speed_download"),
      async () => {
        const seconds = await awsCp(stores, work, `${bucket}/${largeKey}`, downloaded);
        if (fs.statSync(downloaded).size !== LARGE) throw new Error("aws s3 cp downloaded a short file");
        fs.rmSync(downloaded);
        startups.push(await awsStartup(stores, work));
        return LARGE / seconds / 1e6;
      },
    );
    await s3.delete(largeKey);
    rows.push({ workload: `large download (${size(LARGE)}), PostgreSQL + S3`, how: "curl -o /dev/null", value: down, unit: "MB/s", anchor: `aws s3 cp (${version}) to a file${startup()}`, anchorValue: awsDown, target: 0.9 });
  } else if (ONLY === undefined) skip("PostgreSQL + S3 vs aws s3 cp", ["aws"]);

  if (want(12)) {
    step("PostgreSQL + S3: GET through nginx, 1 and 3 instances");
    const [one, three] = [await freePort(), await freePort()];
    const upstream = (name: string, list: typeof instances) =>
      `  upstream ${name} { ${list.map((i) => `server 127.0.0.1:${i.match[1]};`).join(" ")} keepalive 64; }`;
    const proxy = (port: number, name: string) =>
      `  server { listen 127.0.0.1:${port}; location / { proxy_pass http://${name}; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; } }`;
    await startNginx(
      path.join(work, "nginx-scale"),
      [upstream("one", instances.slice(0, 1)), upstream("three", instances), proxy(one, "one"), proxy(three, "three")].join("\n"),
      `http://127.0.0.1:${three}/healthz`,
    );
    const how = "wrk, HTTP/1.1, 64 connections, nginx round robin";
    const [t, o] = await pair(
      async () => (await wrk(`http://127.0.0.1:${three}/${pgPublicId}`, { connections: 64 })).rps,
      async () => (await wrk(`http://127.0.0.1:${one}/${pgPublicId}`, { connections: 64 })).rps,
    );
    rows.push({ workload: "small public GET (4 KiB), 3 instances on PostgreSQL + S3", how, value: t, unit: "req/s", anchor: "1 instance behind the same nginx", anchorValue: o });
  }
  for (const i of instances) killGroup(i.proc);
} else if (ONLY === undefined) {
  const absent = [...["wrk", "curl", "nginx"].filter((t) => missing.includes(t)), ...(storesInstalled() ? [] : ["postgresql or swift (apt-get install postgresql swift-proxy swift-object swift-container swift-account memcached)"])];
  rows.push({ workload: "PostgreSQL + S3", how: "", value: NaN, unit: "", anchor: `skipped: ${absent.join(", ")} missing` });
}

// 13. Resumable uploads (tus, CONTRACT §8): tus-js-client in this process sending the LARGE file
// in 16 MiB chunks (a size that passes proxies capping bodies, such as Cloudflare's 100 MB, with
// few round trips: each chunk costs a PATCH and an fsync) against one `curl -T` POST of the same
// file to the same server; and the server's peak RSS over idle during such an upload.
/** Uploads `file` through tus to `at`: MB/s over the whole upload; the file it became is deleted after. */
async function tusSpeed(at: string, bearer: string, file: string, bytes: number): Promise<number> {
  const started = performance.now();
  const fileId = await new Promise<string>((resolve, reject) => {
    const upload = new tus.Upload(fs.createReadStream(file), {
      endpoint: `${at}/v1/uploads`,
      chunkSize: 16 * 2 ** 20,
      headers: { authorization: `Bearer ${bearer}` },
      metadata: { filename: path.basename(file) },
      retryDelays: [],
      storeFingerprintForResuming: false,
      onSuccess: (payload) => resolve(payload.lastResponse.getHeader("cubby-file-id") ?? ""),
      onError: reject,
    });
    upload.start();
  });
  const seconds = (performance.now() - started) / 1000;
  await fetch(`${at}/v1/files/${fileId}`, { method: "DELETE", headers: { authorization: `Bearer ${bearer}` } });
  return bytes / seconds / 1e6;
}

if (want(13) && has("curl")) {
  step(`tus upload (${size(LARGE)}) vs one curl -T`);
  const src = path.join(www, "large.bin");
  const [t, c] = await pair(
    () => tusSpeed(base, key, src, LARGE),
    async () => {
      const { out } = await run(["curl", "-sS", "--fail", "-X", "POST", "-T", src, "-H", auth, "-w", "\n%{speed_upload}", `${base}/v1/files`]);
      const [json, speed] = out.split("\n");
      await fetch(`${base}/v1/files/${(JSON.parse(json!) as { id: string }).id}`, { method: "DELETE", headers: { authorization: `Bearer ${key}` } });
      return Number(speed) / 1e6;
    },
  );
  rows.push({ workload: `tus upload (${size(LARGE)}), 16 MiB chunks`, how: "tus-js-client in the bench process", value: t, unit: "MB/s", anchor: "curl -T, one POST /v1/files", anchorValue: c, target: 0.9 });

  step(`tus: peak RSS of a ${size(LARGE)} upload`);
  const dir = path.join(work, "tus-memory");
  const mem = await spawnReady([cubby, "serve", "--port", "0", "--data-dir", dir], /listening on port (\d+)/, cubbyEnv);
  const memKey = (await run([cubby, "keys", "create", "--email", "tus@example.com", "--data-dir", dir])).out.trim();
  const status = () => fs.readFileSync(`/proc/${mem.proc.pid}/status`, "utf8");
  const idle = Number(/VmRSS:\s+(\d+) kB/.exec(status())![1]) * 1024;
  fs.writeFileSync(`/proc/${mem.proc.pid}/clear_refs`, "5");
  await tusSpeed(`http://127.0.0.1:${mem.match[1]}`, memKey, src, LARGE);
  const peak = (Number(/VmHWM:\s+(\d+) kB/.exec(status())![1]) * 1024 - idle) / 2 ** 20;
  killGroup(mem.proc);
  children.delete(mem.proc);
  rows.push({ workload: `peak RSS over idle, ${size(LARGE)} tus upload`, how: "VmHWM after reset (clear_refs) minus idle VmRSS", value: peak, unit: "MiB", anchor: "", target: 64, lowerIsBetter: true });
} else if (ONLY === undefined) skip("tus upload", ["curl"]);

// 16. The dashboard's uploader over a slow link (issue 28): a relay on loopback holding every
// chunk 25 ms each way (a 50 ms round trip) with a 4 MiB window per connection and direction
// (slow-link.ts), through which tus-js-client with the dashboard's own settings (web/tus-options.js:
// 8 MiB requests, several partial uploads side by side, joined by tus concatenation) uploads
// MEDIUM bytes, against one `curl -T` POST of the same file through the same relay. The server
// is one of its own whose HOSTNAME is the relay, so that the upload URLs it hands out (Location)
// lead through the relay too.
if (want(16) && has("curl")) {
  step(`dashboard uploader (${size(MEDIUM)}) over a 50 ms link vs one curl -T over it`);
  const src = path.join(www, "medium.bin");
  writeRandomFile(src, MEDIUM);
  const relayPort = await freePort();
  const through = `http://127.0.0.1:${relayPort}`;
  const dir = path.join(work, "slow-link");
  const behind = await spawnReady([cubby, "serve", "--port", "0", "--data-dir", dir], /listening on port (\d+)/, { ...cubbyEnv, HOSTNAME: through });
  const key = (await run([cubby, "keys", "create", "--email", "slow@example.com", "--data-dir", dir])).out.trim();
  const auth = `authorization: Bearer ${key}`;
  const link = await spawnReady([bun, path.join(import.meta.dir, "slow-link.ts"), String(behind.match[1]), "25", String(4 * 2 ** 20), String(relayPort)], /listening on port (\d+)/);
  const t: number[] = [];
  const c: number[] = [];
  const dashboard = async () => {
    const started = performance.now();
    const fileId = await new Promise<string>((resolve, reject) => {
      const upload = new tus.Upload(fs.createReadStream(src), {
        endpoint: `${through}/v1/uploads`,
        ...tusOptions(MEDIUM),
        headers: { authorization: `Bearer ${key}` },
        metadata: { filename: "medium.bin" },
        storeFingerprintForResuming: false,
        onSuccess: (payload) => {
          if (!upload.url?.startsWith(through)) reject(new Error(`the upload went around the relay: ${upload.url}`));
          resolve(payload.lastResponse.getHeader("cubby-file-id") ?? "");
        },
        onError: reject,
      });
      upload.start();
    });
    const speed = MEDIUM / ((performance.now() - started) / 1000) / 1e6;
    await fetch(`${through}/v1/files/${fileId}`, { method: "DELETE", headers: { authorization: `Bearer ${key}` } });
    t.push(speed);
    return speed;
  };
  const curl = async () => {
    const { out } = await run(["curl", "-sS", "--fail", "-X", "POST", "-T", src, "-H", auth, "-w", "\n%{speed_upload}", `${through}/v1/files`]);
    const [json, speed] = out.split("\n");
    await fetch(`${through}/v1/files/${(JSON.parse(json!) as { id: string }).id}`, { method: "DELETE", headers: { authorization: `Bearer ${key}` } });
    c.push(Number(speed) / 1e6);
    return Number(speed) / 1e6;
  };
  const [tm, cm] = await pair(dashboard, curl);
  killGroup(link.proc);
  killGroup(behind.proc);
  fs.rmSync(src);
  const spread = (xs: number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
  const parts = tusOptions(MEDIUM).parallelUploads;
  rows.push({
    workload: `dashboard uploader (${size(MEDIUM)}) over a 50 ms round trip`,
    how: `tus-js-client, web/tus-options.js (8 MiB requests, ${parts} partial uploads); rounds ${spread(t)} MB/s`,
    value: tm,
    unit: "MB/s",
    anchor: `curl -T, one POST /v1/files, same relay (rounds ${spread(c)} MB/s)`,
    anchorValue: cm,
    target: 0.8,
  });
} else if (ONLY === undefined) skip("dashboard uploader over a slow link", ["curl"]);

// 17. A shared folder's ZIP (issue 29): a folder holding the LARGE file and SMALL_FILES small
// ones, downloaded as one ZIP through its share link, against the LARGE file alone through its
// content URL on the same server (the same blob read, no ZIP; the small files are the ZIP's
// alone, each a row read and a blob opened); and the serving process's peak RSS over idle while
// the ZIP streams. No target: issue 29 asks for the figures, and the 64 MiB of memory.
if (want(17) && has("curl")) {
  step(`folder ZIP (${size(LARGE)} + small files) vs the large file alone`);
  const smallFiles = SMOKE ? 100 : 1000;
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const folder = (await (await fetch(`${base}/v1/folders`, { method: "POST", body: JSON.stringify({ name: "zip bench" }), headers })).json()) as { id: string };
  for (let i = 0; i < smallFiles; i++) await upload(`small file ${i}\n`.repeat(1 + (i % 50)), `?folder_id=${folder.id}&name=small-${i}.txt`);
  const moved = await fetch(`${base}/v1/folders/${folder.id}/files/${largeId}`, { method: "PUT", headers });
  if (moved.status !== 200) throw new Error(`moving the large file into the folder: ${moved.status}`);
  const share = (await (await fetch(`${base}/v1/folders/${folder.id}/shares`, { method: "POST", body: "{}", headers })).json()) as { url: string };
  const zipUrl = `${share.url}?download=zip`;
  const [z, f] = await pair(
    () => curlSpeed([zipUrl], "speed_download"),
    () => curlSpeed([`${base}/${largeId}`], "speed_download"),
  );
  rows.push({ workload: `shared folder as one ZIP (${size(LARGE)} + ${smallFiles} small files)`, how: "curl -o /dev/null, /s/{token}?download=zip", value: z, unit: "MB/s", anchor: "the large file alone, its content URL", anchorValue: f });
  const pid = server.proc.pid;
  const status = () => fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const idle = Number(/VmRSS:\s+(\d+) kB/.exec(status())![1]) * 1024;
  fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
  await curlSpeed([zipUrl], "speed_download");
  const peak = (Number(/VmHWM:\s+(\d+) kB/.exec(status())![1]) * 1024 - idle) / 2 ** 20;
  rows.push({ workload: `peak RSS over idle, folder ZIP (${size(LARGE)} + ${smallFiles} small files)`, how: "VmHWM after reset (clear_refs) minus idle VmRSS", value: peak, unit: "MiB", anchor: "", target: 64, lowerIsBetter: true });
} else if (ONLY === undefined) skip("shared folder as one ZIP", ["curl"]);

// 14. Metrics (CONTRACT §9): the small public GET of workload 1 on a server counting every
// request (the default) against one with METRICS=off; both fresh, started alike, each with its own
// data directory holding the same 4 KiB file (the main server has had large uploads: not alike).
/** Starts a fresh server with `env` holding `small` as a public file. @returns its URL for that file */
async function smallFileServer(name: string, env: Record<string, string>): Promise<{ url: string; proc: Subprocess }> {
  const dir = path.join(work, name);
  const started = await spawnReady([cubby, "serve", "--port", "0", "--data-dir", dir], /listening on port (\d+)/, { ...cubbyEnv, ...env });
  const at = `http://127.0.0.1:${started.match[1]}`;
  const bearer = (await run([cubby, "keys", "create", "--email", "bench@example.com", "--data-dir", dir])).out.trim();
  const res = await fetch(`${at}/v1/files?visibility=public`, { method: "POST", body: small, headers: { authorization: `Bearer ${bearer}` } });
  return { url: `${at}/${((await res.json()) as { id: string }).id}`, proc: started.proc };
}

if (want(14) && has("wrk")) {
  step("small public GET: metrics on vs METRICS=off");
  const on = await smallFileServer("metrics-on", {});
  const off = await smallFileServer("metrics-off", { METRICS: "off" });
  const [withMetrics, without] = await pair(
    async () => (await wrk(on.url, { connections: 32 })).rps,
    async () => (await wrk(off.url, { connections: 32 })).rps,
  );
  for (const s of [on, off]) killGroup(s.proc);
  rows.push({ workload: "small public GET (4 KiB), metrics on", how: "wrk, HTTP/1.1, 32 connections", value: withMetrics, unit: "req/s", anchor: "the same, METRICS=off", anchorValue: without, target: 0.95 });
} else if (ONLY === undefined) skip("small public GET, metrics on vs off", ["wrk"]);

// 15. Every core (issue 16): the small public GET of workload 1 on a fresh cubby with WORKERS=2
// against nginx with worker_processes 2, wrk with two threads on both.
if (want(15) && has("wrk", "nginx")) {
  step("small public GET: WORKERS=2 vs nginx with 2 workers");
  const two = await smallFileServer("workers-2", { WORKERS: "2" });
  const nginx2Port = await freePort();
  const nginx2 = await startNginx(path.join(work, "nginx-2"), `  server { listen 127.0.0.1:${nginx2Port}; root ${www}; }`, `http://127.0.0.1:${nginx2Port}/small.bin`, { workers: 2, accessLog: true });
  const [c, n] = await pair(
    async () => (await wrk(two.url, { connections: 64, threads: 2 })).rps,
    async () => (await wrk(`http://127.0.0.1:${nginx2Port}/small.bin`, { connections: 64, threads: 2 })).rps,
  );
  killGroup(two.proc);
  killGroup(nginx2);
  rows.push({ workload: "small public GET (4 KiB), 2 processes each", how: "wrk -t2, HTTP/1.1, 64 connections", value: c, unit: "req/s", anchor: "nginx, worker_processes 2", anchorValue: n, target: 0.9 });
} else if (ONLY === undefined) skip("small public GET, WORKERS=2 vs nginx with 2 workers", ["wrk", "nginx"]);

// 19. WebDAV listing (issue 37 item 6): PROPFIND Depth 1 of a collection of DAV_FILES files,
// with the properties rclone's webdav backend asks for when it lists, against `rclone serve
// webdav` serving a directory of the same files, both with Basic authentication, same wrk.
const DAV_FILES = SMOKE ? 100 : 1000;
if (want(19) && has("wrk", "rclone")) {
  step(`WebDAV PROPFIND Depth 1 of ${DAV_FILES} files: cubby vs rclone serve webdav`);
  const davKey = await mintKey("dav-bench@example.com");
  const basicFor = (user: string, password: string) => `authorization: Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const davAuth = basicFor("bench", davKey);
  const davHeaders = { authorization: davAuth.slice("authorization: ".length) };
  const made = await fetch(`${base}/dav/listing/`, { method: "MKCOL", headers: davHeaders });
  if (made.status !== 201) throw new Error(`MKCOL: ${made.status}`);
  const served = path.join(work, "rclone-www");
  fs.mkdirSync(served);
  const content = (i: number) => `file ${i}\n`.repeat(10);
  const names = Array.from({ length: DAV_FILES }, (_, i) => `file-${String(i).padStart(4, "0")}.txt`);
  for (let i = 0; i < names.length; i += 16) {
    await Promise.all(
      names.slice(i, i + 16).map(async (name, j) => {
        fs.writeFileSync(path.join(served, name), content(i + j));
        const res = await fetch(`${base}/dav/listing/${name}`, { method: "PUT", body: content(i + j), headers: davHeaders });
        if (res.status !== 201) throw new Error(`PUT ${name}: ${res.status}`);
      }),
    );
  }
  const rclonePort = await freePort();
  const rclone = Bun.spawn(["rclone", "serve", "webdav", "--addr", `127.0.0.1:${rclonePort}`, "--user", "bench", "--pass", "secret", "--config", path.join(work, "no-rclone.conf"), served], {
    stdout: "ignore",
    stderr: "ignore",
    detached: true,
    env: { ...process.env, HOME: work },
  });
  children.add(rclone);
  const rcloneAuth = basicFor("bench", "secret");
  const propfindBody =
    '<?xml version="1.0" encoding="utf-8" ?><D:propfind xmlns:D="DAV:"><D:prop><D:displayname/><D:getlastmodified/><D:getcontentlength/><D:resourcetype/><D:getcontenttype/><D:getetag/></D:prop></D:propfind>';
  const listing = async (url: string, auth: string) => {
    const res = await fetch(url, { method: "PROPFIND", body: propfindBody, headers: { depth: "1", authorization: auth.slice("authorization: ".length), "content-type": "application/xml" } });
    return { status: res.status, responses: ((await res.text()).match(/<(?:D:)?response>/gi) ?? []).length };
  };
  for (let i = 0; ; i++) {
    const r = await listing(`http://127.0.0.1:${rclonePort}/`, rcloneAuth).catch(() => ({ status: 0, responses: 0 }));
    if (r.status === 207) break;
    if (i === 500 || rclone.exitCode !== null) throw new Error("rclone serve webdav did not come up");
    await Bun.sleep(10); // rclone has no readiness signal on stdout; poll its port
  }
  const [mine, theirs] = [await listing(`${base}/dav/listing/`, davAuth), await listing(`http://127.0.0.1:${rclonePort}/`, rcloneAuth)];
  if (mine.responses !== DAV_FILES + 1 || theirs.responses !== DAV_FILES + 1) throw new Error(`listings: cubby ${JSON.stringify(mine)}, rclone ${JSON.stringify(theirs)}`);
  const script = path.join(work, "propfind.lua");
  fs.writeFileSync(script, `wrk.method = "PROPFIND"\nwrk.body = ${JSON.stringify(propfindBody)}\nwrk.headers["Depth"] = "1"\nwrk.headers["Content-Type"] = "application/xml"\n`);
  // And with no body (allprop, RFC 4918 §9.1): every live property and every dead one.
  const allprop = path.join(work, "allprop.lua");
  fs.writeFileSync(allprop, `wrk.method = "PROPFIND"\nwrk.headers["Depth"] = "1"\n`);
  const rcloneVersion = (await run(["rclone", "version"])).out.split("\n")[0];
  for (const [how, lua] of [["rclone's listing properties", script], ["no body (allprop)", allprop]] as const) {
    const [c, r] = await pair(
      async () => (await wrk(`${base}/dav/listing/`, { connections: 8, headers: [davAuth], script: lua })).rps,
      async () => (await wrk(`http://127.0.0.1:${rclonePort}/`, { connections: 8, headers: [rcloneAuth], script: lua })).rps,
    );
    rows.push({ workload: `WebDAV PROPFIND Depth 1 (${DAV_FILES} files)`, how: `wrk, 8 connections, ${how}`, value: c, unit: "req/s", anchor: `rclone serve webdav (${rcloneVersion})`, anchorValue: r, target: 1.0 });
  }
  killGroup(rclone);
} else if (ONLY === undefined) skip("WebDAV PROPFIND Depth 1", ["wrk", "rclone"]);

// 20. cubby's own S3 endpoint (CONTRACT §16, issue 42), on SQLite + disk: `aws s3 cp` of the
// LARGE file up (8 MiB parts, 10 at once: a multipart upload) and down against `curl -T` and
// `curl -o` of the same file on the REST path, in the same run, both written to / read from a
// file; the CLI's start-up (an `aws s3 ls`) is measured apart and named in the row. Then
// `restic backup` of RESTIC_FILES small files into a repository on the endpoint (files/s), and
// the serving process's peak RSS over idle while `aws s3 cp` uploads the LARGE file.
const RESTIC_FILES = SMOKE ? 500 : 10_000;
if (want(20) && has("aws", "curl")) {
  step(`cubby's S3 endpoint: ${size(LARGE)} aws s3 cp up and down vs curl on REST`);
  const [accessKeyId, secretAccessKey] = (await run([cubby, "keys", "create", "--s3", "--email", "s3-bench@example.com", "--data-dir", dataDir])).out
    .trim()
    .split("\n")
    .map((l) => l.slice(l.indexOf("=") + 1)) as [string, string];
  const target: S3Target = { endpoint: base, accessKeyId, secretAccessKey, region: "us-east-1" };
  const s3Key = (await run([cubby, "keys", "create", "--email", "s3-bench@example.com", "--data-dir", dataDir])).out.trim();
  const s3Dir = path.join(work, "s3-endpoint");
  fs.mkdirSync(s3Dir);
  await awsS3At(target, s3Dir, ["mb", "s3://bench"]);
  const src = path.join(www, "large.bin");
  const startups: number[] = [];
  const [curlUp, awsUp] = await pair(
    async () => {
      const { out } = await run(["curl", "-sS", "--fail", "-X", "POST", "-T", src, "-H", `authorization: Bearer ${s3Key}`, "-w", "\n%{speed_upload}", `${base}/v1/files`]);
      const [json, speed] = out.split("\n");
      await fetch(`${base}/v1/files/${(JSON.parse(json!) as { id: string }).id}`, { method: "DELETE", headers: { authorization: `Bearer ${s3Key}` } });
      return Number(speed) / 1e6;
    },
    async () => {
      const seconds = await awsS3At(target, s3Dir, ["cp", "--only-show-errors", src, "s3://bench/up.bin"]);
      await awsS3At(target, s3Dir, ["rm", "--only-show-errors", "s3://bench/up.bin"]);
      startups.push(await awsS3At(target, s3Dir, ["ls", "s3://bench/nothing-here/"]));
      return LARGE / seconds / 1e6;
    },
  );
  const version = (await run([awsCli()!, "--version"])).out.split(" ")[0];
  const startup = () => `; its start-up (aws s3 ls) ${median(startups).toFixed(1)} s included`;
  rows.push({ workload: `S3 endpoint upload (${size(LARGE)})`, how: `aws s3 cp (${version}), 8 MiB parts, 10 at once${startup()}`, value: awsUp, unit: "MB/s", anchor: "curl -T, POST /v1/files", anchorValue: curlUp, target: 0.9 });
  await awsS3At(target, s3Dir, ["cp", "--only-show-errors", src, "s3://bench/down.bin"]);
  const ids = (await (await fetch(`${base}/v1/files?page_size=1000`, { headers: { authorization: `Bearer ${s3Key}` } })).json()) as { files: { id: string; name: string }[] };
  const downId = ids.files.find((f) => f.name === "down.bin")!.id;
  const out = path.join(s3Dir, "down.bin");
  const [awsDown, curlDown] = await pair(
    async () => {
      const seconds = await awsS3At(target, s3Dir, ["cp", "--only-show-errors", "s3://bench/down.bin", out]);
      if (fs.statSync(out).size !== LARGE) throw new Error("aws s3 cp downloaded a short file");
      fs.rmSync(out);
      startups.push(await awsS3At(target, s3Dir, ["ls", "s3://bench/nothing-here/"]));
      return LARGE / seconds / 1e6;
    },
    async () => {
      const { out: speed } = await run(["curl", "-sS", "--fail", "-o", out, "-H", `authorization: Bearer ${s3Key}`, "-w", "%{speed_download}", `${base}/${downId}`]);
      fs.rmSync(out);
      return Number(speed) / 1e6;
    },
  );
  rows.push({ workload: `S3 endpoint download (${size(LARGE)})`, how: `aws s3 cp (${version}) to a file${startup()}`, value: awsDown, unit: "MB/s", anchor: "curl -o a file, the content URL", anchorValue: curlDown, target: 0.9 });

  if (has("restic")) {
    step(`cubby's S3 endpoint: restic backup of ${RESTIC_FILES} small files`);
    const tree = path.join(s3Dir, "tree");
    for (let i = 0; i < RESTIC_FILES; i++) {
      const dir = path.join(tree, `d${Math.floor(i / 100)}`);
      if (i % 100 === 0) fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `f${i}.txt`), `small file ${i}\n`.repeat(1 + (i % 50)));
    }
    const resticEnv = { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, RESTIC_PASSWORD: "bench", RESTIC_REPOSITORY: `s3:${base}/bench/restic`, RESTIC_CACHE_DIR: path.join(s3Dir, "restic-cache"), HOME: s3Dir };
    await run(["restic", "init"], { env: resticEnv });
    const started = performance.now();
    await run(["restic", "backup", "--quiet", tree], { env: resticEnv });
    const seconds = (performance.now() - started) / 1000;
    const resticVersion = (await run(["restic", "version"], { env: resticEnv })).out.split(" ").slice(0, 2).join(" ");
    rows.push({ workload: `restic backup of ${RESTIC_FILES} small files to the S3 endpoint`, how: `${resticVersion}, one run, its start-up included`, value: RESTIC_FILES / seconds, unit: "files/s", anchor: "" });
  } else if (ONLY === undefined) skip("restic backup to the S3 endpoint", ["restic"]);

  step(`cubby's S3 endpoint: peak RSS of a ${size(LARGE)} aws s3 cp upload`);
  const dir = path.join(work, "s3-memory");
  const mem = await spawnReady([cubby, "serve", "--port", "0", "--data-dir", dir], /listening on port (\d+)/, cubbyEnv);
  const [memId, memSecret] = (await run([cubby, "keys", "create", "--s3", "--email", "s3mem@example.com", "--data-dir", dir])).out
    .trim()
    .split("\n")
    .map((l) => l.slice(l.indexOf("=") + 1)) as [string, string];
  const memTarget: S3Target = { endpoint: `http://127.0.0.1:${mem.match[1]}`, accessKeyId: memId, secretAccessKey: memSecret, region: "us-east-1" };
  await awsS3At(memTarget, s3Dir, ["mb", "s3://mem"]);
  const status = () => fs.readFileSync(`/proc/${mem.proc.pid}/status`, "utf8");
  const idle = Number(/VmRSS:\s+(\d+) kB/.exec(status())![1]) * 1024;
  fs.writeFileSync(`/proc/${mem.proc.pid}/clear_refs`, "5");
  await awsS3At(memTarget, s3Dir, ["cp", "--only-show-errors", src, "s3://mem/large.bin"]);
  const peak = (Number(/VmHWM:\s+(\d+) kB/.exec(status())![1]) * 1024 - idle) / 2 ** 20;
  killGroup(mem.proc);
  children.delete(mem.proc);
  rows.push({ workload: `peak RSS over idle, ${size(LARGE)} S3 multipart upload (aws s3 cp)`, how: "VmHWM after reset (clear_refs) minus idle VmRSS", value: peak, unit: "MiB", anchor: "", target: 64, lowerIsBetter: true });
} else if (ONLY === undefined) skip("cubby's S3 endpoint vs curl", ["aws", "curl"]);

// --- report ---
const node = has("node") ? (await run(["node", "--version"])).out.trim() : "no Node.js";
const header = `${SMOKE ? "SMOKE run (1 round of 1 s, small sizes: not a measurement). " : ""}${ROUNDS} alternating round(s) of ${SECONDS} s per workload, medians; ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? "?"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Bun ${Bun.version}, Node ${node}, ${new Date().toISOString().slice(0, 10)}`;
const table = markdownTable(rows);
console.log(`\n${header}\n\n${table}`);
if (!SMOKE && ONLY === undefined && flags.binary === undefined) {
  const doc = path.join(root, "docs/benchmarks.md");
  const text = fs.readFileSync(doc, "utf8");
  const start = "<!-- bench:start -->";
  const end = "<!-- bench:end -->";
  const generated = `${start}\n_Written by \`npm run bench\`._ ${header}\n\n${table}\n\n![Ratios against the anchors](benchmarks.svg)\n${end}`;
  const next = text.includes(start) ? text.replace(new RegExp(`${start}[\\s\\S]*${end}`), generated) : `${text.trimEnd()}\n\n${generated}\n`;
  fs.writeFileSync(doc, next);
  fs.writeFileSync(path.join(root, "docs/benchmarks.svg"), chartSvg(rows));
  console.log("\nwritten to docs/benchmarks.md and docs/benchmarks.svg");
}
process.exit(0);
