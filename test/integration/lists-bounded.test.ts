// test-lists: workers postgres-s3 alone
// The owner's lists that once answered everything at once are keyset-paged (CONTRACT §14,
// issue 37): `GET /auth/keys`, `GET /v1/files/{id}/shares`, `GET /v1/folders/{id}/shares`,
// `GET /v1/shares` (CONTRACT §15) and `GET /v1/upload-links` answer `page_size` rows (50 by default) and a `next_page_token`, on the
// run's backend and WORKERS. With 10 000 rows each (made with SQL), walking every page (500 a page) returns
// each row once, newest first, while a stall probe's /healthz waits at most the limit; each
// listing's query is a range of its index (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN).
// Webhooks are not paged: a user has at most MAX_WEBHOOKS_PER_USER (20, domain/webhook.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { BACKEND, runSql } from "../support/backend.ts";
import { client, startServer, type RunningServer } from "../support/server.ts";
import { expectIndexRanges } from "../support/plans.ts";
import { expectNoStall, whileProbing } from "../support/stall-probe.ts";

const ROWS = 10_000;

let server: RunningServer;
let key: string;
let session: string;
let owner: string;
let fileId: string;
let folderId: string;

beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("lister@example.com");
  session = await server.signIn("lister@example.com");
  owner = (await runSql<{ id: string }>(server.dataDir, "SELECT id FROM users WHERE email = ?", "lister@example.com"))[0]!.id;
  fileId = (await client(server, key).upload("shared\n", "?name=shared.txt")).id;
  const made = await client(server, key).fetch("/v1/folders", { method: "POST", body: JSON.stringify({ name: "shared" }), headers: { "content-type": "application/json" } });
  folderId = ((await made.json()) as { id: string }).id;
  const now = Date.now() * 1000;
  // Rows i = 0…ROWS-1, created at now + i: the newest is ROWS-1. Every 10th link is deleted.
  await insertRows("api_keys", "id, user_id, name, secret_hash, created_at, scopes", (i) => `('${idOf("k", i)}', '${owner}', 'k${i}', ${bytes(`k${i}`)}, ${now + i}, 'files.read')`);
  await insertRows("shares", "id, file_id, folder_id, owner_id, token, download_count, created_at", (i) => `('${idOf("s", i)}', '${fileId}', NULL, '${owner}', '${idOf("t", i, 32)}', 0, ${now + i})`);
  await insertRows("shares", "id, file_id, folder_id, owner_id, token, download_count, created_at", (i) => `('${idOf("d", i)}', '', '${folderId}', '${owner}', '${idOf("u", i, 32)}', 0, ${now + i})`);
  await insertRows(
    "upload_links",
    "id, owner_id, token, name, visibility, files_uploaded, bytes_uploaded, created_at, deleted_at",
    (i) => `('${idOf("l", i, 21)}', '${owner}', '${idOf("v", i, 32)}', 'l${i}', 'private', 0, 0, ${now + i}, ${i % 10 === 0 ? now + i : "NULL"})`,
  );
  if (BACKEND === "postgres-s3") for (const table of ["api_keys", "shares", "upload_links"]) await runSql(server.dataDir, `ANALYZE ${table}`);
  // The rows came from another connection: the server's first read after them pays SQLite's
  // WAL work once (folders-bounded saw up to ~100 ms under load), which is the test's doing, not
  // a listing's. Each list is then probed as every later request finds it.
  for (const target of ["/auth/keys", `/v1/files/${fileId}/shares`, `/v1/folders/${folderId}/shares`, "/v1/shares", "/v1/upload-links?show_deleted=true"]) await page(target);
}, 120_000);
afterAll(() => server?.[Symbol.asyncDispose]());

/** An ID of `length` URL-safe characters from a prefix and a number. */
const idOf = (prefix: string, i: number, length = 16) => `${prefix}${String(i).padStart(length - prefix.length, "0")}`;

/** A 32-byte value as a literal of the run's backend (SQLite blob, PostgreSQL bytea). */
const bytes = (seed: string) => {
  const hex = createHash("sha256").update(seed).digest("hex");
  return BACKEND === "sqlite-disk" ? `X'${hex}'` : `'\\x${hex}'::bytea`;
};

/** Inserts ROWS rows into `table`, 1 000 a statement. */
async function insertRows(table: string, columns: string, row: (i: number) => string): Promise<void> {
  for (let start = 0; start < ROWS; start += 1000) {
    const rows = Array.from({ length: Math.min(ROWS, start + 1000) - start }, (_, k) => row(start + k));
    await runSql(server.dataDir, `INSERT INTO ${table} (${columns}) VALUES ${rows.join(", ")}`);
  }
}

/** GET of a listing, by key or (for /auth/keys) by the session. */
async function page(target: string): Promise<Record<string, unknown> & { next_page_token?: string }> {
  const headers: Record<string, string> = target.startsWith("/auth/") ? { cookie: session } : { authorization: `Bearer ${key}` };
  const res = await fetch(`${server.url}${target}`, { headers });
  expect({ target, status: res.status }).toEqual({ target, status: 200 });
  return (await res.json()) as Record<string, unknown> & { next_page_token?: string };
}

