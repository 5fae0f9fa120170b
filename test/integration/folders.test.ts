// test-lists: workers postgres-s3
// Folders (CONTRACT §12, docs/folders.md) through a real server on the run's backend, with real
// clients: REST (create, list and page, read, rename, move without cycles, delete, recursive
// delete whose blobs go only after the commit and the readers' grace), membership (PUT, DELETE,
// GET of a folder's files and of the top's, uploads into a folder), the name rule under
// concurrency (one server's workers, and two instances on one PostgreSQL), owner-only access,
// scopes, bad input that changes nothing, the File object left exactly as it is; and the same
// operations on RPC (FolderService, gRPC and Connect) and MCP (list_folders, create_folder,
// move_file).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { checksumOf } from "../../src/domain/checksum.ts";
import type { FolderJson } from "../../src/domain/folder.ts";
import { FolderSchema, FolderService } from "../../src/gen/cubby/v1/folders_pb.ts";
import { BACKEND, blobNames, runSql } from "../support/backend.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";

/** How long a removed blob stays readable here (CUBBY_TEST_REMOVAL_GRACE_MS; 30 s in production). */
const GRACE_MS = 1500;

let server: RunningServer;
let alice: string;
let bob: string;
let readOnly: string;
let writeOnly: string;

beforeAll(async () => {
  server = await startServer({ env: { CUBBY_TEST_REMOVAL_GRACE_MS: String(GRACE_MS) } });
  alice = await server.mintKey("alice@example.com");
  bob = await server.mintKey("bob@example.com");
  readOnly = await server.mintKey("alice@example.com", "--scope", "files.read");
  writeOnly = await server.mintKey("alice@example.com", "--scope", "files.write");
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
});

type Answer<T> = { status: number; body: T & { code?: number; message?: string } };

/** One JSON request to `on` (the server by default) as `key`. */
async function call<T = Record<string, unknown>>(key: string, method: string, path: string, body?: unknown, on: { url: string } = server): Promise<Answer<T>> {
  const init: RequestInit = { method };
  if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body);
  const headers: Record<string, string> = body === undefined ? {} : { "content-type": "application/json" };
  const res = await client(on, key).fetch(path, { ...init, headers });
  return { status: res.status, body: (await res.json()) as Answer<T>["body"] };
}

/** A new folder of `key`'s (200, or the test fails with the answer). */
async function folder(key: string, name: string, parentId?: string): Promise<FolderJson> {
  const made = await call<FolderJson>(key, "POST", "/v1/folders", parentId === undefined ? { name } : { name, parent_id: parentId });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return made.body;
}

const upload = (key: string, content: string | Uint8Array, query = "") => client(server, key).upload(content, query);
const filesIn = async (key: string, id: string, query = "") => (await call<{ files: FileJson[]; next_page_token: string }>(key, "GET", `/v1/folders/${id}/files${query}`)).body;
const folderIds = async (key: string, query = "") => (await call<{ folders: FolderJson[] }>(key, "GET", `/v1/folders${query}`)).body.folders.map((f) => f.id);
const unique = (prefix: string) => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;

