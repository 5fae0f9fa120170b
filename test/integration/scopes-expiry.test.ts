// test-lists: workers postgres-s3
// Scoped and expiring API keys, and expiring files (CONTRACT §8), through a real server on the
// run's backend, over REST, RPC (Connect and gRPC) and content URLs alike.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { FileService } from "../../src/gen/cubby/v1/files_pb.ts";
import { blobNames, runSql } from "../support/backend.ts";
import { client, runCli, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";

let server: RunningServer;
let owner: string;
let reader: string;
let writer: string;
let file: FileJson;

beforeAll(async () => {
  server = await startServer();
  owner = await server.mintKey("alice@example.com");
  reader = await server.mintKey("alice@example.com", "--scope", "files.read", "--name", "reader");
  writer = await server.mintKey("alice@example.com", "--scope", "files.write");
  file = await client(server, owner).upload(new TextEncoder().encode("hello"), "?visibility=private&name=a.txt");
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
});

const call = (key: string, method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method, body, headers: { authorization: `Bearer ${key}`, ...headers } });

async function status(res: Response): Promise<{ status: number; code?: number; message?: string }> {
  if (res.status === 200 || res.status === 204) {
    await res.arrayBuffer();
    return { status: res.status };
  }
  const body = (await res.json()) as { code: number; message: string };
  return { status: res.status, code: body.code, message: body.message };
}

