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
import { fileUnaryMethods } from "../rpc/file-service.ts";
import { rpcPaths, rpcRoutes } from "../rpc/index.ts";
import { EXPIRY_SWEEP_MS } from "../service/files.ts";
import { openServices, type Services } from "../service/index.ts";
import type { BlobStore } from "../storage/ports.ts";
import { logError, logInfo, setLogFormat } from "../log.ts";
import { listenOnePort, type OnePortServer } from "./one-port.ts";
import { batchedLog } from "./access-log.ts";
import { Metrics } from "./metrics.ts";
import { enableResponseTap } from "./response-tap.ts";

/** How often a server on a shared blob store sweeps orphans (ms). */
const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** In-flight requests get this long to finish after a stop signal, then connections are cut. */
export const SHUTDOWN_GRACE_MS = 10_000;

/** Runs the server until SIGTERM or SIGINT; returns once it has stopped and the stores are closed. */
export async function serve(config: Config): Promise<void> {
  setLogFormat(config.logFormat);
  {
    await using services = await openServices(config);
    await serveUntilStopped(config, services);
  }
  logInfo("stopped");
}

async function serveUntilStopped(config: Config, services: Services): Promise<void> {
  const timers = [
    await startSweeping(services),
    await repeat("expiry sweep", EXPIRY_SWEEP_MS, () => deleteExpired(services)),
    await repeat("upload sweep", uploadSweepMs(config.uploadExpirySeconds), () => sweepUploads(services)),
  ];
  let baseUrl = config.hostname ?? "";
  const auth = new Authenticator(services.keys, services.sessions, () => baseUrl, new WindowLimiter(config.rateLimits.authFailures));
  const { issuer, clientId, clientSecret } = config.idp;
  const signIn =
    clientId !== undefined && clientSecret !== undefined
      ? new OidcSignIn({ issuer, clientId, clientSecret, redirectUri: () => `${baseUrl}/auth/idp/callback`, allowedDomains: config.allowedDomains })
      : undefined;
  if (config.testResponseLog !== undefined) enableResponseTap(config.testResponseLog);
  const expired = await services.sessions.sweepExpired();
  if (expired > 0) logInfo(`removed ${expired} expired session(s)`);
  const app = createApp({
    services,
    auth,
    signIn,
    signInLimiter: new WindowLimiter(config.rateLimits.signIns),
    baseUrl: () => baseUrl,
    maxUploadBytes: config.maxUploadBytes,
  });
  const rpcDeps = { files: services.files, auth, baseUrl: () => baseUrl };
  // One implementation of the unary methods, for connect-node and the unary fast path alike.
  const unary = fileUnaryMethods(rpcDeps);
  const routes = rpcRoutes(rpcDeps, unary);
  const { log, flush: flushLog } = batchedLog((chunk) => process.stdout.write(chunk));
  const trustedProxies = new Set(config.trustedProxies);
  let listening: OnePortServer | undefined;
  const metrics = config.metricsEnabled
    ? new Metrics({ stored: () => services.store.files.totals(), transferred: () => listening?.transferred() ?? { received: 0, sent: 0 } })
    : undefined;
  if (metrics !== undefined) countUploads(services.blobs, metrics);
  const server = await listenOnePort({
    port: config.port,
    app: (request) => app.handle(request),
    routes,
    rpcPaths: rpcPaths(routes),
    unary,
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
  logInfo(`cubby ${pkg.version} listening on port ${server.port}; public URL ${baseUrl}; data in ${config.dataDir}`);

  const signal = await stopSignal();
  logInfo(`${signal}: stopping; in-flight requests have ${SHUTDOWN_GRACE_MS / 1000}s to finish`);
  for (const timer of timers) clearInterval(timer);
  await server.stop(SHUTDOWN_GRACE_MS);
  flushLog();
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
