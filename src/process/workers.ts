/**
 * Several serving processes on one port (WORKERS > 1, issue 16), the way nginx runs a master and
 * its workers.
 *
 * The **supervisor** (the process `cubby serve` started) opens the store first (migrations run
 * once), sweeps what a crash left and runs the periodic sweeps (process/serve.ts), then starts
 * the **workers**: the same executable with `serve` and CUBBY_WORKER=n. Each worker opens the
 * store itself and listens on the port with SO_REUSEPORT, so the kernel spreads new connections
 * over them (Linux: by a hash of the connection's addresses and ports; a connection stays with
 * the worker that accepted it). What they must share they already do across processes: SQLite
 * in WAL mode, whose committed changes every process sees through the change watch
 * (storage/change-watch.ts), or PostgreSQL; blobs on disk or in S3. What stays per worker:
 * caches (validated against the shared store on every read), rate-limit windows, connection
 * limits (docs/scale-out.md lists them).
 *
 * The supervisor restarts a worker that dies (after a pause that grows while it keeps dying at
 * start), answers a worker's request for the metrics of all of them (`/metrics` shows one
 * process's view otherwise; a worker that does not answer within {@link COLLECT_TIMEOUT_MS} is
 * left out and named by `cubby_metrics_worker_up{worker="N"} 0`), and on SIGTERM / SIGINT stops
 * them all gracefully: each drains its own connections (SHUTDOWN_GRACE_MS). A worker whose
 * supervisor is gone (its IPC channel closes, as after `kill -9` of the supervisor) stops the
 * same way.
 */
import { selfCommand } from "../self-command.ts";
import type { Subprocess } from "bun";
import net from "node:net";
import type { MetricObjectWithValues, MetricValue } from "prom-client";
import { AppError } from "../errors.ts";
import { portInUse } from "../config.ts";
import { logError, logInfo } from "../log.ts";

/** What a worker tells the supervisor. */
export type WorkerMessage =
  | { type: "listening"; port: number }
  | { type: "scrape"; id: number }
  | { type: "collected"; id: number; metrics: string };

/** Whether one worker's figures are in a scrape (it answered in time). */
export interface WorkerUp {
  /** The worker's number (CUBBY_WORKER), from 1. */
  worker: number;
  up: boolean;
}

/** What the supervisor tells a worker. */
export type SupervisorMessage = { type: "collect"; id: number } | { type: "scraped"; id: number; metrics: string[]; up: WorkerUp[] };

type Metrics = MetricObjectWithValues<MetricValue<string>>[];

/**
 * How long a scrape waits for every worker's metrics (ms); a worker that does not answer in time
 * (stopped, or too busy to read its IPC channel) is left out. A worker answers in ~1 ms when idle;
 * the whole scrape must stay well inside Prometheus's default scrape_timeout of 10 s.
 */
export const COLLECT_TIMEOUT_MS = 500;
/** How long a worker waits for the supervisor's answer to its scrape before failing it (ms). */
const SCRAPE_TIMEOUT_MS = COLLECT_TIMEOUT_MS + 1500;
/** A worker that dies sooner than this after starting is restarted after a growing pause (ms). */
const STEADY_MS = 10_000;
/** The longest pause before restarting a worker that keeps dying at start (ms). */
const MAX_RESTART_PAUSE_MS = 5000;
/** After the graceful stop's grace, a worker still running is killed this much later (ms). */
const STOP_SLACK_MS = 5000;

interface WorkerProcess {
  id: number;
  proc: Subprocess<"ignore", "inherit", "inherit">;
  startedAt: number;
  /** Restarts in a row of workers that died before {@link STEADY_MS}. */
  quickDeaths: number;
}

export interface PoolOptions {
  /** How many workers (WORKERS). */
  count: number;
  /** The configured port; 0: the first worker's choice, which the others then share. */
  port: number;
  /** The data directory (absolute), passed to every worker. */
  dataDir: string;
  /** Milliseconds each worker has to drain on stop (SHUTDOWN_GRACE_MS). */
  graceMs: number;
}