function count(statuses: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

describe("REST", () => {
  test("create, read, list, rename, move, move to the top, delete: the Folder object of CONTRACT §12", async () => {
    const before = Date.now();
    const top = await folder(alice, unique("Projects"));
    expect(top).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{21}$/),
      name: expect.stringMatching(/^Projects-/),
      parent_id: "",
      url: `${server.url}/?folder=${top.id}`,
      file_count: 0,
      bytes: "0",
      created_at: expect.stringMatching(/Z$/),
      updated_at: top.created_at,
    });
    expect(Date.parse(top.created_at)).toBeGreaterThanOrEqual(before - 1000);
    const child = await folder(alice, "2026", top.id);
    expect(child).toMatchObject({ name: "2026", parent_id: top.id });
    expect(await call<FolderJson>(alice, "GET", `/v1/folders/${top.id}`)).toEqual({ status: 200, body: top });
    expect(await folderIds(alice)).toContain(top.id);
    expect(await folderIds(alice)).not.toContain(child.id);
    expect(await folderIds(alice, `?parent_id=${top.id}`)).toEqual([child.id]);
    expect(await folderIds(alice, "?parent_id=")).toContain(top.id);

    const renamed = await call<FolderJson>(alice, "PATCH", `/v1/folders/${child.id}`, { name: "2027" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: child.id, name: "2027", parent_id: top.id, created_at: child.created_at });
    expect(Date.parse(renamed.body.updated_at)).toBeGreaterThan(Date.parse(child.updated_at));

    const other = await folder(alice, unique("Archive"));
    expect((await call<FolderJson>(alice, "PATCH", `/v1/folders/${child.id}`, { parent_id: other.id })).body).toMatchObject({ name: "2027", parent_id: other.id });
    expect(await folderIds(alice, `?parent_id=${top.id}`)).toEqual([]);
    expect((await call<FolderJson>(alice, "PATCH", `/v1/folders/${child.id}`, { parent_id: "" })).body).toMatchObject({ parent_id: "" });
    expect((await call<FolderJson>(alice, "PATCH", `/v1/folders/${child.id}`, { parent_id: other.id })).body).toMatchObject({ parent_id: other.id });
    expect((await call<FolderJson>(alice, "PATCH", `/v1/folders/${child.id}`, { parent_id: null, name: unique("moved") })).body).toMatchObject({ parent_id: "" });
    // An empty patch changes nothing.
    const same = await call<FolderJson>(alice, "PATCH", `/v1/folders/${other.id}`, {});
    expect(same).toEqual({ status: 200, body: other });

    for (const id of [child.id, other.id, top.id]) expect(await call(alice, "DELETE", `/v1/folders/${id}`)).toEqual({ status: 200, body: {} });
    expect((await call(alice, "GET", `/v1/folders/${top.id}`)).body).toMatchObject({ code: 5, message: "folder not found" });
    expect((await call(alice, "DELETE", `/v1/folders/${top.id}`)).status).toBe(404);
  });

  test("listing pages like files: newest first, page_size at a time, next_page_token to the end", async () => {
    const parent = await folder(alice, unique("paged"));
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await folder(alice, `f${i}`, parent.id)).id);
    const seen: string[] = [];
    let token = "";
    let pages = 0;
    do {
      const page = await call<{ folders: FolderJson[]; next_page_token: string }>(alice, "GET", `/v1/folders?parent_id=${parent.id}&page_size=2&page_token=${token}`);
      expect(page.status).toBe(200);
      expect(page.body.folders.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.folders.map((f) => f.id));
      token = page.body.next_page_token;
      pages++;
    } while (token !== "");
    expect({ seen, pages }).toEqual({ seen: made.toReversed(), pages: 3 });

    const files: string[] = [];
    for (let i = 0; i < 3; i++) files.push((await upload(alice, `x${i}`, `?name=x${i}.txt&folder_id=${parent.id}`)).id);
    const first = await filesIn(alice, parent.id, "?page_size=2");
    const second = await filesIn(alice, parent.id, `?page_size=2&page_token=${first.next_page_token}`);
    expect([...first.files, ...second.files].map((f) => f.id)).toEqual(files.toReversed());
    expect(second.next_page_token).toBe("");
  });

  test("files: upload into a folder, counts, the top's listing (root), PUT moves, DELETE takes out; the File object is unchanged", async () => {
    const docs = await folder(alice, unique("docs"));
    const content = "a report, in a folder";
    const inside = await upload(alice, content, `?name=report.txt&folder_id=${docs.id}`);
    expect(Object.keys(inside).sort()).toEqual(["checksum", "content_type", "created_at", "id", "name", "size", "slug", "updated_at", "url", "visibility"]);
    const fetched = await call<FileJson>(alice, "GET", `/v1/files/${inside.id}`);
    expect(fetched).toEqual({ status: 200, body: inside });
    expect((await filesIn(alice, docs.id)).files).toEqual([inside]);
    expect((await filesIn(alice, "root")).files.map((f) => f.id)).not.toContain(inside.id);
    // The flat list still holds every file.
    expect((await call<{ files: FileJson[] }>(alice, "GET", "/v1/files?page_size=1000")).body.files.map((f) => f.id)).toContain(inside.id);
    expect((await call<FolderJson>(alice, "GET", `/v1/folders/${docs.id}`)).body).toMatchObject({ file_count: 1, bytes: String(content.length) });

    const loose = await upload(alice, "loose", "?name=loose.txt");
    expect((await filesIn(alice, "root")).files.map((f) => f.id)).toContain(loose.id);
    expect(await call(alice, "PUT", `/v1/folders/${docs.id}/files/${loose.id}`)).toEqual({ status: 200, body: {} });
    // Again: already there, nothing to do.
    expect(await call(alice, "PUT", `/v1/folders/${docs.id}/files/${loose.id}`)).toEqual({ status: 200, body: {} });
    expect((await filesIn(alice, docs.id)).files.map((f) => f.id)).toEqual([loose.id, inside.id]);
    expect((await filesIn(alice, "root")).files.map((f) => f.id)).not.toContain(loose.id);
    expect((await call<FileJson>(alice, "GET", `/v1/files/${loose.id}`)).body).toEqual(loose);

    // From one folder to another.
    const other = await folder(alice, unique("other"));
    expect((await call(alice, "PUT", `/v1/folders/${other.id}/files/${loose.id}`)).status).toBe(200);
    expect((await filesIn(alice, docs.id)).files.map((f) => f.id)).toEqual([inside.id]);
    expect((await filesIn(alice, other.id)).files.map((f) => f.id)).toEqual([loose.id]);

    // DELETE takes it out to the top; the file stays.
    expect(await call(alice, "DELETE", `/v1/folders/${other.id}/files/${loose.id}`)).toEqual({ status: 200, body: {} });
    expect((await filesIn(alice, "root")).files.map((f) => f.id)).toContain(loose.id);
    expect((await call(alice, "GET", `/v1/files/${loose.id}`)).status).toBe(200);
    expect((await call(alice, "DELETE", `/v1/folders/${other.id}/files/${loose.id}`)).body).toMatchObject({ code: 5, message: "the file is not in this folder" });

    // Deleting a file takes it out of its folder.
    expect((await call(alice, "DELETE", `/v1/files/${inside.id}`)).status).toBe(200);
    expect((await filesIn(alice, docs.id)).files).toEqual([]);
    expect((await call<FolderJson>(alice, "GET", `/v1/folders/${docs.id}`)).body).toMatchObject({ file_count: 0, bytes: "0" });
  });

  test("names are unique within a folder, files and sub-folders alike; at the top only among folders; an empty file name never clashes", async () => {
    const top = unique("Photos");
    const photos = await folder(alice, top);
    expect(await call(alice, "POST", "/v1/folders", { name: top })).toEqual({
      status: 409,
      body: { code: 6, message: `a folder named "${top}" is here already`, details: [] },
    });
    // Another user may use the name; so may a folder elsewhere.
    await folder(bob, top);
    await folder(alice, top, photos.id);
    expect((await call(alice, "POST", "/v1/folders", { name: top, parent_id: photos.id })).status).toBe(409);

    // A file and a sub-folder of one name in one folder clash, both ways.
    const cat = await upload(alice, "meow", `?name=cat.jpg&folder_id=${photos.id}`);
    expect((await call(alice, "POST", "/v1/folders", { name: "cat.jpg", parent_id: photos.id })).status).toBe(409);
    const sub = await folder(alice, "dog.jpg", photos.id);
    const before = await blobNames(server.dataDir);
    const refused = await client(server, alice).fetch(`/v1/files?name=dog.jpg&folder_id=${photos.id}`, { method: "POST", body: "woof" });
    expect({ status: refused.status, body: await refused.json() }).toEqual({ status: 409, body: { code: 6, message: 'a folder named "dog.jpg" is here already', details: [] } });
    expect(await blobNames(server.dataDir)).toEqual(before);
    const otherCat = await upload(alice, "meow 2", "?name=cat.jpg");
    expect((await call(alice, "PUT", `/v1/folders/${photos.id}/files/${otherCat.id}`)).body).toMatchObject({ code: 6, message: 'a file named "cat.jpg" is in this folder already' });
    expect((await filesIn(alice, "root")).files.map((f) => f.id)).toContain(otherCat.id);
    // Renaming a folder onto a file's name, or a file onto a name its folder holds: 409, unchanged.
    expect((await call(alice, "PATCH", `/v1/folders/${sub.id}`, { name: "cat.jpg" })).status).toBe(409);
    const loner = await upload(alice, "l", `?name=loner.txt&folder_id=${photos.id}`);
    expect((await call(alice, "PATCH", `/v1/files/${loner.id}`, { name: "cat.jpg" })).body).toMatchObject({ code: 6 });
    expect((await call(alice, "PATCH", `/v1/files/${loner.id}`, { name: "dog.jpg" })).status).toBe(409);
    expect((await call<FileJson>(alice, "GET", `/v1/files/${loner.id}`)).body.name).toBe("loner.txt");
    expect((await call<FolderJson>(alice, "GET", `/v1/folders/${sub.id}`)).body.name).toBe("dog.jpg");
    // Moving a folder into one that holds its name.
    const elsewhere = await folder(alice, "cat.jpg");
    expect((await call(alice, "PATCH", `/v1/folders/${elsewhere.id}`, { parent_id: photos.id })).status).toBe(409);
    expect((await call(alice, "PATCH", `/v1/files/${cat.id}`, { name: "kitten.jpg" })).status).toBe(200);
    expect((await call(alice, "PATCH", `/v1/folders/${elsewhere.id}`, { parent_id: photos.id })).status).toBe(200);

    // At the top, files share names freely, with each other and with folders.
    await upload(alice, "a", `?name=${top}`);
    await upload(alice, "b", `?name=${top}`);
    // Files with no name never clash, in a folder either.
    await upload(alice, "1", `?folder_id=${photos.id}`);
    await upload(alice, "2", `?folder_id=${photos.id}`);
  });

  test("an expired file no longer holds its name in its folder, though the sweep has not deleted its row yet", async () => {
    const f = await folder(alice, unique("expiring"));
    const old = await upload(alice, "old", `?name=report.txt&folder_id=${f.id}&ttl=1s`);
    await waitFor(async () => (await call(alice, "GET", `/v1/files/${old.id}`)).status === 404, "the file to expire", 10_000, 100);
    const fresh = await upload(alice, "new", `?name=report.txt&folder_id=${f.id}`);
    expect((await filesIn(alice, f.id)).files.map((x) => x.id)).toEqual([fresh.id]);
  });

  test("a folder cannot move into itself or below itself", async () => {
    const a = await folder(alice, unique("a"));
    const b = await folder(alice, "b", a.id);
    const c = await folder(alice, "c", b.id);
    for (const target of [a.id, b.id, c.id]) {
      expect(await call(alice, "PATCH", `/v1/folders/${a.id}`, { parent_id: target })).toEqual({
        status: 400,
        body: { code: 3, message: "a folder cannot move into itself or one of its sub-folders", details: [] },
      });
    }
    expect((await call<FolderJson>(alice, "GET", `/v1/folders/${a.id}`)).body.parent_id).toBe("");
    // Down is refused, up is fine.
    expect((await call<FolderJson>(alice, "PATCH", `/v1/folders/${c.id}`, { parent_id: a.id })).body.parent_id).toBe(a.id);
  });

  test("a non-empty folder is deleted only with recursive=true: 412 and nothing changed otherwise", async () => {
    const withFile = await folder(alice, unique("full"));
    const file = await upload(alice, "keep me", `?name=keep.txt&folder_id=${withFile.id}`);
    const withFolder = await folder(alice, unique("nested"));
    const inner = await folder(alice, "inner", withFolder.id);
    for (const id of [withFile.id, withFolder.id]) {
      for (const query of ["", "?recursive=false"]) {
        expect(await call(alice, "DELETE", `/v1/folders/${id}${query}`)).toEqual({
          status: 412,
          body: { code: 9, message: "the folder is not empty; delete it with recursive=true", details: [] },
        });
      }
    }
    expect((await filesIn(alice, withFile.id)).files.map((f) => f.id)).toEqual([file.id]);
    expect(await folderIds(alice, `?parent_id=${withFolder.id}`)).toEqual([inner.id]);
    expect((await call(alice, "DELETE", `/v1/folders/${withFolder.id}?recursive=true`)).status).toBe(200);
    expect((await call(alice, "GET", `/v1/folders/${inner.id}`)).status).toBe(404);
  });

  test("recursive delete: every file below goes in one commit; a reader that opened a blob before reads it whole; the blobs go after the grace", async () => {
    const top = await folder(alice, unique("tree"));
    const mid = await folder(alice, "mid", top.id);
    const leaf = await folder(alice, "leaf", mid.id);
    const big = crypto.getRandomValues(new Uint8Array(4 * 1024 * 1024));
    const files = [
      await upload(alice, big, `?name=big.bin&folder_id=${leaf.id}&visibility=public`),
      await upload(alice, "one", `?name=one.txt&folder_id=${top.id}`),
      await upload(alice, "two", `?name=two.txt&folder_id=${mid.id}`),
    ];
    const outside = await upload(alice, "outside", "?name=outside.txt");
    const blobsOf = async (ids: string[]) =>
      (await runSql<{ blob: string }>(server.dataDir, `SELECT blob FROM files WHERE id IN (${ids.map(() => "?").join(", ")})`, ...ids)).map((r) => r.blob);
    const blobs = await blobsOf(files.map((f) => f.id));
    expect(blobs.length).toBe(3);
    const stored = async (blob: string) => (await blobNames(server.dataDir)).some((n) => n.endsWith(blob));

    // A download that has started (its first bytes are here) before the delete.
    const res = await fetch(`${server.url}/${files[0]!.id}`);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const parts: Uint8Array[] = [];
    const first = await reader.read();
    parts.push(first.value!);

    expect(await call(alice, "DELETE", `/v1/folders/${top.id}?recursive=true`)).toEqual({ status: 200, body: {} });
    for (const f of files) expect((await call(alice, "GET", `/v1/files/${f.id}`)).status).toBe(404);
    for (const id of [top.id, mid.id, leaf.id]) expect((await call(alice, "GET", `/v1/folders/${id}`)).status).toBe(404);
    expect((await call(alice, "GET", `/v1/files/${outside.id}`)).status).toBe(200);
    // Committed: the rows are gone; the blobs are still there (the readers' grace).
    expect(await blobsOf(files.map((f) => f.id))).toEqual([]);
    expect(await stored(blobs[0]!)).toBe(true);
    for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
    expect(checksumOf(Buffer.concat(parts))).toBe(files[0]!.checksum);
    for (const blob of blobs) await waitFor(async () => !(await stored(blob)), `blob ${blob} to be removed after the grace`, GRACE_MS + 10_000, 100);
  }, 30_000);

  test("another user's folder answers 404 everywhere, and they cannot put files in yours or move yours into theirs", async () => {
    const mine = await folder(alice, unique("private"));
    const file = await upload(alice, "x", `?name=x.txt&folder_id=${mine.id}&visibility=private`);
    const theirs = await folder(bob, unique("theirs"));
    const bobFile = await upload(bob, "y", "?name=y.txt&visibility=private");
    const answers = [
      await call(bob, "GET", `/v1/folders/${mine.id}`),
      await call(bob, "PATCH", `/v1/folders/${mine.id}`, { name: "stolen" }),
      await call(bob, "DELETE", `/v1/folders/${mine.id}?recursive=true`),
      await call(bob, "GET", `/v1/folders?parent_id=${mine.id}`),
      await call(bob, "GET", `/v1/folders/${mine.id}/files`),
      await call(bob, "PUT", `/v1/folders/${mine.id}/files/${bobFile.id}`),
      await call(bob, "DELETE", `/v1/folders/${mine.id}/files/${file.id}`),
      await call(bob, "POST", "/v1/folders", { name: "sneaky", parent_id: mine.id }),
      await call(bob, "PUT", `/v1/folders/${theirs.id}/files/${file.id}`),
      await call(alice, "PATCH", `/v1/folders/${mine.id}`, { parent_id: theirs.id }),
    ];
    for (const a of answers) expect({ status: a.status, code: a.body.code }).toEqual({ status: 404, code: 5 });
    const refused = await client(server, bob).fetch(`/v1/files?name=z.txt&folder_id=${mine.id}`, { method: "POST", body: "z" });
    expect(refused.status).toBe(404);
    expect((await call<FolderJson>(alice, "GET", `/v1/folders/${mine.id}`)).body).toMatchObject({ name: mine.name, parent_id: "", file_count: 1 });
    expect((await filesIn(alice, mine.id)).files.map((f) => f.id)).toEqual([file.id]);
    expect(await folderIds(bob)).not.toContain(mine.id);
  });

  test("scopes: a read-only key lists but cannot change; a write-only key changes but cannot list or read", async () => {
    const f = await folder(alice, unique("scoped"));
    const file = await upload(alice, "s", "?name=s.txt");
    for (const a of [
      await call(readOnly, "POST", "/v1/folders", { name: unique("nope") }),
      await call(readOnly, "PATCH", `/v1/folders/${f.id}`, { name: "nope" }),
      await call(readOnly, "DELETE", `/v1/folders/${f.id}`),
      await call(readOnly, "PUT", `/v1/folders/${f.id}/files/${file.id}`),
    ]) {
      expect({ status: a.status, code: a.body.code, message: a.body.message }).toEqual({ status: 403, code: 7, message: "this key lacks files.write" });
    }
    expect((await call(readOnly, "GET", `/v1/folders/${f.id}`)).status).toBe(200);
    expect((await call(readOnly, "GET", "/v1/folders")).status).toBe(200);
    expect((await call(readOnly, "GET", `/v1/folders/${f.id}/files`)).status).toBe(200);
    for (const a of [await call(writeOnly, "GET", "/v1/folders"), await call(writeOnly, "GET", `/v1/folders/${f.id}`), await call(writeOnly, "GET", `/v1/folders/${f.id}/files`)]) {
      expect({ status: a.status, message: a.body.message }).toEqual({ status: 403, message: "this key lacks files.read" });
    }
    const made = await call<FolderJson>(writeOnly, "POST", "/v1/folders", { name: unique("written") });
    expect(made.status).toBe(200);
    expect((await call(writeOnly, "PUT", `/v1/folders/${made.body.id}/files/${file.id}`)).status).toBe(200);
    expect((await call(writeOnly, "DELETE", `/v1/folders/${made.body.id}?recursive=true`)).status).toBe(200);
    // Without credentials: 401.
    expect((await fetch(`${server.url}/v1/folders`)).status).toBe(401);
  });

  test("bad input: a clear 400 (or 415), and nothing changed", async () => {
    const f = await folder(alice, unique("input"));
    const file = await upload(alice, "b", "?name=b.txt");
    const cases: [string, string, unknown, string][] = [
      ["POST", "/v1/folders", {}, "name: must be a string"],
      ["POST", "/v1/folders", { name: "" }, "name: 1 to 255 characters"],
      ["POST", "/v1/folders", { name: "x".repeat(256) }, "name: 1 to 255 characters"],
      ["POST", "/v1/folders", { name: "a/b" }, "name: no '/' and no control characters"],
      ["POST", "/v1/folders", { name: "tab\there" }, "name: no '/' and no control characters"],
      ["POST", "/v1/folders", { name: ".." }, "name: '.' and '..' are not folder names"],
      ["POST", "/v1/folders", { name: 7 }, "name: must be a string"],
      ["POST", "/v1/folders", { name: "ok", parent_id: "nope" }, 'parent_id: "nope" is not a folder ID (21 characters of A-Z a-z 0-9 _ -)'],
      ["POST", "/v1/folders", { name: "ok", parent_id: 5 }, 'parent_id: must be a folder ID, "" or null'],
      ["POST", "/v1/folders", { name: "ok", colour: "red" }, 'body: unknown field "colour"'],
      ["POST", "/v1/folders", "{not json", "body: not valid JSON"],
      ["POST", "/v1/folders", "[]", "body: must be a JSON object"],
      ["PATCH", `/v1/folders/${f.id}`, { name: "." }, "name: '.' and '..' are not folder names"],
      ["PATCH", `/v1/folders/${f.id}`, { parent_id: "../x" }, 'parent_id: "../x" is not a folder ID (21 characters of A-Z a-z 0-9 _ -)'],
      ["PATCH", `/v1/folders/${f.id}`, { id: "x" }, 'body: unknown field "id"'],
      ["GET", "/v1/folders/not-an-id", undefined, 'id: "not-an-id" is not a folder ID (21 characters of A-Z a-z 0-9 _ -)'],
      ["GET", "/v1/folders?parent_id=zzz", undefined, 'parent_id: "zzz" is not a folder ID (21 characters of A-Z a-z 0-9 _ -)'],
      ["GET", "/v1/folders?page_size=0", undefined, "page_size"],
      ["GET", "/v1/folders?page_token=%%", undefined, ""],
      ["DELETE", `/v1/folders/${f.id}?recursive=yes`, undefined, 'recursive: "true" or "false" (got "yes")'],
      ["PUT", `/v1/folders/${f.id}/files/short`, undefined, 'file_id: "short" is not a file ID'],
      ["GET", "/v1/folders/top/files", undefined, "id"],
      ["POST", `/v1/files?folder_id=bad`, "content", 'folder_id: "bad" is not a folder ID (21 characters of A-Z a-z 0-9 _ -)'],
    ];
    const before = await blobNames(server.dataDir);
    for (const [method, path, body, message] of cases) {
      const a = await call(alice, method, path, body);
      expect({ path, body, status: a.status, code: a.body.code }).toEqual({ path, body, status: 400, code: 3 });
      expect(a.body.message).toContain(message);
    }
    const noType = await client(server, alice).fetch("/v1/folders", { method: "POST", body: JSON.stringify({ name: "typed" }) });
    expect(noType.status).toBe(415);
    expect(await call<FolderJson>(alice, "GET", `/v1/folders/${f.id}`)).toEqual({ status: 200, body: f });
    expect(await folderIds(alice, `?parent_id=${f.id}`)).toEqual([]);
    expect((await filesIn(alice, "root")).files.map((x) => x.id)).toContain(file.id);
    expect(await blobNames(server.dataDir)).toEqual(before);
    // A folder that does not exist: 404, and an upload into it stores nothing.
    const missing = "AAAAAAAAAAAAAAAAAAAAA";
    expect((await call(alice, "POST", "/v1/folders", { name: "orphan", parent_id: missing })).status).toBe(404);
    expect((await call(alice, "PUT", `/v1/folders/${missing}/files/${file.id}`)).status).toBe(404);
    expect((await call(alice, "PUT", `/v1/folders/${f.id}/files/${missing}`)).body).toMatchObject({ code: 5, message: "file not found" });
    const res = await client(server, alice).fetch(`/v1/files?folder_id=${missing}`, { method: "POST", body: "lost" });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 404, body: { code: 5, message: "folder not found", details: [] } });
    expect(await blobNames(server.dataDir)).toEqual(before);
  });
});

