// test-lists: postgres-s3
// Shares of several items (CONTRACT §15 `POST /v1/shares` with `items`) through a real server on
// the run's backend: the Share with its items, refused items (another's, twice, none, too many),
// its page listing the files and folders (folders browsable, nothing outside them reachable),
// one file by `?file=` (listed, or inside a shared folder), "Download all" as one ZIP that
// unzip and Python read byte for byte, the limit counting each download once and exact, a
// deleted item leaving the others, PATCH of the items, GET /v1/shares listing them, the access
// log, and `share.downloaded` with the items.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { FolderJson } from "../../src/domain/folder.ts";
import type { ShareDetailJson } from "../../src/domain/share.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { startReceiver, type Receiver } from "../support/webhook-receiver.ts";
import { waitFor } from "../support/wait.ts";

let server: RunningServer;
let alice: string;
let bob: string;
let dir: string;
let receiver: Receiver;

beforeAll(async () => {
  receiver = startReceiver();
  server = await startServer({ env: { WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" } });
  alice = await server.mintKey("alice@example.com");
  bob = await server.mintKey("bob@example.com");
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-items-shares-"));
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  await receiver?.[Symbol.asyncDispose]();
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
});

/** One JSON request as `key`. */
async function call<T>(key: string, method: string, target: string, body?: unknown): Promise<{ status: number; body: T & { code?: number; message?: string } }> {
  const res = await client(server, key).fetch(target, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return { status: res.status, body: (await res.json()) as T & { code?: number; message?: string } };
}

async function folder(name: string, parentId?: string, key = alice): Promise<FolderJson> {
  const made = await call<FolderJson>(key, "POST", "/v1/folders", parentId === undefined ? { name } : { name, parent_id: parentId });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return made.body;
}

async function upload(name: string, content: Uint8Array | string, folderId?: string, key = alice): Promise<FileJson> {
  const where = folderId === undefined ? "" : `&folder_id=${folderId}`;
  const res = await client(server, key).fetch(`/v1/files?name=${encodeURIComponent(name)}${where}`, { method: "POST", body: content, headers: { "content-type": "application/octet-stream" } });
  expect(res.status).toBe(200);
  return (await res.json()) as FileJson;
}

const sharePath = (s: ShareDetailJson) => new URL(s.url).pathname;
const get = (s: ShareDetailJson, query = "", headers: Record<string, string> = {}, method = "GET") => fetch(`${server.url}${sharePath(s)}${query}`, { method, headers });
const page = async (s: ShareDetailJson, query = "") => {
  const res = await get(s, query, { accept: "text/html" });
  expect(res.status).toBe(200);
  return res.text();
};

function run(cmd: string[]): { code: number; out: string } {
  const p = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode ?? -1, out: p.stdout.toString() + p.stderr.toString() };
}

describe("a share of several files and folders", () => {
  let photos: FolderJson;
  let sub: FolderJson;
  let notes: FileJson;
  let report: FileJson;
  let inside: FileJson;
  let deep: FileJson;
  let share: ShareDetailJson;
  const content: Record<string, Uint8Array<ArrayBuffer> | string> = {
    "notes.txt": "remember the milk\n",
    "report.bin": crypto.getRandomValues(new Uint8Array(120_000)),
    "Photos/beach.bin": crypto.getRandomValues(new Uint8Array(80_000)),
    "Photos/day 2/ünïcødé ✓.txt": "late\n",
  };

  beforeAll(async () => {
    const hook = await call<{ id: string; secret: string }>(alice, "POST", "/v1/webhooks", { url: receiver.url(), events: ["share.downloaded"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    receiver.secret = hook.body.secret;
    photos = await folder("Photos");
    sub = await folder("day 2", photos.id);
    notes = await upload("notes.txt", content["notes.txt"]!);
    report = await upload("report.bin", content["report.bin"]!);
    inside = await upload("beach.bin", content["Photos/beach.bin"]!, photos.id);
    deep = await upload("ünïcødé ✓.txt", content["Photos/day 2/ünïcødé ✓.txt"]!, sub.id);
    const made = await call<ShareDetailJson>(alice, "POST", "/v1/shares", { items: [{ file_id: notes.id }, { folder_id: photos.id }, { file_id: report.id }] });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    share = made.body;
  });

  test("the Share holds its items in order; GET /v1/shares lists them", async () => {
    expect(share).toEqual({
      id: expect.any(String),
      file_id: "",
      folder_id: "",
      url: expect.stringMatching(new RegExp(`^${server.url}/s/[A-Za-z0-9_-]{32}$`)),
      expire_time: "",
      max_downloads: null,
      download_count: 0,
      has_password: false,
      created_at: expect.any(String),
      last_download_time: "",
      items: [{ file_id: notes.id }, { folder_id: photos.id }, { file_id: report.id }],
    });
    const listed = await call<{ shares: ShareDetailJson[] }>(alice, "GET", "/v1/shares");
    expect(listed.body.shares.find((s) => s.id === share.id)?.items).toEqual(share.items);
  });

  test("refused, and nothing made: no items, too many, one twice, another's, a malformed item, an unknown field, a bad limit", async () => {
    const before = (await call<{ shares: ShareDetailJson[] }>(alice, "GET", "/v1/shares?page_size=1000")).body.shares.length;
    const bobs = await upload("bob.txt", "bob's\n", undefined, bob);
    const cases: [unknown, number, RegExp][] = [
      [{ items: [] }, 400, /items/],
      [{}, 400, /items/],
      [{ items: Array.from({ length: 101 }, () => ({ file_id: notes.id })) }, 400, /items/],
      [{ items: [{ file_id: notes.id }, { file_id: notes.id }] }, 400, /named twice/],
      // Another's file the caller can see (bob's uploads are internal): 403, as sharing it alone.
      [{ items: [{ file_id: bobs.id }] }, 403, /./],
      [{ items: [{ folder_id: "nosuchfolderxxxxxxxxx" }] }, 404, /not found/],
      [{ items: [{ file_id: notes.id, folder_id: photos.id }] }, 400, /items/],
      [{ items: [{ file: notes.id }] }, 400, /items/],
      [{ items: [{ file_id: notes.id }], colour: "red" }, 400, /colour/],
      [{ items: [{ file_id: notes.id }], max_downloads: 0 }, 400, /max_downloads/],
    ];
    for (const [body, status, message] of cases) {
      const res = await call(alice, "POST", "/v1/shares", body);
      expect({ body, status: res.status, message: res.body.message }).toEqual({ body, status, message: expect.stringMatching(message) });
    }
    expect((await call<{ shares: ShareDetailJson[] }>(alice, "GET", "/v1/shares?page_size=1000")).body.shares.length).toBe(before);
  });

  test("a browser gets the page: the items, the folder browsable, Download all; nothing outside reachable; the page counts nothing", async () => {
    const html = await page(share);
    expect(html).toContain("2 files and 1 folder");
    expect(html).toContain(`href="${sharePath(share)}?download=zip"`);
    for (const name of ["notes.txt", "report.bin", "Photos/"]) expect(html).toContain(name);
    expect(html).not.toContain("beach.bin");
    expect(html).not.toContain("alice@example.com");
    const into = /href="([^"]+\?folder=[A-Za-z0-9_-]{21})">Photos\/</.exec(html)![1]!;
    const inner = await (await fetch(`${server.url}${into}`, { headers: { accept: "text/html" } })).text();
    expect(inner).toContain("beach.bin");
    expect(inner).toContain(`<a href="${sharePath(share)}">2 files and 1 folder</a>`);
    const day2 = await page(share, `?folder=${sub.id}`);
    expect(day2).toContain("ünïcødé ✓.txt");
    const elsewhere = await folder("not shared");
    expect((await get(share, `?folder=${elsewhere.id}`, { accept: "text/html" })).status).toBe(404);
    expect((await get(share, `?folder=${(await folder("Photos", undefined, bob)).id}`, { accept: "text/html" })).status).toBe(404);
    expect((await call<ShareDetailJson>(alice, "GET", "/v1/shares")).body).toMatchObject({ shares: expect.arrayContaining([expect.objectContaining({ id: share.id, download_count: 0 })]) });
  });

  test("?file= serves a listed file and one inside a shared folder, not one outside", async () => {
    for (const [file, bytes] of [
      [notes, content["notes.txt"]!],
      [deep, content["Photos/day 2/ünïcødé ✓.txt"]!],
    ] as const) {
      const res = await get(share, `?file=${file.id}&download=1`);
      expect(res.status).toBe(200);
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes);
    }
    const outside = await upload("outside.txt", "not shared\n");
    expect((await get(share, `?file=${outside.id}&download=1`)).status).toBe(404);
    expect((await get(share, "?file=nope")).status).toBe(404);
    expect((await get(share, "?download=maybe")).status).toBe(400);
  });

  test("?download=zip is one ZIP of everything, the folders under their names, byte for byte; counted once, logged, and share.downloaded names the items", async () => {
    const counted = (await call<{ shares: ShareDetailJson[] }>(alice, "GET", "/v1/shares")).body.shares.find((s) => s.id === share.id)!.download_count;
    const head = await get(share, "?download=zip", {}, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers.get("content-disposition")).toContain("shared-files.zip");
    const res = await get(share, "?download=zip");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/zip");
    const zipPath = path.join(dir, "all.zip");
    await Bun.write(zipPath, await res.arrayBuffer());
    const py = run(["python3", "-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print('\\n'.join(i.filename for i in z.infolist()))", zipPath]);
    expect(py.code, py.out).toBe(0);
    expect(py.out.trim().split("\n").sort()).toEqual(Object.keys(content).sort());
    const out = path.join(dir, "unpacked");
    expect(run(["unzip", "-q", zipPath, "-d", out]).code).toBe(0);
    for (const [name, bytes] of Object.entries(content)) {
      expect(new Uint8Array(fs.readFileSync(path.join(out, name)))).toEqual(typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes);
    }
    const after = await waitFor(async () => {
      const s = (await call<{ shares: ShareDetailJson[] }>(alice, "GET", "/v1/shares")).body.shares.find((x) => x.id === share.id)!;
      return s.download_count === counted + 1 ? s : undefined;
    }, "the ZIP counted");
    expect(after.last_download_time).not.toBe("");
    const log = await waitFor(async () => {
      const l = await call<{ downloads: { item: string; completed: boolean }[] }>(alice, "GET", `/v1/shares/${share.id}/downloads`);
      return l.body.downloads.find((d) => d.item === "shared-files.zip");
    }, "the ZIP in the access log");
    expect(log.completed).toBe(true);
    const event = await waitFor(() => receiver.accepted().find((e) => e.type === "share.downloaded" && e.data.items !== undefined), "share.downloaded with the items");
    expect(event.verified).toBe(true);
    expect(event.data).toEqual({ share_id: share.id, items: [{ file_id: notes.id }, { file_id: report.id }, { folder_id: photos.id }] });
  });

  test("a deleted item leaves the others; with every item gone the link answers 410", async () => {
    const gone = await upload("gone.txt", "bye\n");
    const keep = await upload("keep.txt", "hi\n");
    const made = await call<ShareDetailJson>(alice, "POST", "/v1/shares", { items: [{ file_id: gone.id }, { file_id: keep.id }] });
    expect((await client(server, alice).fetch(`/v1/files/${gone.id}`, { method: "DELETE" })).status).toBe(200);
    const html = await page(made.body);
    expect(html).toContain("keep.txt");
    expect(html).not.toContain("gone.txt");
    expect((await get(made.body, `?file=${gone.id}&download=1`)).status).toBe(404);
    expect((await client(server, alice).fetch(`/v1/files/${keep.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await get(made.body, "", { accept: "text/html" })).status).toBe(410);
    expect((await get(made.body, "?download=zip")).status).toBe(410);
  });

  test("PATCH changes the items (a file's share too); another's items are refused and change nothing; the limit holds under concurrency", async () => {
    const one = await upload("one.txt", "1\n");
    const two = await upload("two.txt", "2\n");
    const fileShare = await call<ShareDetailJson>(alice, "POST", `/v1/files/${one.id}/shares`, { max_downloads: 3 });
    expect(fileShare.status).toBe(200);
    const bobs = await upload("bob2.txt", "b\n", undefined, bob);
    const refused = await call(alice, "PATCH", `/v1/shares/${fileShare.body.id}`, { items: [{ file_id: bobs.id }] });
    expect(refused.status).toBe(403);
    expect((await call(bob, "PATCH", `/v1/shares/${fileShare.body.id}`, { items: [{ file_id: bobs.id }] })).status).toBe(404);
    const unchanged = (await call<{ shares: ShareDetailJson[] }>(alice, "GET", "/v1/shares")).body.shares.find((s) => s.id === fileShare.body.id);
    expect(unchanged).toMatchObject({ file_id: one.id, items: [{ file_id: one.id }] });
    const changed = await call<ShareDetailJson>(alice, "PATCH", `/v1/shares/${fileShare.body.id}`, { items: [{ file_id: two.id }, { folder_id: sub.id }] });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ file_id: "", folder_id: "", items: [{ file_id: two.id }, { folder_id: sub.id }], max_downloads: 3 });
    const html = await page(changed.body);
    expect(html).toContain("two.txt");
    expect(html).toContain("day 2/");
    expect(html).not.toContain("one.txt");
    // Three downloads left; six at once: exactly three succeed.
    const tries = await Promise.all(Array.from({ length: 6 }, (_, i) => get(changed.body, i % 2 === 0 ? "?download=zip" : `?file=${two.id}&download=1`)));
    const statuses = await Promise.all(tries.map(async (r) => (await r.arrayBuffer(), r.status)));
    expect(statuses.filter((s) => s === 200).length).toBe(3);
    expect(statuses.filter((s) => s === 410).length).toBe(3);
  });
});
