// test-lists: default
// The container image (CONTRACT §17, issue 39): scripts/image.ts builds the amd64 image from the
// linux-x64 release executable (the release script builds arm64 too; one is enough here on two
// cores), twice to the same bytes, and Podman runs it with runc, as Docker would: `podman load`, a read-only root file
// system with no tmpfs anywhere (Docker's `--read-only`), every capability dropped, as the image's
// non-root user; it serves an upload, and a new container on the same volume serves it back; and
// through `podman pull docker-archive:` (Podman reads HEALTHCHECK only from Docker-format
// manifests) the image's HEALTHCHECK is healthy while the server answers, unhealthy when the
// server is stopped (SIGSTOP), healthy again after. Each test has its own Podman store in a
// temporary directory; every container and volume is removed, also on failure.
// deploy/compose.yaml runs under podman-compose on the same image, and the cubby service of
// deploy/compose.postgres-s3.yaml, its environment as written, on the suite's PostgreSQL and
// Swift S3. Without podman, runc or buildah (or podman-compose, PostgreSQL, Swift, for those
// tests) the tests skip saying so, or fail when CI is set.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { S3Client } from "bun";
import postgres from "postgres";
import fs from "node:fs";
import path from "node:path";
import { buildRelease } from "../../scripts/release.ts";
import { buildImage, IMAGE_DATA_DIR, IMAGE_EXECUTABLE, IMAGE_HEALTHCHECK, IMAGE_PORT, IMAGE_UID, type BuiltImage } from "../../scripts/image.ts";
import { checksumOf } from "../../src/domain/checksum.ts";
import { startPostgres, postgresBinDir } from "../support/postgres.ts";
import { childrenOf, freePort } from "../support/processes.ts";
import { haveSwift, startS3 } from "../support/s3.ts";
import { client, ROOT, tempDir } from "../support/server.ts";
import { testNeeding } from "../support/tools.ts";
import { waitFor } from "../support/wait.ts";

const PODMAN = Bun.which("podman");
const BUILDAH = Bun.which("buildah");
const RUNC = Bun.which("runc") ?? Bun.which("runc", { PATH: "/usr/sbin:/sbin" });
const missing = [
  ...(PODMAN === null ? ["podman (apt-get install podman)"] : []),
  ...(RUNC === null ? ["runc (apt-get install runc)"] : []),
  ...(BUILDAH === null ? ["buildah (apt-get install buildah)"] : []),
  ...(process.getuid?.() === 0 ? [] : ["root (buildah lays out files owned by root and by the image's user)"]),
];
const imageTest = testNeeding("the container image tests", missing);
const pgMissing = (() => {
  try {
    postgresBinDir();
    return [];
  } catch (err) {
    return [(err as Error).message];
  }
})();
const storesTest = testNeeding("the image on PostgreSQL and S3", [...missing, ...pgMissing, ...(haveSwift() ? [] : ["Swift (apt-get install swift-proxy swift-object swift-container swift-account memcached)"])]);
const PODMAN_COMPOSE = Bun.which("podman-compose");
const composeTest = testNeeding("the compose test", [...missing, ...(PODMAN_COMPOSE === null ? ["podman-compose (apt-get install podman-compose)"] : [])]);
const { version: VERSION, license: LICENSE } = (await Bun.file(path.join(ROOT, "package.json")).json()) as { version: string; license: string };

const dir = tempDir("cubby-image-");
afterAll(() => dir[Symbol.dispose]());
let image: BuiltImage | undefined;
let executable: string | undefined;

beforeAll(async () => {
  if (missing.length > 0) return;
  const started = performance.now();
  executable = (await buildRelease("linux-x64", path.join(dir.path, "release"))).file;
  image = await buildImage({ arch: "amd64", executable, out: path.join(dir.path, "cubby-oci-amd64.tar") });
  console.log(`cubby-oci-amd64.tar: ${(image.bytes / 1024 / 1024).toFixed(1)} MiB, built in ${((performance.now() - started) / 1000).toFixed(1)} s (executable and image)`);
}, 300_000);

