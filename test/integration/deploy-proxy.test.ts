// test-lists: default
// deploy/ as shipped (issue 15, item 7): deploy/nginx.conf runs in a real nginx terminating TLS
// in front of a real cubby, and REST, Connect, gRPC (grpc-js over TLS), gRPC reflection (buf
// curl) and tus (tus-js-client) pass through it; deploy/cubby.service passes
// `systemd-analyze verify` and `systemd-analyze security`, and its SystemCallFilter= allows
// every call cubby makes (strace). The Caddyfile routes the same paths.
//
// The nginx file is used as it is, but for these substitutions (NGINX_SUBSTITUTIONS, each must
// match exactly as often as listed, so an edit of the file that breaks one fails the test):
// cubby's and nginx's ports (the test picks free ones), no IPv6 listen lines (the test machine
// may have no IPv6), and the certificate paths (a self-signed one from `openssl req -x509`).
// What a distribution's /etc/nginx/nginx.conf gives around it (pid, logs, temp paths, one
// process) comes from a small main file that includes it, all in a temporary directory.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import * as tus from "tus-js-client";
import { checksumOf } from "../../src/domain/checksum.ts";
import type { Launched } from "../support/launch.ts";
import { launchNginx, NGINX } from "../support/nginx.ts";
import { childrenOf, freePort, stopPids } from "../support/processes.ts";
import { client, type FileJson, ROOT, type RunningServer, startServer, tempDir } from "../support/server.ts";
import { OPENSSL, selfSignedCert } from "../support/tls.ts";
import { testNeeding } from "../support/tools.ts";
import { createUpload, patchChunk, randomFile } from "../support/tus.ts";
import { buildExecutable } from "../../scripts/build.ts";
import { waitFor } from "../support/wait.ts";

const DEPLOY = path.join(ROOT, "deploy");
const SYSTEMD_ANALYZE = Bun.which("systemd-analyze") ?? "/usr/bin/systemd-analyze";
const BUF = path.join(ROOT, "node_modules/.bin/buf");
const STRACE = Bun.which("strace") ?? "/usr/bin/strace";

/** [text in the shipped file, its replacement, how many times it occurs]. */
type Substitution = [from: string, to: string, times: number];

/** Replaces each `from` by `to`, after checking it occurs exactly `times` times. */
function substitute(text: string, table: Substitution[]): string {
  for (const [from, to, times] of table) {
    const found = text.split(from).length - 1;
    if (found !== times) throw new Error(`expected ${times}× "${from}" in the shipped file, found ${found}: update the test's substitutions with the file`);
    text = text.replaceAll(from, to);
  }
  return text;
}

/** The edits that turn deploy/nginx.conf into the tested one (see the header comment). */
function nginxSubstitutions(p: { cubby: number; http: number; https: number; cert: string; key: string }): Substitution[] {
  return [
    ["server 127.0.0.1:8080;", `server 127.0.0.1:${p.cubby};`, 2],
    ["listen 80;", `listen 127.0.0.1:${p.http};`, 1],
    ["listen [::]:80;", "", 1],
    ["listen 443 ssl http2;", `listen 127.0.0.1:${p.https} ssl http2;`, 1],
    ["listen [::]:443 ssl http2;", "", 1],
    ["/etc/letsencrypt/live/files.example.com/fullchain.pem", p.cert, 1],
    ["/etc/letsencrypt/live/files.example.com/privkey.pem", p.key, 1],
  ];
}

const proxyTest = testNeeding("the deploy/nginx.conf tests", [
  ...(fs.existsSync(NGINX) ? [] : ["nginx (apt-get install nginx-light)"]),
  ...(fs.existsSync(OPENSSL) ? [] : ["openssl (apt-get install openssl)"]),
]);

