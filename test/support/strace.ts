/**
 * Fault injection with strace(1): attach to a running process and all its threads, and tamper
 * with chosen system calls (`-e inject=SET:error=ERRNO` or `:signal=SIGKILL`, optionally
 * `:when=N`). Detaching (stopping strace) leaves the process running untouched.
 *
 * strace counts invocations for `when=` per system call and per thread ("Accounting of syscalls
 * that are subject to injection is done per syscall and per tracee", strace(1)).
 */
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
  const proc = Bun.spawn(["strace", "-f", "-p", String(pid), "-o", traceFile, ...args], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  let err = "";
  let wake: () => void = () => {};
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) {
      err += decoder.decode(chunk, { stream: true });
      wake();
    }
    wake();
  })();
  // strace prints "Process PID attached with N threads" once it holds them all.
  const deadline = Date.now() + timeoutMs;
  while (!/Process \d+ attached/.test(err)) {
    if (proc.exitCode !== null) throw new Error(`strace ended before attaching: ${err}`);
    const left = deadline - Date.now();
    if (left <= 0) {
      proc.kill();
      throw new Error(`strace did not attach to ${pid}: ${err}`);
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, Math.min(left, 100));
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
  return {
    log: () => err,
    exited: proc.exited,
    async detach() {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
