// test-lists: workers postgres-s3 alone
// An S3 bucket of 10 000 objects cannot stop the server (CONTRACT §14, §16), on the run's
// backend and WORKERS: ListObjectsV2 walked 500 keys a page, without a delimiter (every key
// once, in UTF-8 byte order, into 50 folders and out again) and with `/` (1 050 common prefixes and
// 5 000 objects), past 1 000 empty folders, while a stall probe's /healthz waits at most its limit; the sub-folder stream
// is a range of its new index. The rows are made with SQL.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AwsClient } from "aws4fetch";
import { BACKEND, runSql } from "../support/backend.ts";
import { expectIndexRanges } from "../support/plans.ts";
import { startServer, type RunningServer } from "../support/server.ts";
import { expectNoStall, whileProbing } from "../support/stall-probe.ts";

const DIRECT = 5000;
const FOLDERS = 50;
const PER_FOLDER = 100;
/** Empty folders `z-0000`…, sorting after every object: a walk passes them all to find no more. */
const EMPTY = 1000;

let server: RunningServer;
let s3: AwsClient;
let owner: string;
let bucketId: string;
/** Every key, as the files were made. */
const allKeys: string[] = [];

/** An ID of cubby's shape (21 URL-safe characters) from a prefix and a number. */
const idOf = (prefix: string, i: number) => `${prefix}${String(i).padStart(21 - prefix.length, "0")}`;

beforeAll(async () => {
  server = await startServer({ checkResponses: false });
  const [id, secret] = (await server.mintKey("bucket@example.com", "--s3")).split("\n").map((l) => l.slice(l.indexOf("=") + 1)) as [string, string];
  s3 = new AwsClient({ accessKeyId: id, secretAccessKey: secret, service: "s3", region: "us-east-1", retries: 0 });
  expect((await s3.fetch(`${server.url}/big`, { method: "PUT" })).status).toBe(200);
  owner = (await runSql<{ id: string }>(server.dataDir, "SELECT id FROM users WHERE email = ?", "bucket@example.com"))[0]!.id;
  bucketId = (await runSql<{ id: string }>(server.dataDir, "SELECT id FROM folders WHERE owner_id = ? AND name = 'big'", owner))[0]!.id;
  const now = Date.now() * 1000;
  // Folder names `d-00`…`d-49` sort among the files as `d-00/`…: `d-00/` before `d-00000.txt`
  // ('/' < '0'), `d-01/` after it: the two streams interleave.
  const folders = Array.from({ length: FOLDERS }, (_, i) => `('${idOf("D", i)}', '${owner}', '${bucketId}', 'd-${String(i).padStart(2, "0")}', ${now}, ${now})`);
  for (let i = 0; i < EMPTY; i++) folders.push(`('${idOf("Z", i)}', '${owner}', '${bucketId}', 'z-${String(i).padStart(4, "0")}', ${now}, ${now})`);
  await runSql(server.dataDir, `INSERT INTO folders (id, owner_id, parent_id, name, created_at, updated_at) VALUES ${folders.join(", ")}`);
  const files: [folder: string, name: string][] = [];
  for (let i = 0; i < DIRECT; i++) files.push([bucketId, i % 2 === 0 ? `d-${String(i).padStart(5, "0")}.txt` : `e${String(i).padStart(5, "0")}.txt`]);
  for (let f = 0; f < FOLDERS; f++) for (let i = 0; i < PER_FOLDER; i++) files.push([idOf("D", f), `f${String(i).padStart(3, "0")}.bin`]);
  for (const [folder, name] of files) allKeys.push(folder === bucketId ? name : `d-${folder.slice(-2)}/${name}`);
  for (let start = 0; start < files.length; start += 1000) {
    const rows = files.slice(start, start + 1000).map(([folder, name], k) => {
      const id = idOf("F", start + k);
      return `('${id}', '${owner}', '${id}', '${name}', 'text/plain', 0, 'AAAAAA==', 'private', 'never-${id}', ${now + start + k}, ${now + start + k}, '${folder}')`;
    });
    await runSql(server.dataDir, `INSERT INTO files (id, owner_id, slug, name, content_type, size, checksum, visibility, blob, created_at, updated_at, folder_id) VALUES ${rows.join(", ")}`);
  }
  if (BACKEND === "postgres-s3") for (const table of ["files", "folders"]) await runSql(server.dataDir, `ANALYZE ${table}`);
  // The first read after rows from another connection pays SQLite's WAL work once (lists-bounded).
  await list("?list-type=2&max-keys=1");
}, 120_000);
afterAll(() => server?.[Symbol.asyncDispose]());

