// test-lists: workers postgres-s3
// `GET /metrics` and `LOG_FORMAT=json` (CONTRACT §9): what is counted, under which labels, who
// may read it, that Prometheus's own checker accepts it, and that nothing personal leaks.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import http2 from "node:http2";
import path from "node:path";
import { FileService } from "../../src/gen/cubby/v1/files_pb.ts";
import { BACKEND } from "../support/backend.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { waitFor } from "../support/wait.ts";

/** Parses the exposition text into `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function scrape(server: RunningServer, headers: Record<string, string> = {}): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${server.url}/metrics`, { headers });
  return { status: res.status, text: await res.text(), type: res.headers.get("content-type") };
}

const PROMTOOL = Bun.which("promtool");

describe("metrics", () => {
  let server: RunningServer;
  let key: string;
  let file: FileJson;
  const NAME = "quarterly-secret-plan.txt";
  const EMAIL = "metrics-owner@example.com";
  beforeAll(async () => {
    server = await startServer();
    key = await server.mintKey(EMAIL);
    file = await client(server, key).upload("x".repeat(5000), `?visibility=public&name=${NAME}`);
  });
  afterAll(() => server[Symbol.asyncDispose]());

  test("requests are counted by method, route template and status; durations by method and route", async () => {
    const api = client(server, key);
    await (await fetch(file.url)).arrayBuffer();
    const slugged = await fetch(`${file.url}/${NAME}`, { redirect: "manual" });
    await slugged.arrayBuffer();
    await (await api.fetch(`/v1/files/${file.id}`)).arrayBuffer();
    await (await api.fetch("/v1/files/NoSuchFileNoSuchFile1")).arrayBuffer();
    const m = samples((await scrape(server)).text);
    expect(m.get('cubby_http_requests_total{method="POST",route="/v1/files",status="200"}')).toBe(1);
    expect(m.get('cubby_http_requests_total{method="GET",route="/:id",status="200"}')).toBe(1);
    expect(m.get(`cubby_http_requests_total{method="GET",route="/:id/:slug",status="${slugged.status}"}`)).toBe(1);
    expect(m.get('cubby_http_requests_total{method="GET",route="/v1/files/:id",status="200"}')).toBe(1);
    expect(m.get('cubby_http_requests_total{method="GET",route="/v1/files/:id",status="404"}')).toBe(1);
    expect(m.get('cubby_http_request_duration_seconds_count{method="GET",route="/v1/files/:id"}')).toBe(2);
    expect(m.get('cubby_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/v1/files/:id"}')).toBe(2);
  });

  test("paths and methods no route knows share one label value each: the series stay few", async () => {
    const before = (await scrape(server)).text.split("\n").length;
    for (let i = 0; i < 30; i++) await (await fetch(`${server.url}/nothing-here-${crypto.randomUUID()}`)).arrayBuffer();
    for (const method of ["PROPFIND", "MKCOL", "LOCK"]) await (await fetch(`${server.url}/v1/files`, { method })).arrayBuffer();
    const { text } = await scrape(server);
    const m = samples(text);
    expect(m.get('cubby_http_requests_total{method="GET",route="unmatched",status="404"}')).toBeGreaterThanOrEqual(30);
    expect([...m.keys()].filter((k) => /method="(PROPFIND|MKCOL|LOCK)"/.test(k))).toEqual([]);
    expect([...m.keys()].some((k) => k.startsWith('cubby_http_requests_total{method="other"'))).toBe(true);
    // Two new routes' series (unmatched, other), not thirty-three.
    expect(text.split("\n").length - before).toBeLessThan(60);
  });

  test("RPC calls are counted by procedure and gRPC status code", async () => {
    const headers = { authorization: `Bearer ${key}` };
    const rpc = createClient(FileService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    await rpc.getFile({ id: file.id }, { headers });
    await rpc.getFile({ id: "NoSuchFileNoSuchFile1" }, { headers }).catch(() => {});
    const grpc = createClient(FileService, createGrpcTransport({ baseUrl: server.url }));
    let downloaded = 0;
    for await (const chunk of grpc.getFileContent({ id: file.id }, { headers })) downloaded += chunk.content.length;
    expect(downloaded).toBe(5000);
    const m = samples((await scrape(server)).text);
    expect(m.get('cubby_rpc_handled_total{method="/cubby.v1.FileService/GetFile",code="OK"}')).toBe(1);
    expect(m.get('cubby_rpc_handled_total{method="/cubby.v1.FileService/GetFile",code="NOT_FOUND"}')).toBe(1);
    expect(m.get('cubby_rpc_handled_total{method="/cubby.v1.FileService/GetFileContent",code="OK"}')).toBe(1);
    expect(m.get('cubby_http_requests_total{method="POST",route="/cubby.v1.FileService/GetFile",status="200"}')).toBe(1);
  });

  test("bytes received and sent count uploads and downloads, over HTTP/1.1 and HTTP/2", async () => {
    const before = samples((await scrape(server)).text);
    const big = await client(server, key).upload(new Uint8Array(3 * 1024 * 1024), "?visibility=public");
    const mid = samples((await scrape(server)).text);
    expect(mid.get("cubby_received_bytes_total")! - before.get("cubby_received_bytes_total")!).toBeGreaterThanOrEqual(3 * 1024 * 1024);
    // A download over h2c: Bun's HTTP/2 socket counts nothing written, the responses are counted.
    const session = http2.connect(server.url);
    try {
      const received = await new Promise<number>((resolve, reject) => {
        let n = 0;
        const stream = session.request({ ":path": new URL(big.url).pathname });
        stream.on("data", (c: Buffer) => (n += c.length));
        stream.on("end", () => resolve(n));
        stream.on("error", reject);
      });
      expect(received).toBe(3 * 1024 * 1024);
    } finally {
      session.close();
    }
    const after = samples((await scrape(server)).text);
    expect(after.get("cubby_sent_bytes_total")! - mid.get("cubby_sent_bytes_total")!).toBeGreaterThanOrEqual(3 * 1024 * 1024);

    // 200 small downloads over h2c, each answered with one end(chunk): counted once each.
    const h2 = http2.connect(server.url);
    try {
      for (let i = 0; i < 200; i++) {
        await new Promise<void>((resolve, reject) => {
          const stream = h2.request({ ":path": new URL(file.url).pathname });
          stream.on("data", () => {});
          stream.on("end", resolve);
          stream.on("error", reject);
        });
      }
    } finally {
      h2.close();
    }
    const last = samples((await scrape(server)).text);
    // 200 × 5000 body bytes, plus the one scrape answered in between (~20 KB).
    const sent = last.get("cubby_sent_bytes_total")! - after.get("cubby_sent_bytes_total")!;
    expect(sent).toBeGreaterThanOrEqual(200 * 5000);
    expect(sent).toBeLessThan(200 * 5000 + 100_000);
  });

  test("files and bytes stored follow uploads and deletes; an upload in flight is counted while it lasts", async () => {
    const api = client(server, key);
    const before = samples((await scrape(server)).text);
    const extra = await api.upload("y".repeat(1234));
    let m = samples((await scrape(server)).text);
    expect(m.get("cubby_files")).toBe(before.get("cubby_files")! + 1);
    expect(m.get("cubby_stored_bytes")).toBe(before.get("cubby_stored_bytes")! + 1234);
    expect((await api.fetch(`/v1/files/${extra.id}`, { method: "DELETE" })).status).toBe(200);
    m = samples((await scrape(server)).text);
    expect(m.get("cubby_files")).toBe(before.get("cubby_files")!);

    // A body that arrives in two parts: between them the upload is in flight.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let sentFirst!: () => void;
    const firstSent = new Promise<void>((r) => (sentFirst = r));
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new Uint8Array(64 * 1024));
        sentFirst();
        await gate;
        controller.enqueue(new Uint8Array(64 * 1024));
        controller.close();
      },
    });
    const upload = api.fetch("/v1/files", { method: "POST", body, duplex: "half" } as RequestInit);
    await firstSent;
    const inFlight = async () => samples((await scrape(server)).text).get("cubby_uploads_in_flight");
    await waitFor(async () => (await inFlight()) === 1, "cubby_uploads_in_flight 1", 5_000, 10);
    expect(await inFlight()).toBe(1);
    release();
    expect((await upload).status).toBe(200);
    expect(await inFlight()).toBe(0);
  });

  test("the exposition passes `promtool check metrics`", async () => {
    if (PROMTOOL === null) {
      if (process.env.CI) throw new Error("promtool is missing (Debian: apt-get install prometheus)");
      console.warn("skipped: promtool is not installed (Debian's prometheus package)");
      return;
    }
    const { text, type } = await scrape(server);
    expect(type).toStartWith("text/plain; version=0.0.4");
    const check = Bun.spawn([PROMTOOL, "check", "metrics"], { stdin: new TextEncoder().encode(text), stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(check.stdout).text(), new Response(check.stderr).text(), check.exited]);
    expect({ code, out, err }).toEqual({ code: 0, out: "", err: "" });
  });

  test("no file name, e-mail address, key ID or file ID appears in the metrics", async () => {
    const keys = await client(server, key).fetch("/v1/files").then((r) => r.json() as Promise<{ files: FileJson[] }>);
    const { text } = await scrape(server);
    for (const secret of [NAME, EMAIL, "quarterly", "@example.com", file.id, ...keys.files.map((f) => f.id), key.slice(0, 12)]) {
      expect(text).not.toContain(secret);
    }
  });

  test("a client that is not loopback, or came through a proxy, gets 404 without METRICS_TOKEN", async () => {
    expect((await scrape(server)).status).toBe(200);
    expect((await scrape(server, { "x-forwarded-for": "203.0.113.9" })).status).toBe(404);
    expect((await scrape(server, { forwarded: "for=203.0.113.9" })).status).toBe(404);
    expect((await scrape(server, { "x-forwarded-for": "203.0.113.9", authorization: "Bearer anything-at-all-long" })).status).toBe(404);
  });
});

test("with METRICS_TOKEN, other clients need it as a bearer token: 401 without or with another", async () => {
  const token = "metrics-token-0123456789";
  await using server = await startServer({ env: { METRICS_TOKEN: token } });
  const remote = { "x-forwarded-for": "203.0.113.9" };
  const none = await scrape(server, remote);
  const wrong = await scrape(server, { ...remote, authorization: `Bearer ${token}x` });
  const right = await scrape(server, { ...remote, authorization: `Bearer ${token}` });
  expect([none.status, wrong.status, right.status]).toEqual([401, 401, 200]);
  expect(right.text).toContain("cubby_http_requests_total");
  expect((await scrape(server)).status).toBe(200);
});

test("METRICS=off: /metrics is not found, and the server serves as before", async () => {
  await using server = await startServer({ env: { METRICS: "off" } });
  expect((await scrape(server)).status).toBe(404);
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
});

describe("LOG_FORMAT=json", () => {
  test("every line the server prints is one JSON object; access lines carry the fields of CONTRACT §9", async () => {
    await using server = await startServer({ env: { LOG_FORMAT: "json" } });
    const key = await server.mintKey("json-log@example.com");
    const api = client(server, key);
    const file = await api.upload("hello", "?visibility=public");
    await (await fetch(`${server.url}/v1/files/${file.id}`, { headers: { authorization: `Bearer ${key}`, "x-request-id": "json-req-1" } })).arrayBuffer();
    await (await fetch(`${server.url}/${file.id}`, { headers: { "x-request-id": "json-req-2" } })).arrayBuffer();
    await server.waitForOutput('"request_id":"json-req-2"');
    expect(await server.stop()).toBe(0);
    const lines = server.output().trim().split("\n");
    const objects = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const o of objects) {
      expect(typeof o.time).toBe("string");
      expect(new Date(o.time as string).toISOString()).toBe(o.time as string);
      expect(["info", "error"]).toContain(o.level as string);
    }
    const access = objects.find((o) => o.request_id === "json-req-1")!;
    expect(Object.keys(access)).toEqual(["time", "level", "request_id", "method", "route", "path", "status", "bytes", "duration_ms", "client_address", "user_id"]);
    expect(access).toMatchObject({ method: "GET", route: "/v1/files/:id", path: `/v1/files/${file.id}`, status: 200 });
    expect(access.client_address).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(access.user_id).toEqual(expect.any(String));
    expect(access.duration_ms).toEqual(expect.any(Number));
    const anonymous = objects.find((o) => o.request_id === "json-req-2")!;
    expect(anonymous).toMatchObject({ route: "/:id", status: 200, bytes: 5, user_id: null });
    expect(objects.some((o) => typeof o.msg === "string" && (o.msg as string).includes("listening on port"))).toBe(true);
  });

  // The fault is made on the disk, as in error-report.test.ts: the file's blob becomes a directory.
  test.skipIf(BACKEND !== "sqlite-disk")("an internal error is one JSON line on stderr, with the request's fields, the error and its cause", async () => {
    await using server = await startServer({ env: { LOG_FORMAT: "json" } });
    const key = await server.mintKey("json-error@example.com");
    const file = await client(server, key).upload("hello");
    const blobs = path.join(server.dataDir, "blobs");
    const [blob] = fs.readdirSync(blobs);
    fs.rmSync(path.join(blobs, blob!));
    fs.mkdirSync(path.join(blobs, blob!));
    // curl: fetch retries a GET whose connection is reset.
    await Bun.spawn(["curl", "-s", "-o", "/dev/null", "-H", `authorization: Bearer ${key}`, "-H", "x-request-id: json-err-1", `${server.url}/${file.id}`]).exited;
    await server.waitForErrors('"request_id":"json-err-1"');
    const line = server.errors().split("\n").find((l) => l.includes('"request_id":"json-err-1"'))!;
    const error = JSON.parse(line) as Record<string, unknown>;
    expect(Object.keys(error)).toEqual(["time", "level", "request_id", "method", "route", "path", "client_address", "user_id", "error", "cause"]);
    expect(error).toMatchObject({ level: "error", method: "GET", route: "/:id", path: `/${file.id}`, error: "internal", user_id: expect.any(String) });
    expect(error.cause).toContain("Error");
  });
});
