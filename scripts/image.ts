// Builds cubby's container image for one architecture from a release executable, without pulling
// anything (CONTRACT §17): the executable, only the shared libraries its ELF loader lists for it,
// CA certificates, /etc/passwd and /etc/group with a non-root user, and /data as the volume.
// Debian's buildah lays out the layer (owners, modes, times) and the OCI configuration in a
// private store; this file then adds Docker's HEALTHCHECK to the configuration (the OCI image
// configuration has no such field, so buildah drops it when it writes OCI) and a docker-archive
// manifest.json beside the OCI layout, and GNU tar packs the directory. Usage:
// bun scripts/image.ts <amd64|arm64> <executable> <out.tar>
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dir, "..");

/** The image's user and group (numeric, so that Kubernetes' runAsNonRoot can check it). */
export const IMAGE_UID = 1000;
/** Port cubby listens on inside the image (`PORT`), exposed by the image. */
export const IMAGE_PORT = 8080;
/** Where cubby keeps its data inside the image (`DATA_DIR`), the image's one volume. */
export const IMAGE_DATA_DIR = "/data";
/** Path of the executable inside the image. */
export const IMAGE_EXECUTABLE = "/usr/local/bin/cubby";

/**
 * The HEALTHCHECK, in Docker's image configuration terms (moby's docker-image-spec, `config.Healthcheck`;
 * durations in nanoseconds). `cubby healthcheck` gives up after 5 s, inside Timeout.
 */
export const IMAGE_HEALTHCHECK = {
  Test: ["CMD", IMAGE_EXECUTABLE, "healthcheck"],
  Interval: 30e9,
  Timeout: 10e9,
  StartPeriod: 0,
  Retries: 3,
};

/** An image architecture (OCI `architecture`), its release target, GNU triplet and where its C library lives here. */
export const IMAGE_ARCHES = {
  amd64: { target: "linux-x64", triplet: "x86_64-linux-gnu", nodeArch: "x64", qemu: "qemu-x86_64-static", crossRoot: "/usr/x86_64-linux-gnu" },
  arm64: { target: "linux-arm64", triplet: "aarch64-linux-gnu", nodeArch: "arm64", qemu: "qemu-aarch64-static", crossRoot: "/usr/aarch64-linux-gnu" },
} as const;

/** An image architecture's name: `amd64` or `arm64`. */
export type ImageArch = keyof typeof IMAGE_ARCHES;

/** One shared object the image needs: where it is on this machine and where it goes in the image. */
interface SharedObject {
  source: string;
  target: string;
}

