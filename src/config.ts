/**
 * The only reader of `process.env`. Turns environment variables and the `--port` /
 * `--data-dir` flags into a typed {@link Config}, or fails with one clear line.
 *
 * Every variable may instead be given as `NAME_FILE=/path` (the file's contents, trimmed),
 * which is how container secrets are usually mounted (CONTRACT §1).
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { S3Settings } from "./storage/s3-blobs.ts";
import type { LogFormat } from "./log.ts";
import { availableMemory } from "./memory-limit.ts";
import { parseAllowedHosts } from "./domain/host-allowlist.ts";
import { parseEmail } from "./domain/params.ts";
import { parseSize } from "./domain/size.ts";

export interface Config {
  /** TCP port for every protocol; 0 lets the OS choose (tests). */
  port: number;
  /** Directory for the SQLite database and blobs, absolute. */
  dataDir: string;
  /**
   * Public base URL (origin, no trailing slash) used for file URLs and the OAuth redirect,
   * or `undefined` for the default `http://localhost:<bound port>` resolved after listening.
   */
  hostname: string | undefined;
  idp: {
    issuer: string;
    clientId: string | undefined;
    clientSecret: string | undefined;
  };
  /** Lower-cased e-mail domains allowed to sign in; empty means every domain. */
  allowedDomains: string[];
  /** Largest accepted upload in bytes; larger bodies get 413. */
  maxUploadBytes: number;
  /** Per client address and minute; 0 disables a limit. */
  rateLimits: {
    /** Failed authentications (bad key or session) before 429. */
    authFailures: number;
    /** Sign-in callbacks before 429. */
    signIns: number;
  };
  /** Addresses of reverse proxies whose X-Forwarded-For names the client (rate limits). */
  trustedProxies: string[];
  /** Open connections allowed at once (0: no limit). */
  connections: {
    /** All clients together (MAX_CONNECTIONS). */
    total: number;
    /** From one client address; TRUSTED_PROXIES are exempt (MAX_CONNECTIONS_PER_CLIENT). */
    perClient: number;
  };
  timeouts: {
    /** Seconds a request has to send its complete headers, from its first byte (408 after). */
    headerSeconds: number;
    /** Seconds a connection may stay silent, no bytes either way, before it is closed. */
    idleSeconds: number;
  };
  /** PostgreSQL for the metadata (DATABASE_URL, CONTRACT §7); undefined: SQLite in dataDir. */
  databaseUrl: string | undefined;
  /** An S3-compatible bucket for the blobs (S3_*, CONTRACT §7); undefined: files in dataDir. */
  s3: S3Settings | undefined;
  /** Seconds an unfinished resumable upload lives (TUS_UPLOAD_EXPIRY_SECONDS, default 24 h, CONTRACT §8). */
  uploadExpirySeconds: number;
  /** QUOTA_BYTES: the storage quota of every user without one of their own (CONTRACT §9); null: none. */
  quotaBytes: number | null;
  /**
   * The bearer token that opens `GET /metrics` to clients other than loopback (METRICS_TOKEN,
   * CONTRACT §9); undefined: only loopback clients may read it.
   */
  metricsToken: string | undefined;
  /** Whether requests are counted and `/metrics` served (METRICS, default on; off only to measure its cost). */
  metricsEnabled: boolean;
  /** Access and error log lines as today's text, or one JSON object each (LOG_FORMAT, CONTRACT §9). */
  logFormat: LogFormat;
  /**
   * Serving processes sharing the port (WORKERS, default: the cores this process may use, at
   * most one per GiB of memory, {@link defaultWorkers}; 1: one process serves, as before issue
   * 16). Above 1 a supervisor runs them (process/workers.ts).
   */
  workers: number;
  /**
   * Set in a serving process the supervisor started (CUBBY_WORKER, internal): its number, from
   * 1; undefined in the supervisor and when WORKERS is 1.
   */
  workerId: number | undefined;
  /** Tests only: a file every response is recorded in (CUBBY_TEST_RESPONSE_LOG, server/response-tap.ts). */
  testResponseLog?: string | undefined;
  /**
   * Tests only: false when content decided now is still answered after a turn, as if its rest
   * had run (CUBBY_TEST_AT_ONCE=off, serving/content.ts), so that a test can compare the answers;
   * undefined otherwise.
   */
  testAtOnce?: false | undefined;
  /**
   * Tests only: how often expired files are swept, ms (CUBBY_TEST_EXPIRY_SWEEP_MS); undefined:
   * EXPIRY_SWEEP_MS (service/files.ts, 15 s).
   */
  testExpirySweepMs?: number | undefined;
  /**
   * Tests only: how long a replaced or deleted blob stays for readers, ms
   * (CUBBY_TEST_REMOVAL_GRACE_MS); undefined: REMOVAL_GRACE_MS (storage/blob-memory.ts, 30 s).
   */
  testRemovalGraceMs?: number | undefined;
  /**
   * Tests only: how long a guest's partial upload waits to be concatenated, ms
   * (CUBBY_TEST_GUEST_PART_MS, at least 100); undefined: GUEST_PART_MICROS (service/uploads.ts, an
   * hour, CONTRACT §15). The upload sweep then runs every half of it (process/serve.ts), so a test
   * sees an abandoned concatenation's reservation come back in seconds.
   */
  testGuestPartMs?: number | undefined;
  /**
   * Where webhooks may point beyond public addresses (WEBHOOK_ALLOWED_HOSTS, CONTRACT §13):
   * host names, addresses and CIDR ranges, each checked (domain/host-allowlist.ts).
   */
  webhookAllowedHosts: string[];
  /** ADMIN_EMAILS: the (lower-cased) e-mails of administrators besides those promoted (CONTRACT §15). */
  adminEmails: string[];
  /** SHARE_LOG_FULL_ADDRESS=true: share access logs keep whole client addresses (default: /24 or /48, CONTRACT §15). */
  shareLogFullAddress: boolean;
  /**
   * THUMBNAIL_MAX_PIXELS: the largest image (width × height) this server makes a thumbnail of,
   * CONTRACT §15; 0: it makes none (thumbnails a browser sends are still kept).
   */
  thumbnailMaxPixels: number;
  /**
   * Tests only: the first retry delay of a webhook delivery, ms (CUBBY_TEST_WEBHOOK_RETRY_MS);
   * undefined: RETRY_BASE_MS (service/webhook-deliverer.ts, 5 s).
   */
  testWebhookRetryMs?: number | undefined;
  /**
   * Tests only: how long a webhook delivery's claim holds it for its process, ms
   * (CUBBY_TEST_WEBHOOK_LEASE_MS, at least 1 000); undefined: LEASE_MS (30 s). The tests that
   * kill a server holding claims wait for their leases to end.
   */
  testWebhookLeaseMs?: number | undefined;
}

