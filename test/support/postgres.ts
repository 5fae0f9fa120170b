/**
 * Test support: a throwaway PostgreSQL cluster from Debian's binaries (/usr/lib/postgresql/N/bin),
 * in a temporary directory, on a free loopback port, owned by the unprivileged `postgres` user
 * when we run as root (PostgreSQL refuses to run as root). Made for one per test file:
 *
 *   await using pg = await startPostgres();
 *   const url = await pg.createDatabase("suite_a");   // another fresh database on the same server
 *
 * Durability is off (fsync, synchronous_commit, full_page_writes): a test cluster never
 * outlives a crash.
 */
import fs from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";
import { childrenOf, freePort, scratchDir, stopPids, waitGone } from "./processes.ts";
import { waitFor } from "./wait.ts";

export interface RunningPostgres {
  /** `postgres://cubby:PASSWORD@127.0.0.1:PORT/cubby`: password (SCRAM) over TCP, as in production. */
  url: string;
  port: number;
  /** The postmaster's PID. */
  pid: number;
  /** The temporary directory holding the cluster (data/), its socket and its log. */
  dir: string;
  /**
   * Creates an empty database on this server.
   * @param name lower-case letters, digits and `_`, starting with a letter
   * @returns its URL, with the same credentials as `url`
   */
  createDatabase(name: string): Promise<string>;
  /** Everything the server logged so far. */
  log(): string;
  /**
   * Fast shutdown (SIGINT: clients are disconnected, not waited for), SIGKILL after 10 s, waits
   * for the postmaster and its children to end, removes the directory. Idempotent.
   */
  stop(): Promise<void>;
}

const USER = "cubby";

/** The newest Debian PostgreSQL's bin directory (or `$PG_BIN`). */
export function postgresBinDir(): string {
  const given = process.env.PG_BIN;
  if (given) return given;
  const root = "/usr/lib/postgresql";
  const versions = (fs.existsSync(root) ? fs.readdirSync(root) : [])
    .filter((v) => fs.existsSync(path.join(root, v, "bin/postgres")) && fs.existsSync(path.join(root, v, "bin/initdb")))
    .sort((a, b) => Number(b) - Number(a));
  if (versions.length === 0) throw new Error(`no PostgreSQL under ${root}/*/bin: apt-get install postgresql (.ci/run does)`);
  return path.join(root, versions[0]!, "bin");
}

/** uid and gid of the `postgres` system user (Debian's package creates it). */
type Owner = { uid: number; gid: number };

