/**
 * The `cubby` command (CONTRACT §1): parse the command line → configuration → open the store →
 * serve, or manage API keys. Exit status 0 on success; bad input prints one line on stderr
 * and exits with status 2.
 */
import { parseArgs } from "node:util";
import pkg from "../package.json" with { type: "json" };
import fs from "node:fs";
import path from "node:path";
import { ConfigError, loadConfig, portInUse, type Config, type ConfigFlags } from "./config.ts";
import { backup, restore } from "./storage/backup.ts";
import { DiskBlobStore } from "./storage/disk-blobs.ts";
import { SqliteMetadataStore } from "./storage/sqlite-metadata.ts";
import { fsck } from "./service/fsck.ts";
import { PRIVATE_UMASK } from "./storage/permissions.ts";
import { AppError } from "./errors.ts";
import { formatTimestamp } from "./domain/time.ts";
import { checksumToBase64, crc32cUpdate } from "./domain/checksum.ts";
import { openServices, StoreUnavailableError } from "./service/index.ts";
import { MAX_PAGE_SIZE, parseEmail, type PageCursor } from "./domain/params.ts";
import { loginLinkTtl } from "./service/login-links.ts";
import { serve } from "./process/serve.ts";
import { readServerRecord } from "./process/server-record.ts";
import { createArchiveOutput, interruptible, openArchiveInput } from "./archive-file.ts";
import { exportArchive } from "./service/archive-export.ts";
import { importArchive } from "./service/archive-import.ts";
import { describeCounts } from "./service/archive-format.ts";
import { USERS_USAGE, usersCommand } from "./users-command.ts";
import { keyIdOfS3AccessKey } from "./service/keys.ts";
import { thumbnailCommand } from "./thumbnail/maker.ts";

const USAGE = `usage:
  cubby [serve] [--port N] [--data-dir DIR]
  (commands below that use existing data refuse a DATA_DIR with none; --init starts new data there)
  cubby keys create --email E [--name N] [--scope files.read] [--scope files.write]
                    [--scopes files.read,files.write] [--ttl 30d | --expire-time T]
                    [--s3] [--data-dir DIR]
                    (--s3: an S3 access key; prints AWS_ACCESS_KEY_ID=… and AWS_SECRET_ACCESS_KEY=…)
  cubby keys list --email E [--data-dir DIR]
  cubby keys revoke ID|ACCESS_KEY_ID [--data-dir DIR]
  cubby login-link --email E [--ttl 15m] [--data-dir DIR]
${USERS_USAGE}
  cubby fsck [--repair] [--data-dir DIR]
  cubby backup DEST [--data-dir DIR]
  cubby restore SRC [--data-dir DIR]
  cubby export FILE [--sessions] [--data-dir DIR]
  cubby import FILE [--data-dir DIR]
  cubby checksum FILE…   (the CRC32C a checksummed upload declares: x-goog-hash: crc32c=…)
  cubby healthcheck [--port N]
  cubby version`;

/**
 * The Bun runtime this executable was built for (`bun-linux-x64-baseline`, …): scripts/build.ts
 * defines `CUBBY_BUILD_TARGET` at build time; run from source it is undefined.
 */
declare const CUBBY_BUILD_TARGET: string | undefined;
const BUILD_TARGET = typeof CUBBY_BUILD_TARGET === "string" ? CUBBY_BUILD_TARGET : `from source, Bun ${Bun.version}`;

/** Bad command-line input: printed as one line, exit status 2. */
class UsageError extends Error {}

/**
 * The commands that act on existing data (CONTRACT §17): they refuse a data directory that holds
 * none unless `--init` says to create it there. `serve` creates its store; `restore` and
 * `import` exist to fill a new one.
 */
const DATA_COMMANDS = new Set(["keys", "login-link", "users", "fsck", "backup", "export"]);

/** Whether this run's command was given `--init` (main sets it from the command line). */
let initData = false;

/**
 * Opens the stores for a command of {@link DATA_COMMANDS}: refused when the data directory holds
 * no cubby data, unless `--init` was given (see {@link requireCubbyData}).
 * @throws UsageError (no data there), and what openServices throws
 */
function openData(config: Config): ReturnType<typeof openServices> {
  if (!initData) requireCubbyData(config);
  return openServices(config);
}

/**
 * Refuses to act on a SQLite data directory with no database in it: run from another directory,
 * the default `./data` is a new, empty one, and a key or link made there is for no server
 * (issue 39). With DATABASE_URL the data is the database the URL names, so nothing is checked.
 * @throws UsageError naming the directory and how to point at the right one
 */