/**
 * THUMBNAIL_MAX_PIXELS' default: 40 megapixels, most cameras' and every phone's photos. A
 * thumbnail's child process peaks at about 10–13 MiB a megapixel (docs/benchmarks.md): ~520 MiB
 * at the limit, which a 1 GiB machine (one serving process, so one child) can still give.
 */
const DEFAULT_THUMBNAIL_MAX_PIXELS = 40_000_000;

/** The most serving processes WORKERS may ask for. */
const MAX_WORKERS = 64;

/** Memory per serving process WORKERS' default allows (bytes): one worker per GiB. */
const MEMORY_PER_WORKER = 1024 ** 3;

/**
 * WORKERS' default (CONTRACT §10): on Linux, one serving process per core this process may run
 * on, and at most one per GiB of memory it may use (rounded, so a machine sold as 2 GiB that
 * reports a little less counts as 2), at least 1 and at most {@link MAX_WORKERS}. A process idles
 * at ~70 MiB RSS and a supervisor at ~60 MiB (docs/deploy.md): a 1 GiB machine gets one process
 * (~71 MiB, within §10's 128 MiB), 2 GiB two workers and their supervisor (~200 MiB), so idle
 * memory stays near a tenth of the whole. Elsewhere 1, since workers share the port through
 * SO_REUSEPORT's load balancing, which is Linux's (BSD and macOS let several sockets bind without
 * spreading connections over them).
 * @param host `cpus`: cores this process may run on (os.availableParallelism); `memoryBytes`:
 *   memory it may use (memory-limit.ts: the machine's, or its cgroup's limit when smaller)
 */
