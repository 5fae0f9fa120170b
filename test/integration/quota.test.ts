// test-lists: workers postgres-s3
// Storage quotas (CONTRACT §9) against the real server on the configured stores: QUOTA_BYTES
// for every user; what counts (files, a replaced file's new size, the Upload-Length of
// unfinished tus uploads, files from guest upload links); 413 / code 8 "storage quota exceeded"
// with nothing stored, on REST, tus, guest uploads, gRPC and MCP; parallel uploads that each fit but
// not together never both pass; GET /v1/usage.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { CreateFileRequestSchema, FileService } from "../../src/gen/cubby/v1/files_pb.ts";
import type { UsageJson } from "../../src/http/usage-routes.ts";
import { BACKEND, blobNames } from "../support/backend.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { createUpload, patchChunk, tusFetch } from "../support/tus.ts";
import { waitFor } from "../support/wait.ts";

const QUOTA = 1000;
let server: RunningServer;
let users = 0;

beforeAll(async () => {
  server = await startServer({ env: { QUOTA_BYTES: String(QUOTA) } });
});
afterAll(() => server?.[Symbol.asyncDispose]());

/** A key of a new user, who has QUOTA_BYTES and nothing stored. */
const newUser = () => server.mintKey(`quota-${++users}@example.com`);
const bytes = (n: number) => "x".repeat(n);

async function usage(key: string): Promise<UsageJson> {
  const res = await client(server, key).fetch("/v1/usage");
  expect(res.status).toBe(200);
  return (await res.json()) as UsageJson;
}

/** POST /v1/files; `streamed` sends the body chunked, without Content-Length. */
async function upload(key: string, size: number, streamed = false): Promise<{ status: number; body: unknown }> {
  const content = bytes(size);
  const body = streamed
    ? new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new TextEncoder().encode(content));
          c.close();
        },
      })
    : content;
  const res = await client(server, key).fetch("/v1/files", { method: "POST", body, headers: { "content-type": "text/plain" } });
  return { status: res.status, body: await res.json() };
}

const exceeded = (used: number, needs?: number) => ({
  status: 413,
  body: { code: 8, message: `storage quota exceeded: ${used} of ${QUOTA} bytes used${needs === undefined ? "" : `; this upload needs ${needs} more`}`, details: [] },
});

test("an upload that would pass the quota gets 413, code 8, and stores nothing; one that fits exactly passes", async () => {
  const key = await newUser();
  expect(await usage(key)).toEqual({ files: 0, file_bytes: 0, reserved_bytes: 0, dav_bytes: 0, used_bytes: 0, quota_bytes: QUOTA });
  expect((await upload(key, 600)).status).toBe(200);
  const before = await blobNames(server.dataDir);
  expect(await upload(key, 401)).toEqual(exceeded(600));
  expect(await upload(key, 401, true)).toEqual(exceeded(600));
  expect(await blobNames(server.dataDir)).toEqual(before);
  expect((await upload(key, 400)).status).toBe(200);
  // Full: an empty file adds nothing and still passes.
  expect((await upload(key, 0)).status).toBe(200);
  expect(await usage(key)).toEqual({ files: 3, file_bytes: QUOTA, reserved_bytes: 0, dav_bytes: 0, used_bytes: QUOTA, quota_bytes: QUOTA });
  const listed = (await (await client(server, key).fetch("/v1/files")).json()) as { files: FileJson[] };
  expect(listed.files.map((f) => f.size)).toEqual(["0", "400", "600"]);
});

test.each([
  ["with Content-Length", false],
  ["streamed, without Content-Length", true],
])("parallel uploads that each fit but not together: exactly one passes (%s)", async (_, streamed) => {
  const key = await newUser();
  const results = await Promise.all(Array.from({ length: 6 }, () => upload(key, 600, streamed)));
  expect(results.map((r) => r.status).sort()).toEqual([200, 413, 413, 413, 413, 413]);
  for (const r of results) if (r.status === 413) expect((r.body as { code: number; message: string }).code).toBe(8);
  expect(await usage(key)).toMatchObject({ files: 1, file_bytes: 600 });
});

