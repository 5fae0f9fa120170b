/**
 * `cubby serve`: open the store (migrating it), sweep what a crash left behind, serve every
 * protocol on one port, and stop cleanly on SIGTERM / SIGINT.
 */
import pkg from "../../package.json" with { type: "json" };
import type { Config } from "../config.ts";
import { OidcSignIn } from "../auth/oidc.ts";
import { Authenticator } from "../auth/principal.ts";
import { WindowLimiter } from "../auth/rate-limit.ts";
import { createApp } from "../http/app.ts";
import { rpcPaths, rpcRoutes } from "../rpc/index.ts";
import { EXPIRY_SWEEP_MS } from "../service/files.ts";
import { openServices, type Services } from "../service/index.ts";
import type { BlobStore } from "../storage/ports.ts";
import { logError, logInfo, setLogFormat } from "../log.ts";
import { listenOnePort, type OnePortServer } from "./one-port.ts";
import { batchedLog, PIPE_ATOMIC_BYTES } from "./access-log.ts";
import { Metrics } from "./metrics.ts";
import { enableResponseTap } from "./response-tap.ts";
import { SupervisorLink, WorkerPool } from "./workers.ts";

/** How often a server on a shared blob store sweeps orphans (ms). */
const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** In-flight requests get this long to finish after a stop signal, then connections are cut. */
export const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Runs the server until SIGTERM or SIGINT; returns once it has stopped and the stores are closed.
 * With WORKERS = 1 this process serves; above 1 it supervises that many serving processes
 * (server/workers.ts), and in one of those (CUBBY_WORKER) it serves without the sweeps.
 */
export async function serve(config: Config): Promise<void> {
  setLogFormat(config.logFormat);
  const worker = config.workerId !== undefined;
  {
    await using services = await openServices(config);
    if (worker) await serveAsWorker(config, services);
    else if (config.workers > 1) await supervise(config, services);
    else await serveAlone(config, services);
  }
  if (!worker) logInfo("stopped");
}

/** WORKERS = 1: sweeps and serves in this process. */
async function serveAlone(config: Config, services: Services): Promise<void> {
  const timers = await startMaintenance(services, config);
  const server = await startServing(config, services, { reusePort: false });
  logInfo(`cubby ${pkg.version} listening on port ${server.port}; public URL ${server.baseUrl}; data in ${config.dataDir}`);
  const signal = await stopSignal();
  logInfo(`${signal}: stopping; in-flight requests have ${SHUTDOWN_GRACE_MS / 1000}s to finish`);
  for (const timer of timers) clearInterval(timer);
  await server.stop();
}

/** WORKERS > 1, the supervisor: sweeps, and runs the serving processes (server/workers.ts). */
async function supervise(config: Config, services: Services): Promise<void> {
  const timers = await startMaintenance(services, config);
  const pool = new WorkerPool({ count: config.workers, port: config.port, dataDir: config.dataDir, graceMs: SHUTDOWN_GRACE_MS });
  try {
    const port = await pool.start();
    const baseUrl = config.hostname ?? `http://localhost:${port}`;
    logInfo(`cubby ${pkg.version} listening on port ${port}; public URL ${baseUrl}; data in ${config.dataDir}; ${config.workers} worker processes (pids ${pool.pids().join(", ")})`);
    const signal = await stopSignal();
    logInfo(`${signal}: stopping; in-flight requests have ${SHUTDOWN_GRACE_MS / 1000}s to finish`);
  } finally {
    for (const timer of timers) clearInterval(timer);
    await pool.stop();
  }
}

/** A serving process under a supervisor: serves until told to stop or its supervisor is gone. */
async function serveAsWorker(config: Config, services: Services): Promise<void> {
  let metrics: Metrics | undefined;
  const link = new SupervisorLink(async () => (metrics === undefined ? [] : metrics.snapshot()));
  const server = await startServing(config, services, { reusePort: true, aggregate: () => link.scrapeAll(), onMetrics: (m) => (metrics = m) });
  link.listening(server.port);
  await Promise.race([stopSignal(), link.gone()]);
  await server.stop();
}

/** Sweeps now and starts the periodic sweeps (one process does these: the supervisor, or the only one). @returns their timers */
async function startMaintenance(services: Services, config: Config): Promise<ReturnType<typeof setInterval>[]> {
  const timers = [
    await startSweeping(services),
    await repeat("expiry sweep", EXPIRY_SWEEP_MS, () => deleteExpired(services)),
    await repeat("upload sweep", uploadSweepMs(config.uploadExpirySeconds), () => sweepUploads(services)),
  ];
  const expired = await services.sessions.sweepExpired();
  if (expired > 0) logInfo(`removed ${expired} expired session(s)`);
  return timers.filter((t) => t !== undefined);
}