describe("deploy/nginx.conf: HTTPS in front of cubby", () => {
  const work = tempDir("cubby-deploy-");
  let server: RunningServer;
  let nginx: Launched | undefined;
  let base = ""; // https://localhost:PORT, nginx
  let httpBase = ""; // http://127.0.0.1:PORT, nginx's redirect
  let pem = "";
  let key = "";
  const tls = () => ({ tls: { ca: pem } }) as RequestInit;

  beforeAll(async () => {
    if (!fs.existsSync(NGINX) || !fs.existsSync(OPENSSL)) return;
    const cert = selfSignedCert(work.path);
    pem = cert.pem;
    const [https, http] = [await freePort(), await freePort()];
    base = `https://localhost:${https}`;
    httpBase = `http://127.0.0.1:${http}`;
    // cubby behind the proxy as docs/deploy.md says: its public origin, and nginx trusted. At most
    // 3 failed authentications a minute per client, to see X-Forwarded-For arrive.
    server = await startServer({ env: { HOSTNAME: base, TRUSTED_PROXIES: "127.0.0.1", RATE_LIMIT_AUTH_FAILURES: "3" } });
    key = await server.mintKey("proxy@example.com");

    const site = substitute(fs.readFileSync(path.join(DEPLOY, "nginx.conf"), "utf8"), nginxSubstitutions({ cubby: server.port, http, https, cert: cert.cert, key: cert.key }));
    fs.writeFileSync(path.join(work.path, "cubby.conf"), site);
    const main = path.join(work.path, "nginx.conf");
    fs.writeFileSync(
      main,
      `${process.getuid?.() === 0 ? "user root root;" : ""}
master_process off;
worker_processes 1;
pid ${work.path}/nginx.pid;
error_log ${work.path}/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${work.path}/body;
  proxy_temp_path ${work.path}/proxy;
  fastcgi_temp_path ${work.path}/fastcgi;
  uwsgi_temp_path ${work.path}/uwsgi;
  scgi_temp_path ${work.path}/scgi;
  include ${work.path}/cubby.conf;
}
`,
    );
    nginx = await launchNginx(["-p", work.path, "-c", main, "-g", "daemon off;"], `${base}/healthz`, path.join(work.path, "error.log"), tls());
  }, 30_000);

  afterAll(async () => {
    await nginx?.stop(5_000);
    const log = path.join(work.path, "error.log");
    if (fs.existsSync(log) && fs.statSync(log).size > 0) console.log(`nginx's error.log:\n${fs.readFileSync(log, "utf8")}`);
    await server?.[Symbol.asyncDispose]();
    work[Symbol.dispose]();
  });

  proxyTest("plain HTTP answers with a redirect to HTTPS", async () => {
    const res = await fetch(`${httpBase}/v1/files?x=1`, { redirect: "manual", headers: { host: "files.example.com" } });
    expect({ status: res.status, location: res.headers.get("location") }).toEqual({ status: 301, location: "https://files.example.com/v1/files?x=1" });
  });

  proxyTest("REST: a 5 MiB upload (over nginx's default 1 MiB body cap) and its download, byte-exact", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(5 * 1024 * 1024));
    const res = await fetch(`${base}/v1/files?name=big.bin&visibility=public`, { ...tls(), method: "POST", body: bytes, headers: { authorization: `Bearer ${key}` } });
    const file = (await res.json()) as FileJson;
    expect({ status: res.status, checksum: file.checksum, url: file.url }).toEqual({ status: 200, checksum: checksumOf(bytes), url: `${base}/${file.id}` });
    const back = await fetch(file.url, tls());
    expect({ status: back.status, same: Buffer.compare(new Uint8Array(await back.arrayBuffer()), bytes) }).toEqual({ status: 200, same: 0 });
  });

  proxyTest("uploads stream through: cubby writes the first bytes while the client still holds back the rest", async () => {
    const tmp = path.join(server.dataDir, "tmp");
    const head = crypto.getRandomValues(new Uint8Array(2 * 1024 * 1024));
    const tail = crypto.getRandomValues(new Uint8Array(1024 * 1024));
    /** Bytes of the upload cubby has on disk so far (its temporary file), waiting up to 5 s for at least `atLeast`. */
    const onDisk = async (atLeast: number) => {
      let bytes = 0;
      const measure = () => (bytes = Math.max(0, ...fs.readdirSync(tmp).map((f) => fs.statSync(path.join(tmp, f), { throwIfNoEntry: false })?.size ?? 0)));
      // What was measured is the answer: the caller's expectation reports a shortfall.
      await waitFor(() => measure() >= atLeast, `${atLeast} bytes on disk`, 5_000).catch(() => {});
      return bytes;
    };
    let seenBeforeTail = -1;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (seenBeforeTail === -1) {
          controller.enqueue(head);
          seenBeforeTail = 0;
          return;
        }
        // A buffering proxy would pass nothing on before the body is complete.
        seenBeforeTail = await onDisk(1024 * 1024);
        controller.enqueue(tail);
        controller.close();
      },
    });
    const res = await fetch(`${base}/v1/files?name=streamed.bin`, { ...tls(), method: "POST", body, headers: { authorization: `Bearer ${key}` } });
    const file = (await res.json()) as FileJson;
    expect({ status: res.status, checksum: file.checksum, arrivedBeforeTheRestWasSent: seenBeforeTail >= 1024 * 1024 }).toEqual({
      status: 200,
      checksum: checksumOf(Buffer.concat([head, tail])),
      arrivedBeforeTheRestWasSent: true,
    });
  }, 20_000);

  proxyTest("Connect: unary JSON over HTTP/1.1, and its error status", async () => {
    const made = await client(server, key).upload("connect", "?name=c.txt");
    const call = (id: string) =>
      fetch(`${base}/cubby.v1.FileService/GetFile`, {
        ...tls(),
        method: "POST",
        body: JSON.stringify({ id }),
        headers: { "content-type": "application/json", "connect-protocol-version": "1", authorization: `Bearer ${key}` },
      });
    const ok = await call(made.id);
    expect({ status: ok.status, file: ((await ok.json()) as { file: { id: string; name: string } }).file }).toMatchObject({ status: 200, file: { id: made.id, name: "c.txt" } });
    const missing = await call("nope-nope-nope-nope-n");
    expect({ status: missing.status, body: await missing.json() }).toMatchObject({ status: 404, body: { code: "not_found" } });
  });

  proxyTest("gRPC (grpc-js over TLS): a streamed 3 MiB upload, its streamed download, and an error code in the trailers", async () => {
    const def = protoLoader.loadSync(path.join(ROOT, "proto/cubby/v1/files.proto"), { includeDirs: [path.join(ROOT, "proto")], keepCase: true, longs: String, defaults: true });
    const pkg = grpc.loadPackageDefinition(def) as unknown as { cubby: { v1: { FileService: grpc.ServiceClientConstructor } } };
    // biome-ignore lint: a client made from the .proto file at run time
    const stub: any = new pkg.cubby.v1.FileService(base.replace("https://", ""), grpc.credentials.createSsl(Buffer.from(pem)));
    try {
      const md = new grpc.Metadata();
      md.set("authorization", `Bearer ${key}`);
      const content = crypto.getRandomValues(new Uint8Array(3 * 1024 * 1024));
      const created = await new Promise<{ file: FileJson }>((resolve, reject) => {
        const call = stub.CreateFile(md, (err: Error | null, res: { file: FileJson }) => (err ? reject(err) : resolve(res)));
        for (let off = 0; off < content.byteLength; off += 700 * 1024) {
          call.write({ ...(off === 0 ? { name: "grpc.bin" } : {}), content: Buffer.from(content.subarray(off, off + 700 * 1024)) });
        }
        call.end();
      });
      expect(created.file.checksum).toBe(checksumOf(content));

      const received: Buffer[] = [];
      await new Promise<void>((resolve, reject) => {
        const call = stub.GetFileContent({ id: created.file.id }, md);
        call.on("data", (m: { content: Buffer }) => received.push(m.content));
        call.on("error", reject);
        call.on("end", resolve);
      });
      expect(Buffer.compare(Buffer.concat(received), content)).toBe(0);

      const err = await new Promise<grpc.ServiceError>((resolve) => stub.GetFile({ id: "nope-nope-nope-nope-n" }, md, (e: grpc.ServiceError) => resolve(e)));
      expect(err.code).toBe(grpc.status.NOT_FOUND);
    } finally {
      stub.close();
    }
  });

  proxyTest("gRPC reflection (buf curl over TLS) lists the services", async () => {
    const proc = Bun.spawn([BUF, "curl", "--protocol", "grpc", "--cacert", path.join(work.path, "cert.pem"), "--list-services", base], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect({ code, err, services: out.trim().split("\n").sort() }).toEqual({
      code: 0,
      err: "",
      services: ["cubby.v1.FileService", "cubby.v1.FolderService", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"],
    });
  });

  proxyTest("tus (tus-js-client): 5 MiB in 2 MiB PATCHes, Location on the public origin, the file byte-exact", async () => {
    const source = randomFile(work.path, "tus.bin", 5 * 1024 * 1024);
    const chunks: number[] = [];
    const outcome = await new Promise<{ url: string; fileId: string | null }>((resolve, reject) => {
      const upload = new tus.Upload(fs.createReadStream(source.path), {
        endpoint: `${base}/v1/uploads`,
        chunkSize: 2 * 1024 * 1024,
        headers: { authorization: `Bearer ${key}` },
        metadata: { filename: "tus.bin" },
        retryDelays: [],
        storeFingerprintForResuming: false,
        httpStack: new tus.DefaultHttpStack({ ca: pem }),
        onChunkComplete: (_size, accepted) => chunks.push(accepted),
        onSuccess: (payload) => resolve({ url: upload.url!, fileId: payload.lastResponse.getHeader("cubby-file-id") ?? null }),
        onError: reject,
      });
      upload.start();
    });
    expect({ url: outcome.url.startsWith(`${base}/v1/uploads/`), chunks }).toEqual({ url: true, chunks: [2097152, 4194304, 5242880] });
    const file = (await (await fetch(`${base}/v1/files/${outcome.fileId}`, { ...tls(), headers: { authorization: `Bearer ${key}` } })).json()) as FileJson;
    expect({ name: file.name, checksum: file.checksum }).toEqual({ name: "tus.bin", checksum: source.checksum });
    const back = await fetch(file.url, { ...tls(), headers: { authorization: `Bearer ${key}` } });
    expect(Buffer.compare(new Uint8Array(await back.arrayBuffer()), fs.readFileSync(source.path))).toBe(0);
  });

  proxyTest("/metrics stays closed through the proxy (its X-Forwarded-For marks the request as relayed)", async () => {
    const direct = await fetch(`${server.url}/metrics`);
    const proxied = await fetch(`${base}/metrics`, tls());
    expect({ direct: direct.status, proxied: proxied.status }).toEqual({ direct: 200, proxied: 404 });
  });

  proxyTest("X-Forwarded-For reaches cubby (TRUSTED_PROXIES): failed authentications count per client behind nginx", async () => {
    const attempt = (client: string) => fetch(`${base}/v1/files`, { ...tls(), headers: { authorization: "Bearer wrong", "x-forwarded-for": client } }).then((r) => r.status);
    const first = [await attempt("198.51.100.7"), await attempt("198.51.100.7"), await attempt("198.51.100.7"), await attempt("198.51.100.7")];
    expect({ first, other: await attempt("198.51.100.8") }).toEqual({ first: [401, 401, 401, 429], other: 401 });
  });
});