test("replacing content counts the difference: growing past the quota is refused, shrinking always passes", async () => {
  const key = await newUser();
  const a = await client(server, key).upload(bytes(300));
  await client(server, key).upload(bytes(300));
  const put = async (size: number) => {
    const res = await client(server, key).fetch(`/v1/files/${a.id}/content`, { method: "PUT", body: bytes(size) });
    return { status: res.status, body: await res.json() };
  };
  expect((await put(700)).status).toBe(200); // 300 + 700 = 1000
  expect(await put(701)).toEqual(exceeded(1000));
  expect(await (await client(server, key).fetch(`/${a.id}`)).text()).toBe(bytes(700));
  expect((await put(10)).status).toBe(200);
  expect(await usage(key)).toMatchObject({ files: 2, file_bytes: 310 });
});

test("tus: Upload-Length is reserved at creation, so a creation past the quota gets 413 before any byte; parallel creations never both pass", async () => {
  const key = await newUser();
  const creations = await Promise.all(
    Array.from({ length: 6 }, () => tusFetch(`${server.url}/v1/uploads`, "POST", key, { "upload-length": "600" })),
  );
  expect(creations.map((r) => r.status).sort()).toEqual([201, 413, 413, 413, 413, 413]);
  const refused = creations.find((r) => r.status === 413)!;
  expect(await refused.json()).toEqual(exceeded(600, 600).body);
  expect(await usage(key)).toEqual({ files: 0, file_bytes: 0, reserved_bytes: 600, dav_bytes: 0, used_bytes: 600, quota_bytes: QUOTA });
  // While the reservation holds, a plain upload cannot take its room.
  expect(await upload(key, 401)).toEqual(exceeded(600));
  const url = creations.find((r) => r.status === 201)!.headers.get("location")!;
  expect((await patchChunk(url, key, 0, bytes(600))).status).toBe(204);
  // Finished: the reservation became the file, counted once.
  expect(await usage(key)).toEqual({ files: 1, file_bytes: 600, reserved_bytes: 0, dav_bytes: 0, used_bytes: 600, quota_bytes: QUOTA });
  // Terminating an unfinished upload gives its room back.
  const second = await createUpload(server.url, key, 400);
  expect((await usage(key)).reserved_bytes).toBe(400);
  expect((await tusFetch(second, "DELETE", key)).status).toBe(204);
  expect(await usage(key)).toMatchObject({ reserved_bytes: 0, used_bytes: 600 });
});

test("tus: a last PATCH that began before the upload expired and ends after it is charged, not covered by the lapsed reservation", async () => {
  await using short = await startServer({ env: { QUOTA_BYTES: String(QUOTA), TUS_UPLOAD_EXPIRY_SECONDS: "2" } });
  const key = await short.mintKey("quota-expiry@example.com");
  const api = client(short, key);
  const usageOf = async () => (await (await api.fetch("/v1/usage")).json()) as UsageJson;
  const url = await createUpload(short.url, key, 600);
  let sendRest!: () => void;
  const rest = new Promise<void>((r) => (sendRest = r));
  const body = new ReadableStream<Uint8Array>({
    async start(c) {
      c.enqueue(new Uint8Array(100));
      await rest;
      c.enqueue(new Uint8Array(500));
      c.close();
    },
  });
  const patch = fetch(url, {
    method: "PATCH",
    body,
    duplex: "half",
    headers: { authorization: `Bearer ${key}`, "tus-resumable": "1.0.0", "upload-offset": "0", "content-type": "application/offset+octet-stream", "content-length": "600" },
  } as RequestInit);
  // The reservation lapses with the upload's expiry (2 s) while the PATCH is still sending.
  await waitFor(async () => (await usageOf()).reserved_bytes === 0, "the lapsed reservation to be released", 10_000, 100);
  expect((await api.fetch("/v1/files", { method: "POST", body: bytes(600) })).status).toBe(200);
  sendRest();
  const res = await patch;
  expect({ status: res.status, body: await res.json() }).toEqual(exceeded(600, 600));
  expect(await usageOf()).toMatchObject({ files: 1, file_bytes: 600, reserved_bytes: 0 });
});

