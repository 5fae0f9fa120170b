// test-lists: workers postgres-s3
// `/mcp` (CONTRACT §9) through a real server on the run's backend, driven by the official MCP
// SDK's client over Streamable HTTP: the ten tools (folders' in folders.test.ts), what they change as REST and content URLs
// see it, bearer-key authentication, scopes (§8), other users' files, and bad input.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { checksumOf } from "../../src/domain/checksum.ts";
import type { ShareJson } from "../../src/domain/share.ts";
import { blobNames } from "../support/backend.ts";
import { client, runCli, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";

/** Small enough to pass in a test, big enough for every other upload here. */
const MAX_UPLOAD_BYTES = 64 * 1024;

let server: RunningServer;
let alice: string;
let bob: string;
let reader: string;
/** Keys of users who start with no files, minted here so that no test waits for the CLI. */
const fresh: Record<"lister" | "busy" | "carol", string> = { lister: "", busy: "", carol: "" };
let expiring: string;
const clients: Client[] = [];

beforeAll(async () => {
  server = await startServer({ env: { MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES) } });
  alice = await server.mintKey("alice@example.com");
  bob = await server.mintKey("bob@example.com");
  reader = await server.mintKey("alice@example.com", "--scope", "files.read");
  for (const name of ["lister", "busy", "carol"] as const) fresh[name] = await server.mintKey(`${name}@example.com`);
  expiring = await server.mintKey("alice@example.com", "--ttl", "1s");
}, 60_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.[Symbol.asyncDispose]();
});