export function defaultWorkers(host: { platform: NodeJS.Platform; cpus: number; memoryBytes: number }): number {
  if (host.platform !== "linux") return 1;
  const byMemory = Math.round(host.memoryBytes / MEMORY_PER_WORKER);
  return Math.min(MAX_WORKERS, Math.max(1, Math.min(host.cpus, byMemory)));
}

/** A configuration problem: the message is the one line printed before exiting with status 2. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** The one-line error for a port another program holds (CONTRACT §17: a line, exit 2, no stack). */
export function portInUse(port: number | undefined): ConfigError {
  return new ConfigError(`port ${port ?? "(PORT)"} is already in use by another program; stop it, or serve on another port with PORT=N or --port N`);
}

export type Env = Record<string, string | undefined>;

/** Flags that override the environment: `--port` and `--data-dir`. */
export interface ConfigFlags {
  port?: string;
  dataDir?: string;
}

const DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 ** 3;

/**
 * Reads the configuration.
 * @param env usually `process.env`
 * @param flags command-line overrides
 * @param cwd base for a relative `DATA_DIR`
 * @throws ConfigError on any invalid value, naming the variable and what was expected
 */
export function loadConfig(env: Env, flags: ConfigFlags = {}, cwd = process.cwd()): Config {
  const get = (name: string) => readVar(env, name);

  const port = parsePort(flags.port ?? get("PORT") ?? "8080", flags.port !== undefined ? "--port" : "PORT");
  const dataDirRaw = flags.dataDir ?? get("DATA_DIR") ?? "./data";
  if (dataDirRaw.trim() === "") throw new ConfigError("DATA_DIR must not be empty");
  const dataDir = path.resolve(cwd, dataDirRaw);

  const hostname = parseHostname(get("HOSTNAME"));
  const issuer = parseIssuer(get("IDP_ISSUER") ?? "https://accounts.google.com");
  const clientId = emptyToUndefined(get("IDP_CLIENT_ID"));
  const clientSecret = emptyToUndefined(get("IDP_CLIENT_SECRET"));
  if ((clientId === undefined) !== (clientSecret === undefined)) {
    throw new ConfigError("IDP_CLIENT_ID and IDP_CLIENT_SECRET must be set together");
  }

  const allowedDomains = (get("ALLOWED_DOMAINS") ?? "")
    .split(",")
    .map((d) => d.trim().toLowerCase())
    .filter((d) => d !== "");
  for (const d of allowedDomains) {
    if (!/^[a-z0-9.-]+$/.test(d) || d.startsWith(".") || d.includes("@")) {
      throw new ConfigError(`ALLOWED_DOMAINS: "${d}" is not an e-mail domain (expected e.g. example.com,example.org)`);
    }
  }

  const maxRaw = get("MAX_UPLOAD_BYTES");
  let maxUploadBytes = DEFAULT_MAX_UPLOAD_BYTES;
  if (maxRaw !== undefined) {
    const parsed = parseSize(maxRaw);
    if (parsed === undefined) throw new ConfigError(`MAX_UPLOAD_BYTES must be a size: bytes, or with a unit such as 10G or 500MiB (got "${maxRaw}")`);
    maxUploadBytes = parsed;
  }

  const quotaRaw = emptyToUndefined(get("QUOTA_BYTES"));
  const quotaBytes = quotaRaw === undefined ? null : parseSize(quotaRaw);
  if (quotaBytes === undefined) {
    throw new ConfigError(`QUOTA_BYTES must be a size: bytes, or with a unit such as 10G or 500MiB (got "${quotaRaw}"); unset it for no quota`);
  }

  const count = (name: string, fallback: number) => {
    const v = get(name);
    if (v === undefined) return fallback;
    if (!/^\d{1,9}$/.test(v)) throw new ConfigError(`${name} must be a whole number (got "${v}"); 0 disables the limit`);
    return Number(v);
  };
  const rateLimits = { authFailures: count("RATE_LIMIT_AUTH_FAILURES", 20), signIns: count("RATE_LIMIT_SIGN_INS", 30) };
  const connections = { total: count("MAX_CONNECTIONS", 4096), perClient: count("MAX_CONNECTIONS_PER_CLIENT", 64) };

  const seconds = (name: string, fallback: number, max: number) => {
    const v = get(name);
    if (v === undefined) return fallback;
    if (!/^\d{1,4}$/.test(v) || Number(v) < 1 || Number(v) > max) {
      throw new ConfigError(`${name} must be a whole number of seconds from 1 to ${max} (got "${v}")`);
    }
    return Number(v);
  };
  // 255 s at most: Bun.serve's idleTimeout limit when HTTP/1.1 went through it, kept so that
  // configurations stay valid either way.
  const timeouts = { headerSeconds: seconds("HEADER_TIMEOUT_SECONDS", 10, 3600), idleSeconds: seconds("IDLE_TIMEOUT_SECONDS", 60, 255) };
  // Shorter only for tests and operators who want it; 30 days at most.
  const uploadExpirySeconds = seconds("TUS_UPLOAD_EXPIRY_SECONDS", 24 * 3600, 30 * 24 * 3600);

  const trustedProxies = (get("TRUSTED_PROXIES") ?? "")
    .split(",")
    .map((a) => a.trim())
    .filter((a) => a !== "");
  for (const a of trustedProxies) {
    if (net.isIP(a) === 0) throw new ConfigError(`TRUSTED_PROXIES: "${a}" is not an IP address (expected e.g. 127.0.0.1,10.0.0.2)`);
  }

  const webhookAllowedHosts = (get("WEBHOOK_ALLOWED_HOSTS") ?? "")
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
  try {
    parseAllowedHosts(webhookAllowedHosts.join(","));
  } catch (err) {
    throw new ConfigError(`WEBHOOK_ALLOWED_HOSTS: ${(err as Error).message}`);
  }

  const adminEmails = (get("ADMIN_EMAILS") ?? "")
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "")
    .map((e) => {
      try {
        return parseEmail(e);
      } catch {
        throw new ConfigError(`ADMIN_EMAILS: "${e}" is not an e-mail address (expected e.g. alice@example.com,bob@example.com)`);
      }
    });

  const fullAddressRaw = (get("SHARE_LOG_FULL_ADDRESS") ?? "false").trim();
  if (fullAddressRaw !== "true" && fullAddressRaw !== "false") throw new ConfigError(`SHARE_LOG_FULL_ADDRESS must be true or false (got "${fullAddressRaw}")`);

  const thumbnailPixelsRaw = (get("THUMBNAIL_MAX_PIXELS") ?? String(DEFAULT_THUMBNAIL_MAX_PIXELS)).trim();
  if (!/^\d{1,10}$/.test(thumbnailPixelsRaw)) {
    throw new ConfigError(`THUMBNAIL_MAX_PIXELS must be a whole number of pixels (width × height), 0 for no thumbnails made here (got "${thumbnailPixelsRaw}")`);
  }

  const metricsToken = emptyToUndefined(get("METRICS_TOKEN"));
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,}$/.test(metricsToken)) {
    throw new ConfigError("METRICS_TOKEN must be at least 16 printable ASCII characters without spaces (e.g. from `openssl rand -hex 32`)");
  }
  const metricsRaw = (get("METRICS") ?? "on").trim();
  if (metricsRaw !== "on" && metricsRaw !== "off") throw new ConfigError(`METRICS must be on or off (got "${metricsRaw}")`);
  const logFormatRaw = (get("LOG_FORMAT") ?? "text").trim();
  if (logFormatRaw !== "text" && logFormatRaw !== "json") {
    throw new ConfigError(`LOG_FORMAT must be text or json (got "${logFormatRaw}")`);
  }

  const workersRaw = emptyToUndefined(get("WORKERS")) ?? String(defaultWorkers(hostResources(get)));
  if (!/^\d{1,3}$/.test(workersRaw) || Number(workersRaw) < 1 || Number(workersRaw) > MAX_WORKERS) {
    throw new ConfigError(`WORKERS must be a whole number of serving processes from 1 to ${MAX_WORKERS} (got "${workersRaw}"); 1 serves from this process alone`);
  }
  const workerRaw = get("CUBBY_WORKER");
  const workerId = workerRaw !== undefined && /^\d{1,3}$/.test(workerRaw) ? Number(workerRaw) : undefined;

  return {
    workers: Number(workersRaw),
    workerId,
    metricsToken,
    metricsEnabled: metricsRaw === "on",
    logFormat: logFormatRaw,
    databaseUrl: parseDatabaseUrl(get("DATABASE_URL")),
    s3: parseS3(get),
    port,
    dataDir,
    hostname,
    idp: { issuer, clientId, clientSecret },
    allowedDomains,
    maxUploadBytes,
    rateLimits,
    trustedProxies,
    connections,
    timeouts,
    uploadExpirySeconds,
    quotaBytes,
    testResponseLog: emptyToUndefined(get("CUBBY_TEST_RESPONSE_LOG")),
    testAtOnce: get("CUBBY_TEST_AT_ONCE") === "off" ? false : undefined,
    testExpirySweepMs: testMilliseconds(get, "CUBBY_TEST_EXPIRY_SWEEP_MS", 10),
    testRemovalGraceMs: testMilliseconds(get, "CUBBY_TEST_REMOVAL_GRACE_MS", 0),
    testGuestPartMs: testMilliseconds(get, "CUBBY_TEST_GUEST_PART_MS", 100),
    webhookAllowedHosts,
    adminEmails,
    shareLogFullAddress: fullAddressRaw === "true",
    thumbnailMaxPixels: Number(thumbnailPixelsRaw),
    testWebhookRetryMs: testMilliseconds(get, "CUBBY_TEST_WEBHOOK_RETRY_MS", 10),
    testWebhookLeaseMs: testMilliseconds(get, "CUBBY_TEST_WEBHOOK_LEASE_MS", 1000),
  };
}

