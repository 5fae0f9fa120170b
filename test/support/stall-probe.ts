/**
 * The stall probe (CONTRACT §14): while a test's heavy request runs, several keep-alive
 * connections each send `GET /healthz` one after another and time every answer. The worst wait
 * is how long a serving process was held, on the CPU time the machine had (its hypervisor's steal
 * taken out, {@link StallReport.worstMs}). Several connections, because with WORKERS > 1 the
 * kernel spreads connections over the workers (SO_REUSEPORT hashes their ports): with
 * {@link PROBE_CONNECTIONS} of them, every worker has one with near certainty, and the probe
 * reports which processes it reached (`ss`, test/support/sockets.ts) so a test can say so.
 */
import fs from "node:fs";
import net from "node:net";
import { serverSide } from "./sockets.ts";

/** Connections the probe keeps open, each asking in turn. */
export const PROBE_CONNECTIONS = 6;

/**
 * The pause between an answer and a connection's next request (ms): the probe measures how long
 * a request waits, and must not itself load the 2-core machine it measures (at 5 ms its six
 * connections asked ~1 000 times a second, and on PostgreSQL + S3 the CPU they took showed up
 * as waits of 120–130 ms). A hold of 100 ms still finds a request of every connection waiting.
 */
export const PROBE_PAUSE_MS = 20;

/** What a probe saw. */
export interface StallReport {
  /**
   * The longest a `/healthz` waited for its whole answer, in milliseconds, as it would have on
   * the CPU time the machine had: the wait as measured times (1 − the hypervisor's share of
   * the CPU meanwhile, {@link stealPercent}). What the server held, not what the VM's host took.
   */
  worstMs: number;
  /** The longest wait as measured (ms). */
  rawWorstMs: number;
  /** Answers received. */
  answers: number;
  /** The processes that served the probe's connections. */
  pids: number[];
  /** The process that served the worst wait, when known. */
  worstPid?: number | undefined;
  /**
   * The share of the machine's CPU time its hypervisor took while the probe ran (/proc/stat's
   * steal), %; 0 where unknown. This project's 2-core VM measured 19–42 % (vmstat's `st`)
   * whenever the suite loaded it, ~1 % idle: its processes then ran at about two thirds of
   * the speed, and every wait was half as long again.
   */
  stealPercent: number;
}