function requireCubbyData(config: Config): void {
  if (config.databaseUrl !== undefined) return;
  if (fs.existsSync(path.join(config.dataDir, "cubby.db"))) return;
  throw new UsageError(
    `${config.dataDir} holds no cubby data; point at the server's data directory with --data-dir DIR or DATA_DIR (cubby serve prints it: "data in …"), or add --init to start new data there`,
  );
}

async function main(argv: string[]): Promise<number> {
  // Internal: what a serving process runs to make a thumbnail (thumbnail/maker.ts); not in USAGE.
  if (argv[0] === "__thumbnail") return thumbnailCommand(argv.slice(1));
  // Before anything is created: what SQLite and the file system create with default modes
  // (VACUUM INTO's snapshot, directories made along the way) is then owner-only too (issue 11).
  process.umask(PRIVATE_UMASK);
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      port: { type: "string" },
      "data-dir": { type: "string" },
      email: { type: "string" },
      name: { type: "string" },
      scope: { type: "string", multiple: true },
      scopes: { type: "string" },
      s3: { type: "boolean" },
      ttl: { type: "string" },
      "expire-time": { type: "string" },
      repair: { type: "boolean" },
      sessions: { type: "boolean" },
      yes: { type: "boolean" },
      init: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const flags: ConfigFlags = { port: values.port, dataDir: values["data-dir"] };
  const [command = "serve", sub, ...rest] = positionals;
  if (values.init === true && !DATA_COMMANDS.has(command)) throw new UsageError(`--init is for commands that use the data directory (${[...DATA_COMMANDS].join(", ")})`);
  initData = values.init === true;

  switch (command) {
    case "version":
      console.log(`cubby ${pkg.version} (${BUILD_TARGET})`);
      return 0;
    case "serve": {
      if (sub !== undefined) throw new UsageError(`serve takes no arguments (got "${sub}")`);
      await serve(loadConfig(process.env, flags));
      return 0;
    }
    case "checksum": {
      if (sub === undefined) throw new UsageError("checksum takes one or more files");
      for (const file of [sub, ...rest]) console.log(`crc32c=${await fileChecksum(file)}  ${file}`);
      return 0;
    }
    case "healthcheck": {
      if (sub !== undefined) throw new UsageError(`healthcheck takes no arguments (got "${sub}")`);
      return healthcheck(loadConfig(process.env, flags).port);
    }
    case "keys":
      return keysCommand(sub, rest, values, flags);
    case "login-link":
      if (sub !== undefined) throw new UsageError(`login-link takes no arguments (got "${sub}")`);
      return loginLinkCommand(values, flags);
    case "users":
      return usersCommand(loadConfig(process.env, flags), sub, rest, { yes: values.yes === true, open: openData });
    case "fsck": {
      if (sub !== undefined) throw new UsageError(`fsck takes no arguments (got "${sub}")`);
      return fsckCommand(loadConfig(process.env, flags), values.repair === true);
    }
    case "backup":
    case "restore": {
      if (sub === undefined || rest.length > 0) throw new UsageError(`${command} takes exactly one directory`);
      const config = loadConfig(process.env, flags);
      if (config.databaseUrl !== undefined || config.s3 !== undefined) {
        throw new UsageError(`${command} copies SQLite and DATA_DIR; with DATABASE_URL or S3_BUCKET, use cubby export and cubby import`);
      }
      if (command === "restore") {
        await restore(path.resolve(sub), config.dataDir);
        console.error(`restored ${sub} into ${config.dataDir}; verifying every blob…`);
        return fsckCommand(config, false);
      }
      await using services = await openData(config);
      if (!(services.store instanceof SqliteMetadataStore) || !(services.blobs instanceof DiskBlobStore)) throw new Error("unreachable: SQLite and disk expected");
      const result = await backup(services.store, services.blobs, path.resolve(sub));
      console.error(`backed up ${result.files} file(s), ${result.bytes} bytes, to ${sub}`);
      return 0;
    }
    case "export":
    case "import": {
      if (sub === undefined || rest.length > 0) throw new UsageError(`${command} takes exactly one file (- for standard ${command === "export" ? "output" : "input"})`);
      const config = loadConfig(process.env, flags);
      return command === "export" ? exportCommand(config, sub, values.sessions === true) : importCommand(config, sub);
    }
    default:
      throw new UsageError(`unknown command "${command}"; try cubby --help`);
  }
}

/**
 * A file's CRC32C (RFC 3720's Castagnoli polynomial) as cubby's `checksum` and the
 * `x-goog-hash: crc32c=` header write it: the 4 big-endian bytes in base64. Streams the file.
 * @throws UsageError when the file cannot be read
 */
async function fileChecksum(file: string): Promise<string> {
  let state = 0;
  try {
    for await (const chunk of fs.createReadStream(file)) state = crc32cUpdate(state, chunk as Buffer);
  } catch (e) {
    throw new UsageError(`checksum: cannot read ${file}: ${(e as Error).message}`);
  }
  return checksumToBase64(state);
}