/** Runs a command to its end. @returns stdout @throws Error with stderr when it exits non-zero */
function run(cmd: string[], opts: { cwd?: string } = {}): string {
  const r = Bun.spawnSync(cmd, { cwd: opts.cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, BUILDAH_FORMAT: "oci" } });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} exited ${r.exitCode}:\n${r.stderr.toString()}`);
  return r.stdout.toString();
}

/**
 * The ELF program interpreter (PT_INTERP) of a 64-bit little-endian executable, e.g.
 * `/lib/ld-linux-aarch64.so.1`; undefined for a statically linked one.
 * @throws when the file is not ELF
 */
export function interpreterOf(file: string): string | undefined {
  const b = fs.readFileSync(file).subarray(0, 64 * 1024);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.subarray(0, 4).toString("latin1") !== "\x7fELF") throw new Error(`${file} is not an ELF file`);
  const phoff = Number(v.getBigUint64(32, true));
  const [phentsize, phnum] = [v.getUint16(54, true), v.getUint16(56, true)];
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize;
    if (v.getUint32(ph, true) !== 3) continue; // PT_INTERP
    const off = Number(v.getBigUint64(ph + 8, true));
    const size = Number(v.getBigUint64(ph + 32, true));
    return b.subarray(off, off + size - 1).toString("latin1");
  }
  return undefined;
}

/**
 * The shared objects `executable` loads, as ldd finds them: its loader's `--list` (what ldd
 * runs), natively for this machine's architecture, else under qemu-user with Debian's cross C
 * library (`libc6-arm64-cross`, `/usr/aarch64-linux-gnu`) as the root. Each goes to
 * `/lib/<triplet>/` in the image, where glibc's loader looks without an ld.so.cache, and the
 * loader itself to the executable's PT_INTERP path.
 * @throws Error when the loader or qemu is missing, or a listed library is not found
 */
export function sharedObjectsOf(executable: string, arch: ImageArch): SharedObject[] {
  const { triplet, nodeArch, qemu, crossRoot } = IMAGE_ARCHES[arch];
  const interp = interpreterOf(executable);
  if (interp === undefined) throw new Error(`${executable} has no ELF interpreter (statically linked?)`);
  const native = process.arch === nodeArch;
  const sysroot = native ? "/" : crossRoot;
  const onHost = (p: string) => (native ? p : fs.existsSync(path.join(sysroot, p)) ? path.join(sysroot, p) : path.join(sysroot, "lib", path.basename(p)));
  const loader = onHost(interp);
  if (!fs.existsSync(loader)) throw new Error(`no ${interp} for ${arch} here (${loader}); for arm64: apt-get install libc6-arm64-cross`);
  let cmd = [loader, "--list", executable];
  if (!native) {
    const q = Bun.which(qemu);
    if (q === null) throw new Error(`${qemu} is needed to list ${arch} libraries on this machine (apt-get install qemu-user-static)`);
    cmd = [q, "-L", sysroot, ...cmd];
  }
  const objects: SharedObject[] = [{ source: fs.realpathSync(loader), target: interp }];
  for (const line of run(cmd).split("\n")) {
    const m = /^\s*(\S+) => (\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (m === null) {
      if (/not found/.test(line)) throw new Error(`${executable}: ${line.trim()}`);
      continue; // the vDSO and the loader's own line
    }
    if (m[1]!.startsWith("/")) continue; // the loader again, as libc names it (under qemu): added above
    objects.push({ source: fs.realpathSync(onHost(m[2]!)), target: `/lib/${triplet}/${m[1]}` });
  }
  return objects;
}

/**
 * Writes the image's files other than /data into the directory `rootfs` (which need not exist):
 * the executable at {@link IMAGE_EXECUTABLE}, its loader and libraries ({@link sharedObjectsOf}),
 * CA certificates, /etc/passwd and /etc/group naming root and the user, and /tmp (mode 1777).
 * Owners are the caller's; modes are set. release.test.ts runs the arm64 executable from this
 * alone under qemu-user, which is how the arm64 image's layout is checked without a container.
 * @throws Error as {@link sharedObjectsOf}
 */
export function stageRootfs(rootfs: string, executable: string, arch: ImageArch): void {
  const put = (target: string, source: string, mode: number) => {
    const dest = path.join(rootfs, target);
    fs.mkdirSync(path.dirname(dest), { recursive: true, mode: 0o755 });
    fs.copyFileSync(source, dest);
    fs.chmodSync(dest, mode);
  };
  put(IMAGE_EXECUTABLE, executable, 0o755);
  for (const so of sharedObjectsOf(executable, arch)) put(so.target, so.source, 0o755);
  put("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt", 0o644);
  fs.writeFileSync(path.join(rootfs, "etc/passwd"), `root:x:0:0:root:/root:/sbin/nologin\ncubby:x:${IMAGE_UID}:${IMAGE_UID}:cubby:${IMAGE_DATA_DIR}:/sbin/nologin\n`, { mode: 0o644 });
  fs.writeFileSync(path.join(rootfs, "etc/group"), `root:x:0:\ncubby:x:${IMAGE_UID}:\n`, { mode: 0o644 });
  // /tmp for TMPDIR (data only, CONTRACT §10): cubby writes nothing there itself; a read-only
  // root leaves it read-only unless the runtime mounts a tmpfs (Podman does, compose.yaml does).
  fs.mkdirSync(path.join(rootfs, "tmp"), { mode: 0o1777 });
  fs.chmodSync(path.join(rootfs, "tmp"), 0o1777);
}

export interface ImageOptions {
  arch: ImageArch;
  /** the release executable for `arch` (`dist/release/cubby-linux-x64`, …) */
  executable: string;
  /** the archive to write (`dist/release/cubby-oci-amd64.tar`) */
  out: string;
  /** the image's version (tag and `org.opencontainers.image.version`); package.json's by default */
  version?: string;
}

/** What {@link buildImage} wrote. */
export interface BuiltImage {
  file: string;
  bytes: number;
  /** the name both `docker load` and `podman load` give it, e.g. `cubby:0.1.0` */
  ref: string;
  /** sha256 of the image configuration: the image ID `podman images` and `docker images` show */
  id: string;
}

/**
 * Builds one architecture's image archive at `out`: an OCI image layout (`oci-layout`,
 * `index.json`, `blobs/sha256/…`; `podman load`, `skopeo copy oci-archive:`, Docker 25 and
 * later) that is also a docker-archive (`manifest.json`; `docker load` of any version), both
 * naming the same configuration and gzip layer. The configuration is the OCI one plus Docker's
 * `config.Healthcheck` extension, which Docker honours from either manifest; Podman reads a
 * HEALTHCHECK only from a Docker-format manifest, so it gets it with
 * `podman pull docker-archive:<file>` (docs/deploy.md).
 *
 * Needs buildah (Debian's), GNU tar, and root (the layer's files belong to root and /data to
 * {@link IMAGE_UID}). Nothing is pulled: the image starts from `scratch`. Times in the image are
 * the last commit's (`SOURCE_DATE_EPOCH` wins), so building again from the same executable at
 * the same commit writes the same bytes (image.test.ts checks it, with buildah 1.28).
 * @throws Error when a tool is missing or fails
 */
export async function buildImage({ arch, executable, out, version }: ImageOptions): Promise<BuiltImage> {
  const pkg = (await Bun.file(path.join(root, "package.json")).json()) as { version: string; license: string; repository?: string | { url: string } };
  const v = version ?? pkg.version;
  const buildah = Bun.which("buildah");
  if (buildah === null) throw new Error("buildah is needed to build the container image (apt-get install buildah)");
  const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? (Bun.spawnSync(["git", "log", "-1", "--format=%ct"], { cwd: root }).stdout.toString().trim() || "0"));
  const revision = Bun.spawnSync(["git", "rev-parse", "HEAD"], { cwd: root }).stdout.toString().trim();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `cubby-image-${arch}-`));
  // A private store: nothing is left in (or read from) the machine's own containers storage.
  const store = ["--root", path.join(tmp, "store"), "--runroot", path.join(tmp, "run"), "--storage-driver", "vfs"];
  const b = (...args: string[]) => run([buildah, ...store, ...args]).trim();
  try {
    // The root file system: every file root's and read-only to the user; /data the user's, 0700.
    const rootfs = path.join(tmp, "rootfs");
    stageRootfs(rootfs, executable, arch);
    // /data as the only thing in a directory added with --chown: buildah keeps the mode of what
    // it copies, not of a destination directory it creates.
    const owned = path.join(tmp, "owned");
    fs.mkdirSync(path.join(owned, IMAGE_DATA_DIR), { recursive: true, mode: 0o700 });
    fs.chmodSync(path.join(owned, IMAGE_DATA_DIR), 0o700);

    const ctr = b("from", "--arch", arch, "--os", "linux", "scratch");
    b("add", ctr, rootfs, "/");
    b("add", "--chown", `${IMAGE_UID}:${IMAGE_UID}`, ctr, owned, "/");
    const labels = {
      "org.opencontainers.image.title": "cubby",
      "org.opencontainers.image.description": "File storage in one self-contained executable: REST, gRPC, Connect, WebDAV, S3 and a dashboard on one port.",
      "org.opencontainers.image.version": v,
      "org.opencontainers.image.revision": revision,
      "org.opencontainers.image.source": sourceUrl(pkg.repository),
      "org.opencontainers.image.licenses": pkg.license,
      "org.opencontainers.image.created": new Date(epoch * 1000).toISOString(),
    };
    b(
      "config",
      "--arch", arch,
      "--os", "linux",
      "--user", `${IMAGE_UID}:${IMAGE_UID}`,
      "--port", `${IMAGE_PORT}/tcp`,
      "--volume", IMAGE_DATA_DIR,
      "--workingdir", IMAGE_DATA_DIR,
      "--env", "PATH=/usr/local/bin",
      "--env", `DATA_DIR=${IMAGE_DATA_DIR}`,
      "--env", `PORT=${IMAGE_PORT}`,
      "--env", "TMPDIR=/tmp",
      "--env", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
      "--entrypoint", JSON.stringify([IMAGE_EXECUTABLE]),
      "--cmd", "serve",
      "--stop-signal", "SIGTERM",
      ...Object.entries(labels).flatMap(([k, val]) => ["--label", `${k}=${val}`]),
      ctr,
    );
    const ref = `cubby:${v}`;
    b("commit", "--rm", "--format", "oci", "--timestamp", String(epoch), ctr, ref);
    const layout = path.join(tmp, "layout");
    b("push", ref, `oci:${layout}:${ref}`);
    const id = withHealthcheck(layout, ref);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    const names = fs.readdirSync(layout).sort();
    run(["tar", "--sort=name", "--owner=0", "--group=0", "--numeric-owner", `--mtime=@${epoch}`, "-cf", path.resolve(out), ...names], { cwd: layout });
    return { file: out, bytes: fs.statSync(out).size, ref, id };
  } finally {
    Bun.spawnSync([buildah, ...store, "rm", "--all"], { stdout: "ignore", stderr: "ignore" });
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Where the image's source is (`org.opencontainers.image.source`, a URL a browser opens):
 * package.json's `repository`, else `CUBBY_SOURCE_URL`, else this checkout's `origin` remote when
 * it is one a browser can open (`https://…`, or `git@host:path` written as `https://host/path`;
 * a clone of a local path is not), else {@link SOURCE_FALLBACK}.
 */
