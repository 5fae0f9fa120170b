/**
 * The serving half of `cubby serve` (process/serve.ts loads it on demand): the HTTP app with the
 * MCP route on it, the RPC routes, metrics and the one-port listener over opened services. Each
 * surface (http/, mcp/, rpc/) is mounted here, so none of them imports another.
 */
import type { Config } from "../config.ts";
import { OidcSignIn } from "../auth/oidc.ts";
import { Authenticator } from "../auth/principal.ts";
import { WindowLimiter } from "../auth/rate-limit.ts";
import { createApp } from "../http/app.ts";
import { mcpRoutes } from "../mcp/mcp-routes.ts";
import { fileUnaryMethods } from "../rpc/file-service.ts";
import { rpcPaths, rpcRoutes } from "../rpc/index.ts";
import type { Services } from "../service/index.ts";
import type { BlobStore } from "../storage/ports.ts";
import { batchedLog, PIPE_ATOMIC_BYTES } from "../log.ts";
import { Metrics } from "../serving/metrics.ts";
import { listenOnePort, type OnePortServer } from "../server/one-port.ts";
import { enableResponseTap } from "../server/response-tap.ts";

/**
 * Builds the app and the RPC routes and listens on the port.
 * @param opts.reusePort listen with SO_REUSEPORT (workers)
 * @param opts.graceMs how long a stop lets in-flight requests finish
 * @param opts.aggregate renders every worker's metrics (workers); undefined: this process's
 * @param opts.onMetrics told of the metrics when METRICS is on
 * @returns the bound port, the public base URL, and a stop that drains and flushes the log
 */
export async function startServing(
  config: Config,
  services: Services,
  opts: { reusePort: boolean; graceMs: number; aggregate?: () => Promise<string>; onMetrics?: (metrics: Metrics) => void },
): Promise<{ port: number; baseUrl: string; stop: () => Promise<void> }> {
  let baseUrl = config.hostname ?? "";
  const auth = new Authenticator(services.keys, services.sessions, () => baseUrl, new WindowLimiter(services.store.rateLimits, "auth", config.rateLimits.authFailures, services.clock));
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
    signInLimiter: new WindowLimiter(services.store.rateLimits, "sign-in", config.rateLimits.signIns, services.clock),
    baseUrl: () => baseUrl,
    maxUploadBytes: config.maxUploadBytes,
  }).use(mcpRoutes({ files: services.files, shares: services.shares, folders: services.folders, auth, baseUrl: () => baseUrl, maxUploadBytes: config.maxUploadBytes }));
  const rpcDeps = { files: services.files, folders: services.folders, auth, baseUrl: () => baseUrl };
  // One implementation of the unary methods, for connect-node and the unary fast path alike.
  const unary = fileUnaryMethods(rpcDeps);
  const routes = rpcRoutes(rpcDeps, unary);
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
    unary,
    content: { files: services.files, folders: services.folders, shares: services.shares, thumbnails: services.thumbnails, auth, baseUrl: () => baseUrl, clockMicros: () => services.clock.nowMicros() },
    dav: { files: services.files, folders: services.folders, store: services.store, quotas: services.quotas, clock: services.clock, auth, baseUrl: () => baseUrl },
    s3: { files: services.files, folders: services.folders, uploads: services.uploads, store: services.store, blobs: services.blobs, maxUploadBytes: config.maxUploadBytes, clock: services.clock, auth, baseUrl: () => baseUrl },
    answerAtOnce: config.testAtOnce !== false,
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
  services.webhooks.setBaseUrl(baseUrl);
  return {
    port: server.port,
    baseUrl,
    async stop() {
      await server.stop(opts.graceMs);
      flushLog();
    },
  };
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