/**
 * The supervisor's workers: started, watched, restarted, asked for metrics and stopped.
 * Linux only in practice (SO_REUSEPORT spreading connections); elsewhere one worker may get them all.
 */
export class WorkerPool {
  private readonly workers = new Map<number, WorkerProcess>();
  private stopping = false;
  /** Whether every worker has listened once: from then on one that dies is started again. */
  private started = false;
  private boundPort = 0;
  private nextScrape = 0;
  /** Scrapes waiting for workers' metrics, by scrape ID. */
  private readonly scrapes = new Map<number, { metrics: string[]; waiting: Set<number>; answered: Set<number>; done: () => void }>();
  /** Workers whose figures the last scrapes lacked (they did not answer in time), logged once until they answer. */
  private readonly silent = new Set<number>();
  /** Workers that have not said "listening" yet, by worker ID. */
  private readonly starting = new Map<number, { resolve: (port: number) => void; reject: (err: Error) => void }>();

  constructor(private readonly opts: PoolOptions) {}

  /**
   * Starts every worker, all at once on a configured port; on port 0 the first alone (it lets
   * the system choose), then the others on the port it bound.
   * @returns the port
   * @throws when the port is taken by another program, or a worker exits before it listens
   */
  async start(): Promise<number> {
    const rest = (port: number) => Array.from({ length: this.opts.count - 1 }, (_, i) => this.spawn(i + 2, port));
    if (this.opts.port === 0) {
      this.boundPort = await this.spawn(1, 0);
      await Promise.all(rest(this.boundPort));
    } else {
      await refuseSharedPort(this.opts.port);
      [this.boundPort] = await Promise.all([this.spawn(1, this.opts.port), ...rest(this.opts.port)]);
    }
    this.started = true;
    return this.boundPort;
  }

  /** The PIDs of the running workers (tests, logs). */
  pids(): number[] {
    return [...this.workers.values()].map((w) => w.proc.pid);
  }

  /**
   * Stops every worker with SIGTERM (each drains for up to `graceMs`) and waits for them; one
   * still running {@link STOP_SLACK_MS} after that is killed.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    const running = [...this.workers.values()];
    for (const w of running) w.proc.kill("SIGTERM");
    const kill = setTimeout(() => {
      for (const w of running) w.proc.kill("SIGKILL");
    }, this.opts.graceMs + STOP_SLACK_MS);
    await Promise.all(running.map((w) => w.proc.exited));
    clearTimeout(kill);
  }

  /** Starts worker `id` on `port`. @returns the port it bound, once it listens */
  private spawn(id: number, port: number, quickDeaths = 0): Promise<number> {
    const proc = Bun.spawn(selfCommand(["serve"]), {
      // The supervisor's environment (as loadConfig read it) with the port and data directory
      // fixed (their _FILE variants emptied, which counts as unset): flags are not passed on.
      env: { ...process.env, PORT: String(port), PORT_FILE: "", DATA_DIR: this.opts.dataDir, DATA_DIR_FILE: "", CUBBY_WORKER: String(id) },
      stdio: ["ignore", "inherit", "inherit"],
      ipc: (message: WorkerMessage) => this.onMessage(id, message),
      onExit: (exited, code, signal) => this.onExit(id, exited.pid, code, signal),
    });
    this.workers.set(id, { id, proc, startedAt: Date.now(), quickDeaths });
    return new Promise<number>((resolve, reject) => this.starting.set(id, { resolve, reject }));
  }