function sourceUrl(repository: string | { url: string } | undefined): string {
  const fromPackage = typeof repository === "string" ? repository : repository?.url;
  const origin = Bun.spawnSync(["git", "remote", "get-url", "origin"], { cwd: root, stderr: "ignore" }).stdout.toString().trim();
  return fromPackage ?? process.env.CUBBY_SOURCE_URL ?? browsableRemote(origin) ?? SOURCE_FALLBACK;
}

/** A git remote as an `https://` URL, or undefined when it has none (a local path, `file://`). */
export function browsableRemote(remote: string): string | undefined {
  if (/^https?:\/\/\S+$/.test(remote)) {
    const url = new URL(remote.replace(/\.git$/, ""));
    url.username = url.password = ""; // a token in the remote stays out of the image
    return url.href;
  }
  const scp = /^[\w.-]+@([\w.-]+):(?!\/)(\S+?)(?:\.git)?$/.exec(remote);
  return scp === null ? undefined : `https://${scp[1]}/${scp[2]}`;
}

/**
 * The source label when nothing names the repository: a placeholder, used today because
 * package.json has no `repository` and this checkout no `origin`. Set either (or
 * `CUBBY_SOURCE_URL` when releasing) to the real address.
 */
export const SOURCE_FALLBACK = "https://github.com/cubby/cubby";