/** The longest period or grace a CUBBY_TEST_*_MS variable may set: an hour. */
const MAX_TEST_MS = 3_600_000;

/**
 * A test-only duration (CUBBY_TEST_EXPIRY_SWEEP_MS, CUBBY_TEST_REMOVAL_GRACE_MS,
 * CUBBY_TEST_GUEST_PART_MS), so that a test
 * waits for a sweep seconds instead of the production periods; undefined when unset or empty.
 * @param min the smallest accepted value (ms): a sweep period of 0 would run without pause
 * @returns whole milliseconds from `min` to an hour
 * @throws ConfigError when the value is not such a whole number
 */
function testMilliseconds(get: (name: string) => string | undefined, name: string, min: number): number | undefined {
  const raw = emptyToUndefined(get(name));
  if (raw === undefined) return undefined;
  if (!/^\d{1,7}$/.test(raw) || Number(raw) < min || Number(raw) > MAX_TEST_MS) {
    throw new ConfigError(`${name} (tests only) must be a whole number of milliseconds from ${min} to ${MAX_TEST_MS} (got "${raw}")`);
  }
  return Number(raw);
}

/** A `postgres://` or `postgresql://` URL with a host and a database, or undefined when unset. */
function parseDatabaseUrl(raw: string | undefined): string | undefined {
  if (raw === undefined || raw.trim() === "") return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError("DATABASE_URL is not a URL (expected postgres://user:password@host:5432/database)");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new ConfigError(`DATABASE_URL must start with postgres:// (got ${url.protocol}//); unset it for SQLite in DATA_DIR`);
  }
  if (url.hostname === "" || url.pathname.length <= 1) {
    throw new ConfigError("DATABASE_URL needs a host and a database name (postgres://user:password@host:5432/database)");
  }
  return raw;
}

