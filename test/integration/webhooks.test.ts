// test-lists: workers postgres-s3
// Webhooks (CONTRACT §13) through a real server on the run's backend and a real receiver on
// loopback (allowed by WEBHOOK_ALLOWED_HOSTS) that verifies every signature with the
// standardwebhooks verifier: the REST endpoints, every event type from every surface that causes
// it, the target check, and retries of a receiver that is down or slow.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import fs from "node:fs";
import path from "node:path";
import type { UploadLinkJson } from "../../src/domain/upload-link.ts";
import { CreateFileRequestSchema, FileService } from "../../src/gen/cubby/v1/files_pb.ts";
import type { NewWebhookJson, WebhookAttemptJson, WebhookJson } from "../../src/domain/webhook.ts";
import { client, startServer, tempDir, type FileJson, type RunningServer } from "../support/server.ts";
import { tusUpload } from "../support/tus.ts";
import { waitFor } from "../support/wait.ts";
import { startReceiver, type Receiver } from "../support/webhook-receiver.ts";

let server: RunningServer;
let receiver: Receiver;
let key: string;
let hook: NewWebhookJson;

beforeAll(async () => {
  receiver = startReceiver();
  server = await startServer({ env: { WEBHOOK_ALLOWED_HOSTS: "127.0.0.1", CUBBY_TEST_EXPIRY_SWEEP_MS: "100", CUBBY_TEST_WEBHOOK_RETRY_MS: "200" } });
  key = await server.mintKey("alice@example.com");
  hook = await createHook(receiver.url());
  receiver.secret = hook.secret;
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  await receiver?.[Symbol.asyncDispose]();
});

