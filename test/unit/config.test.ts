import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ConfigError, defaultWorkers, loadConfig } from "../../src/config.ts";
import { availableMemory } from "../../src/memory-limit.ts";

const outcome = (fn: () => unknown) => {
  try {
    return { ok: fn() };
  } catch (e) {
    if (e instanceof ConfigError) return { error: e.message };
    throw e;
  }
};

describe("loadConfig", () => {
  test("defaults (CONTRACT §1)", () => {
    expect(loadConfig({}, {}, "/srv")).toEqual({
      port: 8080,
      workers: defaultWorkers({ platform: process.platform, cpus: os.availableParallelism(), memoryBytes: availableMemory() }),
      workerId: undefined,
      dataDir: "/srv/data",
      hostname: undefined,
      idp: { issuer: "https://accounts.google.com", clientId: undefined, clientSecret: undefined },
      allowedDomains: [],
      maxUploadBytes: 10737418240,
      rateLimits: { authFailures: 20, signIns: 30 },
      trustedProxies: [],
      connections: { total: 4096, perClient: 64 },
      timeouts: { headerSeconds: 10, idleSeconds: 60 },
      databaseUrl: undefined,
      s3: undefined,
      uploadExpirySeconds: 86400,
      quotaBytes: null,
      metricsToken: undefined,
      metricsEnabled: true,
      logFormat: "text",
      webhookAllowedHosts: [],
      adminEmails: [],
      shareLogFullAddress: false,
      thumbnailMaxPixels: 40_000_000,
    });
  });

  test("every variable", () => {
    const env = {
      PORT: "9000",
      DATA_DIR: "/var/lib/cubby",
      HOSTNAME: "https://files.example.com/",
      IDP_ISSUER: "https://auth.example.com/application/o/cubby/",
      IDP_CLIENT_ID: "cid",
      IDP_CLIENT_SECRET: "secret",
      ALLOWED_DOMAINS: "Example.com, example.org ,",
      MAX_UPLOAD_BYTES: "1048576",
      RATE_LIMIT_AUTH_FAILURES: "5",
      RATE_LIMIT_SIGN_INS: "0",
      HEADER_TIMEOUT_SECONDS: "5",
      IDLE_TIMEOUT_SECONDS: "255",
      TRUSTED_PROXIES: "127.0.0.1, ::1",
      MAX_CONNECTIONS: "100",
      MAX_CONNECTIONS_PER_CLIENT: "0",
      DATABASE_URL: "postgres://cubby:pw@db.example.com:5432/cubby?sslmode=require",
      S3_BUCKET: "files",
      S3_ENDPOINT: "http://127.0.0.1:9000/",
      S3_REGION: "eu-central-1",
      S3_ACCESS_KEY_ID: "AKID",
      S3_SECRET_ACCESS_KEY: "SECRET",
      S3_PREFIX: "cubby/",
      S3_VIRTUAL_HOSTED_STYLE: "true",
      TUS_UPLOAD_EXPIRY_SECONDS: "3600",
      QUOTA_BYTES: "1073741824",
      METRICS_TOKEN: "0123456789abcdef0123",
      METRICS: "off",
      LOG_FORMAT: "json",
      WORKERS: "3",
      WEBHOOK_ALLOWED_HOSTS: "n8n.lan, 10.0.0.0/8,,::1",
      ADMIN_EMAILS: " Root@Example.com,,ops@example.org",
      SHARE_LOG_FULL_ADDRESS: "true",
      THUMBNAIL_MAX_PIXELS: "0",
    };
    expect(loadConfig(env, {}, "/")).toEqual({
      port: 9000,
      workers: 3,
      workerId: undefined,
      dataDir: "/var/lib/cubby",
      hostname: "https://files.example.com",
      idp: { issuer: "https://auth.example.com/application/o/cubby", clientId: "cid", clientSecret: "secret" },
      allowedDomains: ["example.com", "example.org"],
      maxUploadBytes: 1048576,
      rateLimits: { authFailures: 5, signIns: 0 },
      trustedProxies: ["127.0.0.1", "::1"],
      connections: { total: 100, perClient: 0 },
      timeouts: { headerSeconds: 5, idleSeconds: 255 },
      databaseUrl: "postgres://cubby:pw@db.example.com:5432/cubby?sslmode=require",
      s3: {
        bucket: "files",
        endpoint: "http://127.0.0.1:9000",
        region: "eu-central-1",
        accessKeyId: "AKID",
        secretAccessKey: "SECRET",
        prefix: "cubby/",
        virtualHostedStyle: true,
      },
      uploadExpirySeconds: 3600,
      quotaBytes: 1073741824,
      metricsToken: "0123456789abcdef0123",
      metricsEnabled: false,
      logFormat: "json",
      webhookAllowedHosts: ["n8n.lan", "10.0.0.0/8", "::1"],
      adminEmails: ["root@example.com", "ops@example.org"],
      shareLogFullAddress: true,
      thumbnailMaxPixels: 0,
    });
  });

  test("empty store variables count as unset (compose files write S3_ENDPOINT= to leave one out)", () => {
    const c = loadConfig({ DATABASE_URL: "", S3_BUCKET: "", S3_ENDPOINT: "", S3_PREFIX: "", S3_ACCESS_KEY_ID: "", S3_SECRET_ACCESS_KEY: "" });
    expect({ databaseUrl: c.databaseUrl, s3: c.s3 }).toEqual({ databaseUrl: undefined, s3: undefined });
  });

  test("flags override PORT and DATA_DIR", () => {
    const c = loadConfig({ PORT: "1", DATA_DIR: "/a" }, { port: "0", dataDir: "rel" }, "/base");
    expect({ port: c.port, dataDir: c.dataDir }).toEqual({ port: 0, dataDir: "/base/rel" });
  });

  test("NAME_FILE reads a trimmed secret", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-cfg-"));
    const file = path.join(dir, "secret");
    fs.writeFileSync(file, "  s3cret\n");
    const c = loadConfig({ IDP_CLIENT_ID: "id", IDP_CLIENT_SECRET_FILE: file });
    expect(c.idp.clientSecret).toBe("s3cret");
    fs.rmSync(dir, { recursive: true });
  });

  test.each([
    // [cores, memory in GiB, default WORKERS]: one per core, at most one per GiB (CONTRACT §10).
    [4, 1, 1],
    [4, 0.96, 1], // a 1 GiB machine reports a little less
    [4, 0.5, 1],
    [2, 24, 2],
    [4, 1.9, 2], // a machine sold as 2 GiB
    [4, 2, 2],
    [4, 8, 4],
    [128, 256, 64],
    [1, 16, 1],
  ])("WORKERS' default on Linux with %p cores and %p GiB: %p", (cpus, gib, workers) => {
    expect(defaultWorkers({ platform: "linux", cpus, memoryBytes: gib * 1024 ** 3 })).toBe(workers);
  });

  test("WORKERS' default elsewhere than Linux is 1 (no SO_REUSEPORT spreading)", () => {
    expect(defaultWorkers({ platform: "darwin", cpus: 8, memoryBytes: 16 * 1024 ** 3 })).toBe(1);
  });

  test("the tests' stand-in for a 1 GiB, 4-core machine gives one process; WORKERS set wins; empty WORKERS is unset", () => {
    const nas = { CUBBY_TEST_MEMORY_BYTES: String(1024 ** 3), CUBBY_TEST_CPUS: "4" };
    expect(loadConfig(nas).workers).toBe(1);
    expect(loadConfig({ ...nas, WORKERS: "" }).workers).toBe(1);
    expect(loadConfig({ ...nas, CUBBY_TEST_MEMORY_BYTES: String(4 * 1024 ** 3) }).workers).toBe(4);
    expect(loadConfig({ ...nas, WORKERS: "3" }).workers).toBe(3);
  });

  test("the tests' expiry sweep period and removal grace: whole milliseconds; unset or empty keeps the production ones", () => {
    const timings = (env: Record<string, string>) => {
      const { testExpirySweepMs, testRemovalGraceMs } = loadConfig(env);
      return { testExpirySweepMs, testRemovalGraceMs };
    };
    expect(timings({ CUBBY_TEST_EXPIRY_SWEEP_MS: "200", CUBBY_TEST_REMOVAL_GRACE_MS: "0" })).toEqual({ testExpirySweepMs: 200, testRemovalGraceMs: 0 });
    expect(timings({ CUBBY_TEST_EXPIRY_SWEEP_MS: " 10 ", CUBBY_TEST_REMOVAL_GRACE_MS: "3600000" })).toEqual({ testExpirySweepMs: 10, testRemovalGraceMs: 3_600_000 });
    expect(timings({ CUBBY_TEST_EXPIRY_SWEEP_MS: "", CUBBY_TEST_REMOVAL_GRACE_MS: " " })).toEqual({ testExpirySweepMs: undefined, testRemovalGraceMs: undefined });
    expect(timings({})).toEqual({ testExpirySweepMs: undefined, testRemovalGraceMs: undefined });
  });

  test("the tests' guest part life: whole milliseconds from 100; unset keeps the hour (CONTRACT §15)", () => {
    expect(loadConfig({ CUBBY_TEST_GUEST_PART_MS: "3000" }).testGuestPartMs).toBe(3000);
    expect(loadConfig({ CUBBY_TEST_GUEST_PART_MS: "" }).testGuestPartMs).toBeUndefined();
    expect(loadConfig({}).testGuestPartMs).toBeUndefined();
  });

  test("the tests' webhook claim lease: at least 1 000 ms, so that no lease ends under a live attempt; unset keeps LEASE_MS", () => {
    expect(loadConfig({ CUBBY_TEST_WEBHOOK_LEASE_MS: "3000" }).testWebhookLeaseMs).toBe(3000);
    expect(loadConfig({}).testWebhookLeaseMs).toBeUndefined();
    expect(() => loadConfig({ CUBBY_TEST_WEBHOOK_LEASE_MS: "999" })).toThrow(ConfigError);
  });

  test("a bare machine name in HOSTNAME (as containers set it) is ignored", () => {
    expect(loadConfig({ HOSTNAME: "3f2a9c1b7d" }).hostname).toBeUndefined();
  });

  test.each([
    ["port not a number", { PORT: "http" }, "PORT must be a TCP port number from 0 to 65535 (got \"http\")"],
    ["port too large", { PORT: "70000" }, "PORT must be a TCP port number from 0 to 65535 (got \"70000\")"],
    ["hostname with a path", { HOSTNAME: "https://x.example/cubby" }, "HOSTNAME must be an origin without a path, e.g. https://files.example.com (got \"https://x.example/cubby\")"],
    ["hostname of another scheme", { HOSTNAME: "ftp://x.example" }, "HOSTNAME must start with http:// or https:// (got \"ftp://x.example\")"],
    ["upload limit not a size", { MAX_UPLOAD_BYTES: "10 furlongs" }, "MAX_UPLOAD_BYTES must be a size: bytes, or with a unit such as 10G or 500MiB (got \"10 furlongs\")"],
    ["quota not a size", { QUOTA_BYTES: "lots" }, "QUOTA_BYTES must be a size: bytes, or with a unit such as 10G or 500MiB (got \"lots\"); unset it for no quota"],
    ["negative quota", { QUOTA_BYTES: "-1" }, "QUOTA_BYTES must be a size: bytes, or with a unit such as 10G or 500MiB (got \"-1\"); unset it for no quota"],
    ["client id without secret", { IDP_CLIENT_ID: "x" }, "IDP_CLIENT_ID and IDP_CLIENT_SECRET must be set together"],
    ["a domain that is an address", { ALLOWED_DOMAINS: "me@example.com" }, "ALLOWED_DOMAINS: \"me@example.com\" is not an e-mail domain (expected e.g. example.com,example.org)"],
    ["both NAME and NAME_FILE", { IDP_CLIENT_SECRET: "a", IDP_CLIENT_SECRET_FILE: "/x" }, "IDP_CLIENT_SECRET and IDP_CLIENT_SECRET_FILE are both set; set only one"],
    ["unreadable NAME_FILE", { PORT_FILE: "/nonexistent/port" }, "PORT_FILE: cannot read /nonexistent/port: ENOENT: no such file or directory, open '/nonexistent/port'"],
    ["rate limit not a number", { RATE_LIMIT_AUTH_FAILURES: "lots" }, "RATE_LIMIT_AUTH_FAILURES must be a whole number (got \"lots\"); 0 disables the limit"],
    ["idle timeout past Bun's limit", { IDLE_TIMEOUT_SECONDS: "256" }, "IDLE_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 255 (got \"256\")"],
    ["no header timeout", { HEADER_TIMEOUT_SECONDS: "0" }, "HEADER_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 3600 (got \"0\")"],
    ["a webhook host that is not a name, address or range", { WEBHOOK_ALLOWED_HOSTS: "n8n.lan,n8n_lan" }, 'WEBHOOK_ALLOWED_HOSTS: "n8n_lan" is neither a host name, an IP address nor a CIDR range (expected e.g. n8n.lan,10.0.0.0/8)'],
    ["a share log setting that is not a boolean", { SHARE_LOG_FULL_ADDRESS: "yes" }, 'SHARE_LOG_FULL_ADDRESS must be true or false (got "yes")'],
    ["a thumbnail size that is not a number of pixels", { THUMBNAIL_MAX_PIXELS: "24MP" }, 'THUMBNAIL_MAX_PIXELS must be a whole number of pixels (width × height), 0 for no thumbnails made here (got "24MP")'],
    ["an admin that is not an e-mail", { ADMIN_EMAILS: "root@example.com,root" }, 'ADMIN_EMAILS: "root" is not an e-mail address (expected e.g. alice@example.com,bob@example.com)'],
    ["a webhook range too wide for its family", { WEBHOOK_ALLOWED_HOSTS: "10.0.0.0/33" }, 'WEBHOOK_ALLOWED_HOSTS: "10.0.0.0/33" is not a CIDR range (expected e.g. 10.0.0.0/8 or fd00::/8)'],
    ["a proxy that is not an address", { TRUSTED_PROXIES: "10.0.0.0/8" }, "TRUSTED_PROXIES: \"10.0.0.0/8\" is not an IP address (expected e.g. 127.0.0.1,10.0.0.2)"],
    ["issuer not a URL", { IDP_ISSUER: "google" }, "IDP_ISSUER must be the issuer URL of an OpenID provider (got \"google\")"],
    ["a database URL of another kind", { DATABASE_URL: "mysql://h/db" }, "DATABASE_URL must start with postgres:// (got mysql://); unset it for SQLite in DATA_DIR"],
    ["a database URL without a database", { DATABASE_URL: "postgres://h:5432" }, "DATABASE_URL needs a host and a database name (postgres://user:password@host:5432/database)"],
    ["S3 settings without a bucket", { S3_ENDPOINT: "http://x:9000" }, "S3_ENDPOINT is set but S3_BUCKET is not; set S3_BUCKET to store blobs in S3"],
    ["an S3 endpoint with a path", { S3_BUCKET: "b", S3_ENDPOINT: "http://x:9000/b" }, "S3_ENDPOINT must be an http(s) origin such as http://127.0.0.1:9000 (got \"http://x:9000/b\")"],
    ["an S3 key without its secret", { S3_BUCKET: "b", S3_ACCESS_KEY_ID: "k" }, "S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together"],
    ["an S3 prefix without a slash", { S3_BUCKET: "b", S3_PREFIX: "cubby" }, "S3_PREFIX must end with \"/\" and not start with one, e.g. cubby/ (got \"cubby\")"],
    ["a metrics token too short to be secret", { METRICS_TOKEN: "hunter2" }, "METRICS_TOKEN must be at least 16 printable ASCII characters without spaces (e.g. from `openssl rand -hex 32`)"],
    ["a metrics token with a space", { METRICS_TOKEN: "0123456789 abcdef" }, "METRICS_TOKEN must be at least 16 printable ASCII characters without spaces (e.g. from `openssl rand -hex 32`)"],
    ["metrics neither on nor off", { METRICS: "yes" }, "METRICS must be on or off (got \"yes\")"],
    ["a log format of another kind", { LOG_FORMAT: "logfmt" }, "LOG_FORMAT must be text or json (got \"logfmt\")"],
    ["no workers", { WORKERS: "0" }, "WORKERS must be a whole number of serving processes from 1 to 64 (got \"0\"); 1 serves from this process alone"],
    ["workers not a number", { WORKERS: "auto" }, "WORKERS must be a whole number of serving processes from 1 to 64 (got \"auto\"); 1 serves from this process alone"],
    ["too many workers", { WORKERS: "65" }, "WORKERS must be a whole number of serving processes from 1 to 64 (got \"65\"); 1 serves from this process alone"],
    ["a test memory override not a number", { CUBBY_TEST_MEMORY_BYTES: "1G" }, "CUBBY_TEST_MEMORY_BYTES (tests only) must be a whole number from 0 (got \"1G\")"],
    ["a test core override of none", { CUBBY_TEST_CPUS: "0" }, "CUBBY_TEST_CPUS (tests only) must be a whole number from 1 (got \"0\")"],
    ["a test sweep period with a unit", { CUBBY_TEST_EXPIRY_SWEEP_MS: "1s" }, "CUBBY_TEST_EXPIRY_SWEEP_MS (tests only) must be a whole number of milliseconds from 10 to 3600000 (got \"1s\")"],
    ["a test sweep period that would spin", { CUBBY_TEST_EXPIRY_SWEEP_MS: "0" }, "CUBBY_TEST_EXPIRY_SWEEP_MS (tests only) must be a whole number of milliseconds from 10 to 3600000 (got \"0\")"],
    ["a test sweep period past an hour", { CUBBY_TEST_EXPIRY_SWEEP_MS: "3600001" }, "CUBBY_TEST_EXPIRY_SWEEP_MS (tests only) must be a whole number of milliseconds from 10 to 3600000 (got \"3600001\")"],
    ["a test guest part life too short to see", { CUBBY_TEST_GUEST_PART_MS: "99" }, "CUBBY_TEST_GUEST_PART_MS (tests only) must be a whole number of milliseconds from 100 to 3600000 (got \"99\")"],
    ["a negative test removal grace", { CUBBY_TEST_REMOVAL_GRACE_MS: "-1" }, "CUBBY_TEST_REMOVAL_GRACE_MS (tests only) must be a whole number of milliseconds from 0 to 3600000 (got \"-1\")"],
    ["a fractional test removal grace", { CUBBY_TEST_REMOVAL_GRACE_MS: "0.5" }, "CUBBY_TEST_REMOVAL_GRACE_MS (tests only) must be a whole number of milliseconds from 0 to 3600000 (got \"0.5\")"],
  ])("%s", (_, env, message) => expect(outcome(() => loadConfig(env))).toEqual({ error: message }));
});