function postgresUser(): Owner {
  const line = fs
    .readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("postgres:"));
  if (!line) throw new Error("running as root and there is no `postgres` user to run PostgreSQL as: apt-get install postgresql");
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * `cmd` through setpriv(1): as the unprivileged `owner` when we are root, and with SIGQUIT
 * (PostgreSQL's immediate shutdown) as its parent-death signal, so a server outlives no test
 * process, however that ends (`bun test` runs no exit handlers; SIGKILL runs none anywhere).
 * setpriv rather than runuser(1): setpriv execs, so the PID we hold is the postmaster's and we
 * are its parent; runuser forks and stays in between.
 */
function asUnprivileged(cmd: string[], owner: Owner | undefined): string[] {
  const user = owner === undefined ? [] : [`--reuid=${owner.uid}`, `--regid=${owner.gid}`, "--init-groups"];
  return ["setpriv", ...user, "--pdeathsig=SIGQUIT", "--", ...cmd];
}

function chownTree(dir: string, owner: Owner | undefined) {
  if (owner === undefined) return;
  fs.chownSync(dir, owner.uid, owner.gid);
  for (const entry of fs.readdirSync(dir, { recursive: true }) as string[]) {
    fs.chownSync(path.join(dir, entry), owner.uid, owner.gid);
  }
}

async function run(cmd: string[], env: Record<string, string>, input?: string): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(cmd, { env, stdin: input === undefined ? "ignore" : new Blob([input]), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out: out + err };
}

/**
 * Directories and postmasters of this process, removed and stopped hard if it exits without
 * disposing them. Scripts only: `bun test` runs no exit handler; there the parent-death signal
 * stops the servers and the next start sweeps the directories (scratchDir).
 */
const liveDirs = new Set<string>();
const livePids = new Set<number>();
process.on("exit", () => {
  for (const pid of livePids) {
    try {
      process.kill(pid, "SIGQUIT"); // immediate shutdown; it finishes after we are gone
    } catch {
      // Already gone.
    }
  }
  for (const dir of liveDirs) fs.rmSync(dir, { recursive: true, force: true });
});

interface Template {
  /** A stopped cluster's data directory holding the database `cubby`. */
  data: string;
  password: string;
}

/**
 * initdb is most of a start (about 0.9 s of 1.1 s here), so it runs once per process: each start
 * copies this stopped cluster. The database `cubby` is created in it in single-user mode, so a
 * start needs no CREATE DATABASE.
 */
let template: Promise<Template> | undefined;

function makeTemplate(bin: string, owner: Owner | undefined, env: Record<string, string>): Promise<Template> {
  template ??= (async () => {
    const dir = scratchDir("cubby-pg-template-");
    liveDirs.add(dir);
    const data = path.join(dir, "data");
    const password = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString("base64url");
    fs.writeFileSync(path.join(dir, "pwfile"), password + "\n");
    chownTree(dir, owner);
    const init = await run(
      asUnprivileged(
        [
          path.join(bin, "initdb"),
          ...["-D", data, "-U", USER, "--pwfile", path.join(dir, "pwfile")],
          ...["--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C"],
          // 1 MiB WAL segments instead of 16: less to copy per start.
          ...["--no-sync", "--no-instructions", "--wal-segsize=1"],
        ],
        owner,
      ),
      env,
    );
    if (init.code !== 0) throw new Error(`initdb failed (${init.code}):\n${init.out}`);
    const single = await run(
      asUnprivileged([path.join(bin, "postgres"), "--single", "-D", data, "-c", "fsync=off", "postgres"], owner),
      env,
      `CREATE DATABASE ${USER};\n`,
    );
    if (single.code !== 0 || /ERROR/.test(single.out)) throw new Error(`CREATE DATABASE ${USER} in single-user mode failed (${single.code}):\n${single.out}`);
    return { data, password };
  })();
  template.catch(() => (template = undefined));
  return template;
}

/** Removes this process's template cluster, if one was made (the preload does, after the last file). */
export async function removePostgresTemplate(): Promise<void> {
  const made = template;
  template = undefined;
  const data = made === undefined ? undefined : (await made.catch(() => undefined))?.data;
  if (data === undefined) return;
  const dir = path.dirname(data);
  fs.rmSync(dir, { recursive: true, force: true });
  liveDirs.delete(dir);
}

/**
 * Starts a fresh cluster (a copy of this process's template, made by initdb on first use) on a
 * free loopback port and waits until it accepts connections. It holds the empty database `cubby`.
 * @throws with the server's log when it does not come up within `timeoutMs`; nothing is left
 *   running and the directory is removed
 */
export async function startPostgres(opts: { timeoutMs?: number } = {}): Promise<RunningPostgres & AsyncDisposable> {
  const bin = postgresBinDir();
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined;
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C", TZ: "UTC" };
  const { data: templateData, password } = await makeTemplate(bin, owner, env);
  const dir = scratchDir("cubby-pg-");
  liveDirs.add(dir);
  const data = path.join(dir, "data");
  const sock = path.join(dir, "sock");
  const logPath = path.join(dir, "postgres.log");
  let proc: Subprocess | undefined;

  const removeDir = () => {
    fs.rmSync(dir, { recursive: true, force: true });
    liveDirs.delete(dir);
  };
  const fail = async (message: string): Promise<never> => {
    const log = fs.existsSync(logPath) ? fs.readFileSync(logPath, "utf8") : "";
    if (proc !== undefined) await stopPostmaster(proc);
    removeDir();
    throw new Error(`${message}\n${log}`);
  };

  fs.mkdirSync(sock);
  chownTree(dir, owner);
  // As the owner, so the copy's files are the owner's without a chown of every file.
  const copy = await run(asUnprivileged(["cp", "-a", templateData, data], owner), env);
  if (copy.code !== 0) await fail(`copying the template cluster failed: ${copy.out}`);

  // The port is free when we ask and may be taken before the postmaster binds it: retry then.
  let port = 0;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    const logFd = fs.openSync(logPath, "a");
    proc = Bun.spawn(
      asUnprivileged(
        [
          path.join(bin, "postgres"),
          ...["-D", data, "-p", String(port), "-k", sock],
          ...["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
          ...["-c", "max_connections=200"],
        ],
        owner,
      ),
      { env, stdin: "ignore", stdout: logFd, stderr: logFd },
    );
    fs.closeSync(logFd);
    const state = await waitReady(proc, data, opts.timeoutMs ?? 30_000);
    if (state === "ready") break;
    const log = fs.readFileSync(logPath, "utf8");
    if (state === "exited" && attempt < 3 && /could not bind|Address already in use/.test(log)) continue;
    await fail(state === "exited" ? `postgres exited (${proc.exitCode ?? proc.signalCode})` : "postgres did not become ready in time");
  }
  const postmaster = proc!;
  livePids.add(postmaster.pid);

  const urlFor = (db: string) => `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await stopPostmaster(postmaster);
      livePids.delete(postmaster.pid);
      removeDir();
    })());

  return {
    url: urlFor(USER),
    port,
    pid: postmaster.pid,
    dir,
    async createDatabase(name: string) {
      if (!/^[a-z][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a plain database name: ${JSON.stringify(name)}`);
      const r = await run(
        [path.join(bin, "psql"), "-h", sock, "-p", String(port), "-U", USER, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qAtc", `CREATE DATABASE ${name}`],
        env,
      );
      if (r.code !== 0) throw new Error(`CREATE DATABASE ${name} failed (${r.code}): ${r.out}`);
      return urlFor(name);
    },
    log: () => (fs.existsSync(logPath) ? fs.readFileSync(logPath, "utf8") : ""),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Waits for the status line of postmaster.pid (its 8th line) to say "ready", which the
 * postmaster writes once it accepts connections.
 */
async function waitReady(proc: Subprocess, data: string, timeoutMs: number): Promise<"ready" | "exited" | "timeout"> {
  const pidFile = path.join(data, "postmaster.pid");
  const state = (): "ready" | "exited" | undefined => {
    if (proc.exitCode !== null || proc.signalCode !== null) return "exited";
    try {
      const lines = fs.readFileSync(pidFile, "utf8").split("\n");
      if (Number(lines[0]) === proc.pid && lines[7]?.trim() === "ready") return "ready";
    } catch {
      // Not written yet.
    }
    return undefined;
  };
  return await waitFor(state, "the postmaster to be ready", timeoutMs, 10).catch(() => "timeout" as const);
}

/** SIGINT (PostgreSQL's fast shutdown), SIGKILL after 10 s; waits for its backends too. */
async function stopPostmaster(proc: Subprocess): Promise<void> {
  if (proc.exitCode === null && proc.signalCode === null) {
    const children = childrenOf(proc.pid);
    await stopPids([proc.pid], "SIGINT", 10_000);
    await proc.exited;
    // After a SIGKILL the backends notice the postmaster is gone and exit on their own.
    if (!(await waitGone(children, 5_000))) await stopPids(children, "SIGKILL", 0);
  }
}