/** The S3_* variables (CONTRACT §7), or undefined when S3_BUCKET is unset. */
function parseS3(get: (name: string) => string | undefined): S3Settings | undefined {
  const bucket = emptyToUndefined(get("S3_BUCKET"));
  if (bucket === undefined) {
    const stray = ["S3_ENDPOINT", "S3_PREFIX", "S3_ACCESS_KEY_ID"].find((n) => emptyToUndefined(get(n)) !== undefined);
    if (stray !== undefined) throw new ConfigError(`${stray} is set but S3_BUCKET is not; set S3_BUCKET to store blobs in S3`);
    return undefined;
  }
  const endpoint = emptyToUndefined(get("S3_ENDPOINT"));
  if (endpoint !== undefined && !/^https?:\/\/[^/]+\/?$/.test(endpoint)) {
    throw new ConfigError(`S3_ENDPOINT must be an http(s) origin such as http://127.0.0.1:9000 (got "${endpoint}")`);
  }
  const prefix = get("S3_PREFIX") ?? "";
  if (prefix !== "" && (!prefix.endsWith("/") || prefix.startsWith("/"))) {
    throw new ConfigError(`S3_PREFIX must end with "/" and not start with one, e.g. cubby/ (got "${prefix}")`);
  }
  const style = get("S3_VIRTUAL_HOSTED_STYLE") ?? "false";
  if (style !== "true" && style !== "false") throw new ConfigError(`S3_VIRTUAL_HOSTED_STYLE must be true or false (got "${style}")`);
  const accessKeyId = emptyToUndefined(get("S3_ACCESS_KEY_ID") ?? get("AWS_ACCESS_KEY_ID"));
  const secretAccessKey = emptyToUndefined(get("S3_SECRET_ACCESS_KEY") ?? get("AWS_SECRET_ACCESS_KEY"));
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError("S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together");
  }
  return {
    bucket,
    endpoint: endpoint?.replace(/\/$/, ""),
    region: emptyToUndefined(get("S3_REGION")) ?? "us-east-1",
    accessKeyId,
    secretAccessKey,
    prefix,
    virtualHostedStyle: style === "true",
  };
}

