// test-lists: workers postgres-s3 alone
// `order_by` of GET /v1/files and GET /v1/folders/{id}/files (CONTRACT §15, AIP-132): newest
// first by default; create_time, name (code point order on both stores) and size, ascending or
// with ` desc`; equal values ordered by ID so pages neither skip nor repeat; a page token is good
// only for the order it came from. With 10 000 files (made with SQL) each order is a range of an
// index (EXPLAIN on both backends) and a walk by name keeps /healthz answered.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { FileJson } from "../../src/domain/file.ts";
import { BACKEND, runSql } from "../support/backend.ts";
import { client, startServer, type RunningServer } from "../support/server.ts";
import { expectIndexRanges } from "../support/plans.ts";
import { expectNoStall, whileProbing } from "../support/stall-probe.ts";

let server: RunningServer;
let key: string;
let folderId: string;
const made: FileJson[] = [];
const inFolder: FileJson[] = [];

// Upper case before lower (code points), "é" after "z", equal sizes to page across.
const NAMES = ["beta.txt", "Alpha.txt", "alpha.txt", "émile.txt", "zed.txt", "10.txt", "9.txt"];
const SIZES = [3, 1, 4, 1, 5, 9, 2];

beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("sorter@example.com");
  for (let i = 0; i < NAMES.length; i++) made.push(await client(server, key).upload("x".repeat(SIZES[i]!), `?name=${encodeURIComponent(NAMES[i]!)}`));
  const folder = await client(server, key).fetch("/v1/folders", { method: "POST", body: JSON.stringify({ name: "sorted" }), headers: { "content-type": "application/json" } });
  folderId = ((await folder.json()) as { id: string }).id;
  for (let i = 0; i < 4; i++) inFolder.push(await client(server, key).upload("y".repeat(4 - i), `?name=f${i}.txt&folder_id=${folderId}`));
}, 60_000);
afterAll(() => server?.[Symbol.asyncDispose]());

/** Every page of a listing, `size` at a time. */
async function walk(target: string, size: number): Promise<FileJson[]> {
  const out: FileJson[] = [];
  for (let token = ""; ; ) {
    const res = await client(server, key).fetch(`${target}${target.includes("?") ? "&" : "?"}page_size=${size}&page_token=${encodeURIComponent(token)}`);
    expect({ target, status: res.status }).toEqual({ target, status: 200 });
    const page = (await res.json()) as { files: FileJson[]; next_page_token: string };
    out.push(...page.files);
    token = page.next_page_token;
    if (token === "") return out;
  }
}

const byName = (a: FileJson, b: FileJson) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const bySize = (a: FileJson, b: FileJson) => Number(a.size) - Number(b.size) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byCreated = (a: FileJson, b: FileJson) => Date.parse(a.created_at) - Date.parse(b.created_at) || (a.id < b.id ? -1 : 1);

describe("order_by of GET /v1/files", () => {
  test.each([
    ["(absent)", "", (a: FileJson, b: FileJson) => byCreated(b, a)],
    ["create_time desc", "create_time desc", (a: FileJson, b: FileJson) => byCreated(b, a)],
    ["create_time", "create_time", byCreated],
    ["name", "name", byName],
    ["name desc", "name desc", (a: FileJson, b: FileJson) => byName(b, a)],
    ["size", "size", bySize],
    ["size desc", "size desc", (a: FileJson, b: FileJson) => bySize(b, a)],
  ])("%s, walked two at a time: every file once, in that order", async (_, orderBy, compare) => {
    const all = [...made, ...inFolder];
    const listed = await walk(orderBy === "" ? "/v1/files" : `/v1/files?order_by=${encodeURIComponent(orderBy)}`, 2);
    expect(listed.map((f) => f.name)).toEqual([...all].sort(compare).map((f) => f.name));
    expect(listed.map((f) => f.id)).toEqual([...all].sort(compare).map((f) => f.id));
  });

  test("names are in code point order: upper case first, then lower, then é", async () => {
    const names = (await walk("/v1/files?order_by=name", 100)).map((f) => f.name).filter((n) => !n.startsWith("f"));
    expect(names).toEqual(["10.txt", "9.txt", "Alpha.txt", "alpha.txt", "beta.txt", "zed.txt", "émile.txt"]);
  });

  test("with q, the search is ordered too", async () => {
    const res = await client(server, key).fetch("/v1/files?q=alpha&order_by=name%20desc");
    expect(((await res.json()) as { files: FileJson[] }).files.map((f) => f.name)).toEqual(["alpha.txt", "Alpha.txt"]);
  });

  test("an unknown order is 400 naming order_by; a token of another order is 400 naming page_token", async () => {
    for (const bad of ["updated_at", "name asc desc", "NAME", "size%20DESC"]) {
      const res = await client(server, key).fetch(`/v1/files?order_by=${bad}`);
      expect({ bad, status: res.status, message: ((await res.json()) as { message: string }).message }).toEqual({ bad, status: 400, message: expect.stringContaining("order_by") });
    }
    const page = (await (await client(server, key).fetch("/v1/files?order_by=name&page_size=1")).json()) as { next_page_token: string };
    for (const other of ["size", "name%20desc", "create_time"]) {
      const res = await client(server, key).fetch(`/v1/files?order_by=${other}&page_token=${page.next_page_token}`);
      expect({ other, status: res.status, message: ((await res.json()) as { message: string }).message }).toEqual({ other, status: 400, message: expect.stringContaining("page_token") });
    }
    const newest = (await (await client(server, key).fetch("/v1/files?page_size=1")).json()) as { next_page_token: string };
    expect((await client(server, key).fetch(`/v1/files?order_by=name&page_token=${newest.next_page_token}`)).status).toBe(400);
  });
});

