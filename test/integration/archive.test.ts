// test-lists: postgres-s3
// cubby export / cubby import (CONTRACT §7 and §10, docs/archive.md) through the real CLI and real
// servers: a round trip keeps every row, checksum, File object, key and session, users' quotas
// and disabled state, file expiries, share links (password, limit, count, deletion), guest
// upload links (limits, counters, deletion) and folders with the files in them (CONTRACT §12),
// each checked from outside on the destination's server; import refuses to overwrite and refuses damaged, newer or unknown archives, leaving
// the destination exactly as it was; export never overwrites a file; memory stays far below
// the size of what passes through.
//
// A deployment is the environment `cubby` reads, so the same round trip runs across backends:
// SQLite + disk always; SQLite + disk → the configured backends and back when there are any:
// under CUBBY_TEST_BACKEND=postgres-s3 (npm test) the harness's PostgreSQL and S3 store, a fresh
// database and prefix per deployment; or, by hand, CUBBY_TEST_DATABASE_URL (a PostgreSQL database
// the test may fill and empty) and/or CUBBY_TEST_S3_ENDPOINT with CUBBY_TEST_S3_BUCKET (an
// existing bucket; each deployment gets its own S3_PREFIX; CUBBY_TEST_S3_ACCESS_KEY_ID /
// _SECRET_ACCESS_KEY, default "test"). The SQLite-only tests run in the SQLite pass only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import fs from "node:fs";
import path from "node:path";
import { loadConfig } from "../../src/config.ts";
import { checksumOf } from "../../src/domain/checksum.ts";
import { openServices } from "../../src/service/index.ts";
import { connectPostgres } from "../../src/storage/pg-driver.ts";
import { BACKEND, backendEnv } from "../support/backend.ts";
import { davFetch } from "../support/dav.ts";
import { client, ROOT, runCli, startServer, tempDir, type FileJson } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";

/** Where one cubby keeps its data: the environment its commands and server run with. */
interface Deployment extends AsyncDisposable {
  name: string;
  env: Record<string, string>;
  /** DATA_DIR: SQLite and blobs when the environment names no other store. */
  dataDir: string;
}

/**
 * The variables that name other stores, empty: the harness gives every server it starts the
 * run's backend, and an empty variable counts as unset.
 */
const NO_OTHER_STORES = { DATABASE_URL: "", S3_BUCKET: "", S3_ENDPOINT: "", S3_PREFIX: "", S3_REGION: "", S3_ACCESS_KEY_ID: "", S3_SECRET_ACCESS_KEY: "" };

/** SQLite and blobs in a fresh DATA_DIR. */
async function sqliteAndDisk(): Promise<Deployment> {
  const dir = tempDir("cubby-archive-");
  const dataDir = path.join(dir.path, "data");
  return { name: "SQLite + disk", env: { ...NO_OTHER_STORES, DATA_DIR: dataDir }, dataDir, [Symbol.asyncDispose]: async () => dir[Symbol.dispose]() };
}

/** The harness's PostgreSQL and S3 store: a fresh database and key prefix (gone with the run's servers). */
async function harnessBackend(): Promise<Deployment> {
  const disk = await sqliteAndDisk();
  return { ...disk, name: "PostgreSQL + S3", env: { DATA_DIR: disk.dataDir, ...(await backendEnv(disk.dataDir)) } };
}

const pgUrl = process.env.CUBBY_TEST_DATABASE_URL;
const s3 =
  process.env.CUBBY_TEST_S3_ENDPOINT === undefined || process.env.CUBBY_TEST_S3_BUCKET === undefined
    ? undefined
    : {
        S3_ENDPOINT: process.env.CUBBY_TEST_S3_ENDPOINT,
        S3_BUCKET: process.env.CUBBY_TEST_S3_BUCKET,
        S3_ACCESS_KEY_ID: process.env.CUBBY_TEST_S3_ACCESS_KEY_ID ?? "test",
        S3_SECRET_ACCESS_KEY: process.env.CUBBY_TEST_S3_SECRET_ACCESS_KEY ?? "test",
      };

/** Empties the PostgreSQL database of CUBBY_TEST_DATABASE_URL (its tables, once they exist). */
async function emptyPostgres(): Promise<void> {
  const driver = connectPostgres(pgUrl!);
  await driver.db.execute(sql`DO $$ BEGIN IF to_regclass('files') IS NOT NULL THEN TRUNCATE folders, files, shares, upload_links, uploads, sessions, api_keys, users; END IF; END $$`);
  await driver.end();
}

/** The configured backends (see the header), fresh: a new or emptied database, a new S3 prefix. */
async function configured(): Promise<Deployment> {
  if (BACKEND === "postgres-s3") return harnessBackend();
  const disk = await sqliteAndDisk();
  const env: Record<string, string> = { ...disk.env };
  if (pgUrl !== undefined) {
    await emptyPostgres();
    env.DATABASE_URL = pgUrl;
  }
  if (s3 !== undefined) Object.assign(env, s3, { S3_PREFIX: `cubby-archive-test-${crypto.randomUUID()}/` });
  return {
    name: `${pgUrl === undefined ? "SQLite" : "PostgreSQL"} + ${s3 === undefined ? "disk" : "S3"}`,
    env,
    dataDir: disk.dataDir,
    async [Symbol.asyncDispose]() {
      if (pgUrl !== undefined) await emptyPostgres();
      if (s3 !== undefined) {
        await using services = await openServices(loadConfig(env));
        for await (const { name } of services.blobs.list()) await services.blobs.remove(name);
      }
      await disk[Symbol.asyncDispose]();
    },
  };
}

