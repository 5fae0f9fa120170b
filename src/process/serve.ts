/**
 * `cubby serve`: open the store (migrating it), sweep what a crash left behind, serve every
 * protocol on one port, and stop cleanly on SIGTERM / SIGINT.
 */
import pkg from "../../package.json" with { type: "json" };
import type { Config } from "../config.ts";
import { EXPIRY_SWEEP_MS } from "../service/files.ts";
import { openServices, type Services } from "../service/index.ts";
import { WebhookDeliverer } from "../service/webhook-deliverer.ts";
import { logError, logInfo, setLogFormat } from "../log.ts";
import type { Metrics } from "../serving/metrics.ts";
import { SupervisorLink, WorkerPool } from "./workers.ts";
import { recordServer } from "./server-record.ts";

/** How often a server on a shared blob store sweeps orphans (ms). */
const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** In-flight requests get this long to finish after a stop signal, then connections are cut. */
export const SHUTDOWN_GRACE_MS = 10_000;

/**
 * The serving half (process/start-serving.ts: the app, RPC, the listener), loaded only by a process
 * that serves: a supervisor never does, and stays lighter by what it does not load.
 */
const serving = () => import("./start-serving.ts");

/**
 * Runs the server until SIGTERM or SIGINT; returns once it has stopped and the stores are closed.
 * With WORKERS = 1 this process serves; above 1 it supervises that many serving processes
 * (process/workers.ts), and in one of those (CUBBY_WORKER) it serves without the sweeps.
 */
export async function serve(config: Config): Promise<void> {
  setLogFormat(config.logFormat);
  // CUBBY_WORKER counts only in a process a supervisor started (with an IPC channel to it).
  const worker = config.workerId !== undefined && process.send !== undefined;
  {
    await using services = await openServices(config);
    // File URLs in webhook events, until the listener knows its port (the supervisor's first
    // expiry sweep runs before its workers listen).
    if (config.hostname === undefined && config.port !== 0) services.webhooks.setBaseUrl(`http://localhost:${config.port}`);
    if (worker) await serveAsWorker(config, services);
    else if (config.workers > 1) await supervise(config, services);
    else await serveAlone(config, services);
  }
  if (!worker) logInfo("stopped");
}

/** WORKERS = 1: sweeps and serves in this process. */
async function serveAlone(config: Config, services: Services): Promise<void> {
  await services.store.housekeepInBackground();
  const timers = await startMaintenance(services, config);
  const server = await (await serving()).startServing(config, services, { reusePort: false, graceMs: SHUTDOWN_GRACE_MS });
  // Recorded before the listening line: whoever waited for that line finds the record complete.
  record(config, server.baseUrl, server.port);
  logInfo(`cubby ${pkg.version} listening on port ${server.port}; public URL ${server.baseUrl}; data in ${config.dataDir}`);
  logSignInHint(config);
  const deliverer = startDelivering(config, services);
  const signal = await stopSignal();
  logInfo(`${signal}: stopping; in-flight requests have ${SHUTDOWN_GRACE_MS / 1000}s to finish`);
  for (const timer of timers) clearInterval(timer);
  await deliverer.stop();
  await server.stop();
}

/** WORKERS > 1, the supervisor: sweeps, and runs the serving processes (process/workers.ts). */
async function supervise(config: Config, services: Services): Promise<void> {
  const timers = await startMaintenance(services, config);
  const pool = new WorkerPool({ count: config.workers, port: config.port, dataDir: config.dataDir, graceMs: SHUTDOWN_GRACE_MS });
  try {
    const port = await pool.start();
    const baseUrl = config.hostname ?? `http://localhost:${port}`;
    services.webhooks.setBaseUrl(baseUrl);
    record(config, baseUrl, port);
    logInfo(`cubby ${pkg.version} listening on port ${port}; public URL ${baseUrl}; data in ${config.dataDir}; ${config.workers} worker processes (pids ${pool.pids().join(", ")})`);
    logSignInHint(config);
    const signal = await stopSignal();
    logInfo(`${signal}: stopping; in-flight requests have ${SHUTDOWN_GRACE_MS / 1000}s to finish`);
  } finally {
    for (const timer of timers) clearInterval(timer);
    await pool.stop();
  }
}

/** A serving process under a supervisor: serves until told to stop or its supervisor is gone. */
async function serveAsWorker(config: Config, services: Services): Promise<void> {
  await services.store.housekeepInBackground();
  let metrics: Metrics | undefined;
  const link = new SupervisorLink(async () => (metrics === undefined ? [] : metrics.snapshot()));
  const server = await (await serving()).startServing(config, services, { reusePort: true, graceMs: SHUTDOWN_GRACE_MS, aggregate: () => link.scrapeAll(), onMetrics: (m) => (metrics = m) });
  link.listening(server.port);
  const deliverer = startDelivering(config, services);
  await Promise.race([stopSignal(), link.gone()]);
  await deliverer.stop();
  await server.stop();
}

/**
 * Starts delivering the webhook outbox from this serving process (every serving process of every
 * instance does; claims keep each delivery to one of them at a time).
 */
function startDelivering(config: Config, services: Services): WebhookDeliverer {
  const deliverer = new WebhookDeliverer({ store: services.store, clock: services.clock, webhooks: services.webhooks, retryBaseMs: config.testWebhookRetryMs, leaseMs: config.testWebhookLeaseMs });
  deliverer.start();
  return deliverer;
}

