/**
 * What each layer under cubby's h2c costs per small response (issue 16): h2load (8 connections ×
 * 16 streams) against servers that answer a constant 4 KiB body, each a layer more than the last,
 * alternating the order each round; medians and ranges in req/s and as a ratio to the first, and
 * the server process's CPU time per request (user + system, from /proc: steadier than req/s on
 * a machine shared with other work).
 *
 *   bun scripts/bench/h2-layers.ts [--seconds 4] [--rounds 3] [--only anchor,core-net] [--url URL --pid PID]...
 *
 * Layers (each its own process, spawned from this file with `serve <layer> <file>`):
 * - `anchor`: bare Bun.serve with `http2` (the bench's anchor);
 * - `compat`: Bun's `node:http2` server listening itself, `res.writeHead` + `res.end`;
 * - `core`: the same, core API: `stream.respond(headers)` + `stream.end(body)`;
 * - `compat-net` / `core-net`: the same servers handed sockets by a `node:net` listener with
 *   `emit("connection")`, as cubby's one-port listener does;
 * - `core-net-headers`: `core-net` answering with the eleven headers cubby sends with a file;
 * - `core-batch-headers`: `core-net-headers` with the socket behind a Duplex that corks the
 *   writes of one event-loop turn (as cubby's h2-socket.ts); `-lax` adds `strictSingleValueFields: false`;
 * - `mixed-net`: the compat `request` event (its request and response objects are built), the
 *   answer written on the core stream (`res.stream.respond` + `end`).
 * `--url` adds any other h2c URL (cubby's public file) as a row, labelled by its URL; the n-th
 * `--pid` is the process serving the n-th URL, for its CPU time.
 */
import http2 from "node:http2";
import net from "node:net";
import { Duplex } from "node:stream";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

const LAYERS = ["anchor", "compat", "core", "compat-net", "core-net", "mixed-net", "core-net-headers", "core-net-headers-array", "core-batch-headers", "core-batch-headers-lax"] as const;
type Layer = (typeof LAYERS)[number];

/** The headers cubby answers a public 4 KiB file with (besides `date`). */
const CUBBY_HEADERS = {
  "content-type": "application/octet-stream",
  "accept-ranges": "bytes",
  etag: '"1RVvvllAdVliG_QFB_tE1eVg"',
  "last-modified": "Mon, 23 Nov 2026 18:27:37 GMT",
  "cache-control": "no-cache, public",
  "x-content-type-options": "nosniff",
  "content-disposition": "inline",
  "content-security-policy": "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'",
  "content-length": "4096",
};

if (process.argv[2] === "serve") {
  serve(process.argv[3] as Layer, process.argv[4]!);
} else {
  await drive();
}

function serve(layer: Layer, file: string): void {
  const body = fs.readFileSync(file);
  if (layer === "anchor") {
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", http2: true, fetch: () => new Response(Bun.file(file)) } as Parameters<typeof Bun.serve>[0]);
    console.log(`listening on port ${server.port}`);
    return;
  }
  const headers: http2.OutgoingHttpHeaders = layer.includes("-headers")
    ? { ":status": 200, ...CUBBY_HEADERS, "x-request-id": "H2x5ndRqeMlk" }
    : { ":status": 200, "content-type": "application/octet-stream", "content-length": body.byteLength };
  const h2 = http2.createServer({
    settings: { initialWindowSize: 4 * 2 ** 20, maxConcurrentStreams: 100 },
    // `-lax`: no check that single-value headers are sent once (Bun walks every header for it).
    ...(layer.endsWith("-lax") ? { strictSingleValueFields: false } : {}),
  } as http2.ServerOptions);
  if (layer.startsWith("mixed")) {
    h2.on("request", (_req, res) => {
      const stream = res.stream as http2.ServerHttp2Stream;
      stream.respond(headers);
      stream.end(body);
    });
  } else if (layer.startsWith("compat")) {
    h2.on("request", (_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": body.byteLength });
      res.end(body);
    });
  } else {
    const flat = Object.entries(headers).flat().map(String);
    h2.on("stream", (stream: http2.ServerHttp2Stream) => {
      if (layer.endsWith("-array")) stream.respond(flat as unknown as http2.OutgoingHttpHeaders);
      else stream.respond(headers);
      stream.end(body);
    });
  }
  const ready = (port: number) => console.log(`listening on port ${port}`);
  if (layer.includes("-batch")) {
    const listener = net.createServer({ noDelay: true }, (socket) => h2.emit("connection", new BatchingSocket(socket)));
    listener.listen(0, "127.0.0.1", () => ready((listener.address() as net.AddressInfo).port));
  } else if (layer.includes("-net")) {
    const listener = net.createServer({ noDelay: true }, (socket) => h2.emit("connection", socket));
    listener.listen(0, "127.0.0.1", () => ready((listener.address() as net.AddressInfo).port));
  } else {
    h2.listen(0, "127.0.0.1", () => ready((h2.address() as net.AddressInfo).port));
  }
}