test("order_by of a folder's files and of the top's", async () => {
  const folder = await walk(`/v1/folders/${folderId}/files?order_by=size`, 1);
  expect(folder.map((f) => f.name)).toEqual(["f3.txt", "f2.txt", "f1.txt", "f0.txt"]);
  const top = await walk("/v1/folders/root/files?order_by=name%20desc", 3);
  expect(top.map((f) => f.name)).toEqual([...made].sort((a, b) => byName(b, a)).map((f) => f.name));
});

describe("10 000 files", () => {
  let owner: string;
  beforeAll(async () => {
    owner = (await runSql<{ owner_id: string }>(server.dataDir, "SELECT owner_id FROM files WHERE id = ?", made[0]!.id))[0]!.owner_id;
    const now = Date.now() * 1000;
    for (let start = 0; start < 10_000; start += 1000) {
      const rows = Array.from({ length: 1000 }, (_, k) => {
        const i = start + k;
        const id = `o${String(i).padStart(20, "0")}`;
        return `('${id}', '${owner}', '${id}', 'n${String((i * 7919) % 10_000).padStart(5, "0")}.txt', 'text/plain', ${i % 97}, 'AAAAAA==', 'private', 'never-${id}', ${now + i}, ${now + i}, ${i % 2 === 0 ? "NULL" : `'${folderId}'`})`;
      });
      await runSql(server.dataDir, `INSERT INTO files (id, owner_id, slug, name, content_type, size, checksum, visibility, blob, created_at, updated_at, folder_id) VALUES ${rows.join(", ")}`);
    }
    if (BACKEND === "postgres-s3") await runSql(server.dataDir, "ANALYZE files");
  }, 120_000);

  test("walked by name 1 000 at a time: 10 011 files in order, and the server keeps answering", async () => {
    const { result, stall } = await whileProbing(server.url, () => walk("/v1/files?order_by=name", 1000));
    expectNoStall(stall);
    expect(result.length).toBe(10_000 + made.length + inFolder.length);
    const names = result.map((f) => f.name);
    expect(names).toEqual([...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  }, 60_000);

  test("each order is a range of its index (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN)", async () => {
    const name = BACKEND === "sqlite-disk" ? "name" : 'name COLLATE "C"';
    const cases: [string, string][] = [
      [`SELECT * FROM files WHERE owner_id = '${owner}' AND (${name}, id) > ('n5', 'x') ORDER BY ${name} ASC, id ASC LIMIT 51`, "files_owner_order_name_idx"],
      [`SELECT * FROM files WHERE owner_id = '${owner}' AND (size, id) < (50, 'x') ORDER BY size DESC, id DESC LIMIT 51`, "files_owner_order_size_idx"],
      [`SELECT * FROM files WHERE owner_id = '${owner}' AND folder_id = '${folderId}' AND (${name}, id) < ('n5', 'x') ORDER BY ${name} DESC, id DESC LIMIT 51`, "files_folder_order_name_idx"],
      [`SELECT * FROM files WHERE owner_id = '${owner}' AND folder_id = '${folderId}' AND (size, id) > (50, 'x') ORDER BY size ASC, id ASC LIMIT 51`, "files_folder_order_size_idx"],
      [`SELECT * FROM files WHERE owner_id = '${owner}' AND folder_id IS NULL AND (${name}, id) > ('n5', 'x') ORDER BY ${name} ASC, id ASC LIMIT 51`, "files_top_order_name_idx"],
      [`SELECT * FROM files WHERE owner_id = '${owner}' AND folder_id IS NULL AND (size, id) > (50, 'x') ORDER BY size ASC, id ASC LIMIT 51`, "files_top_order_size_idx"],
    ];
    await expectIndexRanges(server.dataDir, cases);
  });
});
