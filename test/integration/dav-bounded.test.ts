// test-lists: workers postgres-s3 alone
// WebDAV bounded by what it answers (CONTRACT §14, issue 37 items 3–6 and 8): big collections,
// many dead properties, a 1 MiB PROPPATCH and a 64 KiB If header, each answered while a
// /healthz on another connection waits at most STALL_LIMIT_MS; the caps, each named in its
// error; dead properties and lock owners counted in the quota and removed with their file; and
// the query plans the paged reads rely on. The big cases are built with rows inserted directly.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { BACKEND, runSql } from "../support/backend.ts";
import fs from "node:fs";
import path from "node:path";
import { basicAuth, davFetch, run } from "../support/dav.ts";
import { client, startServer, tempDir, type RunningServer } from "../support/server.ts";
import { STALL_LIMIT_MS, whileProbing } from "../support/stall-probe.ts";

let server: RunningServer;
const QUOTA = 3_000_000;

beforeAll(async () => {
  server = await startServer({ checkResponses: false, env: { QUOTA_BYTES: String(QUOTA) } });
  // The probe's own first answers (new connections, a cold /healthz) are not what is measured.
  await whileProbing(server.url, () => new Promise((resolve) => setTimeout(resolve, 300)));
});
afterAll(() => server[Symbol.asyncDispose]());

const dav = (key: string, path: string, init: RequestInit & { headers?: Record<string, string> } = {}) => davFetch(server.url, key, path, init);

/** A new user's key and ID. */
async function user(email: string): Promise<{ key: string; id: string }> {
  const key = await server.mintKey(email);
  const [row] = await runSql<{ id: string }>(server.dataDir, "SELECT id FROM users WHERE email = ?", email);
  return { key, id: row!.id };
}