  private onMessage(id: number, message: WorkerMessage): void {
    switch (message.type) {
      case "listening":
        this.starting.get(id)?.resolve(message.port);
        this.starting.delete(id);
        return;
      case "scrape":
        void this.gather().then(({ metrics, up }) => this.send(id, { type: "scraped", id: message.id, metrics, up }));
        return;
      case "collected": {
        if (this.silent.delete(id)) logInfo(`metrics: worker ${id} (pid ${this.workers.get(id)?.proc.pid}) answers again`);
        const scrape = this.scrapes.get(message.id);
        if (scrape === undefined || !scrape.waiting.delete(id)) return;
        scrape.metrics.push(message.metrics);
        scrape.answered.add(id);
        if (scrape.waiting.size === 0) scrape.done();
      }
    }
  }

  private send(id: number, message: SupervisorMessage): void {
    try {
      this.workers.get(id)?.proc.send(message);
    } catch {
      // The worker exited meanwhile.
    }
  }

  /**
   * Every running worker's metrics, as prom-client JSON text each, within {@link COLLECT_TIMEOUT_MS}.
   * @returns `metrics`: of those that answered; `up`: for every worker number (1 to the count),
   *   whether its figures are in (one starting or restarting is not asked, and counts as down)
   */
  private gather(): Promise<{ metrics: string[]; up: WorkerUp[] }> {
    const id = this.nextScrape++;
    const ids = [...this.workers.keys()].filter((w) => !this.starting.has(w));
    return new Promise((resolve) => {
      const scrape = {
        metrics: [] as string[],
        waiting: new Set(ids),
        answered: new Set<number>(),
        done: () => {
          clearTimeout(timer);
          this.scrapes.delete(id);
          for (const w of scrape.waiting) {
            // Still running (one that exited is logged by onExit): say so once, not every scrape.
            if (this.workers.has(w) && !this.silent.has(w)) {
              this.silent.add(w);
              logError(`metrics: worker ${w} (pid ${this.workers.get(w)?.proc.pid}) did not answer within ${COLLECT_TIMEOUT_MS} ms; /metrics leaves its figures out (cubby_metrics_worker_up{worker="${w}"} 0) until it does`);
            }
          }
          const up = Array.from({ length: this.opts.count }, (_, i) => ({ worker: i + 1, up: scrape.answered.has(i + 1) }));
          resolve({ metrics: scrape.metrics, up });
        },
      };
      const timer = setTimeout(scrape.done, COLLECT_TIMEOUT_MS);
      this.scrapes.set(id, scrape);
      for (const w of ids) this.send(w, { type: "collect", id });
      if (ids.length === 0) scrape.done();
    });
  }

  private onExit(id: number, pid: number, code: number | null, signal: number | null | string): void {
    const w = this.workers.get(id);
    if (w === undefined || w.proc.pid !== pid) return;
    this.workers.delete(id);
    this.silent.delete(id);
    for (const scrape of this.scrapes.values()) if (scrape.waiting.delete(id) && scrape.waiting.size === 0) scrape.done();
    const how = signal !== null ? `signal ${signal}` : `code ${code}`;
    const starting = this.starting.get(id);
    this.starting.delete(id);
    starting?.reject(new Error(`worker ${id} exited with ${how} before it listened`));
    // At start-up a worker that cannot listen fails the start (a taken port, a bad store).
    if (!this.started) return;
    if (this.stopping) return;
    const quick = Date.now() - w.startedAt < STEADY_MS;
    const quickDeaths = quick ? w.quickDeaths + 1 : 0;
    const pause = quick ? Math.min(MAX_RESTART_PAUSE_MS, 100 * 2 ** (quickDeaths - 1)) : 0;
    logError(`worker ${id} (pid ${pid}) exited with ${how}; starting it again${pause > 0 ? ` in ${pause} ms` : ""}`);
    const restart = () => {
      if (this.stopping) return;
      this.spawn(id, this.boundPort, quickDeaths).then(
        () => logInfo(`worker ${id} listening again (pid ${this.workers.get(id)?.proc.pid})`),
        () => {}, // its exit is logged, and it is started again, by onExit
      );
    };
    if (pause === 0) restart();
    else setTimeout(restart, pause).unref();
  }
}