/** sha256 of bytes, hex. */
const sha256 = (bytes: Uint8Array | string) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

/**
 * Rewrites the OCI layout buildah wrote in `layout`: its configuration gains Docker's
 * `config.Healthcheck` ({@link IMAGE_HEALTHCHECK}; unknown to the OCI image spec, which tells
 * readers to ignore fields they do not know), so its digest and the manifest's change; and a
 * docker-archive `manifest.json` naming the same configuration and layers is written beside
 * `index.json` (the layout `docker save` writes since Docker 25).
 * @returns the new configuration's digest, hex
 */
function withHealthcheck(layout: string, ref: string): string {
  const blob = (digest: string) => path.join(layout, "blobs", ...digest.split(":"));
  const writeBlob = (text: string) => {
    const digest = `sha256:${sha256(text)}`;
    fs.writeFileSync(blob(digest), text);
    return { digest, size: Buffer.byteLength(text) };
  };
  const index = JSON.parse(fs.readFileSync(path.join(layout, "index.json"), "utf8")) as { manifests: { digest: string; size: number; mediaType: string }[] };
  if (index.manifests.length !== 1) throw new Error(`expected one manifest in ${layout}, found ${index.manifests.length}`);
  const entry = index.manifests[0]!;
  const manifest = JSON.parse(fs.readFileSync(blob(entry.digest), "utf8")) as { config: { digest: string; size: number }; layers: { digest: string }[] };
  const config = JSON.parse(fs.readFileSync(blob(manifest.config.digest), "utf8")) as { config: Record<string, unknown> };
  config.config.Healthcheck = IMAGE_HEALTHCHECK;
  fs.rmSync(blob(manifest.config.digest));
  fs.rmSync(blob(entry.digest));
  const newConfig = writeBlob(JSON.stringify(config));
  manifest.config = { ...manifest.config, ...newConfig };
  const newManifest = writeBlob(JSON.stringify(manifest));
  Object.assign(entry, newManifest);
  fs.writeFileSync(path.join(layout, "index.json"), JSON.stringify(index));
  const rel = (digest: string) => `blobs/${digest.replace(":", "/")}`;
  fs.writeFileSync(path.join(layout, "manifest.json"), JSON.stringify([{ Config: rel(newConfig.digest), RepoTags: [ref], Layers: manifest.layers.map((l) => rel(l.digest)) }]));
  return newConfig.digest.slice("sha256:".length);
}

if (import.meta.main) {
  const [arch, executable, out] = process.argv.slice(2);
  if (arch === undefined || !(arch in IMAGE_ARCHES) || executable === undefined || out === undefined) {
    console.error("usage: bun scripts/image.ts <amd64|arm64> <executable> <out.tar>");
    process.exit(2);
  }
  const built = await buildImage({ arch: arch as ImageArch, executable, out });
  console.log(`built ${built.file} (${built.ref}, ${(built.bytes / 1024 / 1024).toFixed(1)} MiB)`);
}