/** Every page of a listing, `size` at a time: the IDs in the order they came. */
async function walk(target: string, field: string, size: number): Promise<string[]> {
  const ids: string[] = [];
  for (let token = "", pages = 0; ; pages++) {
    expect(pages).toBeLessThan(ROWS);
    const body = await page(`${target}${target.includes("?") ? "&" : "?"}page_size=${size}&page_token=${token}`);
    ids.push(...(body[field] as { id: string }[]).map((r) => r.id));
    // GET /v1/shares always says "" on the last page; the lists older than paging leave it out.
    token = body.next_page_token ?? "";
    if (token === "") return ids;
  }
}

const newestFirst = (prefix: string, keep: (i: number) => boolean = () => true) =>
  Array.from({ length: ROWS }, (_, k) => ROWS - 1 - k)
    .filter(keep)
    .map((i) => idOf(prefix, i, prefix === "l" ? 21 : 16));

// The key minted at the start is older than the 10 000 inserted, so /auth/keys lists it last.
describe.each([
  ["GET /auth/keys", () => "/auth/keys", "keys", () => newestFirst("k"), 1],
  ["GET /v1/files/{id}/shares", () => `/v1/files/${fileId}/shares`, "shares", () => newestFirst("s"), 0],
  ["GET /v1/folders/{id}/shares", () => `/v1/folders/${folderId}/shares`, "shares", () => newestFirst("d"), 0],
  // Both kinds at once: a file's share and a folder's made at the same microsecond, the higher ID first.
  ["GET /v1/shares", () => "/v1/shares", "shares", () => newestFirst("s").flatMap((id) => [id, `d${id.slice(1)}`]), 0],
  ["GET /v1/upload-links", () => "/v1/upload-links", "upload_links", () => newestFirst("l", (i) => i % 10 !== 0), 0],
  ["GET /v1/upload-links?show_deleted=true", () => "/v1/upload-links?show_deleted=true", "upload_links", () => newestFirst("l"), 0],
])("%s with 10 000 rows", (_, target, field, expected, others) => {
  test("answers the newest 50 by default, and a token for the rest", async () => {
    const first = await page(target());
    expect((first[field] as { id: string }[]).map((r) => r.id)).toEqual(expected().slice(0, 50));
    expect(first.next_page_token).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  // 500 a page: a page of the most (1 000) answered whole in 20–40 ms alone, which is the
  // probe's limit's half on a loaded 2-core machine; the walk is as long either way.
  test("walked 500 at a time: every row once, newest first, and the server keeps answering", async () => {
    const { result: ids, stall } = await whileProbing(server.url, () => walk(target(), field, 500));
    expectNoStall(stall);
    expect(ids.slice(0, ids.length - others)).toEqual(expected());
    expect(ids.length).toBe(expected().length + others);
  }, 60_000);
});

test("a list that fits one page answers as the contract gave it before paging: no next_page_token (GET /v1/shares says \"\")", async () => {
  const other = await server.mintKey("few@example.com");
  const file = (await client(server, other).upload("few", "?name=few.txt")).id;
  await fetch(`${server.url}/v1/files/${file}/shares`, { method: "POST", body: "{}", headers: { authorization: `Bearer ${other}`, "content-type": "application/json" } });
  const list = async (target: string) => (await (await fetch(`${server.url}${target}`, { headers: { authorization: `Bearer ${other}` } })).json()) as Record<string, unknown>;
  expect(Object.keys(await list(`/v1/files/${file}/shares`))).toEqual(["shares"]);
  expect(await list("/v1/upload-links")).toEqual({ upload_links: [] });
  expect(Object.keys(await list("/v1/shares")).sort()).toEqual(["next_page_token", "shares"]);
});

test("a page token that is not one answers 400 and names page_token", async () => {
  const res = await fetch(`${server.url}/v1/files/${fileId}/shares?page_token=not-a-token`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { message: string }).message).toContain("page_token");
});

test("each listing's query is a range of its index (the stores' WHERE and ORDER BY, on a later page)", async () => {
  const after = "(created_at, id) < (9999999999999999, 'zzzz')";
  const newest = "ORDER BY created_at DESC, id DESC LIMIT 1001";
  const cases: [string, string][] = [
    [`SELECT * FROM api_keys WHERE user_id = '${owner}' AND ${after} ${newest}`, "api_keys_user_created_idx"],
    [`SELECT * FROM shares WHERE file_id = '${fileId}' AND deleted_at IS NULL AND ${after} ${newest}`, "shares_file_live_idx"],
    [`SELECT * FROM shares WHERE folder_id = '${folderId}' AND deleted_at IS NULL AND ${after} ${newest}`, "shares_folder_live_idx"],
    [`SELECT * FROM shares WHERE owner_id = '${owner}' AND deleted_at IS NULL AND ${after} ${newest}`, "shares_owner_live_idx"],
    [`SELECT * FROM upload_links WHERE owner_id = '${owner}' AND deleted_at IS NULL AND ${after} ${newest}`, "upload_links_owner_live_idx"],
    [`SELECT * FROM upload_links WHERE owner_id = '${owner}' AND ${after} ${newest}`, "upload_links_owner_created_idx"],
  ];
  await expectIndexRanges(server.dataDir, cases);
});