describe("the name rule under concurrency", () => {
  test("20 concurrent creates of one name in one folder: exactly one 200, nineteen 409", async () => {
    const parent = await folder(alice, unique("race"));
    for (const parentId of [parent.id, undefined]) {
      const name = unique("same");
      const statuses = await Promise.all(
        Array.from({ length: 20 }, () => call(alice, "POST", "/v1/folders", parentId === undefined ? { name } : { name, parent_id: parentId }).then((a) => a.status)),
      );
      expect(count(statuses)).toEqual({ 200: 1, 409: 19 });
    }
    expect((await folderIds(alice, `?parent_id=${parent.id}`)).length).toBe(1);
  });

  test("20 concurrent moves of same-named files into one folder: exactly one 200, nineteen 409", async () => {
    const target = await folder(alice, unique("target"));
    const files = await Promise.all(Array.from({ length: 20 }, (_, i) => upload(alice, `copy ${i}`, "?name=same.txt")));
    const statuses = await Promise.all(files.map((f) => call(alice, "PUT", `/v1/folders/${target.id}/files/${f.id}`).then((a) => a.status)));
    expect(count(statuses)).toEqual({ 200: 1, 409: 19 });
    expect((await filesIn(alice, target.id)).files.length).toBe(1);
  });

  test("20 concurrent uploads of one name into one folder: one stored, the rest 409", async () => {
    const target = await folder(alice, unique("uploads"));
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client(server, alice).fetch(`/v1/files?name=one.txt&folder_id=${target.id}`, { method: "POST", body: `v${i}` }).then((r) => r.status)),
    );
    expect(count(statuses)).toEqual({ 200: 1, 409: 19 });
    expect((await filesIn(alice, target.id)).files.length).toBe(1);
  });

  test("two instances on one PostgreSQL: 20 concurrent creates of one name, spread over both, one wins", async () => {
    if (BACKEND !== "postgres-s3") return;
    // A second instance on the same PostgreSQL and S3 store (its data directory names them).
    await using twin = await startServer({ dataDir: server.dataDir });
    const parent = await folder(alice, unique("twins"));
    const name = unique("same");
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(alice, "POST", "/v1/folders", { name, parent_id: parent.id }, i % 2 === 1 ? twin : server).then((a) => a.status)),
    );
    expect(count(statuses)).toEqual({ 200: 1, 409: 19 });
    const files = await Promise.all(Array.from({ length: 20 }, (_, i) => upload(alice, `c${i}`, "?name=twin.txt")));
    const moves = await Promise.all(files.map((f, i) => call(alice, "PUT", `/v1/folders/${parent.id}/files/${f.id}`, undefined, i % 2 === 1 ? twin : server).then((a) => a.status)));
    expect(count(moves)).toEqual({ 200: 1, 409: 19 });
  }, 60_000);
});