/** An SDK client connected to `/mcp` with `key` (initialize, then initialized). */
async function connect(key: string): Promise<Client> {
  const mcp = new Client({ name: "cubby-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  await mcp.connect(transport);
  clients.push(mcp);
  return mcp;
}

async function call(mcp: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await mcp.callTool({ name, arguments: args })) as CallToolResult;
}

/** The structured result of a call that succeeded; its text content is the same JSON. */
async function ok<T>(mcp: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const result = await call(mcp, name, args);
  expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
  expect(result.content).toEqual([{ type: "text", text: JSON.stringify(result.structuredContent) }]);
  return result.structuredContent as T;
}

/** The message of a call that failed as a tool error. */
async function toolError(mcp: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = await call(mcp, name, args);
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const [first] = result.content as { type: string; text: string }[];
  return first!.text;
}

const rest = (key: string | undefined, path: string, init?: RequestInit) => client(server, key).fetch(path, init);
const restFiles = async (key: string, query = "") => (await (await rest(key, `/v1/files${query}`)).json()) as { files: FileJson[]; next_page_token: string };


describe("tools", () => {
  test("tools/list: the ten tools, with their input schemas", async () => {
    const { tools } = await (await connect(alice)).listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "create_folder",
      "create_share_link",
      "delete_file",
      "get_file",
      "list_files",
      "list_folders",
      "move_file",
      "publish_file",
      "unpublish_file",
      "upload_file",
    ]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get("upload_file")!.description).toContain(`at most ${MAX_UPLOAD_BYTES} bytes`);
    const upload = byName.get("upload_file")!.inputSchema;
    expect(upload.required).toEqual(["name"]);
    expect(Object.keys(upload.properties!).sort()).toEqual(["content", "content_base64", "content_type", "expire_time", "name", "slug", "ttl", "visibility"]);
    expect(upload.properties!.visibility).toMatchObject({ enum: ["private", "internal", "public"] });
    for (const name of ["get_file", "publish_file", "unpublish_file", "delete_file", "create_share_link"]) {
      expect(byName.get(name)!.inputSchema.required).toEqual(["id"]);
    }
    expect(byName.get("list_files")!.inputSchema.required ?? []).toEqual([]);
    expect(byName.get("list_files")!.annotations?.readOnlyHint).toBe(true);
    expect(byName.get("delete_file")!.annotations?.destructiveHint).toBe(true);
    expect(Object.keys(byName.get("get_file")!.outputSchema!.properties!)).toEqual(["id", "slug", "url", "name", "content_type", "size", "checksum", "visibility", "created_at", "updated_at"]);
  });

  test("upload_file with text: the File JSON REST shows, and its URL serves the text as UTF-8", async () => {
    const mcp = await connect(alice);
    const text = "Grüße, agent ✓\n";
    const file = await ok<FileJson>(mcp, "upload_file", { name: "greeting.txt", content: text });
    expect(file).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{21}$/),
      slug: "",
      url: `${server.url}/${file.id}`,
      name: "greeting.txt",
      content_type: "text/plain; charset=utf-8",
      size: String(Buffer.byteLength(text)),
      checksum: checksumOf(text),
      visibility: "internal",
      created_at: expect.stringMatching(/Z$/),
      updated_at: file.created_at,
    });
    expect(await (await rest(alice, `/v1/files/${file.id}`)).json()).toEqual(file);
    const res = await rest(alice, new URL(file.url).pathname);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await res.text()).toBe(text);
  });

  test("upload_file with content_base64, content_type, visibility and slug: the URL serves the bytes", async () => {
    const mcp = await connect(alice);
    const bytes = crypto.getRandomValues(new Uint8Array(3000));
    const file = await ok<FileJson>(mcp, "upload_file", {
      name: "noise.bin",
      content_base64: Buffer.from(bytes).toString("base64"),
      content_type: "image/png",
      visibility: "private",
      slug: "noise",
    });
    expect(file).toMatchObject({ name: "noise.bin", slug: "noise", url: `${server.url}/${file.id}/noise`, content_type: "image/png", size: "3000", checksum: checksumOf(bytes), visibility: "private" });
    expect((await fetch(file.url)).status).toBe(401);
    const res = await rest(alice, new URL(file.url).pathname);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);
    // Unpadded base64 and line breaks are fine too; empty content makes an empty file.
    expect(await ok<FileJson>(mcp, "upload_file", { name: "abc", content_base64: "YW\nJj" })).toMatchObject({ size: "3", checksum: checksumOf("abc"), content_type: "application/octet-stream" });
    expect(await ok<FileJson>(mcp, "upload_file", { name: "empty", content: "" })).toMatchObject({ size: "0", checksum: "AAAAAA==" });
  });

  test("list_files pages like GET /v1/files (page_size, page_token) and filters by q", async () => {
    const key = fresh.lister;
    const mcp = await connect(key);
    for (const name of ["one.md", "two.md", "three.txt"]) await ok<FileJson>(mcp, "upload_file", { name, content: name });
    const first = await ok<{ files: FileJson[]; next_page_token: string }>(mcp, "list_files", { page_size: 2 });
    expect(first).toEqual(await restFiles(key, "?page_size=2"));
    expect(first.files.map((f) => f.name)).toEqual(["three.txt", "two.md"]);
    const second = await ok<{ files: FileJson[]; next_page_token: string }>(mcp, "list_files", { page_size: 2, page_token: first.next_page_token });
    expect(second).toEqual({ files: [expect.objectContaining({ name: "one.md" })], next_page_token: "" });
    expect((await ok<{ files: FileJson[] }>(mcp, "list_files", { q: ".MD" })).files.map((f) => f.name)).toEqual(["two.md", "one.md"]);
    expect((await ok<{ files: FileJson[] }>(mcp, "list_files", {})).files).toHaveLength(3);
    expect(await toolError(mcp, "list_files", { page_token: "nonsense!" })).toBe("page_token: not a token this server issued");
    expect(await toolError(mcp, "list_files", { page_size: 1001 })).toMatch(/page_size/);
  });

  test("get_file, publish_file, unpublish_file: the visibility REST and the content URL see", async () => {
    const mcp = await connect(alice);
    const file = await ok<FileJson>(mcp, "upload_file", { name: "post.txt", content: "hello world", visibility: "private" });
    expect(await ok<FileJson>(mcp, "get_file", { id: file.id })).toEqual(file);
    expect((await fetch(file.url)).status).toBe(401);

    const published = await ok<FileJson>(mcp, "publish_file", { id: file.id });
    expect(published).toEqual({ ...file, visibility: "public", updated_at: expect.any(String) });
    expect(await (await rest(alice, `/v1/files/${file.id}`)).json()).toEqual(published);
    const anonymous = await fetch(file.url);
    expect(anonymous.status).toBe(200);
    expect(await anonymous.text()).toBe("hello world");

    const unpublished = await ok<FileJson>(mcp, "unpublish_file", { id: file.id });
    expect(unpublished.visibility).toBe("internal");
    expect(await (await rest(alice, `/v1/files/${file.id}`)).json()).toEqual(unpublished);
    expect((await fetch(file.url)).status).toBe(401);
  });

  test("create_share_link: the Share JSON, and its URL serves the file to anyone until the limit", async () => {
    const mcp = await connect(alice);
    const file = await ok<FileJson>(mcp, "upload_file", { name: "secret.txt", content: "for your eyes", visibility: "private" });
    const share = await ok<ShareJson>(mcp, "create_share_link", { id: file.id, ttl: "1h", max_downloads: 1 });
    expect(share).toEqual({
      id: expect.any(String),
      file_id: file.id,
      folder_id: "",
      url: expect.stringMatching(new RegExp(`^${server.url}/s/[A-Za-z0-9_-]{32}$`)),
      expire_time: expect.stringMatching(/Z$/),
      max_downloads: 1,
      download_count: 0,
      has_password: false,
      created_at: expect.stringMatching(/Z$/),
    });
    expect(await (await rest(alice, `/v1/files/${file.id}/shares`)).json()).toEqual({ shares: [share] });
    const got = await fetch(share.url);
    expect(got.status).toBe(200);
    expect(await got.text()).toBe("for your eyes");
    expect((await fetch(share.url)).status).toBe(410);

    const guarded = await ok<ShareJson>(mcp, "create_share_link", { id: file.id, password: "open sesame" });
    expect(guarded).toMatchObject({ has_password: true, max_downloads: null, expire_time: "" });
    expect((await fetch(guarded.url, { headers: { authorization: `Basic ${btoa(":open sesame")}` } })).status).toBe(200);
    expect(await toolError(mcp, "create_share_link", { id: file.id, max_downloads: 0 })).toMatch(/^max_downloads: a whole number from 1/);
    expect(await toolError(mcp, "create_share_link", { id: file.id, ttl: "soon" })).toMatch(/ttl/);
  });

  test("concurrent calls from one client each get their own answer (stateless: no shared session)", async () => {
    const key = fresh.busy;
    const mcp = await connect(key);
    const made = await Promise.all(Array.from({ length: 20 }, (_, i) => ok<FileJson>(mcp, "upload_file", { name: `n${i}.txt`, content: `content ${i}` })));
    expect(made.map((f) => f.name)).toEqual(Array.from({ length: 20 }, (_, i) => `n${i}.txt`));
    const got = await Promise.all(made.map((f) => ok<FileJson>(mcp, "get_file", { id: f.id })));
    expect(got).toEqual(made);
    expect((await restFiles(key)).files).toHaveLength(20);
    }, 20_000);

  test("delete_file: {} and then REST 404, the URL 404, get_file not found", async () => {
    const mcp = await connect(alice);
    const file = await ok<FileJson>(mcp, "upload_file", { name: "gone.txt", content: "bye" });
    expect(await ok<object>(mcp, "delete_file", { id: file.id })).toEqual({});
    expect((await rest(alice, `/v1/files/${file.id}`)).status).toBe(404);
    expect((await rest(alice, `/${file.id}`)).status).toBe(404);
    expect(await toolError(mcp, "get_file", { id: file.id })).toBe("file not found");
    expect(await toolError(mcp, "delete_file", { id: file.id })).toBe("file not found");
  });
});