/** The machine's CPU time so far and the part of it stolen by the hypervisor (jiffies; /proc/stat's first line), or undefined. */
function cpuTimes(): { total: number; steal: number } | undefined {
  try {
    const fields = fs.readFileSync("/proc/stat", "latin1").split("\n", 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    return { total: fields.reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 };
  } catch {
    return undefined;
  }
}

/** A running probe: stop it to get its report. */
export interface StallProbe {
  stop(): Promise<StallReport>;
}

/** A period of time, in ms since the epoch (performance.timeOrigin + performance.now()). */
type Span = readonly [from: number, to: number];

const epochNow = () => performance.timeOrigin + performance.now();

/**
 * Starts probing `url`'s `/healthz` (HTTP/1.1, plain TCP). Each connection sends the next
 * request as soon as the previous answer is whole; the wait of a request still unanswered when
 * the probe stops counts too. The machine's CPU steal over the same time is read from /proc/stat.
 * @throws when a connection fails or answers anything but 200
 */
export async function startStallProbe(url: string, connections = PROBE_CONNECTIONS): Promise<StallProbe> {
  const { hostname, port } = new URL(url);
  let answers = 0;
  let failure: Error | undefined;
  let stopping = false;
  const sockets: net.Socket[] = [];
  /** Every request's wait, sent to answered (or to the probe's stop), in ms since the epoch. */
  const waits: { span: Span; pid: number | undefined }[] = [];
  /** Requests sent and not answered (one a connection): when sent, and the process serving it. */
  const pending = new Map<net.Socket, { at: number; pid: number | undefined }>();
  const done: Promise<void>[] = [];
  const pids = new Set<number>();
  const cpuBefore = cpuTimes();

  /** Each connection's first request, sent once every connection is open and its process known. */
  const starts: (() => void)[] = [];
  const asks: (() => void)[] = [];
  const open = (): Promise<void> =>
    new Promise((ready, fail) => {
      const socket = net.connect({ host: hostname, port: Number(port), noDelay: true });
      sockets.push(socket);
      let buffer = "";
      let sentAt = 0;
      let pid: number | undefined;
      const ask = () => {
        sentAt = epochNow();
        pending.set(socket, { at: sentAt, pid });
        socket.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: application/json\r\n\r\n`);
      };
      socket.setEncoding("latin1");
      socket.once("connect", () => {
        starts.push(() => {
          // `ss` runs synchronously (~10 ms): done for every connection before any asks, or its
          // time would count in the waits of the connections already asking.
          const side = serverSide(Number(port), socket.localPort!);
          if (side?.pid !== undefined) pids.add(side.pid);
          pid = side?.pid;
        });
        asks.push(ask);
        ready();
      });
      socket.on("data", (chunk: string) => {
        buffer += chunk;
        for (;;) {
          const end = buffer.indexOf("\r\n\r\n");
          if (end < 0) return;
          const head = buffer.slice(0, end);
          const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
          if (buffer.length < end + 4 + length) return;
          buffer = buffer.slice(end + 4 + length);
          if (!head.startsWith("HTTP/1.1 200")) failure ??= new Error(`the stall probe got: ${head.split("\r\n")[0]}`);
          waits.push({ span: [sentAt, epochNow()], pid });
          pending.delete(socket);
          answers++;
          if (!stopping) setTimeout(() => stopping || ask(), PROBE_PAUSE_MS);
        }
      });
      socket.on("error", (e) => {
        if (!stopping) failure ??= e;
        fail(e);
      });
      done.push(new Promise((closed) => socket.once("close", () => closed())));
    });

  try {
    await Promise.all(Array.from({ length: connections }, open));
  } catch (e) {
    for (const s of sockets) s.destroy();
    throw e;
  }
  for (const start of starts) start();
  for (const ask of asks) ask();
  return {
    async stop() {
      stopping = true;
      const now = epochNow();
      for (const { at, pid } of pending.values()) waits.push({ span: [at, now], pid });
      for (const s of sockets) s.destroy();
      await Promise.all(done);
      const cpuAfter = cpuTimes();
      const stealPercent = cpuBefore === undefined || cpuAfter === undefined || cpuAfter.total === cpuBefore.total ? 0 : (100 * (cpuAfter.steal - cpuBefore.steal)) / (cpuAfter.total - cpuBefore.total);
      if (failure !== undefined) throw failure;
      let rawWorstMs = 0;
      let worstPid: number | undefined;
      for (const { span, pid } of waits) {
        if (span[1] - span[0] > rawWorstMs) [rawWorstMs, worstPid] = [span[1] - span[0], pid];
      }
      return { worstMs: rawWorstMs * (1 - stealPercent / 100), rawWorstMs, answers, pids: [...pids], worstPid, stealPercent };
    },
  };
}

/**
 * Runs `work` while probing `url`, and returns its result with the probe's report. The probe is
 * stopped also when `work` throws.
 */
export async function whileProbing<T>(url: string, work: () => Promise<T>): Promise<{ result: T; stall: StallReport }> {
  const probe = await startStallProbe(url);
  let result: T;
  try {
    result = await work();
  } catch (e) {
    await probe.stop().catch(() => {});
    throw e;
  }
  return { result, stall: await probe.stop() };
}

/**
 * The worst wait the tests allow, in milliseconds: CONTRACT §14's 100, on every backend. (Until
 * 2026-11-29 PostgreSQL + S3 was held to 150: the probe then looked up each connection's process
 * with `ss`, synchronously, while the connections already open were asking, and that time counted
 * as their waits, 50–60 ms at every probe's start; docs/reliability.md.)
 */
export const STALL_LIMIT_MS = 100;

/** The probe's report in words, as tests print it. */
export function describeStall(stall: StallReport): string {
  return `stall probe: worst wait ${stall.worstMs.toFixed(1)} ms on the CPU the machine had (${stall.rawWorstMs.toFixed(1)} ms measured, CPU steal ${stall.stealPercent.toFixed(0)} %) over ${stall.answers} answers from ${stall.pids.length} process(es)${stall.worstPid === undefined ? "" : `, the worst from ${stall.worstPid}`}`;
}

/** Prints the probe's report (the figures docs/reliability.md quotes) and asserts the limit. */
export function expectNoStall(stall: StallReport): void {
  console.info(describeStall(stall));
  if (stall.worstMs > STALL_LIMIT_MS) throw new Error(`a /healthz waited ${stall.worstMs.toFixed(1)} ms on the CPU the machine had (${stall.rawWorstMs.toFixed(1)} ms measured; limit ${STALL_LIMIT_MS} ms)`);
}
