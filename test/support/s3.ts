/**
 * Test support: a throwaway S3-compatible store, OpenStack Swift with s3api from Debian's
 * packages (one node on 127.0.0.1; see shared/s3-test-store.md for what it does and does not do).
 * swift-s3.sh writes the configuration and rings; the servers are started here, as children of
 * this process, and stopped by PID.
 *
 *   await using s3 = await startS3();
 *   const client = new Bun.S3Client(s3);   // endpoint, bucket, credentials, region
 */
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import type { Subprocess } from "bun";
import { AwsClient } from "aws4fetch";
import { freePortBlock, scratchDir, stopPids } from "./processes.ts";
import { waitFor } from "./wait.ts";

export interface RunningS3 {
  /** `http://127.0.0.1:PORT`, path-style. */
  endpoint: string;
  /** A fresh, empty bucket. */
  bucket: string;
  /** tempauth's `test:tester` under its colon-free alias (Bun's presign() mis-signs a `:`). */
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** The proxy, account, container and object servers' and memcached's PIDs. */
  pids: number[];
  dir: string;
  /** Creates another empty bucket in this store (S3 CreateBucket, SigV4-signed). */
  createBucket(name: string): Promise<void>;
  /** The servers' logs so far. */
  log(): string;
  /** SIGTERM to every server, SIGKILL after 5 s, then removes the directory. Idempotent. */
  stop(): Promise<void>;
}

const SCRIPT = path.join(import.meta.dir, "swift-s3.sh");
const CREDENTIALS = { accessKeyId: "tester", secretAccessKey: "testing", region: "us-east-1" };
/** The proxy (S3) listens on the base port; Swift's servers and memcached on these offsets. */
const OFFSETS = { proxy: 0, object: 10, container: 11, account: 12, memcached: 20 } as const;

/**
 * Every server of this process's stores, killed if the process exits without disposing them.
 * Scripts only: `bun test` runs no exit handler; there the parent-death signal (setpriv
 * --pdeathsig) stops the servers and the next start sweeps the directories (scratchDir).
 */
const live = new Set<number>();
const liveDirs = new Set<string>();
process.on("exit", () => {
  for (const pid of live) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  for (const dir of liveDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** True when Debian's Swift servers are installed (`.ci/run` installs them). */
export function haveSwift(): boolean {
  return ["swift-proxy-server", "swift-object-server", "swift-container-server", "swift-account-server"].every((b) => Bun.which(b) !== null);
}

/**
 * Starts a one-node Swift with s3api on free loopback ports and creates an empty bucket.
 * @param opts.bucket the bucket's name (default `cubby`)
 * @throws with the servers' logs when they do not come up within `timeoutMs`; nothing is left
 *   running and the directory is removed
 */
export async function startS3(opts: { bucket?: string; timeoutMs?: number } = {}): Promise<RunningS3 & AsyncDisposable> {
  if (!haveSwift()) throw new Error("Swift is not installed: apt-get install swift-proxy swift-object swift-container swift-account memcached (.ci/run does)");
  const bucket = opts.bucket ?? "cubby";
  for (let attempt = 1; ; attempt++) {
    const base = await freePortBlock(Object.values(OFFSETS));
    try {
      return await startOnce(base, bucket, opts.timeoutMs ?? 60_000);
    } catch (e) {
      // Another process may take a port between our check and the servers' bind.
      if (attempt < 3 && /Address already in use|Errno 98/.test(String(e))) continue;
      throw e;
    }
  }
}

async function startOnce(base: number, bucket: string, timeoutMs: number): Promise<RunningS3 & AsyncDisposable> {
  const dir = scratchDir("cubby-s3-");
  liveDirs.add(dir);
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8" };
  const procs: Subprocess[] = [];
  const log = () =>
    fs.existsSync(path.join(dir, "log"))
      ? fs
          .readdirSync(path.join(dir, "log"))
          .map((f) => `--- ${f}\n${fs.readFileSync(path.join(dir, "log", f), "utf8")}`)
          .join("\n")
      : "";

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await stopPids(
        procs.map((p) => p.pid),
        "SIGTERM",
        5_000,
      );
      await Promise.all(procs.map((p) => p.exited));
      for (const p of procs) live.delete(p.pid);
      fs.rmSync(dir, { recursive: true, force: true });
      liveDirs.delete(dir);
    })());
  const fail = async (message: string): Promise<never> => {
    const text = log();
    await stop();
    throw new Error(`${message}\n${text}`);
  };

  const config = Bun.spawn(["bash", SCRIPT, "config", dir, String(base)], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(config.stdout).text(), new Response(config.stderr).text(), config.exited]);
  if (code !== 0) await fail(`swift-s3.sh config failed (${code}):\n${out}${err}`);

  const spawn = (name: string, cmd: string[], extraEnv: Record<string, string> = {}) => {
    const fd = fs.openSync(path.join(dir, "log", `${name}.log`), "a");
    const proc = Bun.spawn(["setpriv", "--pdeathsig=SIGKILL", "--", ...cmd], { env: { ...env, ...extraEnv }, stdin: "ignore", stdout: fd, stderr: fd });
    fs.closeSync(fd);
    procs.push(proc);
    live.add(proc.pid);
  };
  const user = process.getuid?.() === 0 ? ["-u", "root"] : []; // memcached refuses root without -u
  if (Bun.which("memcached") !== null) {
    spawn("memcached", ["memcached", "-l", "127.0.0.1", "-p", String(base + OFFSETS.memcached), "-U", "0", "-m", "32", ...user]);
  }
  for (const s of ["object", "container", "account", "proxy"] as const) {
    spawn(s, [`swift-${s}-server`, path.join(dir, "etc", `${s}-server.conf`), "-v"], { PYTHONPATH: path.join(dir, "lib") });
  }

  const ports = [OFFSETS.proxy, OFFSETS.object, OFFSETS.container, OFFSETS.account].map((o) => base + o);
  const listening = async () => {
    const ended = procs.find((p) => p.exitCode !== null || p.signalCode !== null);
    if (ended !== undefined) throw new Error(`a Swift server ended (${ended.exitCode ?? ended.signalCode}) while starting`);
    return (await Promise.all(ports.map(accepts))).every(Boolean);
  };
  await waitFor(listening, "Swift to listen", timeoutMs, 50).catch((err: Error) => fail(err.message));

  const endpoint = `http://127.0.0.1:${base}`;
  const createBucket = async (name: string) => {
    // Bun's S3Client cannot create buckets: one SigV4-signed PUT.
    const aws = new AwsClient({ ...CREDENTIALS, service: "s3", retries: 0 });
    const res = await aws.fetch(`${endpoint}/${encodeURIComponent(name)}`, { method: "PUT" });
    if (res.status !== 200) throw new Error(`CreateBucket ${name}: HTTP ${res.status} ${await res.text()}`);
  };
  try {
    await createBucket(bucket);
  } catch (e) {
    await fail(String(e));
  }
  return {
    endpoint,
    bucket,
    ...CREDENTIALS,
    pids: procs.map((p) => p.pid),
    dir,
    createBucket,
    log,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** True when something accepts a TCP connection on 127.0.0.1:`port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