/**
 * Fails when a program already listens on `port`: with SO_REUSEPORT the workers would otherwise
 * join another cubby's sockets on it and share its connections. Binds without SO_REUSEPORT for
 * a moment, which fails on any socket bound to the port.
 * @throws an Error naming the port when it is taken
 */
async function refuseSharedPort(port: number): Promise<void> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", (err: NodeJS.ErrnoException) => reject(err.code === "EADDRINUSE" ? portInUse(port) : err));
    probe.listen(port, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/**
 * In a worker: the link to the supervisor. Tells it the bound port, asks it for every worker's
 * metrics, answers its requests for this worker's, and reports the supervisor's departure.
 */
export class SupervisorLink {
  private nextScrape = 0;
  private readonly scrapes = new Map<number, (answer: { metrics: string[]; up: WorkerUp[] }) => void>();

  /** @param collect this worker's metrics as prom-client JSON (Metrics.snapshot) */
  constructor(private readonly collect: () => Promise<Metrics>) {
    process.on("message", (message: SupervisorMessage) => {
      if (message.type === "collect") {
        void this.collect().then(
          // As text: prom-client's objects carry functions, which IPC cannot clone.
          (metrics) => this.send({ type: "collected", id: message.id, metrics: JSON.stringify(metrics) }),
          (err: unknown) => logError(`metrics: collecting failed: ${err}`),
        );
      } else if (message.type === "scraped") {
        this.scrapes.get(message.id)?.(message);
        this.scrapes.delete(message.id);
      }
    });
  }

  /** Tells the supervisor this worker listens on `port`. */
  listening(port: number): void {
    this.send({ type: "listening", port });
  }

  /** Resolves when the supervisor is gone (the IPC channel closed). */
  gone(): Promise<string> {
    return new Promise((resolve) => process.once("disconnect", () => resolve("supervisor gone")));
  }

  /**
   * Every worker's metrics aggregated (prom-client's cluster rules: counters and histograms
   * summed, gauges by their `aggregator`), as the exposition text, with
   * `cubby_metrics_worker_up{worker}`: 1 for each worker whose figures are in, 0 for one that did
   * not answer within {@link COLLECT_TIMEOUT_MS} (its figures are missing from the sums).
   * @throws AppError `unavailable` (503) when the supervisor does not answer within
   *   {@link SCRAPE_TIMEOUT_MS} (stopped, or gone): Prometheus marks the target down rather than
   *   storing one worker's counters as the sum
   */
  async scrapeAll(): Promise<string> {
    const id = this.nextScrape++;
    const answer = await new Promise<{ metrics: string[]; up: WorkerUp[] }>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.scrapes.delete(id);
        reject(new AppError("unavailable", `metrics: the supervisor did not answer within ${SCRAPE_TIMEOUT_MS} ms; try again later`));
      }, SCRAPE_TIMEOUT_MS);
      this.scrapes.set(id, (a) => {
        clearTimeout(timer);
        resolve(a);
      });
      this.send({ type: "scrape", id });
    });
    // Loaded here, by a worker (which has prom-client loaded already), never by the supervisor.
    const { AggregatorRegistry, Gauge } = await import("prom-client");
    const registry = AggregatorRegistry.aggregate(answer.metrics.map((text) => JSON.parse(text) as Metrics));
    const up = new Gauge({
      name: "cubby_metrics_worker_up",
      help: `Whether a worker's figures are in this scrape: 1 it answered, 0 it did not within ${COLLECT_TIMEOUT_MS} ms (stopped, overloaded or restarting) and the sums lack it.`,
      labelNames: ["worker"],
      registers: [registry],
    });
    for (const w of answer.up) up.set({ worker: String(w.worker) }, w.up ? 1 : 0);
    return registry.metrics();
  }

  private send(message: WorkerMessage): void {
    process.send?.(message);
  }
}