/**
 * A TCP socket behind a plain JS Duplex: node:http2 then writes through `write` instead of the
 * native handle, and the writes of one tick (the answers to one read's requests) are corked
 * into one.
 */
class BatchingSocket extends Duplex {
  private corked = false;
  constructor(private readonly socket: net.Socket) {
    super();
    socket.on("data", (d) => {
      if (!this.push(d)) socket.pause();
    });
    socket.on("end", () => this.push(null));
    socket.on("close", () => this.destroy());
    socket.on("error", (e) => this.destroy(e));
  }
  get remoteAddress() {
    return this.socket.remoteAddress;
  }
  override _read(): void {
    this.socket.resume();
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      setImmediate(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    this.socket.write(chunk, cb);
  }
  override _final(cb: (err?: Error | null) => void): void {
    this.socket.end(cb);
  }
  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.socket.destroy(err ?? undefined);
    cb(err);
  }
}

async function drive(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: "string", default: "4" }, rounds: { type: "string", default: "3" }, only: { type: "string" }, url: { type: "string", multiple: true }, pid: { type: "string", multiple: true } } });
  const layers = (values.only?.split(",") ?? LAYERS) as Layer[];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "h2-layers-"));
  const file = path.join(dir, "small.bin");
  fs.writeFileSync(file, crypto.getRandomValues(new Uint8Array(4096)));
  const procs: Bun.Subprocess[] = [];
  process.on("exit", () => {
    for (const p of procs) p.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const targets: { name: string; url: string; pid: number | undefined }[] = [];
  for (const layer of layers) {
    const proc = Bun.spawn([process.execPath, import.meta.path, "serve", layer, file], { stdout: "pipe", stderr: "inherit" });
    procs.push(proc);
    const reader = proc.stdout.getReader();
    let seen = "";
    let m: RegExpExecArray | null = null;
    while (m === null) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`${layer} exited: ${seen}`);
      seen += new TextDecoder().decode(value);
      m = /listening on port (\d+)/.exec(seen);
    }
    targets.push({ name: layer, url: `http://127.0.0.1:${m[1]}/`, pid: proc.pid });
  }
  (values.url ?? []).forEach((url, i) => targets.push({ name: url, url, pid: values.pid?.[i] === undefined ? undefined : Number(values.pid[i]) }));
  for (const t of targets) await h2load(t.url, 1); // warm-up
  const results = new Map<string, { rps: number[]; cpu: number[] }>(targets.map((t) => [t.name, { rps: [], cpu: [] }]));
  for (let round = 0; round < Number(values.rounds); round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      const before = t.pid === undefined ? 0 : cpuMicros(t.pid);
      const run = await h2load(t.url, Number(values.seconds));
      results.get(t.name)!.rps.push(run.rps);
      if (t.pid !== undefined) results.get(t.name)!.cpu.push((cpuMicros(t.pid) - before) / run.requests);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const range = (xs: number[], digits = 0) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
  const first = median(results.get(targets[0]!.name)!.rps);
  console.log(`| layer | req/s (median) | range | ratio to ${targets[0]!.name} | server CPU µs/request (median) | range |\n|---|---|---|---|---|---|`);
  for (const t of targets) {
    const { rps, cpu } = results.get(t.name)!;
    const cpuCells = cpu.length === 0 ? "| – | – |" : `| ${median(cpu).toFixed(1)} | ${range(cpu, 1)} |`;
    console.log(`| ${t.name} | ${Math.round(median(rps))} | ${range(rps)} | ${(median(rps) / first).toFixed(2)}× ${cpuCells}`);
  }
  process.exit(0);
}

/** CPU time (user + system) process `pid` has used so far, in microseconds (Linux /proc). */
function cpuMicros(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second on Linux).
  return ((Number(fields[11]) + Number(fields[12])) / 100) * 1e6;
}

/** h2load -c 8 -m 16 for `seconds`: requests/s and requests done. @throws when any request failed */
async function h2load(url: string, seconds: number): Promise<{ rps: number; requests: number }> {
  const proc = Bun.spawn(["h2load", "-D", String(seconds), "-c", "8", "-m", "16", url], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const rps = /finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(out);
  const status = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  const reqs = /requests: \d+ total, \d+ started, (\d+) done, \d+ succeeded, (\d+) failed, (\d+) errored/.exec(out);
  if (!rps || !status || !reqs || status[3] !== "0" || status[4] !== "0" || reqs[2] !== "0" || reqs[3] !== "0") throw new Error(`h2load: ${url}\n${out}`);
  return { rps: Number(rps[1]), requests: Number(reqs[1]) };
}