async function post(pathname: string, body: unknown, as = key): Promise<Response> {
  return client(server, as).fetch(pathname, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

async function createHook(url: string, events?: string[], as = key): Promise<NewWebhookJson> {
  const res = await post("/v1/webhooks", events === undefined ? { url } : { url, events }, as);
  if (res.status !== 200) throw new Error(`webhook: ${res.status} ${await res.text()}`);
  return (await res.json()) as NewWebhookJson;
}

/** The first accepted delivery of `type` about `fileId`. */
function eventOf(type: string, fileId: string) {
  return waitFor(() => receiver.accepted().find((r) => r.type === type && r.data.file?.id === fileId), `${type} of ${fileId}`, 15_000);
}

describe("the REST endpoints", () => {
  test("create shows the secret once; list and delete; bad input is 400 and creates nothing", async () => {
    expect(hook).toEqual({
      id: expect.stringMatching(/^wh_[A-Za-z0-9_-]{21}$/),
      url: receiver.url(),
      events: ["file.created", "file.updated", "file.deleted", "share.downloaded", "folder.shared"],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      created_at: expect.stringMatching(/Z$/),
    });
    const other = await createHook(receiver.url("/other"), ["file.deleted"]);
    const listed = (await (await client(server, key).fetch("/v1/webhooks")).json()) as { webhooks: WebhookJson[] };
    expect(listed.webhooks).toEqual([
      { id: hook.id, url: hook.url, events: hook.events, created_at: hook.created_at },
      { id: other.id, url: other.url, events: ["file.deleted"], created_at: other.created_at },
    ]);
    for (const [body, message] of [
      [{ url: "ftp://127.0.0.1/x" }, "url: only http and https URLs are allowed"],
      [{ url: "http://127.0.0.1/x", events: ["file.exploded"] }, 'events: unknown event type "file.exploded" (known: file.created, file.updated, file.deleted, share.downloaded, folder.shared)'],
      [{ url: "http://127.0.0.1/x", events: [] }, "events: a non-empty array of file.created, file.updated, file.deleted, share.downloaded, folder.shared"],
      [{ url: "http://127.0.0.1/x", extra: 1 }, 'body: unknown field "extra"'],
      [{}, "url: an http or https URL is required"],
    ] as const) {
      const res = await post("/v1/webhooks", body);
      expect({ status: res.status, body: await res.json() }).toEqual({ status: 400, body: { code: 3, message, details: [] } });
    }
    expect((await client(server, key).fetch(`/v1/webhooks/${other.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await client(server, key).fetch(`/v1/webhooks/${other.id}`, { method: "DELETE" })).status).toBe(404);
    const after = (await (await client(server, key).fetch("/v1/webhooks")).json()) as { webhooks: WebhookJson[] };
    expect(after.webhooks.map((w) => w.id)).toEqual([hook.id]);
  });

  test("another user sees none of them; a read-only key may list but not create", async () => {
    const bob = await server.mintKey("bob@example.com");
    expect(await (await client(server, bob).fetch("/v1/webhooks")).json()).toEqual({ webhooks: [] });
    expect((await client(server, bob).fetch(`/v1/webhooks/${hook.id}/deliveries`)).status).toBe(404);
    expect((await client(server, bob).fetch(`/v1/webhooks/${hook.id}`, { method: "DELETE" })).status).toBe(404);
    const reader = await server.mintKey("alice@example.com", "--scope", "files.read");
    expect((await client(server, reader).fetch("/v1/webhooks")).status).toBe(200);
    expect((await post("/v1/webhooks", { url: receiver.url() }, reader)).status).toBe(403);
    expect((await client(server).fetch("/v1/webhooks")).status).toBe(401);
  });
});

describe("every event type, from every surface, signed", () => {
  test("REST: file.created, file.updated (content replaced), file.deleted; the deliveries log", async () => {
    const file = await client(server, key).upload("first", "?name=a.txt");
    const created = await eventOf("file.created", file.id);
    expect({ verified: created.verified, host: created.host, id: /^evt_[A-Za-z0-9_-]{21}$/.test(created.id) }).toEqual({ verified: true, host: `127.0.0.1:${receiver.port}`, id: true });
    expect(created.data).toEqual({ file, upload_link_id: null });
    // A metadata PATCH is not a content replacement: no event.
    await client(server, key).fetch(`/v1/files/${file.id}`, { method: "PATCH", headers: { "content-type": "application/json" }, body: '{"name":"b.txt"}' });
    expect((await client(server, key).fetch(`/v1/files/${file.id}/content`, { method: "PUT", body: "second" })).status).toBe(200);
    const updated = await eventOf("file.updated", file.id);
    expect(updated.data.file).toMatchObject({ id: file.id, size: "6", name: "b.txt" });
    expect((await client(server, key).fetch(`/v1/files/${file.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await eventOf("file.deleted", file.id)).data).toMatchObject({ reason: "deleted", file: { id: file.id } });
    // In order, each once.
    expect(receiver.accepted().filter((r) => r.data.file?.id === file.id).map((r) => r.type)).toEqual(["file.created", "file.updated", "file.deleted"]);
    const log = (await (await client(server, key).fetch(`/v1/webhooks/${hook.id}/deliveries`)).json()) as { deliveries: WebhookAttemptJson[] };
    expect(log.deliveries.find((d) => d.event_id === created.id)).toEqual({
      event_id: created.id,
      type: "file.created",
      attempted_at: expect.stringMatching(/Z$/),
      status: 204,
      error: "",
      duration_ms: expect.any(Number),
    });
  });

  test("RPC (gRPC over h2c) CreateFile and UpdateFileContent: file.created, file.updated", async () => {
    const rpc = createClient(FileService, createGrpcTransport({ baseUrl: server.url }));
    const auth = { headers: { authorization: `Bearer ${key}` } };
    const created = await rpc.createFile(
      (async function* () {
        yield create(CreateFileRequestSchema, { name: "grpc.txt", content: new TextEncoder().encode("over gRPC") });
      })(),
      auth,
    );
    const id = created.file!.id;
    expect((await eventOf("file.created", id)).data.file).toMatchObject({ id, name: "grpc.txt", size: "9" });
    await rpc.updateFileContent(
      (async function* () {
        yield { id, content: new TextEncoder().encode("replaced over gRPC") };
      })(),
      auth,
    );
    expect((await eventOf("file.updated", id)).data.file).toMatchObject({ id, size: "18" });
  });

  test("RPC (Connect) DeleteFile: file.deleted", async () => {
    const file = await client(server, key).upload("rpc", "?name=rpc.txt");
    const res = await client(server, key).fetch("/cubby.v1.FileService/DeleteFile", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: file.id }) });
    expect(res.status).toBe(200);
    expect((await eventOf("file.deleted", file.id)).verified).toBe(true);
  });

  test("MCP upload_file and delete_file: file.created, file.deleted", async () => {
    const mcp = new Client({ name: "cubby-test", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
    try {
      const result = (await mcp.callTool({ name: "upload_file", arguments: { name: "mcp.txt", content: "from a model" } })) as { structuredContent?: FileJson; content: { text: string }[] };
      const file = result.structuredContent ?? (JSON.parse(result.content[0]!.text) as FileJson);
      expect((await eventOf("file.created", file.id)).data.file).toMatchObject({ id: file.id, name: "mcp.txt" });
      await mcp.callTool({ name: "delete_file", arguments: { id: file.id } });
      expect((await eventOf("file.deleted", file.id)).verified).toBe(true);
    } finally {
      await mcp.close();
    }
  });

  test("tus: file.created once the last byte is in", async () => {
    using dir = tempDir();
    const source = path.join(dir.path, "big.bin");
    fs.writeFileSync(source, crypto.getRandomValues(new Uint8Array(300_000)));
    const done = await tusUpload(source, { endpoint: `${server.url}/v1/uploads`, token: key, chunkSize: 100_000 });
    expect((await eventOf("file.created", done.fileId!)).data.file).toMatchObject({ id: done.fileId, name: "big.bin", size: "300000" });
  });

  test("a guest upload link: file.created with the link's id", async () => {
    const link = (await (await post("/v1/upload-links", {})).json()) as UploadLinkJson;
    const token = link.url.split("/u/")[1]!;
    const res = await fetch(`${server.url}/u/${token}?name=guest.txt`, { method: "POST", body: "from a guest" });
    const file = (await res.json()) as FileJson;
    expect((await eventOf("file.created", file.id)).data).toEqual({ file, upload_link_id: link.id });
  });

  test("a share download: share.downloaded (a download counted, not a HEAD or a range)", async () => {
    const file = await client(server, key).upload("shared", "?name=s.txt&visibility=private");
    const share = (await (await post(`/v1/files/${file.id}/shares`, {})).json()) as { id: string; url: string };
    expect((await fetch(share.url, { method: "HEAD" })).status).toBe(200);
    expect((await fetch(share.url, { headers: { range: "bytes=2-" } })).status).toBe(206);
    expect((await fetch(share.url)).status).toBe(200);
    const downloaded = await eventOf("share.downloaded", file.id);
    expect(downloaded.data).toEqual({ share_id: share.id, file });
    await eventOf("file.created", file.id);
    expect(receiver.accepted().filter((r) => r.type === "share.downloaded" && r.data.file?.id === file.id)).toHaveLength(1);
  });

  test("a folder shared: folder.shared; its ZIP downloaded: share.downloaded naming the folder", async () => {
    const folder = (await (await post("/v1/folders", { name: "to share" })).json()) as { id: string };
    const share = (await (await post(`/v1/folders/${folder.id}/shares`, {})).json()) as { id: string; url: string };
    const aboutFolder = (type: string) => waitFor(() => receiver.accepted().find((r) => r.type === type && (r.data.folder as { id?: string } | undefined)?.id === folder.id), `${type} of ${folder.id}`, 15_000);
    expect((await aboutFolder("folder.shared")).data).toEqual({ share_id: share.id, folder: { id: folder.id, name: "to share", parent_id: "" } });
    const zip = await fetch(`${share.url}?download=zip`);
    expect(zip.status).toBe(200);
    await zip.arrayBuffer();
    expect((await aboutFolder("share.downloaded")).data).toEqual({ share_id: share.id, folder: { id: folder.id, name: "to share", parent_id: "" } });
  });

  test("the expiry sweep: file.deleted with reason expired", async () => {
    const file = await client(server, key).upload("brief", "?name=brief.txt&ttl=1s");
    expect((await eventOf("file.deleted", file.id)).data).toMatchObject({ reason: "expired", file: { id: file.id } });
  });

  test("a webhook gets only the types it asked for", async () => {
    await using only = startReceiver();
    const deletions = await createHook(only.url(), ["file.deleted"]);
    only.secret = deletions.secret;
    try {
      const file = await client(server, key).upload("x", "?name=only.txt");
      await client(server, key).fetch(`/v1/files/${file.id}`, { method: "DELETE" });
      await waitFor(() => only.accepted().length === 1, "the deletion at the second receiver", 15_000);
      await eventOf("file.deleted", file.id);
      expect(only.received.map((r) => [r.type, r.verified])).toEqual([["file.deleted", true]]);
    } finally {
      await client(server, key).fetch(`/v1/webhooks/${deletions.id}`, { method: "DELETE" });
    }
  });
});

/** The deliveries log of webhook `id`. */
async function attemptsOf(id: string): Promise<WebhookAttemptJson[]> {
  return ((await (await client(server, key).fetch(`/v1/webhooks/${id}/deliveries`)).json()) as { deliveries: WebhookAttemptJson[] }).deliveries;
}

/** A receiver with its own webhook (of every type) on the main server; deleting it stops its retries. */
async function ownHook(): Promise<{ receiver: Receiver; hook: NewWebhookJson } & AsyncDisposable> {
  const r = startReceiver();
  const h = await createHook(r.url());
  r.secret = h.secret;
  return {
    receiver: r,
    hook: h,
    async [Symbol.asyncDispose]() {
      await client(server, key).fetch(`/v1/webhooks/${h.id}`, { method: "DELETE" });
      await r[Symbol.asyncDispose]();
    },
  };
}

describe("targets (WEBHOOK_ALLOWED_HOSTS=127.0.0.1 here)", () => {
  test("refused at creation: loopback, private, link-local, ULA and other non-public addresses not allowed", async () => {
    for (const url of ["http://127.0.0.2/", "http://[::1]/", "http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/", "http://169.254.169.254/latest", "http://[fe80::1]/", "http://[fd00::1]/", "http://100.64.0.1/", "http://0.0.0.0/", "http://[::ffff:127.0.0.2]/"]) {
      const res = await post("/v1/webhooks", { url });
      const body = (await res.json()) as { message: string };
      expect({ url, status: res.status, refused: body.message.endsWith("is not a public address; WEBHOOK_ALLOWED_HOSTS can allow it") }).toEqual({ url, status: 400, refused: true });
    }
  });

  test("a redirect is not followed: the attempt fails with the 3xx and the other address gets nothing", async () => {
    await using elsewhere = startReceiver();
    await using redirecting = await ownHook();
    redirecting.receiver.answer = () => new Response(null, { status: 302, headers: { location: elsewhere.url("/stolen") } });
    const file = await client(server, key).upload("r", "?name=redirect.txt");
    const attempt = await waitFor(async () => (await attemptsOf(redirecting.hook.id)).find((a) => a.status === 302), "the redirected attempt", 15_000);
    expect(attempt).toMatchObject({ type: "file.created", error: "HTTP 302: redirects are not followed" });
    await eventOf("file.created", file.id);
    expect(elsewhere.received).toEqual([]);
  });
});

describe("no event lost", () => {
  test("the receiver down for a while, then up: every event delivered once, in order per file", async () => {
    await using down = await ownHook();
    let up = false;
    down.receiver.answer = () => new Response(null, { status: up ? 204 : 503 });
    const files: FileJson[] = [];
    for (let i = 0; i < 5; i++) {
      const f = await client(server, key).upload(`v0-${i}`, `?name=down-${i}.txt`);
      for (const v of [1, 2]) await client(server, key).fetch(`/v1/files/${f.id}/content`, { method: "PUT", body: `v${v}-${i}` });
      await client(server, key).fetch(`/v1/files/${f.id}`, { method: "DELETE" });
      files.push(f);
    }
    // Each file's first event is tried and retried while the later ones wait behind it.
    await waitFor(() => down.receiver.received.length >= 15, "three refused attempts per file", 20_000);
    expect(new Set(down.receiver.received.map((r) => r.type))).toEqual(new Set(["file.created"]));
    up = true;
    await waitFor(() => new Set(down.receiver.accepted().map((r) => r.id)).size === 20, "all 20 events after the receiver came back", 30_000);
    const accepted = down.receiver.accepted();
    for (const f of files) {
      expect(accepted.filter((r) => r.data.file?.id === f.id).map((r) => r.type)).toEqual(["file.created", "file.updated", "file.updated", "file.deleted"]);
    }
    expect(accepted.every((r) => r.verified)).toBe(true);
    console.log(`receiver down then up: 20 events sent, ${new Set(accepted.map((r) => r.id)).size} received, ${accepted.length - new Set(accepted.map((r) => r.id)).size} duplicated, ${down.receiver.received.length - accepted.length} attempts refused while down`);
  }, 60_000);

  test("a slow receiver (answers after 30 s) and a silent one time out at 10 s without holding requests or descriptors", async () => {
    await using slow = await ownHook();
    await using silent = await ownHook();
    slow.receiver.answer = () => Bun.sleep(30_000).then(() => new Response(null, { status: 204 }));
    silent.receiver.answer = () => new Promise<Response>(() => {});
    const pid = server.servingPids()[0]!;
    const descriptors = () => fs.readdirSync(`/proc/${pid}/fd`).length;
    const before = descriptors();
    await client(server, key).upload("s", "?name=slow.txt");
    await waitFor(() => slow.receiver.open() === 1 && silent.receiver.open() === 1, "both receivers holding a delivery");
    // Other webhooks' deliveries go on meanwhile: the main receiver gets a new file's event now.
    const other = await client(server, key).upload("o", "?name=meanwhile.txt");
    const started = performance.now();
    await eventOf("file.created", other.id);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(slow.receiver.open() + silent.receiver.open()).toBeGreaterThanOrEqual(2);
    // Requests are answered meanwhile, and quickly.
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      expect((await client(server, key).fetch("/v1/files?page_size=1")).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1000);
    }
    for (const h of [slow, silent]) {
      const timedOut = await waitFor(async () => (await attemptsOf(h.hook.id)).find((a) => a.error !== ""), "an attempt that timed out", 20_000);
      expect(timedOut).toMatchObject({ status: null, error: "no answer within 10 s" });
      expect(timedOut.duration_ms).toBeGreaterThanOrEqual(9_900);
      expect(timedOut.duration_ms).toBeLessThan(12_000);
    }
    // Each retry holds one connection at most; the timed-out ones were closed.
    expect(descriptors()).toBeLessThan(before + 8);
  }, 60_000);
});