/** The public origin of every server here, so File JSON (`url`) is the same on both sides. */
const HOSTNAME = "http://cubby.example";

/** Every row of a deployment (blob names left out: import gives blobs new ones) and its blobs, through the ports. */
async function contents(d: Deployment) {
  await using services = await openServices(loadConfig(d.env));
  const all = async <T>(rows: AsyncIterable<T>) => {
    const list: T[] = [];
    for await (const r of rows) list.push(r);
    return list;
  };
  const hex = <T extends { secretHash: Uint8Array }>(r: T) => ({ ...r, secretHash: Buffer.from(r.secretHash).toString("hex") });
  const files = await all(services.store.files.all());
  const blobs = await all(services.blobs.list());
  const users = await all(services.store.users.all());
  return {
    // With their quota, disabled state and last sighting.
    users: await Promise.all(users.map(async (u) => services.store.users.account(u.id))),
    keys: (await all(services.store.keys.all())).map(hex),
    sessions: (await all(services.store.sessions.all())).map(hex),
    files: files.map(({ blob: _, ...row }) => row),
    uploadLinks: await all(services.store.uploadLinks.all()),
    shares: await all(services.store.shares.all()),
    folders: await all(services.store.folders.all()),
    memberships: await all(services.store.folders.memberships()),
    davProperties: await all(services.store.dav.allProperties()),
    blobs: blobs.map((b) => b.name).sort(),
    referenced: files.map((f) => f.blob).sort(),
  };
}

/** What a refused import must leave in a deployment it was the first to touch: nothing. */
async function expectUntouched(d: Deployment) {
  expect(await contents(d)).toEqual({ users: [], keys: [], sessions: [], files: [], uploadLinks: [], shares: [], folders: [], memberships: [], davProperties: [], blobs: [], referenced: [] });
  for (const sub of ["blobs", "tmp"]) {
    const dir = path.join(d.dataDir, sub);
    expect({ dir: sub, entries: fs.existsSync(dir) ? fs.readdirSync(dir) : [] }).toEqual({ dir: sub, entries: [] });
  }
}

const cli = (d: Deployment, ...args: string[]) => runCli(args, { env: d.env });