/** Inserts `count` empty files named f000001.txt… into folder `folderId` of `ownerId` (rows only: PROPFIND reads no blob). */
async function insertFiles(ownerId: string, folderId: string, tag: string, count: number): Promise<void> {
  const now = Date.now() * 1000;
  if (BACKEND === "sqlite-disk") {
    await runSql(
      server.dataDir,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO files (id, owner_id, slug, name, content_type, size, checksum, visibility, blob, created_at, updated_at)
       SELECT printf('%s%014d', ?, i), ?, '', printf('f%06d.txt', i), 'text/plain', 0, 'AAAAAA==', 'private', printf('%sblob%014d', ?, i), ? + i, ? + i FROM n`,
      count,
      tag,
      ownerId,
      tag,
      now,
      now,
    );
  } else {
    await runSql(
      server.dataDir,
      `INSERT INTO files (id, owner_id, slug, name, content_type, size, checksum, visibility, blob, created_at, updated_at)
       SELECT ?::text || lpad(i::text, 14, '0'), ?, '', 'f' || lpad(i::text, 6, '0') || '.txt', 'text/plain', 0, 'AAAAAA==', 'private', ?::text || 'blob' || lpad(i::text, 14, '0'), ?::bigint + i, ?::bigint + i
       FROM generate_series(1, ?::int) AS i`,
      tag,
      ownerId,
      tag,
      now,
      now,
      count,
    );
  }
  await runSql(server.dataDir, "UPDATE files SET folder_id = ? WHERE owner_id = ? AND blob LIKE ?", folderId, ownerId, `${tag}blob%`);
  // Statistics, as autovacuum would gather them for tables grown this much (PostgreSQL plans without them badly).
  if (BACKEND === "postgres-s3") await runSql(server.dataDir, "ANALYZE files");
}

/** MKCOL `name` at the top; its folder ID. */
async function folder(key: string, ownerId: string, name: string): Promise<string> {
  expect((await dav(key, `/dav/${name}/`, { method: "MKCOL" })).status).toBe(201);
  const [row] = await runSql<{ id: string }>(server.dataDir, "SELECT id FROM folders WHERE owner_id = ? AND name = ?", ownerId, name);
  return row!.id;
}

/** A PROPPATCH body setting `count` properties in urn:bounded whose values are `valueChars` long. */
function proppatchBody(count: number, valueChars: number, prefix = "p"): string {
  const value = "v".repeat(valueChars);
  let props = "";
  for (let i = 0; i < count; i++) props += `<b:${prefix}${i}>${value}</b:${prefix}${i}>`;
  return `<?xml version="1.0" encoding="utf-8"?><D:propertyupdate xmlns:D="DAV:" xmlns:b="urn:bounded"><D:set><D:prop>${props}</D:prop></D:set></D:propertyupdate>`;
}

/** Counts `needles` in a response body a chunk at a time (a 45 MB answer is not held as one string). */
async function scan(res: Response, needles: string[]): Promise<{ counts: number[]; tail: string }> {
  const counts = needles.map(() => 0);
  const keep = Math.max(...needles.map((n) => n.length));
  const decoder = new TextDecoder();
  let carry = "";
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const text = carry + decoder.decode(chunk, { stream: true });
    needles.forEach((n, i) => {
      for (let at = text.indexOf(n); at !== -1; at = text.indexOf(n, at + 1)) if (at + n.length > carry.length) counts[i]!++;
    });
    carry = text.slice(-keep);
    await new Promise((r) => setImmediate(r));
  }
  return { counts, tail: carry };
}

const usage = async (key: string) => (await (await client(server, key).fetch("/v1/usage")).json()) as { dav_bytes: number; used_bytes: number; file_bytes: number };

describe("a big collection", () => {
  for (const count of [15_000, 40_000]) {
    test(`PROPFIND Depth 1 and GET of ${count} files stream every member, a page at a time, while /healthz waits ≤ ${STALL_LIMIT_MS} ms`, async () => {
      const u = await user(`big${count}@example.com`);
      const id = await folder(u.key, u.id, "big");
      await insertFiles(u.id, id, `big${count}x`, count);
      // A dead property and a lock on some members: read a page at a time too.
      expect((await dav(u.key, "/dav/big/f000007.txt", { method: "PROPPATCH", body: proppatchBody(2, 10) })).status).toBe(207);
      const locked = await dav(u.key, "/dav/big/f000009.txt", { method: "LOCK", headers: { depth: "0" }, body: '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>me</D:owner></D:lockinfo>' });
      expect(locked.status).toBe(200);
      // curl reads the answer into a file, so that this process (which runs the probe) only waits.
      using dir = tempDir("cubby-dav-bounded-");
      const file = path.join(dir.path, "answer.xml");
      const { result, stall } = await whileProbing(server.url, async () => {
        const curl = await run("curl", ["-sS", "-X", "PROPFIND", "-H", "depth: 1", "-H", `authorization: ${basicAuth(u.key)}`, "-o", file, "-D", `${file}.head`, "-w", "%{http_code}", `${server.url}/dav/big/`], { timeoutMs: 100_000 });
        return { status: Number(curl.stdout), head: fs.readFileSync(`${file}.head`, "utf8").toLowerCase() };
      });
      expect(result.status).toBe(207);
      expect(result.head).toContain("transfer-encoding: chunked");
      const counts = await scan(new Response(Bun.file(file)), ["<D:response>", "<D:activelock>", '<b:p1 xmlns:b="urn:bounded">vvvvvvvvvv</b:p1>']);
      expect(counts.counts).toEqual([count + 1, 1, 1]);
      expect(counts.tail.endsWith("</D:multistatus>")).toBe(true);
      expect(stall.worstMs).toBeLessThanOrEqual(STALL_LIMIT_MS);

      // A browser's GET of the collection: its HTML list, a page of members at a time, streamed
      // past 1 MiB (15 000 entries are ~1.2 MB), while the probe keeps being answered.
      const html = path.join(dir.path, "list.html");
      const listed = await whileProbing(server.url, async () => {
        const curl = await run("curl", ["-sS", "-H", `authorization: ${basicAuth(u.key)}`, "-o", html, "-D", `${html}.head`, "-w", "%{http_code}", `${server.url}/dav/big/`], { timeoutMs: 100_000 });
        return { status: Number(curl.stdout), head: fs.readFileSync(`${html}.head`, "utf8").toLowerCase() };
      });
      expect(listed.result.status).toBe(200);
      expect(listed.result.head).toContain("transfer-encoding: chunked");
      const items = await scan(new Response(Bun.file(html)), ["<li>", "</ul>"]);
      expect(items.counts).toEqual([count, 1]);
      expect(items.tail.endsWith("</ul>")).toBe(true);
      expect(listed.stall.worstMs).toBeLessThanOrEqual(STALL_LIMIT_MS);
    }, 120_000);
  }

  test("a name shared at the top is decorated whichever page it falls on", async () => {
    const u = await user("clash@example.com");
    const api = client(server, u.key);
    const a = await api.upload("one", "?name=same.txt");
    const b = await api.upload("two", "?name=same.txt");
    await api.upload("three", "?name=alone.txt");
    const body = await (await dav(u.key, "/dav/", { method: "PROPFIND", headers: { depth: "1" } })).text();
    const hrefs = [...body.matchAll(/<D:href>([^<]+)<\/D:href>/g)].map((m) => m[1]).sort();
    expect(hrefs).toEqual(["/dav/", "/dav/alone.txt", `/dav/same%20(${a.id}).txt`, `/dav/same%20(${b.id}).txt`].sort());
  });
});

describe("dead properties", () => {
  test("a 1 MiB PROPPATCH of 10 000 properties and a PROPFIND naming all of them, each while /healthz waits ≤ 100 ms", async () => {
    const u = await user("props@example.com");
    expect((await dav(u.key, "/dav/p.txt", { method: "PUT", body: "x" })).status).toBe(201);
    const body = proppatchBody(10_000, 82);
    expect(body.length).toBeGreaterThan(1_000_000);
    expect(body.length).toBeLessThanOrEqual(1024 * 1024);
    const set = await whileProbing(server.url, async () => {
      const res = await dav(u.key, "/dav/p.txt", { method: "PROPPATCH", body });
      return { status: res.status, text: await res.text() };
    });
    expect(set.result.status).toBe(207);
    expect(set.result.text).toContain("200 OK");
    expect(set.stall.worstMs).toBeLessThanOrEqual(STALL_LIMIT_MS);
    const [stored] = await runSql<{ n: number | string }>(server.dataDir, "SELECT count(*) AS n FROM dav_properties WHERE owner_id = ?", u.id);
    expect(Number(stored!.n)).toBe(10_000);
    let names = "";
    for (let i = 0; i < 10_000; i++) names += `<b:p${i}/>`;
    const get = await whileProbing(server.url, async () => {
      const res = await dav(u.key, "/dav/p.txt", { method: "PROPFIND", headers: { depth: "0" }, body: `<D:propfind xmlns:D="DAV:" xmlns:b="urn:bounded"><D:prop>${names}<b:missing/></D:prop></D:propfind>` });
      return { status: res.status, text: await res.text() };
    });
    expect(get.result.status).toBe(413);
    expect(get.result.text).toContain("MAX_PROPFIND_NAMES");
    expect(get.stall.worstMs).toBeLessThanOrEqual(STALL_LIMIT_MS);
    const got = await whileProbing(server.url, async () => {
      const res = await dav(u.key, "/dav/p.txt", { method: "PROPFIND", headers: { depth: "0" }, body: `<D:propfind xmlns:D="DAV:" xmlns:b="urn:bounded"><D:prop>${names.slice(0, -"<b:p9999/>".length)}<b:missing/></D:prop></D:propfind>` });
      return { status: res.status, text: await res.text() };
    });
    expect(got.result.status).toBe(207);
    expect(got.result.text.match(/<b:p\d+ xmlns:b="urn:bounded">v+<\/b:p\d+>/g)?.length).toBe(9_999);
    expect(got.result.text).toContain('<x:missing xmlns:x="urn:bounded"/>');
    expect(got.stall.worstMs).toBeLessThanOrEqual(STALL_LIMIT_MS);
  }, 60_000);

  test("caps: past 10 000 properties or 2 MiB on one resource 507, naming the cap; nothing of the refused PROPPATCH stays", async () => {
    const u = await user("caps@example.com");
    expect((await dav(u.key, "/dav/c.txt", { method: "PUT", body: "x" })).status).toBe(201);
    const many = await dav(u.key, "/dav/c.txt", { method: "PROPPATCH", body: proppatchBody(10_001, 1) });
    expect(many.status).toBe(507);
    expect(await many.text()).toContain("MAX_PROPERTIES_PER_RESOURCE");
    expect((await dav(u.key, "/dav/c.txt", { method: "PROPPATCH", body: proppatchBody(2, 450_000, "p") })).status).toBe(207);
    expect((await dav(u.key, "/dav/c.txt", { method: "PROPPATCH", body: proppatchBody(2, 450_000, "q") })).status).toBe(207);
    const big = await dav(u.key, "/dav/c.txt", { method: "PROPPATCH", body: proppatchBody(2, 450_000, "r") });
    expect(big.status).toBe(507);
    expect(await big.text()).toContain("MAX_PROPERTY_BYTES_PER_RESOURCE");
    const [stored] = await runSql<{ n: number | string }>(server.dataDir, "SELECT count(*) AS n FROM dav_properties WHERE owner_id = ?", u.id);
    expect(Number(stored!.n)).toBe(4);
  }, 30_000);

  test("properties and lock owners count against the quota (dav_bytes in /v1/usage); past it 507; they go with their file, however it is deleted", async () => {
    const u = await user("quota@example.com");
    const api = client(server, u.key);
    expect(await usage(u.key)).toMatchObject({ dav_bytes: 0, used_bytes: 0 });
    expect((await dav(u.key, "/dav/q1.txt", { method: "PUT", body: "x" })).status).toBe(201);
    expect((await dav(u.key, "/dav/q1.txt", { method: "PROPPATCH", body: proppatchBody(1, 1000) })).status).toBe(207);
    const one = await usage(u.key);
    expect(one.dav_bytes).toBeGreaterThan(1000);
    expect(one.used_bytes).toBe(one.file_bytes + one.dav_bytes);
    const owner = `<D:owner>${"o".repeat(3000)}</D:owner>`;
    const lockinfo = (o: string) => `<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype>${o}</D:lockinfo>`;
    expect((await dav(u.key, "/dav/q1.txt", { method: "LOCK", body: lockinfo(owner) })).status).toBe(200);
    expect((await usage(u.key)).dav_bytes).toBeGreaterThan(one.dav_bytes + 3000);
    const tooBig = await dav(u.key, "/dav/q1.txt", { method: "LOCK", body: lockinfo(`<D:owner>${"o".repeat(5000)}</D:owner>`) });
    expect(tooBig.status).toBe(413);
    expect(await tooBig.text()).toContain("MAX_LOCK_OWNER_BYTES");
    // Up to the quota (3 MB) in 1 MiB-capped resources: the third is refused.
    const statuses: number[] = [];
    for (const name of ["q2.txt", "q3.txt", "q4.txt"]) {
      expect((await dav(u.key, `/dav/${name}`, { method: "PUT", body: "x" })).status).toBe(201);
      statuses.push((await dav(u.key, `/dav/${name}`, { method: "PROPPATCH", body: proppatchBody(2, 500_000) })).status);
    }
    expect(statuses).toEqual([207, 207, 507]);
    // Deleted through REST: the properties go with the file.
    const listed = (await (await api.fetch("/v1/files?page_size=100")).json()) as { files: { id: string; name: string }[] };
    const q2 = listed.files.find((f) => f.name === "q2.txt")!;
    const before = (await usage(u.key)).dav_bytes;
    expect((await api.fetch(`/v1/files/${q2.id}`, { method: "DELETE" })).ok).toBe(true);
    expect(await runSql(server.dataDir, "SELECT resource FROM dav_properties WHERE owner_id = ? AND resource = ?", u.id, `file:${q2.id}`)).toEqual([]);
    expect((await usage(u.key)).dav_bytes).toBeLessThan(before - 1_000_000);
    // A folder deleted through REST, recursively: its properties and its files' go too.
    const fid = await folder(u.key, u.id, "gone");
    expect((await dav(u.key, "/dav/gone/in.txt", { method: "PUT", body: "x" })).status).toBe(201);
    expect((await dav(u.key, "/dav/gone/", { method: "PROPPATCH", body: proppatchBody(1, 10) })).status).toBe(207);
    expect((await dav(u.key, "/dav/gone/in.txt", { method: "PROPPATCH", body: proppatchBody(1, 10) })).status).toBe(207);
    expect((await api.fetch(`/v1/folders/${fid}?recursive=true`, { method: "DELETE" })).ok).toBe(true);
    expect(await runSql(server.dataDir, "SELECT resource FROM dav_properties WHERE owner_id = ? AND resource <> ? AND resource <> ?", u.id, "file:" + listed.files.find((f) => f.name === "q1.txt")!.id, "file:" + listed.files.find((f) => f.name === "q3.txt")!.id)).toEqual([]);
  }, 60_000);
});

describe("locks and the If header", () => {
  test("locks per user are capped (507 naming the cap); a request reads only the locks of the paths it touches", async () => {
    const u = await user("locks@example.com");
    const now = Date.now() * 1000;
    const far = now + 3600 * 1_000_000;
    if (BACKEND === "sqlite-disk") {
      await runSql(
        server.dataDir,
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
         INSERT INTO dav_locks (token, owner_id, path, depth, exclusive, owner_xml, timeout_seconds, expires_at, created_at)
         SELECT 'urn:uuid:bounded-' || i, ?, '/elsewhere/' || i, 0, 1, '', 3600, ?, ? FROM n`,
        u.id,
        far,
        now,
      );
    } else {
      await runSql(
        server.dataDir,
        `INSERT INTO dav_locks (token, owner_id, path, depth, exclusive, owner_xml, timeout_seconds, expires_at, created_at)
         SELECT 'urn:uuid:bounded-' || i, ?, '/elsewhere/' || i, 0, 1, '', 3600, ?::bigint, ?::bigint FROM generate_series(1, 1000) AS i`,
        u.id,
        far,
        now,
      );
    }
    const refused = await dav(u.key, "/dav/l.txt", { method: "LOCK", body: '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>' });
    expect(refused.status).toBe(507);
    expect(await refused.text()).toContain("MAX_LOCKS_PER_USER");
    // None of the 1000 applies to /l.txt: a PUT there needs no token.
    expect((await dav(u.key, "/dav/l.txt", { method: "PUT", body: "x" })).status).toBe(201);
  });

  test("a 60 KiB If header (the server takes at most 64 KiB of headers): past the caps 400 naming them; within them, ~250 tagged lists naming one deep path evaluated with one lookup (412), /healthz waiting ≤ 100 ms", async () => {
    const u = await user("if@example.com");
    const reader = await server.mintKey("if@example.com", "--scope", "files.read");
    let path = "";
    for (let i = 0; i < 12; i++) {
      path += `/d${i}`;
      expect((await dav(u.key, `/dav${path}/`, { method: "MKCOL" })).status).toBe(201);
    }
    const tag = `<${server.url}/dav${path}/>`;
    const uuid = () => crypto.randomUUID();
    // Four conditions, none of which holds together: a token no lock has (negated), an entity tag a collection never has.
    const list = () => `(Not <urn:uuid:${uuid()}> ["${uuid()}${uuid()}"] Not <urn:uuid:${uuid()}> ["${uuid()}"])`;
    let over = tag;
    while (over.length < 60 * 1024) over += ` (<urn:uuid:${crypto.randomUUID()}>)`;
    const tooMany = await whileProbing(server.url, async () => {
      const res = await dav(reader, `/dav${path}/`, { method: "PROPFIND", headers: { depth: "0", if: over.trim() } });
      return { status: res.status, text: await res.text() };
    });
    expect(tooMany.result.status).toBe(400);
    expect(tooMany.result.text).toMatch(/MAX_IF_LISTS|MAX_IF_CONDITIONS/);
    expect(tooMany.stall.worstMs).toBeLessThanOrEqual(STALL_LIMIT_MS);
    let within = tag;
    for (let i = 0; i < 250; i++) within += ` ${list()}`;
    expect(within.length).toBeGreaterThan(50_000);
    const evaluated = await whileProbing(server.url, async () => {
      const res = await dav(reader, `/dav${path}/`, { method: "PROPFIND", headers: { depth: "0", if: within } });
      return { status: res.status, text: await res.text() };
    });
    expect(evaluated.result.status).toBe(412);
    expect(evaluated.stall.worstMs).toBeLessThanOrEqual(STALL_LIMIT_MS);
    // Too many distinct resources: refused before they are looked up.
    let resources = "";
    for (let i = 0; i < 70; i++) resources += `<${server.url}/dav/r${i}> (<urn:uuid:${i}>) `;
    const named = await dav(reader, "/dav/", { method: "PROPFIND", headers: { depth: "0", if: resources.trim() } });
    expect(named.status).toBe(400);
    expect(await named.text()).toContain("MAX_IF_RESOURCES");
  }, 60_000);
});