/** Reads NAME, or the trimmed contents of the file named by NAME_FILE; both at once is an error. */
function readVar(env: Env, name: string): string | undefined {
  const direct = env[name];
  const file = env[`${name}_FILE`];
  if (file !== undefined && file !== "") {
    if (direct !== undefined && direct !== "") {
      throw new ConfigError(`${name} and ${name}_FILE are both set; set only one`);
    }
    try {
      return fs.readFileSync(file, "utf8").trim();
    } catch (e) {
      throw new ConfigError(`${name}_FILE: cannot read ${file}: ${(e as Error).message}`);
    }
  }
  return direct;
}

/**
 * The cores and memory this process may use, for WORKERS' default. Tests stand in for another
 * machine with CUBBY_TEST_CPUS and CUBBY_TEST_MEMORY_BYTES (tests only: whole numbers, cores ≥ 1,
 * bytes); unset, they are os.availableParallelism() and memory-limit.ts's figure.
 * @throws ConfigError when an override is not a whole number
 */
function hostResources(get: (name: string) => string | undefined): { platform: NodeJS.Platform; cpus: number; memoryBytes: number } {
  const override = (name: string, min: number): number | undefined => {
    const raw = emptyToUndefined(get(name));
    if (raw === undefined) return undefined;
    if (!/^\d{1,16}$/.test(raw) || Number(raw) < min) throw new ConfigError(`${name} (tests only) must be a whole number from ${min} (got "${raw}")`);
    return Number(raw);
  };
  const cpus = override("CUBBY_TEST_CPUS", 1) ?? os.availableParallelism();
  const memoryBytes = override("CUBBY_TEST_MEMORY_BYTES", 0) ?? availableMemory();
  return { platform: process.platform, cpus, memoryBytes };
}

function emptyToUndefined(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

function parsePort(raw: string, what: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n > 65535) {
    throw new ConfigError(`${what} must be a TCP port number from 0 to 65535 (got "${raw}")`);
  }
  return n;
}

/**
 * HOSTNAME is the public origin (`https://files.example.com`). Shells and container runtimes
 * often export HOSTNAME as the bare machine name; such a value (no scheme) is ignored with a
 * warning rather than stopping the server, since the user never chose it.
 */
function parseHostname(raw: string | undefined): string | undefined {
  if (raw === undefined || raw.trim() === "") return undefined;
  const value = raw.trim();
  if (!value.includes("://") && /^[A-Za-z0-9.-]+$/.test(value)) {
    console.warn(
      `warning: HOSTNAME="${value}" is not a URL (shells and containers set it to the machine name); ` +
        `using http://localhost:<port>. Set HOSTNAME=https://your.host for public links.`,
    );
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`HOSTNAME must be a URL such as https://files.example.com (got "${value}")`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`HOSTNAME must start with http:// or https:// (got "${value}")`);
  }
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash || url.username) {
    throw new ConfigError(`HOSTNAME must be an origin without a path, e.g. https://files.example.com (got "${value}")`);
  }
  return url.origin;
}

function parseIssuer(raw: string): string {
  try {
    const url = new URL(raw.trim());
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error();
    return url.href.replace(/\/$/, "");
  } catch {
    throw new ConfigError(`IDP_ISSUER must be the issuer URL of an OpenID provider (got "${raw}")`);
  }
}
