/**
 * Test support for other programs' servers (PostgreSQL, Swift): where their scratch directories
 * go, loopback ports that are free right now, and stopping processes by PID with a signal, a
 * grace period and SIGKILL after it.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { waitFor } from "./wait.ts";

/**
 * Where throwaway server directories go: /dev/shm (tmpfs) when there is one, os.tmpdir()
 * otherwise. Copying a 40 MB PostgreSQL cluster there took ~0.1 s against 0.5–0.8 s onto this
 * machine's disk while other work ran; Swift fsyncs every object, free on tmpfs.
 */
export function scratchRoot(): string {
  try {
    fs.accessSync("/dev/shm", fs.constants.W_OK);
    return "/dev/shm";
  } catch {
    return os.tmpdir();
  }
}

/**
 * A new directory `PREFIX<our PID>-XXXXXX` under {@link scratchRoot}. Directories of the same
 * prefix left by processes that no longer run are removed first: `bun test` runs no
 * process.on("exit") handler, so a process that ends without disposing its servers leaves them.
 */
export function scratchDir(prefix: string): string {
  const root = scratchRoot();
  for (const name of fs.readdirSync(root)) {
    const m = name.startsWith(prefix) ? /^(\d+)-[^-]+$/.exec(name.slice(prefix.length)) : null;
    if (m && !isRunning(Number(m[1]))) fs.rmSync(path.join(root, name), { recursive: true, force: true });
  }
  return fs.mkdtempSync(path.join(root, `${prefix}${process.pid}-`));
}

/** True while `pid` runs. A zombie (exited, not yet reaped by its parent) counts as gone. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: it exists but belongs to another user.
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    // /proc/PID/stat: "PID (comm) STATE …"; comm may contain spaces and parentheses.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The PIDs whose parent is `pid` (from /proc). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // It ended while we looked.
    }
  }
  return out;
}

/** Resolves true once none of `pids` runs, false when `timeoutMs` passes first. */
export async function waitGone(pids: number[], timeoutMs: number): Promise<boolean> {
  return await waitFor(() => !pids.some(isRunning), `processes ${pids.join(", ")} to end`, timeoutMs).then(
    () => true,
    () => false,
  );
}

/**
 * Sends `signal` to every PID, waits up to `graceMs` for all of them to end, then SIGKILLs the
 * rest and waits again.
 * @throws if a process survives SIGKILL for two seconds
 */
export async function stopPids(pids: number[], signal: NodeJS.Signals = "SIGTERM", graceMs = 5_000): Promise<void> {
  const send = (sig: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, sig);
      } catch {
        // Already gone.
      }
    }
  };
  send(signal);
  if (await waitGone(pids, graceMs)) return;
  send("SIGKILL");
  if (!(await waitGone(pids, 2_000))) throw new Error(`processes ${pids.filter(isRunning).join(", ")} survived SIGKILL`);
}

/** True when something can listen on 127.0.0.1:`port` right now. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * A loopback port that was free a moment ago, chosen by the kernel. Another process may take it
 * before ours binds it: callers retry their start when the bind fails.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port: 0, exclusive: true }, () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A base port such that every `base + offset` is free right now (for servers that take a block
 * of ports, as Swift's do). Picked at random below the kernel's ephemeral range (32768–60999 on
 * Linux), so ports handed out for outgoing connections do not collide with it.
 */
export async function freePortBlock(offsets: number[], tries = 50): Promise<number> {
  const span = Math.max(0, ...offsets);
  for (let i = 0; i < tries; i++) {
    const base = 20_000 + Math.floor(Math.random() * (32_000 - 20_000 - span));
    let ok = true;
    for (const o of offsets) {
      if (!(await portIsFree(base + o))) {
        ok = false;
        break;
      }
    }
    if (ok) return base;
  }
  throw new Error(`no free block of ports ${offsets.join(",")} found in ${tries} tries`);
}
