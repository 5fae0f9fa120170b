// test-lists: workers postgres-s3
// Sharing a folder (CONTRACT §12, docs/folders.md) through a real server on the run's backend:
// the Share of a folder, its page for a browser (files with sizes, downloads and previews, and
// "Download all"), one file of it by `?file=`, the whole folder and its sub-folders as one ZIP
// that unzip, 7-Zip and Python's zipfile accept with every byte, the download limit counting ZIPs
// and files alike and exact under concurrency, passwords, a deleted folder or share answering
// 410, and the `folder.shared` webhook event.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { FolderJson } from "../../src/domain/folder.ts";
import type { ShareJson } from "../../src/domain/share.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";

let server: RunningServer;
let alice: string;
let bob: string;
let dir: string;

beforeAll(async () => {
  server = await startServer({ env: { RATE_LIMIT_AUTH_FAILURES: "3" } });
  alice = await server.mintKey("alice@example.com");
  bob = await server.mintKey("bob@example.com");
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubby-folder-shares-"));
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
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

async function upload(folderId: string, name: string, content: Uint8Array | string, type = "application/octet-stream"): Promise<FileJson> {
  const res = await client(server, alice).fetch(`/v1/files?folder_id=${folderId}&name=${encodeURIComponent(name)}`, { method: "POST", body: content, headers: { "content-type": type } });
  expect(res.status).toBe(200);
  return (await res.json()) as FileJson;
}

async function shareFolder(folderId: string, body: unknown = {}, key = alice) {
  return call<ShareJson>(key, "POST", `/v1/folders/${folderId}/shares`, body);
}

const sharePath = (s: ShareJson) => new URL(s.url).pathname;
const get = (s: ShareJson, query = "", headers: Record<string, string> = {}, method = "GET") => fetch(`${server.url}${sharePath(s)}${query}`, { method, headers });

/** Runs a command; its exit code and output. */
function run(cmd: string[]): { code: number; out: string } {
  const p = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode ?? -1, out: p.stdout.toString() + p.stderr.toString() };
}

describe("a shared folder", () => {
  let top: FolderJson;
  let files: Record<string, Uint8Array | string>;
  let share: ShareJson;

  beforeAll(async () => {
    top = await folder("Holiday photos");
    const sub = await folder("day 2", top.id);
    const deeper = await folder("evening", sub.id);
    files = {
      "notes.txt": "we went to the beach\n",
      "photo.jpg": crypto.getRandomValues(new Uint8Array(300_000)),
      "day 2/map.bin": crypto.getRandomValues(new Uint8Array(70_000)),
      "day 2/evening/ünïcødé ✓.txt": "late\n",
      "day 2/evening/empty.txt": "",
    };
    await upload(top.id, "notes.txt", files["notes.txt"]!, "text/plain");
    await upload(top.id, "photo.jpg", files["photo.jpg"]!, "image/jpeg");
    await upload(sub.id, "map.bin", files["day 2/map.bin"]!);
    await upload(deeper.id, "ünïcødé ✓.txt", files["day 2/evening/ünïcødé ✓.txt"]!, "text/plain");
    await upload(deeper.id, "empty.txt", "", "text/plain");
    const made = await shareFolder(top.id);
    expect(made.status).toBe(200);
    share = made.body;
  });

  test("the Share names the folder; listed on the folder; another user cannot share or list it", async () => {
    expect(share).toEqual({
      id: expect.any(String),
      file_id: "",
      folder_id: top.id,
      url: expect.stringMatching(new RegExp(`^${server.url}/s/[A-Za-z0-9_-]{32}$`)),
      expire_time: "",
      max_downloads: null,
      download_count: 0,
      has_password: false,
      created_at: expect.any(String),
    });
    const listed = await call<{ shares: ShareJson[] }>(alice, "GET", `/v1/folders/${top.id}/shares`);
    expect(listed.body.shares.map((s) => s.id)).toEqual([share.id]);
    expect((await shareFolder(top.id, {}, bob)).status).toBe(404);
    expect((await call(bob, "GET", `/v1/folders/${top.id}/shares`)).status).toBe(404);
    expect((await shareFolder("nosuchfolderxxxxxxxxx")).status).toBe(404);
    expect((await shareFolder(top.id, { max_downloads: 0 })).status).toBe(400);
  });

  test("a browser gets the page: the folder's sub-folders as links into them, its files with size and links, and Download all; the page counts nothing", async () => {
    const res = await get(share, "", { accept: "text/html" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/html");
    const html = await res.text();
    expect(html).toContain("Holiday photos");
    expect(html).toContain(`href="${sharePath(share)}?download=zip"`);
    for (const name of ["notes.txt", "photo.jpg", "day 2/"]) expect(html).toContain(name);
    expect(html).not.toContain("map.bin");
    expect(html).toContain("293 KiB"); // photo.jpg's size, as formatSize writes 300 000 bytes
    expect(html).toMatch(/\?file=[A-Za-z0-9_-]{21}&amp;download=1/);
    // Into the sub-folder and below: the trail leads back, each level lists its own entries.
    const day2 = /href="([^"]+\?folder=[A-Za-z0-9_-]{21})">day 2\/</.exec(html)![1]!;
    const inner = await (await fetch(`${server.url}${day2}`, { headers: { accept: "text/html" } })).text();
    expect(inner).toContain("map.bin");
    expect(inner).toContain(`<a href="${sharePath(share)}">Holiday photos</a>`);
    const evening = /href="([^"]+\?folder=[A-Za-z0-9_-]{21})">evening\/</.exec(inner)![1]!;
    const deepest = await (await fetch(`${server.url}${evening}`, { headers: { accept: "text/html" } })).text();
    for (const name of ["ünïcødé ✓.txt", "empty.txt"]) expect(deepest).toContain(name);
    // A folder outside the share, and a malformed cursor, are refused.
    const elsewhere = await folder("not shared");
    expect((await get(share, `?folder=${elsewhere.id}`, { accept: "text/html" })).status).toBe(404);
    expect((await get(share, "?after=zzz", { accept: "text/html" })).status).toBe(400);
    const listed = await call<{ shares: ShareJson[] }>(alice, "GET", `/v1/folders/${top.id}/shares`);
    expect(listed.body.shares[0]!.download_count).toBe(0);
  });

  test("?download=zip is one STORED ZIP of the folder and its sub-folders that unzip, 7-Zip and Python accept, byte for byte", async () => {
    const res = await get(share, "?download=zip");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/zip");
    expect(res.headers.get("content-disposition")).toContain("attachment");
    const zipPath = path.join(dir, "all.zip");
    await Bun.write(zipPath, await res.arrayBuffer());
    expect(run(["unzip", "-t", zipPath]).code).toBe(0);
    const seven = run(["7z", "t", zipPath]);
    expect(seven.code, seven.out).toBe(0);
    expect(seven.out).toContain("Everything is Ok");
    const py = run(["python3", "-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print('\\n'.join(f'{i.filename}\\t{i.compress_type}' for i in z.infolist()))", zipPath]);
    expect(py.code, py.out).toBe(0);
    const entries = new Map(py.out.trim().split("\n").map((l) => l.split("\t") as [string, string]));
    expect([...entries.keys()].sort()).toEqual(Object.keys(files).sort());
    for (const method of entries.values()) expect(method).toBe("0"); // STORED
    const out = path.join(dir, "unpacked");
    expect(run(["unzip", "-q", zipPath, "-d", out]).code).toBe(0);
    for (const [name, content] of Object.entries(files)) {
      const expected = typeof content === "string" ? new TextEncoder().encode(content) : content;
      expect(new Uint8Array(fs.readFileSync(path.join(out, name)))).toEqual(new Uint8Array(expected));
    }
  });

  test("?file= serves one of its files, also in a sub-folder; not a file outside it; HEAD of the ZIP sends no body", async () => {
    const page = await (await get(share, "", { accept: "text/html" })).text();
    const ids = [...page.matchAll(/\?file=([A-Za-z0-9_-]{21})&amp;download=1/g)].map((m) => m[1]!);
    expect(ids.length).toBe(2);
    const day2 = /href="([^"]+\?folder=[A-Za-z0-9_-]{21})">day 2\/</.exec(page)![1]!;
    const inner = await (await fetch(`${server.url}${day2}`, { headers: { accept: "text/html" } })).text();
    const below = /\?file=([A-Za-z0-9_-]{21})&amp;download=1/.exec(inner)![1]!;
    expect((await get(share, `?file=${below}&download=1`)).status).toBe(200);
    const one = await get(share, `?file=${ids[0]}&download=1`);
    expect(one.status).toBe(200);
    expect(one.headers.get("content-disposition")).toContain("attachment");
    await one.arrayBuffer();
    const elsewhere = await client(server, alice).upload("not in the folder", "?name=other.txt");
    expect((await get(share, `?file=${elsewhere.id}`)).status).toBe(404);
    expect((await get(share, "?file=../../etc")).status).toBe(404);
    expect((await get(share, "?download=tar")).status).toBe(400);
    const head = await get(share, "?download=zip", {}, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("application/zip");
    expect(head.headers.get("content-length")).toBeNull(); // as GET: not known ahead, not 0
    expect(await head.text()).toBe("");
    // Over HTTP/2 alike (curl --http2-prior-knowledge: h2c).
    const h2 = Bun.spawnSync(["curl", "-sS", "--http2-prior-knowledge", "-I", `${share.url}?download=zip`], { stdout: "pipe" }).stdout.toString();
    expect(h2).toMatch(/^HTTP\/2 200/);
    expect(h2).toContain("content-type: application/zip");
    expect(h2).not.toContain("content-length");
  });
});