describe("scopes", () => {
  test("a files.read key reads everything and changes nothing (403 PERMISSION_DENIED, 'this key lacks files.write')", async () => {
    const denied = { status: 403, code: 7, message: "this key lacks files.write" };
    const json = { "content-type": "application/json" };
    const attempts: [string, string, string | undefined, Record<string, string>?][] = [
      ["POST", "/v1/files", "new"],
      ["PUT", `/v1/files/${file.id}/content`, "new"],
      ["PATCH", `/v1/files/${file.id}`, '{"name":"b.txt"}', json],
      ["POST", `/v1/files/${file.id}/publish`, undefined],
      ["POST", `/v1/files/${file.id}/unpublish`, undefined],
      ["PATCH", `/v1/files/${file.id}/expiry`, '{"ttl":"1h"}', json],
      ["DELETE", `/v1/files/${file.id}`, undefined],
    ];
    const blobsBefore = await blobNames(server.dataDir);
    for (const [method, path, body, headers] of attempts) {
      expect({ method, path, ...(await status(await call(reader, method, path, body, headers))) }).toEqual({ method, path, ...denied });
    }
    expect(await blobNames(server.dataDir)).toEqual(blobsBefore);
    const after = (await (await call(reader, "GET", `/v1/files/${file.id}`)).json()) as FileJson;
    expect(after).toEqual(file);
    expect(await status(await call(reader, "GET", "/v1/files"))).toEqual({ status: 200 });
    expect(await (await call(reader, "GET", `/${file.id}`)).text()).toBe("hello");
    expect(await (await call(reader, "GET", `/v1/files/${file.id}/expiry`)).json()).toEqual({ expire_time: "" });
  });

  test("a files.write key changes but cannot read (403 'this key lacks files.read'), on content URLs too", async () => {
    const denied = { status: 403, code: 7, message: "this key lacks files.read" };
    for (const path of ["/v1/files", `/v1/files/${file.id}`, `/v1/files/${file.id}/expiry`]) {
      expect({ path, ...(await status(await call(writer, "GET", path))) }).toEqual({ path, ...denied });
    }
    expect((await call(writer, "GET", `/${file.id}`)).status).toBe(403);
    const made = await client(server, writer).upload(new TextEncoder().encode("w"), "?visibility=public");
    // A public file needs no credentials, so no scope either.
    expect(await (await call(writer, "GET", `/${made.id}`)).text()).toBe("w");
    expect(await status(await call(writer, "DELETE", `/v1/files/${made.id}`))).toEqual({ status: 200 });
  });

  // CONTRACT §10, issue 25 item 5: before, a write-only key published a private file or shared
  // it, then downloaded it, and PATCH returned its File metadata.
  test("a files.write key cannot expose or read back: PATCH, publish, unpublish and share links need files.read too; the file stays private and unshared", async () => {
    const denied = { status: 403, code: 7, message: "this key lacks files.read" };
    const mine = await client(server, owner).upload(new TextEncoder().encode("backup"), "?visibility=private&name=backup.tar");
    const json = { "content-type": "application/json" };
    const attempts: [string, string, string | undefined, Record<string, string>?][] = [
      ["PATCH", `/v1/files/${mine.id}`, '{"visibility":"public"}', json],
      ["PATCH", `/v1/files/${mine.id}`, '{"name":"renamed.tar"}', json],
      ["POST", `/v1/files/${mine.id}/publish`, undefined],
      ["POST", `/v1/files/${mine.id}/unpublish`, undefined],
      ["POST", `/v1/files/${mine.id}/shares`, "{}", json],
    ];
    for (const [method, path, body, headers] of attempts) {
      expect({ method, path, ...(await status(await call(writer, method, path, body, headers))) }).toEqual({ method, path, ...denied });
    }
    for (const transport of [createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }), createGrpcTransport({ baseUrl: server.url })]) {
      const rpc = createClient(FileService, transport);
      const as = { headers: { authorization: `Bearer ${writer}` } };
      const code = (p: Promise<unknown>) => p.then(() => "ok", (e: unknown) => Code[ConnectError.from(e).code]);
      expect([
        await code(rpc.publishFile({ id: mine.id }, as)),
        await code(rpc.updateFile({ id: mine.id, visibility: "public" }, as)),
        await code(rpc.updateFile({ id: mine.id, name: "renamed.tar" }, as)),
      ]).toEqual(["PermissionDenied", "PermissionDenied", "PermissionDenied"]);
    }
    // Nothing changed: still private, unnamed otherwise, no share, not readable anonymously.
    expect((await (await call(owner, "GET", `/v1/files/${mine.id}`)).json()) as FileJson).toEqual(mine);
    expect(((await (await call(owner, "GET", `/v1/files/${mine.id}/shares`)).json()) as { shares: unknown[] }).shares).toEqual([]);
    expect((await fetch(`${server.url}/${mine.id}`)).status).toBe(401);
    // What a backup uploader needs still works: create, replace, expiry, delete.
    expect(await status(await call(writer, "PUT", `/v1/files/${mine.id}/content`, "backup v2"))).toEqual({ status: 200 });
    expect(await status(await call(writer, "PATCH", `/v1/files/${mine.id}/expiry`, '{"ttl":"30d"}', json))).toEqual({ status: 200 });
    expect(await (await call(owner, "GET", `/${mine.id}`)).text()).toBe("backup v2");
  });

  for (const [name, transport] of [
    ["Connect", () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" })],
    ["gRPC", () => createGrpcTransport({ baseUrl: server.url })],
  ] as const) {
    test(`RPC over ${name} enforces the same scopes`, async () => {
      const rpc = createClient(FileService, transport());
      const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
      const code = (p: Promise<unknown>) => p.then(() => "ok", (e: unknown) => Code[ConnectError.from(e).code]);
      expect(await code(rpc.getFile({ id: file.id }, as(reader)))).toBe("ok");
      expect(await code(rpc.deleteFile({ id: file.id }, as(reader)))).toBe("PermissionDenied");
      expect(await code(rpc.updateFileExpiry({ id: file.id, ttl: "1h" }, as(reader)))).toBe("PermissionDenied");
      async function* one() {
        yield { content: new Uint8Array([1]) };
      }
      expect(await code(rpc.createFile(one(), as(reader)))).toBe("PermissionDenied");
      expect(await code(rpc.getFile({ id: file.id }, as(writer)))).toBe("PermissionDenied");
      expect(await code(rpc.getFile({ id: file.id }, as(owner)))).toBe("ok");
    });
  }

  test("cubby keys create refuses an unknown scope or a bad ttl, and creates no user", async () => {
    for (const args of [["--scope", "files.admin"], ["--ttl", "soon"], ["--ttl", "1h", "--expire-time", "2030-01-01T00:00:00Z"]]) {
      const r = await runCli(["keys", "create", "--email", "nobody@example.com", ...args, "--data-dir", server.dataDir]);
      expect({ args, code: r.code, stdout: r.stdout, lines: r.stderr.split("\n").length }).toEqual({ args, code: 2, stdout: "", lines: 2 });
    }
    expect(await runSql(server.dataDir, "SELECT id FROM users WHERE email = ?", "nobody@example.com")).toEqual([]);
  });
});