describe("authentication and authorization", () => {
  // CONTRACT §10, issue 25 item 5: exposing content needs files.read as well as files.write.
  test("a files.write-only key: publish_file, unpublish_file and create_share_link are refused, and the file stays private", async () => {
    const writeOnly = await server.mintKey("alice@example.com", "--scope", "files.write");
    const mcp = await connect(writeOnly);
    const made = await ok<FileJson>(mcp, "upload_file", { content: "nightly dump", name: "dump.sql", visibility: "private" });
    for (const tool of ["publish_file", "unpublish_file", "create_share_link"]) {
      expect({ tool, error: await toolError(mcp, tool, { id: made.id }) }).toEqual({ tool, error: expect.stringContaining("this key lacks files.read") });
    }
    expect(((await (await rest(alice, `/v1/files/${made.id}`)).json()) as FileJson).visibility).toBe("private");
    expect((await fetch(`${server.url}/${made.id}`)).status).toBe(401);
  });

  const initialize = (headers: Record<string, string>, method = "POST") =>
    fetch(`${server.url}/mcp`, {
      method,
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body:
        method === "POST"
          ? JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } } })
          : undefined,
    });

  test("401 with WWW-Authenticate without a key, with a garbage, revoked or expired key, and with only a session cookie", async () => {
    const revoked = await server.mintKey("alice@example.com", "--name", "to-revoke");
    const listed = await runCli(["keys", "list", "--email", "alice@example.com", "--data-dir", server.dataDir]);
    const id = listed.stdout.split("\n").find((l) => l.includes("\tto-revoke\t"))!.split("\t")[0]!;
    expect((await runCli(["keys", "revoke", id, "--data-dir", server.dataDir])).code).toBe(0);
    const expired = expiring;
    await waitFor(async () => (await rest(expired, "/v1/files")).status === 401, "the 1-second key to expire", 10_000, 50);

    const cases: [Record<string, string>, string][] = [
      [{}, "missing credentials: send Authorization: Bearer <API key> (/mcp takes API keys, not sign-in cookies)"],
      [{ cookie: "cubby_session=whatever" }, "missing credentials: send Authorization: Bearer <API key> (/mcp takes API keys, not sign-in cookies)"],
      [{ authorization: "Bearer cubby_garbage" }, "invalid or revoked credentials"],
      [{ authorization: `Bearer ${revoked}` }, "invalid or revoked credentials"],
      [{ authorization: `Bearer ${expired}` }, "invalid or revoked credentials"],
      [{ authorization: `Basic ${btoa(`x:${alice}`)}` }, "invalid or revoked credentials"],
    ];
    for (const [headers, message] of cases) {
      for (const method of ["POST", "GET", "DELETE"]) {
        const res = await initialize(headers, method);
        expect([res.status, res.headers.get("www-authenticate"), await res.json()]).toEqual([401, 'Bearer realm="cubby"', { code: 16, message, details: [] }]);
      }
    }
    await expect(connect("cubby_garbage")).rejects.toThrow(/invalid or revoked credentials/);
  }, 30_000);

  test("a JSON-RPC call as the README's curl makes it; GET and DELETE answer 405; Accept is required", async () => {
    const init = await initialize({ authorization: `Bearer ${alice}` });
    expect(init.status).toBe(200);
    expect(init.headers.get("content-type")).toMatch(/^application\/json/);
    expect(init.headers.get("mcp-session-id")).toBeNull();
    expect(init.headers.get("x-request-id")).toBeTruthy();
    expect(await init.json()).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: "cubby" }, capabilities: { tools: {} } } });

    // Stateless: a tools/list needs no session from an earlier initialize.
    const list = await fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${alice}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    });
    expect(list.status).toBe(200);
    const body = (await list.json()) as { result: { tools: { name: string }[] } };
    expect(body.result.tools).toHaveLength(10);

    for (const method of ["GET", "DELETE"]) {
      const res = await initialize({ authorization: `Bearer ${alice}` }, method);
      expect([res.status, res.headers.get("allow")]).toEqual([405, "POST"]);
      expect(await res.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 }, id: null });
    }
    expect((await initialize({ authorization: `Bearer ${alice}`, accept: "application/json" })).status).toBe(406);
    expect((await initialize({ authorization: `Bearer ${alice}`, "content-type": "text/plain" })).status).toBe(415);
  });

  test("a files.read key lists and gets, and is refused every change with REST's message; nothing is stored", async () => {
    const owner = await connect(alice);
    const file = await ok<FileJson>(owner, "upload_file", { name: "mine.txt", content: "mine", visibility: "private" });
    const mcp = await connect(reader);
    expect((await ok<{ files: FileJson[] }>(mcp, "list_files", {})).files.map((f) => f.id)).toContain(file.id);
    expect(await ok<FileJson>(mcp, "get_file", { id: file.id })).toEqual(file);

    const rows = await restFiles(alice, "?page_size=1000");
    const blobs = new Set(await blobNames(server.dataDir));
    const rest403 = (await (await rest(reader, "/v1/files?name=x", { method: "POST", body: "x" })).json()) as { message: string };
    expect(rest403.message).toBe("this key lacks files.write");
    expect(await toolError(mcp, "upload_file", { name: "nope.txt", content: "nope" })).toBe(rest403.message);
    for (const tool of ["publish_file", "unpublish_file", "create_share_link", "delete_file"]) {
      expect(await toolError(mcp, tool, { id: file.id })).toBe(rest403.message);
    }
    expect(await restFiles(alice, "?page_size=1000")).toEqual(rows);
    expect((await blobNames(server.dataDir)).filter((b) => !blobs.has(b))).toEqual([]);
    expect(await (await rest(alice, `/v1/files/${file.id}/shares`)).json()).toEqual({ shares: [] });
  });

  test("another user's private file answers exactly like a file that does not exist", async () => {
    const file = await ok<FileJson>(await connect(alice), "upload_file", { name: "diary.txt", content: "dear diary", visibility: "private" });
    const mcp = await connect(bob);
    const missing = "A".repeat(21);
    for (const tool of ["get_file", "publish_file", "unpublish_file", "create_share_link", "delete_file"]) {
      const theirs = await toolError(mcp, tool, { id: file.id });
      expect(theirs).toBe(await toolError(mcp, tool, { id: missing }));
      expect(theirs).toBe("file not found");
    }
    expect((await ok<{ files: FileJson[] }>(mcp, "list_files", {})).files.map((f) => f.id)).not.toContain(file.id);
    expect(await (await rest(alice, `/v1/files/${file.id}`)).json()).toEqual(file);
    // An internal file is visible to another user, but only its owner may change it (as REST: 403).
    const shared = await ok<FileJson>(await connect(alice), "upload_file", { name: "team.txt", content: "team" });
    expect(await ok<FileJson>(mcp, "get_file", { id: shared.id })).toEqual(shared);
    expect(await toolError(mcp, "delete_file", { id: shared.id })).toBe("only the file's owner can change it");
  });
});