async function mintKey(d: Deployment, email: string, name = ""): Promise<string> {
  const r = await cli(d, "keys", "create", "--email", email, "--name", name, "--init");
  if (r.code !== 0) throw new Error(`keys create failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** The state beside files and keys (CONTRACT §10), as the source's server showed it at export. */
interface SourceState {
  /** A disabled user's key, and what the source answered it on GET /v1/files. */
  disabled: { key: string; status: number; body: unknown };
  /** A key of alice, whose quota is {@link QUOTA} bytes with 1 byte used. */
  quotaKey: string;
  /** alice's share of her 1-byte file: password, 3 downloads, 1 used; bob's deleted share, and his share of a deleted file. */
  share: { token: string; fileId: string; listing: unknown };
  goneShares: string[];
  /** bob's guest upload link (3 files, 1 used) as he lists it, and the files that arrived through it. */
  link: { owner: string; id: string; token: string; listing: unknown; files: unknown };
  deletedLinkToken: string;
  /** A file with an expiry, and what GET …/expiry answered. */
  expiring: { id: string; expiry: unknown };
  /** bob's folders (Scans, Scans/2026) as REST showed them, and the files in each. */
  folders: { key: string; top: unknown; byId: Map<string, { folder: unknown; subFolders: unknown; files: unknown }> };
  /** bob's share of his folder Scans and a file, and every share of his as GET /v1/shares listed them. */
  itemsShare: { token: string; listing: unknown };
}

const QUOTA = 1000;
const PASSWORD = "correct horse";
const basic = (password: string) => ({ authorization: `Basic ${Buffer.from(`any:${password}`).toString("base64")}` });
const json = { "content-type": "application/json" };
/** The secret at the end of a share or upload link URL. */
const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

interface Source {
  deployment: Deployment;
  state: SourceState;
  /** Key → the files its user owns, as the source's REST API lists them. */
  keys: Map<string, FileJson[]>;
  /** File ID → content. */
  content: Map<string, Uint8Array>;
  files: FileJson[];
  /** A dashboard session's cookie value. */
  session: string;
  archive: string;
  /** The source's rows right after the export. */
  rows: Awaited<ReturnType<typeof contents>>;
}

const BIG = 8 * 1024 * 1024 + 3;
/** Bytes of the files beside the four above: dave's, the one through bob's link, the doomed one is gone. */
const EXTRA = 6 + 10;
const BYTES = 1 + 65536 + BIG + EXTRA;
const COUNTS = `4 user(s), 5 API key(s), 1 session(s), 2 guest upload link(s), 6 file(s) of ${BYTES} bytes, 4 share link(s), 2 folder(s), 4 WebDAV dead properties`;

/**
 * Through `server` and the CLI: dave disabled (with a key and a file), alice's quota, carol with
 * none, share links (one with a password and a download limit, partly used; one deleted; one of
 * a deleted file), bob's guest upload links (one used once, one deleted), a file's expiry, bob's
 * folders (a sub-folder made before its parent in ID order is likely, not certain) with a file in each.
 */
async function addState(d: Deployment, server: { url: string }, files: FileJson[], alice: string, bob: string): Promise<SourceState> {
  const ok = async (res: Response, status = 200) => {
    if (res.status !== status) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const dave = await mintKey(d, "dave@example.com", "disabled");
  await client(server, dave).upload("dave's", "?name=dave.txt");
  for (const args of [["disable", "dave@example.com"], ["set-quota", "alice@example.com", String(QUOTA)], ["set-quota", "carol@example.com", "none"]]) {
    const r = await cli(d, "users", ...args);
    if (r.code !== 0) throw new Error(`users ${args.join(" ")}: ${r.stderr}`);
  }
  const refused = await client(server, dave).fetch("/v1/files");
  const disabled = { key: dave, status: refused.status, body: await refused.json() };

  const one = files[1]!;
  const share = await ok(await client(server, alice).fetch(`/v1/files/${one.id}/shares`, { method: "POST", headers: json, body: JSON.stringify({ password: PASSWORD, max_downloads: 3, ttl: "7d" }) }));
  const shareToken = tokenOf(share.url as string);
  expect((await fetch(`${server.url}/s/${shareToken}`, { headers: basic(PASSWORD) })).status).toBe(200);
  const shareListing = await ok(await client(server, alice).fetch(`/v1/files/${one.id}/shares`));

  const deleted = await ok(await client(server, bob).fetch(`/v1/files/${files[2]!.id}/shares`, { method: "POST", headers: json, body: "{}" }));
  await ok(await client(server, bob).fetch(`/v1/shares/${deleted.id}`, { method: "DELETE" }));
  const doomed = await client(server, bob).upload("doomed", "?name=doomed.txt");
  const ofDoomed = await ok(await client(server, bob).fetch(`/v1/files/${doomed.id}/shares`, { method: "POST", headers: json, body: "{}" }));
  await ok(await client(server, bob).fetch(`/v1/files/${doomed.id}`, { method: "DELETE" }));
  const goneShares = [tokenOf(deleted.url as string), tokenOf(ofDoomed.url as string)];
  for (const token of goneShares) expect((await fetch(`${server.url}/s/${token}`)).status).toBe(410);

  const link = await ok(await client(server, bob).fetch("/v1/upload-links", { method: "POST", headers: json, body: JSON.stringify({ name: "scans", max_files: 3, max_bytes: 100_000, visibility: "internal" }) }));
  const linkToken = tokenOf(link.url as string);
  await ok(await fetch(`${server.url}/u/${linkToken}?name=guest.txt`, { method: "POST", body: "0123456789", headers: { "content-type": "text/plain" } }));
  const gone = await ok(await client(server, bob).fetch("/v1/upload-links", { method: "POST", headers: json, body: JSON.stringify({ name: "old" }) }));
  await ok(await client(server, bob).fetch(`/v1/upload-links/${gone.id}`, { method: "DELETE" }));

  const expiring = files[2]!;
  await ok(await client(server, bob).fetch(`/v1/files/${expiring.id}/expiry`, { method: "PATCH", headers: json, body: JSON.stringify({ ttl: "7d" }) }));

  // Folders: 2026 is made first, then Scans, and 2026 moved into it (so a child may come before
  // its parent in the store's order); the 64 KiB file in Scans, the big one in Scans/2026.
  const year = await ok(await client(server, bob).fetch("/v1/folders", { method: "POST", headers: json, body: JSON.stringify({ name: "2026" }) }));
  const scans = await ok(await client(server, bob).fetch("/v1/folders", { method: "POST", headers: json, body: JSON.stringify({ name: "Scans" }) }));
  await ok(await client(server, bob).fetch(`/v1/folders/${year.id}`, { method: "PATCH", headers: json, body: JSON.stringify({ parent_id: scans.id }) }));
  await ok(await client(server, bob).fetch(`/v1/folders/${scans.id}/files/${files[2]!.id}`, { method: "PUT" }));
  await ok(await client(server, bob).fetch(`/v1/folders/${year.id}/files/${files[3]!.id}`, { method: "PUT" }));
  const byId = new Map<string, { folder: unknown; subFolders: unknown; files: unknown }>();
  for (const id of [scans.id as string, year.id as string]) {
    byId.set(id, {
      folder: await ok(await client(server, bob).fetch(`/v1/folders/${id}`)),
      subFolders: await ok(await client(server, bob).fetch(`/v1/folders?parent_id=${id}`)),
      files: await ok(await client(server, bob).fetch(`/v1/folders/${id}/files`)),
    });
  }
  const top = await ok(await client(server, bob).fetch("/v1/folders"));
  // A share of several items (archive format 8): a folder and a file of bob's.
  const itemsShare = await ok(await client(server, bob).fetch("/v1/shares", { method: "POST", headers: json, body: JSON.stringify({ items: [{ folder_id: scans.id }, { file_id: files[2]!.id }] }) }));
  // WebDAV dead properties (archive format 5): of bob's top, his two folders and the file in Scans/2026.
  const inYear = (await ok(await client(server, bob).fetch(`/v1/files/${files[3]!.id}`))) as { id: string; name: string };
  const propertyUpdate = (value: string) =>
    `<D:propertyupdate xmlns:D="DAV:" xmlns:z="urn:zoo"><D:set><D:prop><z:tag kind="a&amp;b">${value}</z:tag></D:prop></D:set></D:propertyupdate>`;
  for (const [at, value] of [["/dav/", "top"], ["/dav/Scans/", "scans"], ["/dav/Scans/2026/", "<z:year>2026</z:year>"], [`/dav/Scans/2026/${encodeURIComponent(inYear.name || inYear.id)}`, "file"]] as const) {
    const res = await davFetch(server.url, bob, at, { method: "PROPPATCH", body: propertyUpdate(value) });
    if (res.status !== 207) throw new Error(`PROPPATCH ${at}: ${res.status} ${await res.text()}`);
  }
  return {
    disabled,
    quotaKey: alice,
    share: { token: shareToken, fileId: one.id, listing: shareListing },
    goneShares,
    link: {
      owner: bob,
      id: link.id as string,
      token: linkToken,
      listing: await ok(await client(server, bob).fetch("/v1/upload-links")),
      files: await ok(await client(server, bob).fetch(`/v1/upload-links/${link.id}/files`)),
    },
    deletedLinkToken: tokenOf(gone.url as string),
    expiring: { id: expiring.id, expiry: await ok(await client(server, bob).fetch(`/v1/files/${expiring.id}/expiry`)) },
    folders: { key: bob, top, byId },
    itemsShare: { token: tokenOf(itemsShare.url as string), listing: await ok(await client(server, bob).fetch("/v1/shares")) },
  };
}

/** Fills a deployment through a real server (users, keys, files of 0, 1, 64 KiB and ≥ 8 MiB, a session) and exports it. */
async function exportedSource(d: Deployment, archiveDir: string): Promise<Source> {
  await using server = await startServer({ dataDir: d.dataDir, env: { ...d.env, HOSTNAME } });
  const alice = [await mintKey(d, "alice@example.com", "laptop"), await mintKey(d, "alice@example.com", "backup job")];
  const bob = await mintKey(d, "bob@example.com");
  const carol = await mintKey(d, "carol@example.com", "no files");
  const content = new Map<string, Uint8Array>();
  const upload = async (key: string, bytes: Uint8Array, query: string, contentType: string) => {
    const file = await client(server, key).upload(bytes, query, { "content-type": contentType });
    content.set(file.id, bytes);
    return file;
  };
  const big = new Uint8Array(BIG);
  for (let off = 0; off < BIG; off += 65536) crypto.getRandomValues(big.subarray(off, Math.min(off + 65536, BIG)));
  const files = [
    await upload(alice[0]!, new Uint8Array(0), "?slug=empty&name=empty.txt&visibility=public", "text/plain"),
    await upload(alice[1]!, new Uint8Array([0x2a]), "?name=one.txt&visibility=private", "application/octet-stream"),
    await upload(bob, crypto.getRandomValues(new Uint8Array(65536)), "?slug=sixty-four&name=r%C3%A9sum%C3%A9.bin", "application/pdf"),
    await upload(bob, big, "?name=big.bin&visibility=public", "application/octet-stream"),
  ];

  // Signing in needs an identity provider; a session made through the store API is the same row.
  let session: string;
  {
    await using services = await openServices(loadConfig(d.env));
    const user = await services.users.findByEmail("alice@example.com");
    session = (await services.sessions.create(user!.id)).token;
  }
  const listed = async (auth: Record<string, string>) => {
    const res = await fetch(`${server.url}/v1/files?page_size=100`, { headers: auth });
    expect(res.status).toBe(200);
    return ((await res.json()) as { files: FileJson[] }).files;
  };
  const state = await addState(d, server, files, alice[0]!, bob);
  const keys = new Map<string, FileJson[]>();
  for (const key of [...alice, bob, carol]) keys.set(key, await listed({ authorization: `Bearer ${key}` }));
  expect((await listed({ cookie: `cubby_session=${session}` })).map((f) => f.id)).toEqual(keys.get(alice[0]!)!.map((f) => f.id));
  for (const f of keys.get(bob)!) if (!content.has(f.id)) content.set(f.id, new Uint8Array(await (await client(server, bob).fetch(`/${f.id}`)).arrayBuffer()));

  const archive = path.join(archiveDir, "everything.cubby");
  const exported = await cli(d, "export", archive, "--sessions");
  expect(exported).toEqual({ code: 0, stdout: "", stderr: `exported ${COUNTS} to ${archive}\n` });
  expect(fs.statSync(archive).mode & 0o777).toBe(0o600);
  expect(fs.readdirSync(archiveDir)).toEqual(["everything.cubby"]);
  return { deployment: d, state, keys, content, files, session, archive, rows: await contents(d) };
}

/** Imports the source's archive into `dest` and checks that everything came across. */
async function importAndCompare(source: Source, dest: Deployment) {
  expect(await cli(dest, "import", source.archive)).toEqual({ code: 0, stdout: "", stderr: `imported ${COUNTS} from ${source.archive}\n` });
  const rows = await contents(dest);
  // Every row as it was, each file with a blob of its own; no blob without a row.
  const { blobs: _b, referenced: _r, ...before } = source.rows;
  const { blobs, referenced, ...after } = rows;
  expect(after).toEqual(before);
  expect(blobs).toEqual(referenced);
  expect(blobs.length).toBe(6);
  expect(await cli(dest, "fsck")).toMatchObject({ code: 0, stdout: expect.stringContaining(`checked 6 file(s), ${BYTES} bytes: all well`) });

  await using server = await startServer({ dataDir: dest.dataDir, env: { ...dest.env, HOSTNAME } });
  for (const [key, files] of source.keys) {
    const auth = { authorization: `Bearer ${key}` };
    const res = await fetch(`${server.url}/v1/files?page_size=100`, { headers: auth });
    expect({ status: res.status, files: ((await res.json()) as { files: FileJson[] }).files }).toEqual({ status: 200, files });
    for (const file of files) {
      const one = await fetch(`${server.url}/v1/files/${file.id}`, { headers: auth });
      expect(await one.json()).toEqual(file);
      const body = new Uint8Array(await (await fetch(`${server.url}/${file.id}`, { headers: auth })).arrayBuffer());
      expect({ id: file.id, size: String(body.byteLength), checksum: checksumOf(body), same: Buffer.compare(body, source.content.get(file.id)!) === 0 }).toEqual({
        id: file.id,
        size: file.size,
        checksum: file.checksum,
        same: true,
      });
    }
  }
  const viaSession = await fetch(`${server.url}/v1/files`, { headers: { cookie: `cubby_session=${source.session}` } });
  expect(viaSession.status).toBe(200);
  const sizes = source.files.map((f) => f.size);
  expect(sizes).toEqual(["0", "1", "65536", String(BIG)]);
  await expectStateKept(server, source.state);
}

/** The state of {@link addState} on the destination's server, from outside: each as the source left it. */
async function expectStateKept(server: { url: string }, state: SourceState) {
  const as = (key: string) => client(server, key);
  const body = async (res: Response) => ({ status: res.status, body: await res.json() });
  // The disabled user's key is refused exactly as at the source.
  expect(await body(await as(state.disabled.key).fetch("/v1/files"))).toEqual({ status: state.disabled.status, body: state.disabled.body });
  expect(state.disabled.status).toBe(401);

  // alice's quota of 1000 bytes, 1 used: 1000 more is refused with 413, 999 fit exactly.
  const over = await as(state.quotaKey).fetch("/v1/files", { method: "POST", body: new Uint8Array(QUOTA) });
  expect(await body(over)).toEqual({ status: 413, body: expect.objectContaining({ code: 8, message: expect.stringContaining("storage quota exceeded") }) });
  expect((await as(state.quotaKey).fetch("/v1/files", { method: "POST", body: new Uint8Array(QUOTA - 1) })).status).toBe(200);

  // The share: listed as it was; its password still opens it; two downloads left of three.
  expect(await body(await as(state.quotaKey).fetch(`/v1/files/${state.share.fileId}/shares`))).toEqual({ status: 200, body: state.share.listing });
  const share = (headers: Record<string, string> = {}) => fetch(`${server.url}/s/${state.share.token}`, { headers });
  expect((await share()).status).toBe(401);
  expect((await share(basic("wrong"))).status).toBe(401);
  const downloads = [];
  for (let i = 0; i < 3; i++) {
    const res = await share(basic(PASSWORD));
    downloads.push({ status: res.status, bytes: res.status === 200 ? (await res.arrayBuffer()).byteLength : (await res.text(), 0) });
  }
  expect(downloads).toEqual([{ status: 200, bytes: 1 }, { status: 200, bytes: 1 }, { status: 410, bytes: 0 }]);
  for (const token of state.goneShares) expect((await fetch(`${server.url}/s/${token}`)).status).toBe(410);

  // The guest upload link: listed as it was, its file still its; two of its three files left.
  expect(await body(await as(state.link.owner).fetch("/v1/upload-links"))).toEqual({ status: 200, body: state.link.listing });
  expect(await body(await as(state.link.owner).fetch(`/v1/upload-links/${state.link.id}/files`))).toEqual({ status: 200, body: state.link.files });
  const guest = (name: string, token = state.link.token) => fetch(`${server.url}/u/${token}?name=${name}`, { method: "POST", body: "abc", headers: { "content-type": "text/plain" } });
  expect([(await guest("a.txt")).status, (await guest("b.txt")).status, (await guest("c.txt")).status]).toEqual([200, 200, 410]);
  expect((await guest("d.txt", state.deletedLinkToken)).status).toBe(410);

  // The file's expiry.
  expect(await body(await as(state.link.owner).fetch(`/v1/files/${state.expiring.id}/expiry`))).toEqual({ status: 200, body: state.expiring.expiry });

  // The folders, their sub-folders and the files in each, as REST showed them at the source.
  const folders = as(state.folders.key);
  expect(await body(await folders.fetch("/v1/folders"))).toEqual({ status: 200, body: state.folders.top });
  for (const [id, seen] of state.folders.byId) {
    expect(await body(await folders.fetch(`/v1/folders/${id}`))).toEqual({ status: 200, body: seen.folder });
    expect(await body(await folders.fetch(`/v1/folders?parent_id=${id}`))).toEqual({ status: 200, body: seen.subFolders });
    expect(await body(await folders.fetch(`/v1/folders/${id}/files`))).toEqual({ status: 200, body: seen.files });
  }

  // The share of several items: listed with its items as at the source; its page lists them.
  expect(await body(await folders.fetch("/v1/shares"))).toEqual({ status: 200, body: state.itemsShare.listing });
  const page = await fetch(`${server.url}/s/${state.itemsShare.token}`, { headers: { accept: "text/html" } });
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("1 file and 1 folder");
}

/** Exports a filled `source` and imports it into `dest`. */
async function roundTrip(makeSource: () => Promise<Deployment>, makeDest: () => Promise<Deployment>) {
  using dir = tempDir("cubby-archive-file-");
  await using source = await makeSource();
  await using dest = await makeDest();
  await importAndCompare(await exportedSource(source, dir.path), dest);
}

/** `archive` as a later cubby might write it: its version 8 (the rest as it was). */
function newerVersion(archive: Buffer): Buffer {
  const magic = "cubby-archive 8\n";
  expect(archive.subarray(0, magic.length).toString()).toBe(magic);
  return Buffer.concat([Buffer.from("cubby-archive 9\n"), archive.subarray(magic.length)]);
}

/** `archive` with a record of a type this cubby does not know just before its trailer, after every file's content. */
function withUnknownRecord(archive: Buffer): Buffer {
  const trailerAt = archive.lastIndexOf("\n", archive.length - 2) + 1;
  const webhook = '{"type":"webhook","id":"w1","url":"https://example.com/hook","events":"file.created"}\n';
  return Buffer.concat([archive.subarray(0, trailerAt), Buffer.from(webhook), archive.subarray(trailerAt)]);
}

/** The tests of the archive itself run on SQLite + disk, in the SQLite pass of `npm test` only. */
const postgresPass = BACKEND === "postgres-s3";

test.skipIf(postgresPass)("round trip SQLite + disk → SQLite + disk: rows, checksums, File JSON, keys, the session, quotas, disabled users, share and guest upload links survive", async () => {
  await roundTrip(sqliteAndDisk, sqliteAndDisk);
}, 60_000);

describe.skipIf(BACKEND === "sqlite-disk" && pgUrl === undefined && s3 === undefined)("across backends (PostgreSQL + S3, or CUBBY_TEST_DATABASE_URL, CUBBY_TEST_S3_*)", () => {
  test("SQLite + disk → the configured backends", async () => {
    await roundTrip(sqliteAndDisk, configured);
  }, 120_000);
  test("the configured backends → SQLite + disk", async () => {
    await roundTrip(configured, sqliteAndDisk);
  }, 120_000);
  test("a refused import (damaged, truncated, a newer version, an unknown record) leaves the configured backends as they were", async () => {
    using dir = tempDir("cubby-archive-file-");
    await using source = await sqliteAndDisk();
    const { archive } = await exportedSource(source, dir.path);
    const bytes = fs.readFileSync(archive);
    const damaged = Buffer.from(bytes);
    damaged[damaged.length - 20]! ^= 0x01;
    for (const [what, variant, message] of [
      ["a flipped byte", damaged, /damaged archive/],
      ["truncated", bytes.subarray(0, bytes.length - 100), /\(truncated\?\)/],
      ["a newer version", newerVersion(bytes), /archive format "cubby-archive 9" is not one this cubby reads \(written by a newer cubby\?\)/],
      ["an unknown record", withUnknownRecord(bytes), /unknown record type "webhook" \(written by a newer cubby\?\)/],
    ] as const) {
      const file = path.join(dir.path, "refused.cubby");
      fs.writeFileSync(file, variant);
      await using dest = await configured();
      expect({ what, ...(await cli(dest, "import", file)) }).toMatchObject({ what, code: 2, stderr: expect.stringMatching(message) });
      await expectUntouched(dest);
      fs.rmSync(file);
    }
  }, 180_000);
});

describe.skipIf(postgresPass)("refusals", () => {
  let dir: ReturnType<typeof tempDir>;
  let source: Source;
  /** The archive's bytes, and where the big file's content starts in it. */
  let archive: Buffer;
  let bigContentAt: number;

  beforeAll(async () => {
    dir = tempDir("cubby-archive-file-");
    source = await exportedSource(await sqliteAndDisk(), dir.path);
    archive = fs.readFileSync(source.archive);
    const big = source.files.find((f) => f.size === String(BIG))!;
    bigContentAt = archive.indexOf("\n", archive.indexOf(`{"type":"file","id":"${big.id}"`)) + 1;
  }, 60_000);
  afterAll(async () => {
    await source?.deployment[Symbol.asyncDispose]();
    dir?.[Symbol.dispose]();
  });

  /** Imports `bytes` as an archive into a fresh deployment: refused with `message`, which stays empty. */
  async function expectRefused(bytes: Uint8Array, message: RegExp) {
    const file = path.join(dir.path, "damaged.cubby");
    fs.writeFileSync(file, bytes);
    await using dest = await sqliteAndDisk();
    const r = await cli(dest, "import", file);
    expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code: 2, stdout: "", stderr: expect.stringMatching(message) });
    expect(r.stderr.split("\n").length).toBe(2);
    await expectUntouched(dest);
  }

  test("importing twice: the second import is refused and changes nothing", async () => {
    await using dest = await sqliteAndDisk();
    expect((await cli(dest, "import", source.archive)).code).toBe(0);
    const before = await contents(dest);
    const again = await cli(dest, "import", source.archive);
    expect(again).toEqual({
      code: 2,
      stdout: "",
      stderr: expect.stringMatching(/^cubby: refusing to import: user \S+@example\.com \(ID \S+\) already exists here, and import never overwrites; nothing was changed\n$/),
    });
    expect(await contents(dest)).toEqual(before);
    expect(fs.readdirSync(path.join(dest.dataDir, "tmp"))).toEqual([]);
  }, 30_000);

  test("a destination with another user of the same e-mail is refused before anything is stored", async () => {
    await using dest = await sqliteAndDisk();
    await mintKey(dest, "bob@example.com");
    const before = await contents(dest);
    expect(await cli(dest, "import", source.archive)).toEqual({
      code: 2,
      stdout: "",
      stderr: "cubby: refusing to import: a user with the e-mail address bob@example.com already exists here, and import never overwrites; nothing was changed\n",
    });
    expect(await contents(dest)).toEqual(before);
  });

  test("truncated inside a file's content", async () => {
    await expectRefused(archive.subarray(0, bigContentAt + 4 * 1024 * 1024), /^cubby: damaged archive at byte \d+: the archive ends inside the content of file \S+ \(truncated\?\)\n$/);
  });

  test("truncated before the trailer", async () => {
    const trailerAt = archive.lastIndexOf("\n", archive.length - 2) + 1;
    await expectRefused(archive.subarray(0, trailerAt), /^cubby: damaged archive at byte \d+: the archive ends before its trailer \(truncated\?\)\n$/);
  });

  test("truncated by one byte", async () => {
    await expectRefused(archive.subarray(0, archive.length - 1), /: the archive ends inside a record \(truncated\?\)\n$/);
  });

  test("a flipped byte in a file's content", async () => {
    const flipped = Buffer.from(archive);
    flipped[bigContentAt + 5_000_000]! ^= 0x10;
    await expectRefused(flipped, /^cubby: damaged archive at byte \d+: the content of file \S+ has CRC32C \S+, its record says \S+\n$/);
  });

  test("a changed record that still parses: the archive's CRC32C catches it after every blob was staged", async () => {
    const changed = Buffer.from(archive.toString("latin1").replace('"name":"one.txt"', '"name":"One.txt"'), "latin1");
    expect(changed.equals(archive)).toBe(false);
    await expectRefused(changed, /^cubby: damaged archive at byte \d+: the archive's CRC32C is \S+, its trailer says \S+ \(changed after it was written\?\)\n$/);
  });

  test("bytes after the trailer", async () => {
    await expectRefused(Buffer.concat([archive, Buffer.from("more\n")]), /: bytes follow the trailer\n$/);
  });

  test("not an archive, or another version", async () => {
    await expectRefused(Buffer.from("hello\n"), /^cubby: not a cubby archive \(it does not start with "cubby-archive 8"\)\n$/);
    await expectRefused(Buffer.from("cubby-archive 9\n"), /^cubby: archive format "cubby-archive 9" is not one this cubby reads/);
    await expectRefused(new Uint8Array(0), /^cubby: not a cubby archive \(it is empty\)\n$/);
  });

  test("a newer version's archive is refused before anything is read, and changes nothing", async () => {
    await expectRefused(
      newerVersion(archive),
      /^cubby: archive format "cubby-archive 9" is not one this cubby reads \(written by a newer cubby\?\); it reads "cubby-archive 1", "cubby-archive 2", "cubby-archive 3", "cubby-archive 4", "cubby-archive 5", "cubby-archive 6", "cubby-archive 7", "cubby-archive 8"; nothing was changed\n$/,
    );
  });

  test("a record this cubby does not understand, after every file was staged: refused, the staged content removed", async () => {
    await expectRefused(withUnknownRecord(archive), /^cubby: damaged archive at byte \d+: unknown record type "webhook" \(written by a newer cubby\?\)\n$/);
  });

  test("a known record with a field this cubby does not understand is refused", async () => {
    const changed = Buffer.from(archive.toString("latin1").replace('"type":"share",', '"type":"share","notify":true,'), "latin1");
    expect(changed.equals(archive)).toBe(false);
    await expectRefused(changed, /^cubby: damaged archive at byte \d+: a share record has unknown field\(s\) "notify" \(written by a newer cubby\?\)\n$/);
  });

  test("an import stopped by SIGINT removes what it staged and changes nothing", async () => {
    await using dest = await sqliteAndDisk();
    const importer = Bun.spawn([process.execPath, path.join(ROOT, "src/main.ts"), "import", "-"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", ...dest.env },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    // Everything up to the middle of the big file's content, then silence: the files before it
    // (in ID order) are staged, the big one is being written.
    importer.stdin.write(archive.subarray(0, bigContentAt + 4 * 1024 * 1024));
    await importer.stdin.flush();
    const tmp = path.join(dest.dataDir, "tmp");
    await waitFor(() => fs.existsSync(tmp) && fs.readdirSync(tmp).length > 0, "the import's first temporary file", 10_000, 5);
    importer.kill("SIGINT");
    const [code, stderr] = await Promise.all([importer.exited, new Response(importer.stderr).text()]);
    expect({ code, stderr }).toEqual({ code: 130, stderr: "cubby: import stopped by SIGINT; nothing was changed\n" });
    await expectUntouched(dest);
  }, 30_000);

  test("export refuses an existing FILE and leaves it as it was", async () => {
    const file = path.join(dir.path, "precious.txt");
    fs.writeFileSync(file, "keep me");
    expect(await cli(source.deployment, "export", file)).toEqual({ code: 2, stdout: "", stderr: `cubby: ${file} already exists; export never overwrites a file\n` });
    expect(fs.readFileSync(file, "utf8")).toBe("keep me");
    expect(fs.readdirSync(dir.path).filter((f) => f.endsWith(".partial"))).toEqual([]);
  });

  test("export to standard output piped into import from standard input", async () => {
    await using dest = await sqliteAndDisk();
    const spawn = (d: Deployment, args: string[], stdin: "ignore" | ReadableStream<Uint8Array>) =>
      Bun.spawn([process.execPath, path.join(ROOT, "src/main.ts"), ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", ...d.env }, stdin, stdout: "pipe", stderr: "pipe" });
    const exporter = spawn(source.deployment, ["export", "-"], "ignore");
    const importer = spawn(dest, ["import", "-"], exporter.stdout);
    const [exported, imported, err] = await Promise.all([exporter.exited, importer.exited, new Response(importer.stderr).text()]);
    expect({ exported, imported, err }).toEqual({ exported: 0, imported: 0, err: `imported ${COUNTS.replace("1 session(s)", "0 session(s)")} from -\n` });
    const { sessions: _s, ...rows } = source.rows;
    const { sessions, ...copied } = await contents(dest);
    expect({ ...copied, blobs: [], referenced: [] }).toEqual({ ...rows, blobs: [], referenced: [] });
    expect(sessions).toEqual([]);
  }, 30_000);
});

/** Runs `cubby ARGS` in deployment `d`. @returns its exit status, stderr and peak resident memory in bytes */
async function measured(d: Deployment, args: string[]): Promise<{ code: number; stderr: string; maxRss: number }> {
  const proc = Bun.spawn([process.execPath, path.join(ROOT, "src/main.ts"), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...d.env },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  return { code, stderr, maxRss: proc.resourceUsage()!.maxRSS };
}

test.skipIf(postgresPass)("export and import of a 256 MiB file: peak memory stays far below its size", async () => {
  const SIZE = 256 * 1024 * 1024;
  using dir = tempDir("cubby-archive-file-");
  await using source = await sqliteAndDisk();
  await using dest = await sqliteAndDisk();
  {
    await using server = await startServer({ dataDir: source.dataDir, env: source.env });
    const key = await mintKey(source, "big@example.com");
    const block = crypto.getRandomValues(new Uint8Array(65536));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === SIZE) return controller.close();
        const chunk = new Uint8Array(1024 * 1024);
        for (let off = 0; off < chunk.length; off += block.length) chunk.set(block, off);
        chunk[0] = sent / chunk.length; // no two chunks alike
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${server.url}/v1/files`, { method: "POST", body, duplex: "half", headers: { authorization: `Bearer ${key}` } } as RequestInit);
    expect(res.status).toBe(200);
  }
  const archive = path.join(dir.path, "big.cubby");
  const baseline = await measured(source, ["keys", "list", "--email", "big@example.com"]);
  const exported = await measured(source, ["export", archive]);
  const imported = await measured(dest, ["import", archive]);
  expect({ exported: exported.code, imported: imported.code }).toEqual({ exported: 0, imported: 0 });
  const mib = (n: number) => Math.round(n / 1024 / 1024);
  console.log(`peak RSS: export ${mib(exported.maxRss)} MiB, import ${mib(imported.maxRss)} MiB of a ${mib(SIZE)} MiB file; cubby keys list ${mib(baseline.maxRss)} MiB`);
  expect(exported.maxRss).toBeLessThan(baseline.maxRss + 64 * 1024 * 1024);
  expect(imported.maxRss).toBeLessThan(baseline.maxRss + 64 * 1024 * 1024);
}, 300_000);