/** Runs a command to its end. @returns exit code, stdout and stderr */
async function exec(cmd: string[], env?: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn(cmd, { env: env === undefined ? undefined : { ...process.env, ...env }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}

/**
 * A Podman of its own: storage and run state in a temporary directory (the vfs driver, so
 * nothing is mounted there), and a containers.conf of its own: runc (crun fails on this
 * machine's hybrid cgroups) and no default ulimits (Debian's would raise nofile above what a
 * test process may have). Disposing it removes every container and volume it made, then the directory.
 */
async function privatePodman(): Promise<
  AsyncDisposable & {
    podman: (...args: string[]) => Promise<string>;
    try: (...args: string[]) => Promise<{ code: number; out: string; err: string }>;
    /** podman's global options that select this store (for podman-compose's --podman-args) */
    globalArgs: string[];
    env: Record<string, string>;
  }
> {
  const home = fs.mkdtempSync(path.join(dir.path, "podman-"));
  const conf = path.join(home, "containers.conf");
  fs.writeFileSync(conf, `[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n`);
  const base = [PODMAN!, "--root", path.join(home, "root"), "--runroot", path.join(home, "run"), "--storage-driver", "vfs"];
  const env = { CONTAINERS_CONF: conf };
  const tryRun = (...args: string[]) => exec([...base, ...args], env);
  return {
    try: tryRun,
    globalArgs: base.slice(1),
    env,
    async podman(...args: string[]) {
      const r = await tryRun(...args);
      if (r.code !== 0) throw new Error(`podman ${args.join(" ")} exited ${r.code}:\n${r.err}`);
      return r.out.trim();
    },
    async [Symbol.asyncDispose]() {
      await tryRun("rm", "--all", "--force", "--time", "0");
      await tryRun("volume", "rm", "--all", "--force");
      await tryRun("rmi", "--all", "--force");
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}

type Podman = Awaited<ReturnType<typeof privatePodman>>;

/** Waits until container `name` answers `/healthz` at `url` with 200; fails at once with its log when it stops running. */
async function answering(p: Podman, name: string, url: string): Promise<void> {
  await waitFor(
    async () => {
      const state = await p.podman("inspect", "--format", "{{.State.Status}}", name);
      if (state !== "running") throw new Error(`container ${name} is ${state}:\n${(await p.try("logs", name)).err}`);
      return (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200;
    },
    `${name} to answer /healthz`,
    { timeoutMs: 30_000, pollMs: 100, detail: () => name },
  );
}

/** Starts a container of `ref` in the background with the given `podman run` options. @returns its name and http://127.0.0.1:<published port> once /healthz answers 200 */
async function start(p: Podman, ref: string, name: string, options: string[]): Promise<{ name: string; url: string }> {
  await p.podman("run", "--detach", "--name", name, "--publish", `127.0.0.1::${IMAGE_PORT}`, ...options, ref);
  const port = (await p.podman("port", name, `${IMAGE_PORT}/tcp`)).split(":").at(-1);
  const url = `http://127.0.0.1:${port}`;
  await answering(p, name, url);
  return { name, url };
}

/** The uids (real, effective, saved, file system) of a process and of every process under it, from /proc. */
function uidsUnder(pid: number): string[] {
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...childrenOf(all[i]!));
  return all.map((p) => /^Uid:\s+(.*)$/m.exec(fs.readFileSync(`/proc/${p}/status`, "utf8"))![1]!.replace(/\s+/g, " "));
}

describe("the image archive", () => {
  imageTest("is an OCI layout and a docker-archive of one configuration: user, port, volume, labels, HEALTHCHECK; the layer holds only the executable, its libraries, CA certificates and the user", async () => {
    const tar = image!.file;
    const read = async (member: string) => (await exec(["tar", "-xOf", tar, member])).out;
    const index = JSON.parse(await read("index.json"));
    const [docker] = JSON.parse(await read("manifest.json"));
    const manifest = JSON.parse(await read(`blobs/${index.manifests[0].digest.replace(":", "/")}`));
    expect({ layout: JSON.parse(await read("oci-layout")), name: index.manifests[0].annotations["org.opencontainers.image.ref.name"], dockerTags: docker.RepoTags }).toEqual({
      layout: { imageLayoutVersion: "1.0.0" },
      name: `cubby:${VERSION}`,
      dockerTags: [`cubby:${VERSION}`],
    });
    // Both manifests name the same configuration and layer.
    expect({ config: docker.Config, layers: docker.Layers }).toEqual({
      config: `blobs/${manifest.config.digest.replace(":", "/")}`,
      layers: manifest.layers.map((l: { digest: string }) => `blobs/${l.digest.replace(":", "/")}`),
    });
    const config = JSON.parse(await read(docker.Config));
    const labels = config.config.Labels as Record<string, string>;
    expect({
      architecture: config.architecture,
      os: config.os,
      user: config.config.User,
      ports: config.config.ExposedPorts,
      volumes: config.config.Volumes,
      entrypoint: config.config.Entrypoint,
      cmd: config.config.Cmd,
      healthcheck: config.config.Healthcheck,
      version: labels["org.opencontainers.image.version"],
      licenses: labels["org.opencontainers.image.licenses"],
      source: /^https?:\/\/\S+$/.test(labels["org.opencontainers.image.source"] ?? ""),
    }).toEqual({
      architecture: "amd64",
      os: "linux",
      user: `${IMAGE_UID}:${IMAGE_UID}`,
      ports: { [`${IMAGE_PORT}/tcp`]: {} },
      volumes: { [IMAGE_DATA_DIR]: {} },
      entrypoint: [IMAGE_EXECUTABLE],
      cmd: ["serve"],
      healthcheck: IMAGE_HEALTHCHECK,
      version: VERSION,
      licenses: LICENSE,
      source: true,
    });
    // The one layer, listed: no shell, no curl, nothing but these.
    using layer = tempDir("cubby-image-layer-");
    expect((await exec(["tar", "-xf", tar, "-C", layer.path, docker.Layers[0]])).code).toBe(0);
    const listing = (await exec(["tar", "--numeric-owner", "-tzvf", path.join(layer.path, docker.Layers[0])])).out;
    const entries = listing
      .trim()
      .split("\n")
      .map((line) => {
        const [mode, owner, , , , name] = line.split(/\s+/);
        return `${mode} ${owner} ${name!.replace(/^\.?\//, "").replace(/\/$/, "")}`;
      })
      .filter((e) => !/ (etc|etc\/ssl|etc\/ssl\/certs|lib|lib\/x86_64-linux-gnu|lib64|usr|usr\/local|usr\/local\/bin)$/.test(e))
      .sort();
    expect(entries).toEqual(
      [
        `drwx------ ${IMAGE_UID}/${IMAGE_UID} data`,
        "-rw-r--r-- 0/0 etc/group",
        "-rw-r--r-- 0/0 etc/passwd",
        "-rw-r--r-- 0/0 etc/ssl/certs/ca-certificates.crt",
        "-rwxr-xr-x 0/0 lib/x86_64-linux-gnu/libc.so.6",
        "-rwxr-xr-x 0/0 lib/x86_64-linux-gnu/libdl.so.2",
        "-rwxr-xr-x 0/0 lib/x86_64-linux-gnu/libm.so.6",
        "-rwxr-xr-x 0/0 lib/x86_64-linux-gnu/libpthread.so.0",
        "-rwxr-xr-x 0/0 lib64/ld-linux-x86-64.so.2",
        "drwxrwxrwt 0/0 tmp",
        "-rwxr-xr-x 0/0 usr/local/bin/cubby",
      ].sort(),
    );
  });
});

imageTest(
  "a second build from the same executable is byte-identical (so SHA256SUMS can be checked by rebuilding)",
  async () => {
    const sha = (f: string) => new Bun.CryptoHasher("sha256").update(fs.readFileSync(f)).digest("hex");
    const again = await buildImage({ arch: "amd64", executable: executable!, out: path.join(dir.path, "again.tar") });
    expect({ id: again.id, sha: sha(again.file) }).toEqual({ id: image!.id, sha: sha(image!.file) });
    fs.rmSync(again.file);
  },
  120_000,
);

describe("podman run (runc)", () => {
  imageTest(
    "podman load; read-only, no capabilities, not root: serves an upload, stops cleanly on SIGTERM, and a new container on the same volume serves it back",
    async () => {
      await using p = await privatePodman();
      expect(await p.podman("load", "--quiet", "--input", image!.file)).toBe(`Loaded image: localhost/cubby:${VERSION}`);
      const ref = `localhost/cubby:${VERSION}`;
      await p.podman("volume", "create", "cubby-data");
      // Docker's --read-only: nothing writable but the volume (Podman would add tmpfs on /tmp, /run, /var/tmp).
      const options = ["--read-only", "--read-only-tmpfs=false", "--cap-drop", "all", "--security-opt", "no-new-privileges", "--volume", `cubby-data:${IMAGE_DATA_DIR}`];
      const bytes = crypto.getRandomValues(new Uint8Array(2_000_000));
      let key: string;
      let content: string;
      {
        const first = await start(p, ref, "cubby-first", options);
        const pid = Number(await p.podman("inspect", "--format", "{{.State.Pid}}", first.name));
        const uids = uidsUnder(pid);
        expect({ processes: uids.length > 0, uids: [...new Set(uids)] }).toEqual({ processes: true, uids: [`${IMAGE_UID} ${IMAGE_UID} ${IMAGE_UID} ${IMAGE_UID}`] });
        // As the docs say it: `cubby` is on the image's PATH, DATA_DIR is the volume.
        key = await p.podman("exec", first.name, "cubby", "keys", "create", "--email", "image@example.com");
        const file = await client(first, key).upload(bytes, "?name=image.bin");
        expect({ checksum: file.checksum, size: file.size }).toEqual({ checksum: checksumOf(bytes), size: String(bytes.byteLength) });
        content = new URL(file.url).pathname; // file.url names HOSTNAME's origin (localhost:8080), not the published port
        await p.podman("stop", "--time", "20", first.name);
        expect(await p.podman("inspect", "--format", "{{.State.ExitCode}}", first.name)).toBe("0");
        await p.podman("rm", first.name);
      }
      const second = await start(p, ref, "cubby-second", options);
      const res = await client(second, key).fetch(content);
      expect({ status: res.status, same: Buffer.compare(new Uint8Array(await res.arrayBuffer()), bytes) === 0 }).toEqual({ status: 200, same: true });
    },
    120_000,
  );

  imageTest(
    "HEALTHCHECK (podman pull docker-archive:): healthy while serving, unhealthy when the server is stopped, healthy again when it goes on",
    async () => {
      await using p = await privatePodman();
      const id = await p.podman("pull", "--quiet", `docker-archive:${image!.file}`);
      expect(id).toBe(image!.id);
      expect(JSON.parse(await p.podman("image", "inspect", "--format", "{{json .HealthCheck}}", id))).toEqual({
        Test: IMAGE_HEALTHCHECK.Test,
        Interval: IMAGE_HEALTHCHECK.Interval,
        Timeout: IMAGE_HEALTHCHECK.Timeout,
        Retries: IMAGE_HEALTHCHECK.Retries,
      });
      // One serving process, so that stopping it stops the server (with WORKERS > 1 its supervisor would start another).
      const c = await start(p, id, "cubby-health", ["--read-only", "--env", "WORKERS=1"]);
      // `podman healthcheck run` runs the image's check once (no systemd timer here) and updates the container's health.
      const check = async () => {
        const r = await p.try("healthcheck", "run", c.name);
        const status = await p.podman("inspect", "--format", "{{.State.Health.Status}}", c.name);
        return { code: r.code, status };
      };
      expect(await check()).toEqual({ code: 0, status: "healthy" });
      await p.podman("kill", "--signal", "SIGSTOP", c.name);
      // Each check gives up after cubby healthcheck's 5 s; the status turns after Retries failures in a row.
      const failures = [];
      for (let i = 0; i < IMAGE_HEALTHCHECK.Retries; i++) failures.push(await check());
      expect(failures.at(-1)).toEqual({ code: 1, status: "unhealthy" });
      expect(failures.slice(0, -1).every((f) => f.code === 1)).toBe(true);
      const log = JSON.parse(await p.podman("inspect", "--format", "{{json .State.Health.Log}}", c.name)) as { ExitCode: number; Output: string }[];
      expect(log.at(-1)!.Output).toMatch(/^unhealthy: http:\/\/127\.0\.0\.1:8080\/healthz/);
      await p.podman("kill", "--signal", "SIGCONT", c.name);
      expect(await check()).toEqual({ code: 0, status: "healthy" });
    },
    120_000,
  );
});

describe("deploy/compose.yaml", () => {
  composeTest(
    "podman-compose up: serves on CUBBY_PORT with the image's HEALTHCHECK, read-only, no capabilities, as uid 1000; down -v removes it",
    async () => {
      await using p = await privatePodman();
      await p.podman("pull", "--quiet", `docker-archive:${image!.file}`);
      const port = await freePort();
      const project = `cubbyimage${process.pid}`;
      const compose = (...args: string[]) =>
        exec([PODMAN_COMPOSE!, "--podman-args", p.globalArgs.join(" "), "--project-name", project, "--file", path.join(ROOT, "deploy/compose.yaml"), ...args], {
          ...p.env,
          CUBBY_PORT: String(port),
          CUBBY_HOSTNAME: "https://files.example.com",
          CUBBY_VERSION: VERSION,
        });
      try {
        const up = await compose("up", "-d");
        expect({ code: up.code, err: up.code === 0 ? "" : up.err }).toEqual({ code: 0, err: "" });
        const name = `${project}_cubby_1`;
        await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200, "the compose service to answer /healthz", {
          timeoutMs: 30_000,
          pollMs: 100,
          detail: () => name,
        });
        const [inspect] = JSON.parse(await p.podman("container", "inspect", name));
        expect({
          readOnly: inspect.HostConfig.ReadonlyRootfs,
          user: inspect.Config.User,
          capEff: /^CapEff:\s+(\S+)$/m.exec(fs.readFileSync(`/proc/${inspect.State.Pid}/status`, "utf8"))?.[1],
          hostname: (inspect.Config.Env as string[]).find((e) => e.startsWith("HOSTNAME=")),
          health: inspect.Config.Healthcheck?.Test,
        }).toEqual({ readOnly: true, user: `${IMAGE_UID}:${IMAGE_UID}`, capEff: "0000000000000000", hostname: "HOSTNAME=https://files.example.com", health: IMAGE_HEALTHCHECK.Test });
        expect((await p.try("healthcheck", "run", name)).code).toBe(0);
        const link = await p.podman("exec", name, "cubby", "login-link", "--email", "compose@example.com");
        expect(link).toMatch(/^https:\/\/files\.example\.com\/auth\/link\//);
        const down = await compose("down", "-v");
        expect(down.code).toBe(0);
        expect({ containers: await p.podman("ps", "--all", "--quiet"), volumes: await p.podman("volume", "ls", "--quiet") }).toEqual({ containers: "", volumes: "" });
      } finally {
        await compose("down", "-v");
        // podman-compose makes a network and leaves it; networks are the machine's, not the store's.
        await p.try("network", "rm", "--force", `${project}_default`);
      }
    },
    120_000,
  );
});

/**
 * Compose's variable interpolation, the forms deploy/compose.*.yaml use: `${NAME}` (empty when
 * unset), `${NAME:-default}` (default when unset or empty), `${NAME:?message}` (an error then).
 */
function interpolate(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?:(:-|:\?)([^}]*))?\}/g, (_, name: string, op: string | undefined, arg: string | undefined) => {
    const v = vars[name] ?? "";
    if (v !== "" || op === undefined) return v;
    if (op === ":?") throw new Error(`${name}: ${arg}`);
    return arg ?? "";
  });
}