describe("deploy/cubby.service", () => {
  const unitTest = testNeeding("the systemd unit tests", fs.existsSync(SYSTEMD_ANALYZE) ? [] : ["systemd-analyze (apt-get install systemd)"]);
  const shipped = fs.readFileSync(path.join(DEPLOY, "cubby.service"), "utf8");

  /**
   * Runs `systemd-analyze <args> <unit>` on a copy of the unit in a temporary directory whose
   * ExecStart names an executable that exists (verify checks it), `edit` applied to the text.
   */
  const analyze = (args: string[], edit: (unit: string) => string = (u) => u) => {
    using dir = tempDir("cubby-unit-");
    const exe = path.join(dir.path, "cubby");
    fs.writeFileSync(exe, "#!/bin/sh\n", { mode: 0o755 });
    const unit = path.join(dir.path, "cubby.service");
    fs.writeFileSync(unit, edit(substitute(shipped, [["ExecStart=/usr/local/bin/cubby ", `ExecStart=${exe} `, 1]])));
    const run = Bun.spawnSync([SYSTEMD_ANALYZE, ...args, unit], { stdout: "pipe", stderr: "pipe", env: { ...process.env, SYSTEMD_COLORS: "0", SYSTEMD_PAGER: "" } });
    return { code: run.exitCode, out: run.stdout.toString(), err: run.stderr.toString() };
  };

  unitTest("systemd-analyze verify: no error and no warning (a misspelt setting would print one)", () => {
    expect(analyze(["verify"])).toEqual({ code: 0, out: "", err: "" });
    // verify exits 0 on an unknown or malformed setting, and only says so: the output is the check.
    expect(analyze(["verify"], (u) => u.replace("ProtectSystem=strict", "ProtectSystem=strcit")).err).toContain("strcit");
  });

  unitTest("the hardening the issue asks for, and no MemoryDenyWriteExecute (Bun's JIT needs writable code)", () => {
    const settings = new Map<string, string[]>();
    for (const line of shipped.split("\n")) {
      const m = /^([A-Za-z]+)=(.*)$/.exec(line);
      if (m) settings.set(m[1]!, [...(settings.get(m[1]!) ?? []), m[2]!]);
    }
    const one = (k: string) => settings.get(k)?.join(" | ");
    expect({
      User: one("User"),
      NoNewPrivileges: one("NoNewPrivileges"),
      ProtectSystem: one("ProtectSystem"),
      ReadWritePaths: one("ReadWritePaths"),
      DataDir: one("Environment")?.includes("DATA_DIR=/var/lib/cubby"),
      PrivateTmp: one("PrivateTmp"),
      CapabilityBoundingSet: one("CapabilityBoundingSet"),
      MemoryDenyWriteExecute: one("MemoryDenyWriteExecute"),
    }).toEqual({
      User: "cubby",
      NoNewPrivileges: "yes",
      ProtectSystem: "strict",
      ReadWritePaths: "/var/lib/cubby",
      DataDir: true,
      PrivateTmp: "yes",
      CapabilityBoundingSet: "",
      MemoryDenyWriteExecute: undefined,
    });
  });

  unitTest("systemd-analyze security: overall exposure below 2.0 (of 10)", () => {
    const { out } = analyze(["security", "--offline=yes", "--no-pager"]);
    const level = Number(/Overall exposure level for cubby\.service: ([\d.]+)/.exec(out)?.[1]);
    console.log(`deploy/cubby.service: systemd-analyze security exposure ${level}`);
    expect(level).toBeLessThan(2);
  });
});

