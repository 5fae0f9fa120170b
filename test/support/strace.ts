/**
 * Fault injection with strace(1): attach to a running process and all its threads, and tamper
 * with chosen system calls (`-e inject=SET:error=ERRNO` or `:signal=SIGKILL`, optionally
 * `:when=N`). Detaching (stopping strace) leaves the process running untouched.
 *
 * strace counts invocations for `when=` per system call and per thread ("Accounting of syscalls
 * that are subject to injection is done per syscall and per tracee", strace(1)).
 */
import { cleanEnv, launch } from "./launch.ts";

/** True when strace exists and may trace a child of ours (ptrace is allowed here). */
export function canStrace(): boolean {
  const r = Bun.spawnSync(["strace", "-qq", "-e", "trace=none", "true"], { stderr: "pipe" });
  return r.success;
}

export interface Tracer {
  /** Everything strace printed on stderr so far. */
  log(): string;
  /** Resolves with strace's exit code once it ends (it ends when the tracee dies). */
  exited: Promise<number>;
  /** Detaches (SIGTERM to strace) and waits for it to end. */
  detach(): Promise<void>;
}

/**
 * Attaches strace to every thread of `pid` (and to threads started later, `-f`) with the given
 * filter and injection arguments, and resolves once every thread is attached.
 * @param args e.g. `["-e", "inject=fsync,fdatasync:error=EIO"]`
 * @param traceFile where strace writes the traced calls (`-o`); /dev/null by default
 * @throws if strace ends or does not attach within `timeoutMs`
 */
export async function attach(pid: number, args: string[], traceFile = "/dev/null", timeoutMs = 10_000): Promise<Tracer> {
  const proc = await launch({ name: "strace", command: ["strace", "-f", "-p", String(pid), "-o", traceFile, ...args], env: cleanEnv() });
  // strace prints "Process PID attached with N threads" once it holds them all.
  await proc.waitForErrors(/Process \d+ attached/, timeoutMs).catch(async (err: unknown) => {
    await proc.stop();
    throw new Error(`strace did not attach to ${pid}: ${(err as Error).message}`);
  });
  return {
    log: proc.errors,
    exited: proc.exited,
    async detach() {
      await proc.stop();
    },
  };
}