describe("bad input", () => {
  test("is a tool error with a clear message, and stores nothing", async () => {
    const key = fresh.carol;
    const mcp = await connect(key);
    const blobs = new Set(await blobNames(server.dataDir));
    const cases: [string, Record<string, unknown>, RegExp | string][] = [
      ["upload_file", { content: "no name" }, /Input validation error.*name/s],
      ["upload_file", { name: "", content: "x" }, /Input validation error.*name/s],
      ["upload_file", { name: "a/b", content: "x" }, 'name: "/" and control characters are not allowed'],
      ["upload_file", { name: "x" }, "give the file's content as content (text) or as content_base64"],
      ["upload_file", { name: "x", content: "a", content_base64: "YQ==" }, "give the content as content (text) or as content_base64, not both"],
      ["upload_file", { name: "x", content_base64: "not base64!" }, "content_base64: not base64 (RFC 4648 §4: A-Z a-z 0-9 + /, optionally padded with =)"],
      ["upload_file", { name: "x", content_base64: "YQ=" }, /^content_base64: not base64/],
      ["upload_file", { name: "x", content_base64: "YWJjZ" }, /^content_base64: not base64/],
      ["upload_file", { name: "x", content: "\ud800" }, /^content: not valid Unicode/],
      ["upload_file", { name: "x", content: "a", visibility: "secret" }, /Input validation error.*visibility/s],
      ["upload_file", { name: "x", content: "a", content_type: "not a type" }, /^content type: "not a type" is not a media type/],
      ["upload_file", { name: "x", content: "a", slug: "a b" }, /^slug: only/],
      ["upload_file", { name: "x", content: "a", ttl: "0s" }, /ttl/],
      ["upload_file", { name: "x", content: "a", colour: "red" }, /Input validation error.*colour/s],
      ["upload_file", { name: "x", content: 5 }, /Input validation error.*content/s],
      ["upload_file", { name: "big", content: "x".repeat(MAX_UPLOAD_BYTES + 1) }, `content is larger than the limit of ${MAX_UPLOAD_BYTES} bytes`],
      ["upload_file", { name: "big", content_base64: Buffer.alloc(MAX_UPLOAD_BYTES + 1).toString("base64") }, `content is larger than the limit of ${MAX_UPLOAD_BYTES} bytes`],
      ["get_file", { id: "short" }, 'id: "short" is not a file ID (21 characters of A-Z a-z 0-9 _ -)'],
      ["get_file", {}, /Input validation error.*id/s],
      ["list_files", { q: "x".repeat(257) }, /^q: the name to search for is at most 256 characters/],
    ];
    for (const [tool, args, message] of cases) {
      const got = await toolError(mcp, tool, args);
      if (typeof message === "string") expect(got).toBe(message);
      else expect(got).toMatch(message);
    }
    const unknown = (await call(mcp, "rename_file", { id: "x" })) as CallToolResult;
    expect(unknown).toMatchObject({ isError: true, content: [{ type: "text", text: expect.stringMatching(/rename_file not found/) }] });
    expect(await restFiles(key)).toEqual({ files: [], next_page_token: "" });
    expect((await blobNames(server.dataDir)).filter((b) => !blobs.has(b))).toEqual([]);
    expect(server.errors()).not.toMatch(/error=internal/);
  }, 20_000);

  test("malformed JSON-RPC answers 400, a body over the request limit 413, and nothing 500s", async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${alice}`, "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body,
      });
    expect((await post("{not json")).status).toBe(400);
    expect((await post(JSON.stringify({ hello: "world" }))).status).toBe(400);
    const huge = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "upload_file", arguments: { name: "x", content: "y".repeat(17 * 1024 * 1024) } } }));
    expect(huge.status).toBe(413);
    expect(server.errors()).not.toMatch(/error=internal/);
  });
});