describe("deploy/cubby.service's system-call filter", () => {
  const filterTest = testNeeding("the system-call filter test", [
    ...(fs.existsSync(SYSTEMD_ANALYZE) ? [] : ["systemd-analyze (apt-get install systemd)"]),
    ...(fs.existsSync(STRACE) ? [] : ["strace (apt-get install strace)"]),
    ...(process.getuid?.() === 0 ? [] : ["root (strace -u runs cubby as an unprivileged user, as the unit does)"]),
  ]);

  /** The names of the system calls `SystemCallFilter=` lines allow: the allowed sets minus the `~` ones. */
  const allowedByUnit = (unit: string): Set<string> => {
    const expand = (sets: string[]) => {
      const out = Bun.spawnSync([SYSTEMD_ANALYZE, "syscall-filter", "--no-pager", ...sets], { stdout: "pipe" }).stdout.toString();
      const names = new Set<string>();
      for (const m of out.matchAll(/^\s+([@a-z0-9_-]+)$/gm)) {
        if (m[1]!.startsWith("@")) for (const n of expand([m[1]!])) names.add(n);
        else names.add(m[1]!);
      }
      return names;
    };
    const lines = [...unit.matchAll(/^SystemCallFilter=(.*)$/gm)].map((m) => m[1]!);
    const allowed = expand(lines.filter((l) => !l.startsWith("~")).flatMap((l) => l.split(/\s+/)));
    for (const n of expand(lines.filter((l) => l.startsWith("~")).flatMap((l) => l.slice(1).split(/\s+/)))) allowed.delete(n);
    return allowed;
  };

  filterTest(
    "every call cubby makes as an unprivileged user (REST, tus, Connect, gRPC over h2c, the dashboard, keys create) is allowed",
    async () => {
      using dir = tempDir("cubby-syscalls-");
      fs.chmodSync(dir.path, 0o755);
      const exe = path.join(dir.path, "cubby");
      await buildExecutable({ outfile: exe });
      const data = path.join(dir.path, "data");
      const traces = path.join(dir.path, "traces");
      for (const d of [data, traces]) {
        fs.mkdirSync(d);
        fs.chownSync(d, 65534, 65534);
      }
      // One trace file per process of every run (server and CLI), as the user "nobody".
      const wrapper = path.join(dir.path, "traced-cubby");
      fs.writeFileSync(wrapper, `#!/bin/sh\nexec ${STRACE} -f -qq -u nobody -o ${traces}/trace.$$ ${exe} "$@"\n`, { mode: 0o755 });

      // Not recorded for the OpenAPI check: "nobody" may not write the record file.
      const server = await startServer({ executable: wrapper, dataDir: data, cwd: dir.path, checkResponses: false });
      try {
        const key = await server.mintKey("trace@example.com");
        const api = client(server, key);
        const bytes = crypto.getRandomValues(new Uint8Array(300_000));
        const file = await api.upload(bytes, "?name=t.bin");
        expect((await api.fetch(`/${file.id}`)).status).toBe(200);
        expect((await fetch(`${server.url}/`)).status).toBe(200);
        const upload = await createUpload(server.url, key, 5);
        expect((await patchChunk(upload, key, 0, "hello")).status).toBe(204);
        const connect = await api.fetch("/cubby.v1.FileService/GetFile", { method: "POST", body: JSON.stringify({ id: file.id }), headers: { "content-type": "application/json" } });
        expect(connect.status).toBe(200);
        const grpc = Bun.spawnSync([BUF, "curl", "--http2-prior-knowledge", "--protocol", "grpc", "--list-services", server.url], { stdout: "pipe", stderr: "pipe" });
        expect({ code: grpc.exitCode, err: grpc.stderr.toString() }).toEqual({ code: 0, err: "" });
      } finally {
        // SIGTERM to strace would only detach it and leave cubby running: stop cubby itself.
        await stopPids(childrenOf(server.proc.pid));
        await server[Symbol.asyncDispose]();
      }

      const used = new Set<string>();
      for (const f of fs.readdirSync(traces)) {
        for (const m of fs.readFileSync(path.join(traces, f), "utf8").matchAll(/^\d+\s+([a-z0-9_]+)\(/gm)) used.add(m[1]!);
      }
      const allowed = allowedByUnit(fs.readFileSync(path.join(DEPLOY, "cubby.service"), "utf8"));
      expect(used.size).toBeGreaterThan(30);
      expect([...used].filter((n) => !allowed.has(n)).sort()).toEqual([]);
    },
    60_000,
  );
});

test("the Caddyfile sends the same paths over h2c as nginx.conf sends to grpc_pass", () => {
  const nginx = fs.readFileSync(path.join(DEPLOY, "nginx.conf"), "utf8");
  const caddy = fs.readFileSync(path.join(DEPLOY, "Caddyfile"), "utf8");
  const grpcLocations = [...nginx.matchAll(/location (\S+) \{\s*grpc_pass /g)].map((m) => m[1]);
  const h2cHandles = [...caddy.matchAll(/handle (\S+)\* \{\s*reverse_proxy h2c:\/\//g)].map((m) => m[1]);
  expect({ h2cHandles }).toEqual({ h2cHandles: grpcLocations });
  expect(grpcLocations).toEqual(["/cubby.v1.", "/grpc.reflection."]);
});