describe("expiring keys", () => {
  test("a key past its expiry gets 401 on REST, RPC and content URLs; listed with its expiry", async () => {
    const brief = await server.mintKey("alice@example.com", "--ttl", "2s", "--name", "brief");
    expect((await call(brief, "GET", "/v1/files")).status).toBe(200);
    const listed = await runCli(["keys", "list", "--email", "alice@example.com", "--data-dir", server.dataDir]);
    expect(listed.stdout.split("\n").find((l) => l.includes("\tbrief\t"))).toMatch(/\tfiles\.read,files\.write\t\S+Z\t\S+Z\t\S+Z$/);
    // Wait for the expiry itself (the key's own time), then every surface refuses it.
    await waitFor(async () => (await call(brief, "GET", "/v1/files")).status === 401, "the key to expire", 10_000, 100);
    expect(await status(await call(brief, "GET", `/v1/files/${file.id}`))).toMatchObject({ status: 401, code: 16 });
    expect((await call(brief, "GET", `/${file.id}`)).status).toBe(401);
    const rpc = createClient(FileService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const err = await rpc.getFile({ id: file.id }, { headers: { authorization: `Bearer ${brief}` } }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.Unauthenticated);
  });
});

describe("expiring files", () => {
  test("expire_time on create, GET and PATCH /expiry (set, ttl, clear), bad input 400 and unchanged", async () => {
    const k = client(server, owner);
    const made = await k.upload(new TextEncoder().encode("x"), "?ttl=7d");
    const expiry = async () => ((await (await call(owner, "GET", `/v1/files/${made.id}/expiry`)).json()) as { expire_time: string }).expire_time;
    const sevenDays = Date.parse(await expiry()) - Date.now();
    expect(sevenDays).toBeGreaterThan(7 * 86400_000 - 60_000);
    expect(sevenDays).toBeLessThanOrEqual(7 * 86400_000);
    const patch = (body: string) => call(owner, "PATCH", `/v1/files/${made.id}/expiry`, body, { "content-type": "application/json" });
    expect(await (await patch('{"expire_time":"2030-01-02T03:04:05+01:00"}')).json()).toEqual({ expire_time: "2030-01-02T02:04:05Z" });
    for (const bad of ['{"ttl":"0s"}', '{"expire_time":"2001-01-01T00:00:00Z"}', '{"ttl":"1h","expire_time":"2030-01-01T00:00:00Z"}', "{}", '{"when":"1h"}', '{"ttl":5}']) {
      expect({ bad, ...(await status(await patch(bad))) }).toMatchObject({ bad, status: 400, code: 3 });
    }
    expect(await expiry()).toBe("2030-01-02T02:04:05Z");
    expect(await (await patch('{"expire_time":""}')).json()).toEqual({ expire_time: "" });
    expect(await expiry()).toBe("");
    // The File object never shows expiry, and updated_at does not move for it.
    expect(await (await call(owner, "GET", `/v1/files/${made.id}`)).json()).toEqual(made);
    for (const q of ["?ttl=1x", "?expire_time=yesterday", "?ttl=1h&expire_time=2030-01-01T00:00:00Z"]) {
      expect({ q, ...(await status(await call(owner, "POST", `/v1/files${q}`, "y"))) }).toMatchObject({ q, status: 400, code: 3 });
    }
  });

  test("GET /v1/expiries: a page's expiries in one request, in the order asked; others' private files and unknown IDs left out; bad lists 400", async () => {
    const k = client(server, owner);
    const soon = await k.upload(new TextEncoder().encode("s"), "?expire_time=2031-05-06T07:08:09Z");
    const never = await k.upload(new TextEncoder().encode("n"));
    const bobs = await client(server, await server.mintKey("bob-expiries@example.com")).upload(new TextEncoder().encode("b"), "?visibility=private&ttl=1d");
    const ask = (ids: string[], key = owner) => call(key, "GET", `/v1/expiries?file_ids=${ids.join(",")}`);
    const res = await ask([never.id, bobs.id, "A".repeat(21), soon.id]);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      expiries: [
        { file_id: never.id, expire_time: "" },
        { file_id: soon.id, expire_time: "2031-05-06T07:08:09Z" },
      ],
    });
    // A files.read key may ask; no key may not; a list too long, empty or malformed is 400.
    expect((await ask([soon.id], reader)).status).toBe(200);
    expect((await fetch(`${server.url}/v1/expiries?file_ids=${soon.id}`)).status).toBe(401);
    for (const q of ["", "?file_ids=", `?file_ids=${soon.id},,${never.id}`, `?file_ids=${Array(101).fill(soon.id).join(",")}`, "?file_ids=nope"]) {
      expect({ q, status: (await call(owner, "GET", `/v1/expiries${q}`)).status }).toEqual({ q, status: q === "" ? 200 : 400 });
    }
  });

  test("at its expiry a file answers 404 everywhere and the sweep deletes it as DELETE does", async () => {
    const k = client(server, owner);
    const made = await k.upload(new TextEncoder().encode("short-lived"), "?ttl=2s&visibility=public");
    expect(await (await fetch(`${server.url}/${made.id}`)).text()).toBe("short-lived");
    await waitFor(async () => (await fetch(`${server.url}/${made.id}`)).status === 404, "the file to expire", 10_000, 100);
    expect(await status(await call(owner, "GET", `/v1/files/${made.id}`))).toMatchObject({ status: 404, code: 5 });
    expect(await status(await call(owner, "DELETE", `/v1/files/${made.id}`))).toMatchObject({ status: 404, code: 5 });

    // The sweep, on a server of its own that sweeps every 200 ms and removes a blob 500 ms after
    // its row (CUBBY_TEST_EXPIRY_SWEEP_MS, CUBBY_TEST_REMOVAL_GRACE_MS): the row goes, then the
    // blob. In production every 15 s and 30 s later (EXPIRY_SWEEP_MS, REMOVAL_GRACE_MS): within
    // 45 s, CONTRACT §8's minute; here within seconds, and not at all without the sweep.
    await using swept = await startServer({ env: { CUBBY_TEST_EXPIRY_SWEEP_MS: "200", CUBBY_TEST_REMOVAL_GRACE_MS: "500" } });
    const doomed = await client(swept, await swept.mintKey("alice@example.com")).upload(new TextEncoder().encode("short-lived"), "?ttl=2s&visibility=public");
    const [{ blob }] = (await runSql<{ blob: string }>(swept.dataDir, "SELECT blob FROM files WHERE id = ?", doomed.id)) as [{ blob: string }];
    // Disk lists blob file names, S3 object keys (blobs/NAME).
    const stored = async () => (await blobNames(swept.dataDir)).some((n) => n.endsWith(blob));
    expect(await stored()).toBe(true);
    const gone = async () => (await runSql(swept.dataDir, "SELECT id FROM files WHERE id = ?", doomed.id)).length === 0 && !(await stored());
    await waitFor(gone, "the sweep to delete the expired file's row and blob", 10_000, 100);
    expect((await fetch(`${swept.url}/${doomed.id}`)).status).toBe(404);
  }, 30_000);

  test("RPC: CreateFile with ttl and UpdateFileExpiry", async () => {
    const rpc = createClient(FileService, createGrpcTransport({ baseUrl: server.url }));
    const auth = { headers: { authorization: `Bearer ${owner}` } };
    async function* one() {
      yield { ttl: "1h", content: new Uint8Array([1, 2]) };
    }
    const { file: made } = await rpc.createFile(one(), auth);
    const rest = (await (await call(owner, "GET", `/v1/files/${made!.id}/expiry`)).json()) as { expire_time: string };
    expect(Date.parse(rest.expire_time) - Date.now()).toBeGreaterThan(3500_000);
    expect(await rpc.updateFileExpiry({ id: made!.id, expireTime: "2031-05-06T07:08:09Z" }, auth)).toMatchObject({ expireTime: "2031-05-06T07:08:09Z" });
    expect(await rpc.updateFileExpiry({ id: made!.id }, auth)).toMatchObject({ expireTime: "" });
    const bad = await rpc.updateFileExpiry({ id: made!.id, ttl: "forever" }, auth).catch((e: unknown) => ConnectError.from(e));
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
  });
});