describe("RPC: FolderService", () => {
  const auth = (k: string) => ({ headers: { authorization: `Bearer ${k}` } });
  const transports = {
    "gRPC over h2c": () => createGrpcTransport({ baseUrl: server.url }),
    "Connect over HTTP/1.1": () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }),
  };
  const codeOf = (p: Promise<unknown>) => p.then(() => Code.Unknown - 100, (e: unknown) => ConnectError.from(e).code);

  for (const [name, transport] of Object.entries(transports)) {
    test(`${name}: every method, the same Folder as REST, errors mapped`, async () => {
      const rpc = createClient(FolderService, transport());
      const made = (await rpc.createFolder({ name: unique("rpc") }, auth(alice))).folder!;
      const rest = await call<FolderJson>(alice, "GET", `/v1/folders/${made.id}`);
      // The Folder message's proto3 JSON is REST's Folder object, field for field.
      expect(toJson(FolderSchema, made, { alwaysEmitImplicit: true, useProtoFieldName: true }) as unknown).toEqual(rest.body as unknown as Record<string, unknown>);
      const child = (await rpc.createFolder({ name: "child", parentId: made.id }, auth(alice))).folder!;
      expect(child.parentId).toBe(made.id);
      expect((await rpc.getFolder({ id: child.id }, auth(alice))).folder!.name).toBe("child");
      expect((await rpc.listFolders({ parentId: made.id }, auth(alice))).folders.map((f) => f.id)).toEqual([child.id]);
      expect((await rpc.listFolders({}, auth(alice))).folders.map((f) => f.id)).toContain(made.id);
      const renamed = (await rpc.updateFolder({ id: child.id, name: "renamed" }, auth(alice))).folder!;
      expect({ name: renamed.name, parentId: renamed.parentId }).toEqual({ name: "renamed", parentId: made.id });
      const moved = (await rpc.updateFolder({ id: child.id, parentId: "" }, auth(alice))).folder!;
      expect(moved.parentId).toBe("");
      expect(await codeOf(rpc.updateFolder({ id: made.id, parentId: made.id }, auth(alice)))).toBe(Code.InvalidArgument);

      const file = await upload(alice, "rpc file", "?name=rpc.txt");
      await rpc.moveFile({ folderId: made.id, fileId: file.id }, auth(alice));
      const listed = await rpc.listFolderFiles({ folderId: made.id }, auth(alice));
      expect(listed.files.map((f) => f.id)).toEqual([file.id]);
      expect((await rpc.getFolder({ id: made.id }, auth(alice))).folder!.fileCount).toBe(1);
      expect((await rpc.getFolder({ id: made.id }, auth(alice))).folder!.bytes).toBe(8n);
      const twin = await upload(alice, "twin", "?name=rpc.txt");
      expect(await codeOf(rpc.moveFile({ folderId: made.id, fileId: twin.id }, auth(alice)))).toBe(Code.AlreadyExists);
      expect(await codeOf(rpc.createFolder({ name: made.name }, auth(alice)))).toBe(Code.AlreadyExists);
      expect(await codeOf(rpc.deleteFolder({ id: made.id }, auth(alice)))).toBe(Code.FailedPrecondition);
      expect(await codeOf(rpc.getFolder({ id: made.id }, auth(bob)))).toBe(Code.NotFound);
      expect(await codeOf(rpc.createFolder({ name: "x" }, auth(readOnly)))).toBe(Code.PermissionDenied);
      expect(await codeOf(rpc.createFolder({ name: "a/b" }, auth(alice)))).toBe(Code.InvalidArgument);
      expect(await codeOf(rpc.getFolder({ id: "nope" }, auth(alice)))).toBe(Code.InvalidArgument);
      expect(await codeOf(rpc.listFolders({}))).toBe(Code.Unauthenticated);

      // moveFile with no folder takes the file out, to the top.
      await rpc.moveFile({ folderId: "", fileId: file.id }, auth(alice));
      expect((await rpc.listFolderFiles({ folderId: "" }, auth(alice))).files.map((f) => f.id)).toContain(file.id);
      await rpc.deleteFolder({ id: child.id }, auth(alice));
      await rpc.moveFile({ folderId: made.id, fileId: file.id }, auth(alice));
      await rpc.deleteFolder({ id: made.id, recursive: true }, auth(alice));
      expect((await call(alice, "GET", `/v1/files/${file.id}`)).status).toBe(404);
    });
  }

  test("server reflection lists cubby.v1.FolderService", async () => {
    const { execFileSync } = await import("node:child_process");
    const out = execFileSync("buf", ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-services", server.url], { encoding: "utf8" });
    expect(out.split("\n")).toContain("cubby.v1.FolderService");
  });
});