/** How long `cubby healthcheck` waits for the server's answer (ms). */
const HEALTHCHECK_TIMEOUT_MS = 5000;

/**
 * `cubby healthcheck` (CONTRACT §17): whether the server on `port` of this machine answers
 * `GET /healthz` with 200 within {@link HEALTHCHECK_TIMEOUT_MS}, for a container's HEALTHCHECK
 * (no curl in the image). Prints one line either way.
 * @returns 0 healthy, 1 not
 */
async function healthcheck(port: number): Promise<number> {
  const url = `http://127.0.0.1:${port}/healthz`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(HEALTHCHECK_TIMEOUT_MS), headers: { accept: "application/json" } });
    await res.arrayBuffer();
    if (res.status === 200) {
      console.log(`healthy: ${url} answered 200`);
      return 0;
    }
    console.error(`unhealthy: ${url} answered ${res.status}`);
  } catch (e) {
    console.error(`unhealthy: ${url}: ${(e as Error).message}`);
  }
  return 1;
}

/** Writes every row and blob of the configured stores to one archive (docs/archive.md). */
async function exportCommand(config: Config, target: string, sessions: boolean): Promise<number> {
  const output = await createArchiveOutput(target);
  using interrupt = interruptible();
  try {
    await using services = await openData(config);
    const r = await exportArchive(services, output.sink, { sessions, signal: interrupt.signal });
    await output.commit();
    const skipped = r.skippedFiles === 0 ? "" : `; left out ${r.skippedFiles} file(s) deleted during the export`;
    console.error(`exported ${describeCounts(r)} to ${target}${skipped}`);
    return 0;
  } catch (err) {
    await output.abort();
    if (!interrupt.signal.aborted) throw err;
    console.error(`cubby: export ${(interrupt.signal.reason as Error).message}; ${target === "-" ? "the archive is incomplete" : `${target} was not written`}`);
    return 130;
  }
}

/** Loads an archive into the configured stores, all or nothing (docs/archive.md). */
async function importCommand(config: Config, source: string): Promise<number> {
  const input = await openArchiveInput(source);
  using interrupt = interruptible();
  try {
    await using services = await openServices(config);
    const r = await importArchive(services, input.chunks, { signal: interrupt.signal });
    console.error(`imported ${describeCounts(r)} from ${source}`);
    return 0;
  } catch (err) {
    if (!interrupt.signal.aborted) throw err;
    console.error(`cubby: import ${(interrupt.signal.reason as Error).message}; nothing was changed`);
    return 130;
  } finally {
    await input.close();
  }
}

/** Runs fsck and prints its report. @returns 0 when all is well, 1 when problems were found */
async function fsckCommand(config: Config, repair: boolean): Promise<number> {
  await using services = await openData(config);
  const report = await fsck(services.store, services.blobs, { repair });
  for (const p of report.problems) console.log(`${p.kind}\tfile ${p.fileId}\tblob ${p.blob}\t${p.detail}`);
  const removed = new Set(report.orphansRemoved);
  for (const o of report.orphans) {
    console.log(`orphan\tblob ${o}\t${removed.has(o) ? "no file refers to it: removed" : "no file refers to it (removed by the server's sweep, or by fsck --repair once an hour old)"}`);
  }
  const verdict =
    report.problems.length === 0
      ? "all well"
      : `${report.problems.length} problem(s)${report.repaired ? `, quarantined in ${path.join(config.dataDir, "quarantine")}` : "; run with --repair to quarantine them"}`;
  console.log(`checked ${report.filesChecked} file(s), ${report.bytesRead} bytes: ${verdict}`);
  return report.problems.length === 0 ? 0 : 1;
}

/**
 * `cubby login-link --email E [--ttl 15m]` (CONTRACT §11): prints one URL,
 * `{HOSTNAME}/auth/link/{token}`, that signs E in once within the TTL (default 15 minutes, at
 * most 24 hours), with or without an identity provider. Only the URL goes to stdout, so
 * `URL=$(cubby login-link --email …)` works; when HOSTNAME is unset it is
 * `http://localhost:PORT`, as `cubby serve` says in its start-up line.
 */