/** Records the server's URL in its data directory for the CLI (server-record.ts); a failure is logged. */
function record(config: Config, url: string, port: number): void {
  const failed = recordServer(config.dataDir, { url, port, pid: process.pid, startedAt: new Date().toISOString() });
  if (failed !== undefined) logError(`could not record this server's URL in ${config.dataDir} (cubby login-link will not find it): ${failed.message}`);
}

/**
 * Without an identity provider, says how to sign in to the dashboard anyway (CONTRACT §11): a
 * one-time link from `cubby login-link`, with the data directory spelled out so that the command
 * works from any directory (CONTRACT §17). One line after the listening line, which scripts parse.
 */
function logSignInHint(config: Config): void {
  if (config.idp.clientId !== undefined && config.idp.clientSecret !== undefined) return;
  logInfo(`no identity provider is configured (IDP_CLIENT_ID, IDP_CLIENT_SECRET); to sign in to the dashboard, run: cubby login-link --email you@example.com --data-dir ${shellWord(config.dataDir)}`);
}

/** `word` as one shell word: as it is when it holds only safe characters, else single-quoted. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/** Sweeps now and starts the periodic sweeps (one process does these: the supervisor, or the only one). @returns their timers */
async function startMaintenance(services: Services, config: Config): Promise<ReturnType<typeof setInterval>[]> {
  const timers = [
    await startSweeping(services),
    await repeat("expiry sweep", config.testExpirySweepMs ?? EXPIRY_SWEEP_MS, () => deleteExpired(services)),
    await repeat("upload sweep", uploadSweepMs(config.uploadExpirySeconds, config.testGuestPartMs), () => sweepUploads(services)),
  ];
  const expired = await services.sessions.sweepExpired();
  if (expired > 0) logInfo(`removed ${expired} expired session(s)`);
  return timers.filter((t) => t !== undefined);
}

/**
 * Sweeps what a crash left behind now, and, on a blob store other instances share (which gains
 * orphans while running: another instance killed mid-upload), every hour too.
 * @returns the hourly timer, if any
 */
async function startSweeping(services: Services): Promise<ReturnType<typeof setInterval> | undefined> {
  const sweep = async () => {
    const swept = await services.files.sweep();
    if (swept.unfinished + swept.orphans > 0) {
      logInfo(`swept ${swept.unfinished} temporary and ${swept.orphans} unreferenced blob file(s)`);
    }
  };
  if (services.blobs.orphanGraceMs > 0) return repeat("sweep", SWEEP_INTERVAL_MS, sweep);
  await sweep();
  return undefined;
}

/**
 * Runs `job` now and every `ms` after, logging a failure under `name` and going on (a busy
 * database or an unreachable store must not stop the server). A run still going when the next
 * is due makes that one a no-op, so runs never overlap.
 * @returns the timer (unref'd)
 */
async function repeat(name: string, ms: number, job: () => Promise<void>): Promise<ReturnType<typeof setInterval>> {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      await job();
    } catch (err) {
      logError(`${name} failed: ${err}`);
    } finally {
      running = false;
    }
  };
  await run();
  const timer = setInterval(run, ms);
  timer.unref();
  return timer;
}

/** Deletes every file whose expiry has passed (CONTRACT §8), a thousand at a time. */
async function deleteExpired(services: Services): Promise<void> {
  let total = 0;
  for (let n = -1; n !== 0; total += n) n = await services.files.deleteExpired(1000);
  if (total > 0) logInfo(`deleted ${total} expired file(s)`);
  // Expired login links sign nobody in (redeem checks the time); they are kept 7 days so that
  // they answer 410, not 404 (CONTRACT §11), and deleted after that to keep the table small.
  const links = await services.loginLinks.sweepExpired();
  if (links > 0) logInfo(`removed ${links} login link(s) expired over 7 days ago`);
  // A share's access log keeps 90 days (CONTRACT §15).
  const logged = await services.shares.pruneDownloads();
  if (logged > 0) logInfo(`removed ${logged} share download(s) logged over 90 days ago`);
}

/**
 * How often expired resumable uploads are swept (rows and partial bytes, CONTRACT §8): every
 * minute, or every half expiry when that is shorter (TUS_UPLOAD_EXPIRY_SECONDS in tests), or
 * every half of a guest part's life when a test shortens it (CUBBY_TEST_GUEST_PART_MS), ms.
 */
function uploadSweepMs(expirySeconds: number, testGuestPartMs: number | undefined): number {
  const shortest = Math.min(expirySeconds * 1000, testGuestPartMs ?? Infinity);
  return Math.max(testGuestPartMs === undefined ? 1000 : 50, Math.min(60_000, shortest / 2));
}

/** Sweeps expired and orphaned resumable uploads once. */
async function sweepUploads(services: Services): Promise<void> {
  const swept = await services.uploads.sweep();
  if (swept.expired + swept.orphans > 0) logInfo(`swept ${swept.expired} expired and ${swept.orphans} orphaned resumable upload(s)`);
}

/** Resolves with the name of the first SIGTERM or SIGINT. */
function stopSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string) => () => {
      process.off("SIGTERM", onTerm);
      process.off("SIGINT", onInt);
      resolve(signal);
    };
    const onTerm = on("SIGTERM");
    const onInt = on("SIGINT");
    process.on("SIGTERM", onTerm);
    process.on("SIGINT", onInt);
  });
}
