/**
 * The floor under cubby's small GET on two processes (bench workload 15, issue 28 item 5): what
 * Bun's `node:net` sockets cost per request when nothing else is done. Two processes of a bare
 * `node:net` server share the port with SO_REUSEPORT (as cubby's workers do) and answer every
 * request head with a constant response of cubby's size (a 4 KiB body and eight header lines),
 * written with one `socket.write` and a callback, as cubby's HTTP/1.1 reader does. wrk (`-t2 -c64`)
 * loads them after a warm-up; printed: req/s and the servers' CPU time per request (user +
 * system, from /proc: steadier than req/s on a shared machine).
 *
 *   bun scripts/bench/h1-floor.ts [--seconds 5] [--rounds 3]
 *
 * `serve <port>` (spawned by this file) runs one server process.
 */
import fs from "node:fs";
import net from "node:net";
import { parseArgs } from "node:util";

/** cubby's answer to a public 4 KiB file, less the headers that vary per request. */
const HEAD =
  "HTTP/1.1 200 OK\r\nx-request-id: 5fMvGmQuuFTL\r\ncontent-type: application/octet-stream\r\naccept-ranges: bytes\r\n" +
  'etag: "1RVvvllAdVliG_QFB_tE1eVg"\r\ncontent-length: 4096\r\nDate: Thu, 26 Nov 2026 23:00:00 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n';

/** How many request heads (each ends with CRLF CRLF) `chunk` holds; wrk sends one head per chunk. */
function heads(chunk: Buffer): number {
  let n = 0;
  for (let at = chunk.indexOf("\r\n\r\n"); at !== -1; at = chunk.indexOf("\r\n\r\n", at + 4)) n++;
  return n;
}

function serve(port: number): void {
  const response = Buffer.concat([Buffer.from(HEAD, "latin1"), crypto.getRandomValues(new Uint8Array(4096))]);
  const written = (): void => {};
  const server = net.createServer((socket) => {
    socket.on("data", (chunk: Buffer) => {
      for (let n = heads(chunk); n > 0; n--) socket.write(response, written);
    });
  });
  server.listen({ port, host: "127.0.0.1", reusePort: true }, () => console.log("listening"));
}

/** CPU time (user + system) of process `pid` and its threads so far, in clock ticks (1/100 s). */
function cpuTicks(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

async function wrk(url: string, seconds: number): Promise<number> {
  const proc = Bun.spawn(["wrk", "-t2", "-c64", `-d${seconds}s`, url], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0 || /Non-2xx|Socket errors/.test(out)) throw new Error(`wrk failed:\n${out}`);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: "string", default: "5" }, rounds: { type: "string", default: "3" } } });
  const seconds = Number(values.seconds);
  const probe = net.createServer().listen(0, "127.0.0.1");
  await new Promise((resolve) => probe.once("listening", resolve));
  const port = (probe.address() as net.AddressInfo).port;
  probe.close();
  const servers = [0, 1].map(() => Bun.spawn([process.execPath, import.meta.path, "serve", String(port)], { stdout: "pipe", stderr: "inherit" }));
  // Stopped on Ctrl-C or SIGTERM too, not only when the measurement ends or fails.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      for (const s of servers) s.kill();
      process.exit(130);
    });
  }
  try {
    for (const s of servers) {
      const reader = s.stdout.getReader();
      let text = "";
      while (!text.includes("listening")) {
        const { value, done } = await reader.read();
        if (done) throw new Error("a server exited before it listened");
        text += new TextDecoder().decode(value);
      }
      reader.releaseLock();
    }
    const url = `http://127.0.0.1:${port}/small.bin`;
    await wrk(url, 2);
    for (let round = 1; round <= Number(values.rounds); round++) {
      const before = servers.reduce((sum, s) => sum + cpuTicks(s.pid), 0);
      const rps = await wrk(url, seconds);
      const ticks = servers.reduce((sum, s) => sum + cpuTicks(s.pid), 0) - before;
      console.log(`round ${round}: ${Math.round(rps)} req/s, ${((ticks / 100 / (rps * seconds)) * 1e6).toFixed(1)} µs of server CPU per request`);
    }
  } finally {
    for (const s of servers) s.kill();
  }
}

if (process.argv[2] === "serve") serve(Number(process.argv[3]));
else await main();