describe("deploy/compose.postgres-s3.yaml", () => {
  storesTest(
    "its cubby service's environment runs the image on PostgreSQL and S3: an upload goes to the bucket and is served back from a new container",
    async () => {
      await using pg = await startPostgres();
      await using s3 = await startS3();
      await using p = await privatePodman();
      await p.podman("load", "--quiet", "--input", image!.file);
      const { password, port: pgPort } = new URL(pg.url);
      const vars = {
        POSTGRES_PASSWORD: decodeURIComponent(password),
        S3_BUCKET: s3.bucket,
        S3_ENDPOINT: s3.endpoint,
        S3_REGION: s3.region,
        S3_ACCESS_KEY_ID: s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
        S3_PREFIX: "compose/",
      };
      const composeFile = Bun.YAML.parse(await Bun.file(path.join(ROOT, "deploy/compose.postgres-s3.yaml")).text()) as {
        services: { cubby: { environment: Record<string, string>; image: string } };
      };
      const service = composeFile.services.cubby;
      const env = Object.fromEntries(Object.entries(service.environment).map(([k, v]) => [k, interpolate(v, vars)]));
      // The one change: compose's service name `postgres` on 5432 is the test's PostgreSQL on
      // loopback, reached through the host's network (the PostgreSQL image cannot be pulled here).
      expect(env.DATABASE_URL).toBe(`postgres://cubby:${vars.POSTGRES_PASSWORD}@postgres:5432/cubby`);
      env.DATABASE_URL = env.DATABASE_URL!.replace("@postgres:5432/", `@127.0.0.1:${pgPort}/`);
      const port = await freePort();
      const options = [
        "--network", "host",
        "--env", `PORT=${port}`,
        "--read-only",
        "--cap-drop", "all",
        ...Object.entries(env).flatMap(([k, v]) => ["--env", `${k}=${v}`]),
      ];
      const run = async (name: string) => {
        await p.podman("run", "--detach", "--name", name, ...options, `localhost/${interpolate(service.image, { CUBBY_VERSION: VERSION })}`);
        const url = `http://127.0.0.1:${port}`;
        await answering(p, name, url);
        return { name, url };
      };
      const bytes = crypto.getRandomValues(new Uint8Array(1_500_000));
      const first = await run("cubby-stores-1");
      const key = await p.podman("exec", first.name, "cubby", "keys", "create", "--email", "stores@example.com");
      const file = await client(first, key).upload(bytes, "?name=stores.bin");
      expect(file.checksum).toBe(checksumOf(bytes));
      // The content went to the bucket, under the prefix, and the metadata to PostgreSQL.
      const bucket = new S3Client({ bucket: s3.bucket, endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey });
      const objects = (await bucket.list({ prefix: "compose/" })).contents ?? [];
      expect(objects.map((o) => o.size)).toContain(bytes.byteLength);
      const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
      try {
        expect([...(await sql`SELECT name FROM files`)]).toEqual([{ name: "stores.bin" }]);
      } finally {
        await sql.end();
      }
      await p.podman("rm", "--force", "--time", "20", first.name);
      const second = await run("cubby-stores-2");
      const res = await client(second, key).fetch(new URL(file.url).pathname);
      expect({ status: res.status, same: Buffer.compare(new Uint8Array(await res.arrayBuffer()), bytes) === 0 }).toEqual({ status: 200, same: true });
    },
    180_000,
  );
});