/**
 * Builds the app and the RPC routes and listens on the port.
 * @param opts.reusePort listen with SO_REUSEPORT (workers)
 * @param opts.aggregate renders every worker's metrics (workers); undefined: this process's
 * @param opts.onMetrics told of the metrics when METRICS is on
 * @returns the bound port, the public base URL, and a stop that drains and flushes the log
 */
async function startServing(
  config: Config,
  services: Services,
  opts: { reusePort: boolean; aggregate?: () => Promise<string>; onMetrics?: (metrics: Metrics) => void },
): Promise<{ port: number; baseUrl: string; stop: () => Promise<void> }> {
  let baseUrl = config.hostname ?? "";
  const auth = new Authenticator(services.keys, services.sessions, () => baseUrl, new WindowLimiter(config.rateLimits.authFailures));
  const { issuer, clientId, clientSecret } = config.idp;
  const signIn =
    clientId !== undefined && clientSecret !== undefined
      ? new OidcSignIn({ issuer, clientId, clientSecret, redirectUri: () => `${baseUrl}/auth/idp/callback`, allowedDomains: config.allowedDomains })
      : undefined;
  if (config.testResponseLog !== undefined) enableResponseTap(config.testResponseLog);
  const app = createApp({
    services,
    auth,
    signIn,
    signInLimiter: new WindowLimiter(config.rateLimits.signIns),
    baseUrl: () => baseUrl,
    maxUploadBytes: config.maxUploadBytes,
  });
  const routes = rpcRoutes({ files: services.files, auth, baseUrl: () => baseUrl });
  // A worker shares the supervisor's stdout with the other workers: no write may mix their lines.
  const { log, flush: flushLog } = batchedLog((chunk) => process.stdout.write(chunk), config.workerId === undefined ? undefined : PIPE_ATOMIC_BYTES);
  const trustedProxies = new Set(config.trustedProxies);
  let listening: OnePortServer | undefined;
  const metrics = config.metricsEnabled
    ? new Metrics({ stored: () => services.store.files.totals(), transferred: () => listening?.transferred() ?? { received: 0, sent: 0 }, aggregate: opts.aggregate })
    : undefined;
  if (metrics !== undefined) {
    countUploads(services.blobs, metrics);
    opts.onMetrics?.(metrics);
  }
  const server = await listenOnePort({
    port: config.port,
    reusePort: opts.reusePort,
    app: (request) => app.handle(request),
    routes,
    rpcPaths: rpcPaths(routes),
    content: { deps: { files: services.files, shares: services.shares, auth, baseUrl: () => baseUrl } },
    log,
    logFormat: config.logFormat,
    metrics: metrics === undefined ? undefined : { metrics, token: config.metricsToken },
    trustedProxies,
    headerTimeoutSeconds: config.timeouts.headerSeconds,
    maxConnections: config.connections,
    idleTimeoutSeconds: config.timeouts.idleSeconds,
  });
  listening = server;
  if (config.hostname === undefined) baseUrl = `http://localhost:${server.port}`;
  return {
    port: server.port,
    baseUrl,
    async stop() {
      await server.stop(SHUTDOWN_GRACE_MS);
      flushLog();
    },
  };
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
}

/**
 * How often expired resumable uploads are swept (rows and partial bytes, CONTRACT §8): every
 * minute, or every half expiry when that is shorter (TUS_UPLOAD_EXPIRY_SECONDS in tests), ms.
 */
function uploadSweepMs(expirySeconds: number): number {
  return Math.max(1000, Math.min(60_000, (expirySeconds * 1000) / 2));
}

/** Sweeps expired and orphaned resumable uploads once. */
async function sweepUploads(services: Services): Promise<void> {
  const swept = await services.uploads.sweep();
  if (swept.expired + swept.orphans > 0) logInfo(`swept ${swept.expired} expired and ${swept.orphans} orphaned resumable upload(s)`);
}

/**
 * Counts the blob store's writes of uploaded bytes in `cubby_uploads_in_flight`: new blobs (REST
 * and RPC uploads, content replacements, guest uploads) and resumable-upload chunks (tus PATCH).
 */
function countUploads(blobs: BlobStore, metrics: Metrics): void {
  const write = blobs.write.bind(blobs);
  blobs.write = (content, opts) => metrics.countUpload(() => write(content, opts));
  const append = blobs.partials.append.bind(blobs.partials);
  blobs.partials.append = (...args) => metrics.countUpload(() => append(...args));
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