describe("MCP: list_folders, create_folder, move_file", () => {
  async function tool(key: string, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const mcp = new McpClient({ name: "cubby-test", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
    try {
      return (await mcp.callTool({ name, arguments: args })) as CallToolResult;
    } finally {
      await mcp.close();
    }
  }

  test("create, list, move a file in and out; the same objects as REST; errors as tool errors", async () => {
    const name = unique("mcp");
    const made = await tool(alice, "create_folder", { name });
    expect(made.isError ?? false).toBe(false);
    const created = made.structuredContent as unknown as FolderJson;
    expect((await call<FolderJson>(alice, "GET", `/v1/folders/${created.id}`)).body).toEqual(created);
    const sub = (await tool(alice, "create_folder", { name: "sub", parent_id: created.id })).structuredContent as unknown as FolderJson;
    expect(sub.parent_id).toBe(created.id);

    const top = (await tool(alice, "list_folders", {})).structuredContent as { folders: FolderJson[]; next_page_token: string };
    expect(top.folders.map((f) => f.id)).toContain(created.id);
    const inside = (await tool(alice, "list_folders", { parent_id: created.id })).structuredContent as { folders: FolderJson[] };
    expect(inside.folders.map((f) => f.id)).toEqual([sub.id]);

    const file = await upload(alice, "via mcp", "?name=mcp.txt");
    const moved = await tool(alice, "move_file", { id: file.id, folder_id: created.id });
    expect(moved.isError ?? false).toBe(false);
    expect((await filesIn(alice, created.id)).files.map((f) => f.id)).toEqual([file.id]);
    expect((await tool(alice, "move_file", { id: file.id, folder_id: "" })).isError ?? false).toBe(false);
    expect((await filesIn(alice, "root")).files.map((f) => f.id)).toContain(file.id);

    const clash = await tool(alice, "create_folder", { name });
    expect({ isError: clash.isError, content: clash.content }).toEqual({ isError: true, content: [{ type: "text", text: `a folder named "${name}" is here already` }] });
    const denied = await tool(readOnly, "create_folder", { name: unique("ro") });
    expect(denied.content).toEqual([{ type: "text", text: "this key lacks files.write" }]);
    const hidden = await tool(bob, "list_folders", { parent_id: created.id });
    expect(hidden.content).toEqual([{ type: "text", text: "folder not found" }]);
  });
});