describe.if(BACKEND === "sqlite-disk")("query plans", () => {
  const plan = async (query: string, ...params: (string | number)[]) =>
    (await runSql<{ detail: string }>(server.dataDir, `EXPLAIN QUERY PLAN ${query}`, ...params)).map((r) => r.detail).join("\n");

  test("a page's dead properties, locks by path, lock paths below one, files by name, the quota's sum: each through an index", async () => {
    expect(await plan("SELECT resource, namespace, name, value FROM dav_properties WHERE owner_id = ? AND resource IN (?, ?) AND (resource, namespace, name) > (?, ?, ?) ORDER BY resource, namespace, name LIMIT 2000", "u", "file:a", "file:b", "file:a", "", "")).toMatch(
      /SEARCH dav_properties USING (INDEX sqlite_autoindex_dav_properties_1|PRIMARY KEY)/,
    );
    expect(await plan("SELECT * FROM dav_locks WHERE owner_id = ? AND path IN (?, ?, ?) AND expires_at > ?", "u", "/", "/a", "/a/b", 0)).toContain("USING INDEX dav_locks_owner_path_idx (owner_id=? AND path=?)");
    expect(await plan("SELECT * FROM dav_locks WHERE owner_id = ? AND path > ? AND path < ? AND expires_at > ?", "u", "/a/", "/a0", 0)).toContain("USING INDEX dav_locks_owner_path_idx (owner_id=? AND path>? AND path<?)");
    expect(await plan("SELECT name, count(*) FROM files WHERE owner_id = ? AND folder_id IS NULL AND name IN (?, ?) GROUP BY name", "u", "a", "b")).toContain("files_top_order_name_idx");
    expect(await plan("SELECT coalesce(sum(bytes), 0) FROM dav_properties WHERE owner_id = ?", "u")).toContain("USING COVERING INDEX dav_properties_owner_bytes_idx");
    expect(await plan("DELETE FROM dav_properties WHERE file_id = ?", "f")).toContain("dav_properties_file_idx");
  });
});