describe("limits, passwords, deletion", () => {
  test("max_downloads 3 under 12 concurrent ZIP and file downloads: exactly 3 succeed, whichever kind, the rest 410", async () => {
    const f = await folder("limited");
    const file = await upload(f.id, "a.bin", crypto.getRandomValues(new Uint8Array(50_000)));
    const { body: s } = await shareFolder(f.id, { max_downloads: 3 });
    const results = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const res = await get(s, i % 2 === 0 ? "?download=zip" : `?file=${file.id}`);
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(results.filter((r) => r === 200).length).toBe(3);
    expect(results.filter((r) => r === 410).length).toBe(9);
    const listed = await call<{ shares: ShareJson[] }>(alice, "GET", `/v1/folders/${f.id}/shares`);
    expect(listed.body.shares[0]!.download_count).toBe(3);
    expect((await get(s, "", { accept: "text/html" })).status).toBe(410);
  });

  test("a password is asked for the page, the ZIP and each file; the right one opens them", async () => {
    const f = await folder("secret");
    await upload(f.id, "x.txt", "x", "text/plain");
    const { body: s } = await shareFolder(f.id, { password: "open sesame" });
    expect(s.has_password).toBe(true);
    expect((await get(s, "?download=zip")).status).toBe(401);
    expect((await get(s, "", { accept: "text/html" })).status).toBe(401);
    const basic = { authorization: `Basic ${btoa("x:open sesame")}` };
    const zip = await get(s, "?download=zip", basic);
    expect(zip.status).toBe(200);
    expect((await zip.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  test("a script without ?download gets the ZIP; an empty folder's ZIP is valid and empty", async () => {
    const f = await folder("empty");
    const { body: s } = await shareFolder(f.id);
    const res = await get(s);
    expect(res.headers.get("content-type")).toBe("application/zip");
    const zipPath = path.join(dir, "empty.zip");
    await Bun.write(zipPath, await res.arrayBuffer());
    expect(run(["python3", "-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.namelist() == []", zipPath]).code).toBe(0);
  });

  test("deleting the share, or the folder, makes its URL answer 410", async () => {
    const f = await folder("going");
    const { body: s1 } = await shareFolder(f.id);
    const { body: s2 } = await shareFolder(f.id);
    expect((await call(alice, "DELETE", `/v1/shares/${s1.id}`)).status).toBe(200);
    expect((await get(s1, "?download=zip")).status).toBe(410);
    expect((await call(alice, "DELETE", `/v1/folders/${f.id}`)).status).toBe(200);
    expect((await get(s2, "?download=zip")).status).toBe(410);
    expect((await get(s2, "", { accept: "text/html" })).status).toBe(410);
  });
});