async function loginLinkCommand(values: { email?: string | undefined; ttl?: string | undefined }, flags: ConfigFlags): Promise<number> {
  if (values.email === undefined) throw new UsageError("login-link needs --email, the address of who the link signs in");
  const email = parseEmail(values.email);
  const ttl = loginLinkTtl(values.ttl);
  const config = loadConfig(process.env, flags);
  // The link opens the server that serves this data: HOSTNAME when set, else the URL that server
  // recorded in the data directory (server-record.ts), else a guess from PORT, said to be one.
  const recorded = readServerRecord(config.dataDir);
  const base = config.hostname ?? recorded?.url ?? `http://localhost:${config.port}`;
  await using services = await openData(config);
  const link = await services.loginLinks.mint(email, ttl);
  process.stdout.write(`${base}/auth/link/${link.token}\n`);
  console.error(`this link signs ${email} in once, until ${formatTimestamp(link.expiresAt)}`);
  if (config.hostname === undefined && recorded === undefined) {
    console.error(`no server has recorded its URL in ${config.dataDir} yet: the link assumes ${base}; set HOSTNAME to the URL people open if that is not it`);
  }
  return 0;
}

async function keysCommand(
  sub: string | undefined,
  rest: string[],
  values: {
    email?: string | undefined;
    name?: string | undefined;
    scope?: string[] | undefined;
    scopes?: string | undefined;
    s3?: boolean | undefined;
    ttl?: string | undefined;
    "expire-time"?: string | undefined;
  },
  flags: ConfigFlags,
): Promise<number> {
  const config = loadConfig(process.env, flags);
  const requireEmail = () => {
    if (values.email === undefined) throw new UsageError(`keys ${sub} needs --email`);
    return parseEmail(values.email);
  };
  switch (sub) {
    case "create": {
      const email = requireEmail();
      if (rest.length > 0) throw new UsageError(`keys create takes no arguments (got "${rest[0]}")`);
      await using services = await openData(config);
      // Checked before the user is created: bad input changes nothing.
      // --scope repeated, or --scopes as one list (commas or spaces), or both.
      const listed = values.scopes?.split(/[\s,]+/).filter((s) => s !== "");
      const scopes = values.scope === undefined && listed === undefined ? undefined : [...(values.scope ?? []), ...(listed ?? [])];
      const options = services.keys.options({ scopes, ttl: values.ttl, expire_time: values["expire-time"] });
      const user = await services.users.findOrCreateByEmail(email);
      if (values.s3 === true) {
        // Two lines an env file or `eval` takes (CONTRACT §16); the secret is shown this once.
        const s3 = await services.keys.createS3(user.id, values.name ?? "", options);
        process.stdout.write(`AWS_ACCESS_KEY_ID=${s3.s3AccessKeyId}\nAWS_SECRET_ACCESS_KEY=${s3.secretAccessKey}\n`);
        return 0;
      }
      const minted = await services.keys.create(user.id, values.name ?? "", options);
      // Only the key on stdout, so `KEY=$(cubby keys create --email …)` works.
      process.stdout.write(`${minted.key}\n`);
      return 0;
    }
    case "list": {
      const email = requireEmail();
      await using services = await openData(config);
      const user = await services.users.findByEmail(email);
      console.log(["ID", "NAME", "SCOPES", "CREATED", "LAST USED", "EXPIRES"].join("\t"));
      // Page by page (keyset), so a user with many keys is listed in bounded memory.
      let after: PageCursor | undefined;
      while (user !== undefined) {
        const page = await services.keys.list(user.id, MAX_PAGE_SIZE, after);
        for (const k of page.items) {
          const lastUsed = k.lastUsedAt === null ? "never" : formatTimestamp(k.lastUsedAt);
          console.log([k.s3AccessKeyId === null ? k.id : `${k.id} (S3 ${k.s3AccessKeyId})`, k.name || "-", k.scopes.join(","), formatTimestamp(k.createdAt), lastUsed, k.expiresAt === null ? "never" : formatTimestamp(k.expiresAt)].join("\t"));
        }
        if ((after = page.next) === undefined) break;
      }
      return 0;
    }
    case "revoke": {
      const [id, extra] = rest;
      if (id === undefined || extra !== undefined) throw new UsageError("keys revoke takes exactly one key ID");
      await using services = await openData(config);
      // An S3 access key by its key ID or its access key ID.
      await services.keys.revoke(keyIdOfS3AccessKey(id) ?? id);
      console.error(`revoked ${id}`);
      return 0;
    }
    default:
      throw new UsageError(sub === undefined ? "keys needs a subcommand: create, list or revoke" : `unknown keys subcommand "${sub}"`);
  }
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      // A busy port (WORKERS = 1 listens here; the supervisor's probe says it as a ConfigError).
      if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") err = portInUse((err as { port?: number }).port);
      const isInput =
        err instanceof UsageError ||
        err instanceof ConfigError ||
        err instanceof StoreUnavailableError ||
        (err instanceof AppError && (err.code === "invalid_argument" || err.code === "not_found")) ||
        (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
      if (isInput) {
        console.error(`cubby: ${(err as Error).message}`);
        process.exit(2);
      }
      console.error(`cubby: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exit(1);
    },
  );
}