test("files arriving through a guest upload link count against the link's owner", async () => {
  const key = await newUser();
  const res = await client(server, key).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  const token = ((await res.json()) as { url: string }).url.split("/u/")[1]!;
  const guest = (size: number) => fetch(`${server.url}/u/${token}?name=g.txt`, { method: "POST", body: bytes(size) });
  expect((await guest(900)).status).toBe(200);
  const over = await guest(101);
  expect({ status: over.status, body: await over.json() }).toEqual(exceeded(900));
  const tus = await tusFetch(`${server.url}/v1/uploads`, "POST", token, { "upload-length": "101" });
  expect({ status: tus.status, body: await tus.json() }).toEqual(exceeded(900, 101));
  expect(await usage(key)).toMatchObject({ files: 1, file_bytes: 900, reserved_bytes: 0 });
});

test("gRPC: CreateFile past the quota fails with RESOURCE_EXHAUSTED and stores nothing", async () => {
  const key = await newUser();
  await client(server, key).upload(bytes(900));
  const before = await blobNames(server.dataDir);
  const rpc = createClient(FileService, createGrpcTransport({ baseUrl: server.url }));
  async function* request() {
    yield create(CreateFileRequestSchema, { name: "big.bin", content: new TextEncoder().encode(bytes(200)) });
  }
  const failure = await rpc.createFile(request(), { headers: { authorization: `Bearer ${key}` } }).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  expect({ code: failure?.code, message: failure?.rawMessage }).toEqual({ code: Code.ResourceExhausted, message: "storage quota exceeded: 900 of 1000 bytes used" });
  expect(await blobNames(server.dataDir)).toEqual(before);
  expect(await usage(key)).toMatchObject({ files: 1, file_bytes: 900 });
});

test("MCP: upload_file past the quota is a tool error with the same message, and stores nothing", async () => {
  const key = await newUser();
  await client(server, key).upload(bytes(900));
  const before = await blobNames(server.dataDir);
  const mcp = new Client({ name: "cubby-quota-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  try {
    const result = (await mcp.callTool({ name: "upload_file", arguments: { name: "big.txt", content: bytes(200) } })) as CallToolResult;
    expect({ isError: result.isError, content: result.content }).toEqual({
      isError: true,
      content: [{ type: "text", text: "storage quota exceeded: 900 of 1000 bytes used" }],
    });
  } finally {
    await mcp.close();
  }
  expect(await blobNames(server.dataDir)).toEqual(before);
  expect(await usage(key)).toMatchObject({ files: 1, file_bytes: 900 });
});

test.if(BACKEND === "postgres-s3")("two servers on one PostgreSQL: parallel uploads and tus creations through both never together pass the quota", async () => {
  await using second = await startServer({ dataDir: server.dataDir, env: { QUOTA_BYTES: String(QUOTA) } });
  const key = await newUser();
  const via = (i: number) => (i % 2 === 0 ? server : second);
  const uploads = await Promise.all(
    Array.from({ length: 6 }, async (_, i) => (await client(via(i), key).fetch("/v1/files", { method: "POST", body: bytes(600) })).status),
  );
  expect(uploads.sort()).toEqual([200, 413, 413, 413, 413, 413]);
  const creations = await Promise.all(Array.from({ length: 6 }, async (_, i) => (await tusFetch(`${via(i).url}/v1/uploads`, "POST", key, { "upload-length": "300" })).status));
  expect(creations.sort()).toEqual([201, 413, 413, 413, 413, 413]);
  expect(await usage(key)).toMatchObject({ files: 1, file_bytes: 600, reserved_bytes: 300, used_bytes: 900 });
}, 60_000);

test("GET /v1/usage needs credentials", async () => {
  const res = await fetch(`${server.url}/v1/usage`);
  expect({ status: res.status, code: ((await res.json()) as { code: number }).code }).toEqual({ status: 401, code: 16 });
});