/** One ListObjectsV2 page's keys, common prefixes and next token. */
async function list(query: string): Promise<{ keys: string[]; prefixes: string[]; next: string | undefined }> {
  const res = await s3.fetch(`${server.url}/big${query}`);
  const text = await res.text();
  expect({ status: res.status, text: res.status === 200 ? "" : text }).toEqual({ status: 200, text: "" });
  const all = (tag: string) => [...text.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, "g"))].map((m) => m[1]!);
  return { keys: all("Key"), prefixes: all("Prefix").slice(1), next: all("NextContinuationToken")[0] };
}

/**
 * Every page of a listing, 500 keys a page: a page of 1 000 (what the AWS CLI asks for) answered
 * in 50–360 ms alone and its /healthz waited 70–160 ms with WORKERS=1 (JSC's collections of a
 * page's query objects, docs/reliability.md), as lists-bounded walks 500 a page.
 */
async function walk(delimiter: string): Promise<{ keys: string[]; prefixes: string[]; pages: number }> {
  const out = { keys: [] as string[], prefixes: [] as string[], pages: 0 };
  for (let token: string | undefined; ; ) {
    const page = await list(`?list-type=2&max-keys=500${delimiter}${token === undefined ? "" : `&continuation-token=${encodeURIComponent(token)}`}`);
    out.keys.push(...page.keys);
    out.prefixes.push(...page.prefixes);
    out.pages++;
    if ((token = page.next) === undefined) return out;
  }
}

const byteOrder = (keys: string[]) => [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

describe("ListObjectsV2 of a bucket of 10 000 objects", () => {
  test("without a delimiter: every key once, in byte order, while the server keeps answering", async () => {
    const { result, stall } = await whileProbing(server.url, () => walk(""));
    expectNoStall(stall);
    expect(result.keys.length).toBe(DIRECT + FOLDERS * PER_FOLDER);
    expect(result.keys).toEqual(byteOrder(allKeys));
    // 20 pages of 500 keys, then pages that pass the empty folders 100 at a time (MAX_FOLDER_VISITS).
    expect(result.pages).toBeGreaterThanOrEqual(29);
    expect(result.pages).toBeLessThanOrEqual(31);
    // A folder's objects come where its prefix sorts: `d-00/…` before the file `d-00000.txt`.
    expect(result.keys.indexOf("d-00/f099.bin") + 1).toBe(result.keys.indexOf("d-00000.txt"));
  }, 60_000);

  test("with the delimiter '/': 1 050 common prefixes and 5 000 objects", async () => {
    const { result, stall } = await whileProbing(server.url, () => walk("&delimiter=%2F"));
    expectNoStall(stall);
    expect(result.prefixes).toEqual([
      ...Array.from({ length: FOLDERS }, (_, i) => `d-${String(i).padStart(2, "0")}/`),
      ...Array.from({ length: EMPTY }, (_, i) => `z-${String(i).padStart(4, "0")}/`),
    ]);
    expect(result.keys).toEqual(byteOrder(allKeys.filter((k) => !k.includes("/"))));
    expect(result.pages).toBe(13);
  }, 60_000);

  test("a page enters at most 100 folders: past the objects, pages of none, truncated, until the empty folders are passed", async () => {
    const page = await list("?list-type=2&start-after=e04999.txt");
    expect(page.keys).toEqual([]);
    expect(Buffer.from(page.next!, "base64url").toString()).toBe("z-0100/");
    // The folder a page paused before is entered first (and not counted again), then 100 more.
    const next = await list(`?list-type=2&continuation-token=${page.next}`);
    expect(Buffer.from(next.next!, "base64url").toString()).toBe("z-0201/");
  });

  test("a prefix inside a folder, and start-after inside one", async () => {
    const page = await list("?list-type=2&prefix=d-07%2Ff09");
    expect(page.keys).toEqual(Array.from({ length: 10 }, (_, i) => `d-07/f09${i}.bin`));
    const after = await list("?list-type=2&start-after=d-49%2Ff097.bin&max-keys=3");
    expect(after.keys).toEqual(["d-49/f098.bin", "d-49/f099.bin", "e00001.txt"]);
  });

  test("the sub-folders are read as a range of folders_parent_key_idx", async () => {
    const key = BACKEND === "sqlite-disk" ? `("name" || '/')` : `(("name" || '/') COLLATE "C")`;
    await expectIndexRanges(server.dataDir, [[`SELECT * FROM folders WHERE parent_id = '${bucketId}' AND ${key} > 'd-07/' ORDER BY ${key} LIMIT 200`, "folders_parent_key_idx"]]);
  });
});
