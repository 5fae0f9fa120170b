// test-lists: postgres-s3
// The unary fast path (src/rpc/unary.ts): every unary method through it with real clients
// (connect-node's Connect and gRPC transports, @grpc/grpc-js, buf curl, gRPC's C core through
// Debian's python3-grpcio); the same answer as connect-node for the same call sent once in a form
// the fast path takes and once in a form it leaves to connect-node; hostile bodies; metrics and
// the access log.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { create, toBinary, toJson, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import fs from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import path from "node:path";
import zlib from "node:zlib";
import {
  DeleteFileRequestSchema,
  file_cubby_v1_files,
  FileSchema,
  FileService,
  GetFileRequestSchema,
  type File,
} from "../../src/gen/cubby/v1/files_pb.ts";
import { unaryFormOf, type UnaryForm } from "../../src/rpc/unary.ts";
import { client, ROOT, startServer, tempDir, type FileJson, type RunningServer } from "../support/server.ts";

const SERVICE = "/cubby.v1.FileService";
const PYTHON = "/usr/bin/python3";
const BUF = path.join(ROOT, "node_modules/.bin/buf");
let server: RunningServer;
let key: string;
let otherKey: string;
let readKey: string;

beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("unary@example.com");
  otherKey = await server.mintKey("unary-other@example.com");
  readKey = await server.mintKey("unary@example.com", "--scope", "files.read");
});
afterAll(() => server[Symbol.asyncDispose]());

const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
const fileJson = (f: File | undefined) => toJson(FileSchema, f!, { alwaysEmitImplicit: true, useProtoFieldName: true }) as unknown as FileJson;
const rest = async (id: string) => {
  const res = await client(server, key).fetch(`/v1/files/${id}`);
  return res.status === 200 ? ((await res.json()) as FileJson) : res.status;
};

/** A gRPC length-prefixed message (PROTOCOL-HTTP2.md "Length-Prefixed-Message"). */
function frame(message: Uint8Array, flags = 0, length = message.byteLength): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, message]);
}

function encode<D extends DescMessage>(schema: D, init: MessageInitShape<D>): Uint8Array {
  return toBinary(schema, create(schema, init));
}

interface GrpcOutcome {
  status: string | undefined;
  contentType: string | undefined;
  encoding: string | undefined;
  grpcStatus: string | undefined;
  grpcMessage: string | undefined;
  details: string | undefined;
  body: string;
  reset: number;
}

/**
 * One gRPC call over h2c with a raw body (`end`: whether the request stream ends after it).
 * Resolves once the response is complete, without waiting for the request to end.
 */
async function grpcRaw(method: string, body: Uint8Array, headers: Record<string, string> = {}, end = true): Promise<GrpcOutcome> {
  const session = http2.connect(server.url);
  session.on("error", () => {});
  try {
    const stream = session.request({ ":method": "POST", ":path": `${SERVICE}/${method}`, "content-type": "application/grpc", te: "trailers", "grpc-accept-encoding": "gzip", ...headers });
    const out: Partial<GrpcOutcome> = {};
    const chunks: Buffer[] = [];
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h[":status"] !== undefined) {
        out.status = String(h[":status"]);
        out.contentType = h["content-type"];
        out.encoding = h["grpc-encoding"] as string | undefined;
      }
      if (h["grpc-status"] !== undefined) {
        out.grpcStatus = h["grpc-status"] as string;
        out.grpcMessage = h["grpc-message"] as string | undefined;
        out.details = h["grpc-status-details-bin"] as string | undefined;
      }
    };
    stream.on("response", take);
    stream.on("trailers", take);
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", () => {});
    if (end) stream.end(body);
    else stream.write(body);
    await new Promise<void>((resolve) => {
      stream.on("close", resolve);
      // An answer before the request ended: the response is complete at its trailers.
      stream.on("trailers", () => resolve());
    });
    return { ...out, body: Buffer.concat(chunks).toString("base64"), reset: stream.rstCode ?? 0 } as GrpcOutcome;
  } finally {
    session.destroy();
  }
}

interface ConnectOutcome {
  status: number;
  contentType: string | null;
  body: string;
}

/** One Connect unary POST over HTTP/1.1 (fetch) with a raw body. */
async function connectRaw(method: string, body: Uint8Array | string, headers: Record<string, string>): Promise<ConnectOutcome> {
  const res = await fetch(`${server.url}${SERVICE}/${method}`, { method: "POST", body, headers });
  return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
}

/** The same Connect call in the fast path's form and, gzip-compressed, in connect-node's. */
async function connectBoth(method: string, body: string | Uint8Array, headers: Record<string, string>) {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const fast = await connectRaw(method, bytes, headers);
  const slow = await connectRaw(method, zlib.gzipSync(bytes), { ...headers, "content-encoding": "gzip" });
  return { fast, slow };
}

/**
 * The same gRPC call in the fast path's form and in connect-node's: the same bytes with
 * `grpc-encoding: gzip` declared, which lets messages be compressed without requiring it (their
 * flag stays 0), so connect-node reads them exactly as they are.
 */
async function grpcBoth(method: string, body: Uint8Array, headers: Record<string, string>) {
  const fast = await grpcRaw(method, body, headers);
  const slow = await grpcRaw(method, body, { ...headers, "grpc-encoding": "gzip" });
  return { fast, slow };
}

describe("every unary method through the fast path, with real clients", () => {
  const transports: Record<string, () => Transport> = {
    "Connect JSON over HTTP/1.1": () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", useBinaryFormat: false }),
    "Connect binary over HTTP/1.1": () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", useBinaryFormat: true }),
    "Connect JSON over h2c": () => createConnectTransport({ baseUrl: server.url, httpVersion: "2", useBinaryFormat: false }),
    "Connect binary over h2c": () => createConnectTransport({ baseUrl: server.url, httpVersion: "2", useBinaryFormat: true }),
    "gRPC over h2c": () => createGrpcTransport({ baseUrl: server.url }),
  };

  test.each(Object.keys(transports))("connect-node, %s", async (name) => {
    const rpc: Client<typeof FileService> = createClient(FileService, transports[name]!());
    const auth = { headers: bearer(key) };
    const made = await client(server, key).upload("unary", "?visibility=private&name=u.txt");
    expect(fileJson((await rpc.getFile({ id: made.id }, auth)).file)).toEqual(made);
    const listed = await rpc.listFiles({ pageSize: 1000 }, auth);
    expect(listed.files.map(fileJson)).toContainEqual(made);
    const updated = fileJson((await rpc.updateFile({ id: made.id, slug: "s", name: "v.txt" }, auth)).file);
    expect(updated as unknown).toEqual(await rest(made.id));
    expect(updated).toMatchObject({ slug: "s", name: "v.txt" });
    await rpc.publishFile({ id: made.id }, auth);
    expect(await rest(made.id)).toMatchObject({ visibility: "public" });
    await rpc.unpublishFile({ id: made.id }, auth);
    expect(await rest(made.id)).toMatchObject({ visibility: "internal" });
    expect(await rpc.updateFileExpiry({ id: made.id, expireTime: "2031-05-06T07:08:09Z" }, auth)).toMatchObject({ expireTime: "2031-05-06T07:08:09Z" });
    await rpc.deleteFile({ id: made.id }, auth);
    expect(await rest(made.id)).toBe(404);
    const code = (p: Promise<unknown>) => p.then(() => "ok", (e: unknown) => Code[ConnectError.from(e).code]);
    expect({
      notFound: await code(rpc.getFile({ id: made.id }, auth)),
      noKey: await code(rpc.getFile({ id: made.id })),
      invalid: await code(rpc.getFile({ id: "nope" }, auth)),
      readOnly: await code(rpc.deleteFile({ id: made.id }, { headers: bearer(readKey) })),
    }).toEqual({ notFound: "NotFound", noKey: "Unauthenticated", invalid: "InvalidArgument", readOnly: "PermissionDenied" });
  });

  test("@grpc/grpc-js", async () => {
    const def = protoLoader.loadSync(path.join(ROOT, "proto/cubby/v1/files.proto"), { includeDirs: [path.join(ROOT, "proto")], keepCase: true, longs: String, defaults: true });
    const pkg = grpc.loadPackageDefinition(def) as unknown as { cubby: { v1: { FileService: grpc.ServiceClientConstructor } } };
    const stub = new pkg.cubby.v1.FileService(`localhost:${server.port}`, grpc.credentials.createInsecure());
    try {
      const md = (k?: string) => {
        const m = new grpc.Metadata();
        if (k !== undefined) m.set("authorization", `Bearer ${k}`);
        return m;
      };
      const call = <T>(method: string, req: object, meta = md(key), options: grpc.CallOptions = {}) =>
        new Promise<T>((resolve, reject) => (stub[method] as Function).call(stub, req, meta, options, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))));
      const made = await client(server, key).upload("grpc-js", "?visibility=private");
      const got = await call<{ file: FileJson }>("GetFile", { id: made.id });
      expect({ id: got.file.id, size: got.file.size, checksum: got.file.checksum }).toEqual({ id: made.id, size: made.size, checksum: made.checksum });
      expect((await call<{ files: { id: string }[] }>("ListFiles", { page_size: 1000 })).files.map((f) => f.id)).toContain(made.id);
      expect((await call<{ file: FileJson }>("UpdateFile", { id: made.id, slug: "via-grpc-js" })).file.slug).toBe("via-grpc-js");
      await call("PublishFile", { id: made.id });
      expect(await rest(made.id)).toMatchObject({ visibility: "public", slug: "via-grpc-js" });
      await call("UnpublishFile", { id: made.id });
      expect(await call("UpdateFileExpiry", { id: made.id, ttl: "1h" })).toMatchObject({ expire_time: expect.stringMatching(/Z$/) });
      expect(await rest(made.id)).toMatchObject({ visibility: "internal" });
      const code = (p: Promise<unknown>) => p.then(() => "ok", (e: grpc.ServiceError) => grpc.status[e.code]);
      const readOnly = await code(call("DeleteFile", { id: made.id }, md(readKey)));
      await call("DeleteFile", { id: made.id });
      expect({
        readOnly,
        notFound: await code(call("GetFile", { id: made.id })),
        noKey: await code(call("GetFile", { id: made.id }, md())),
        invalid: await code(call("GetFile", { id: "nope" })),
        deadline: await code(call("GetFile", { id: made.id }, md(key), { deadline: Date.now() - 1 })),
      }).toEqual({ readOnly: "PERMISSION_DENIED", notFound: "NOT_FOUND", noKey: "UNAUTHENTICATED", invalid: "INVALID_ARGUMENT", deadline: "DEADLINE_EXCEEDED" });
    } finally {
      stub.close();
    }
  });

  test.each([
    ["connect", ["--protocol", "connect"]],
    ["grpc", ["--protocol", "grpc", "--http2-prior-knowledge"]],
  ])("buf curl --protocol %s", async (_, args) => {
    const curl = async (method: string, body: object, k = key) => {
      const proc = Bun.spawn([BUF, "curl", ...args, "--schema", path.join(ROOT, "proto"), "-H", `Authorization: Bearer ${k}`, "-d", JSON.stringify(body), `${server.url}${SERVICE}/${method}`], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      return code === 0 ? JSON.parse(out) : { code, error: JSON.parse(err) as { code: string; message: string } };
    };
    const made = await client(server, key).upload("buf", "?visibility=private");
    expect((await curl("GetFile", { id: made.id })).file).toMatchObject({ id: made.id, checksum: made.checksum });
    expect((await curl("ListFiles", { page_size: 1000 })).files.map((f: FileJson) => f.id)).toContain(made.id);
    expect((await curl("UpdateFile", { id: made.id, name: "b.txt" })).file).toMatchObject({ name: "b.txt" });
    expect(await curl("PublishFile", { id: made.id })).toEqual({});
    expect(await curl("UnpublishFile", { id: made.id })).toEqual({});
    expect(await curl("UpdateFileExpiry", { id: made.id, expire_time: "2031-01-02T03:04:05Z" })).toEqual({ expireTime: "2031-01-02T03:04:05Z" });
    expect(await curl("DeleteFile", { id: made.id }, readKey)).toMatchObject({ error: { code: "permission_denied" } });
    expect(await curl("DeleteFile", { id: made.id })).toEqual({});
    expect(await curl("GetFile", { id: made.id })).toMatchObject({ error: { code: "not_found" } });
  });

  test("gRPC's C core (Debian's python3-grpcio)", async () => {
    using dir = tempDir("cubby-grpcio-");
    // The schema as the server has it, with its imports, for the client's protobuf runtime.
    const files = [file_cubby_v1_files, ...file_cubby_v1_files.dependencies].reverse().map((f) => create(FileDescriptorProtoSchema, f.proto));
    const descriptors = path.join(dir.path, "files.binpb");
    fs.writeFileSync(descriptors, toBinary(FileDescriptorSetSchema, create(FileDescriptorSetSchema, { file: files })));
    const made = await client(server, key).upload("grpcio", "?visibility=private&name=py.txt");
    const auth = [["authorization", `Bearer ${key}`]];
    const calls = [
      { method: "GetFile", request: { id: made.id }, metadata: auth },
      { method: "ListFiles", request: { page_size: 1000 }, metadata: auth },
      { method: "UpdateFile", request: { id: made.id, slug: "from-python" }, metadata: auth },
      { method: "PublishFile", request: { id: made.id }, metadata: auth },
      { method: "UnpublishFile", request: { id: made.id }, metadata: auth },
      { method: "UpdateFileExpiry", request: { id: made.id, ttl: "2h" }, metadata: auth },
      { method: "DeleteFile", request: { id: made.id }, metadata: [["authorization", `Bearer ${readKey}`]] },
      { method: "DeleteFile", request: { id: made.id }, metadata: auth },
      { method: "GetFile", request: { id: made.id }, metadata: auth },
      { method: "GetFile", request: { id: made.id } },
      { method: "GetFile", request: { id: "nope" }, metadata: auth },
    ];
    const proc = Bun.spawn([PYTHON, path.join(ROOT, "test/support/grpcio-client.py"), `127.0.0.1:${server.port}`, descriptors], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    proc.stdin.write(JSON.stringify(calls));
    await proc.stdin.end();
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const results = JSON.parse(out) as { response?: Record<string, unknown> & { file?: FileJson; files?: FileJson[] }; code?: string }[];
    expect(results[0]!.response!.file).toEqual(made);
    expect(results[1]!.response!.files!.map((f) => f.id)).toContain(made.id);
    expect(results[2]!.response!.file).toMatchObject({ id: made.id, slug: "from-python" });
    expect(results.slice(3, 5)).toEqual([{ response: {} }, { response: {} }]);
    expect(results[5]!.response!.expire_time).toMatch(/Z$/);
    expect(results.slice(6).map((r) => r.code ?? "OK")).toEqual(["PERMISSION_DENIED", "OK", "NOT_FOUND", "UNAUTHENTICATED", "INVALID_ARGUMENT"]);
  });
});

describe("the forms real clients send are the ones the fast path takes", () => {
  // A capturing server: what each client sends, classified by the fast path's own rule.
  let seen: (UnaryForm | "other")[] = [];
  let h2: http2.Http2Server;
  let h1: http.Server;
  let h2Url: string;
  let h1Url: string;
  beforeAll(async () => {
    const answer = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => {
      seen.push(unaryFormOf(req) ?? "other");
      req.resume();
      req.on("end", () => {
        (res as http.ServerResponse).writeHead(200, { "content-type": String(req.headers["content-type"]).startsWith("application/grpc") ? "application/grpc" : "application/json", "grpc-status": "12" });
        res.end(String(req.headers["content-type"]).startsWith("application/grpc") ? "" : '{"code":"unimplemented"}');
      });
    };
    h2 = http2.createServer(answer);
    h1 = http.createServer(answer);
    await Promise.all([new Promise<void>((r) => h2.listen(0, "127.0.0.1", r)), new Promise<void>((r) => h1.listen(0, "127.0.0.1", r))]);
    h2Url = `http://127.0.0.1:${(h2.address() as AddressInfo).port}`;
    h1Url = `http://127.0.0.1:${(h1.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    h1.closeAllConnections();
    await Promise.all([new Promise((r) => h2.close(r)), new Promise((r) => h1.close(r))]);
  });

  test("connect-node, grpc-js, buf curl and python3-grpcio unary calls", async () => {
    seen = [];
    const call = (t: Transport) => createClient(FileService, t).getFile({ id: "x" }).catch(() => {});
    await call(createConnectTransport({ baseUrl: h1Url, httpVersion: "1.1", useBinaryFormat: false }));
    await call(createConnectTransport({ baseUrl: h1Url, httpVersion: "1.1", useBinaryFormat: true }));
    await call(createConnectTransport({ baseUrl: h2Url, httpVersion: "2", useBinaryFormat: false }));
    await call(createGrpcTransport({ baseUrl: h2Url }));
    const def = protoLoader.loadSync(path.join(ROOT, "proto/cubby/v1/files.proto"), { includeDirs: [path.join(ROOT, "proto")] });
    const pkg = grpc.loadPackageDefinition(def) as unknown as { cubby: { v1: { FileService: grpc.ServiceClientConstructor } } };
    const stub = new pkg.cubby.v1.FileService(h2Url.slice("http://".length), grpc.credentials.createInsecure());
    await new Promise((resolve) => (stub.GetFile as Function).call(stub, { id: "x" }, resolve));
    stub.close();
    for (const args of [["--protocol", "connect"], ["--protocol", "grpc", "--http2-prior-knowledge"]]) {
      const url = args.includes("grpc") ? h2Url : h1Url;
      await Bun.spawn([BUF, "curl", ...args, "--schema", path.join(ROOT, "proto"), "-d", '{"id":"x"}', `${url}${SERVICE}/GetFile`], { stdout: "ignore", stderr: "ignore" }).exited;
    }
    using dir = tempDir("cubby-grpcio-");
    const files = [file_cubby_v1_files, ...file_cubby_v1_files.dependencies].reverse().map((f) => create(FileDescriptorProtoSchema, f.proto));
    fs.writeFileSync(path.join(dir.path, "d"), toBinary(FileDescriptorSetSchema, create(FileDescriptorSetSchema, { file: files })));
    const py = Bun.spawn([PYTHON, path.join(ROOT, "test/support/grpcio-client.py"), h2Url.slice("http://".length), path.join(dir.path, "d")], { stdin: "pipe", stdout: "ignore", stderr: "ignore" });
    py.stdin.write(JSON.stringify([{ method: "GetFile", request: { id: "x" } }]));
    await py.stdin.end();
    await py.exited;
    expect(seen).toEqual(["connect+json", "connect+proto", "connect+json", "grpc", "grpc", "connect+proto", "grpc", "grpc"]);
  });
});

describe("the same call gives the same answer through the fast path and through connect-node", () => {
  let file: FileJson;
  let lister: string;
  beforeAll(async () => {
    file = await client(server, key).upload("parity", "?visibility=private");
    // Enough files that a ListFiles answer passes 1 KiB, where connect-node starts compressing.
    lister = await server.mintKey("unary-lister@example.com");
    for (let i = 0; i < 12; i++) await client(server, lister).upload(`listed ${i}`, `?name=listed-${i}.txt`);
  });

  test("answers of 1 KiB and more are compressed as connect-node compresses them (Connect gzip, gRPC gzip)", async () => {
    const raw = (headers: Record<string, string>, body: Buffer) =>
      new Promise<{ status: number; encoding: string | undefined; body: Buffer }>((resolve, reject) => {
        const req = http.request(`${server.url}${SERVICE}/ListFiles`, { method: "POST", headers: { "content-type": "application/json", "accept-encoding": "br;q=0.5, gzip", ...bearer(lister), ...headers } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode!, encoding: res.headers["content-encoding"], body: Buffer.concat(chunks) }));
        });
        req.on("error", reject);
        req.end(body);
      });
    const json = Buffer.from('{"page_size":100}');
    const fast = await raw({}, json);
    const slow = await raw({ "content-encoding": "gzip" }, zlib.gzipSync(json));
    expect(fast).toEqual(slow);
    expect({ encoding: fast.encoding, files: (JSON.parse(zlib.gunzipSync(fast.body).toString()) as { files: unknown[] }).files.length }).toEqual({ encoding: "gzip", files: 12 });
    const { fast: g, slow: gs } = await grpcBoth("ListFiles", frame(new Uint8Array(0)), bearer(lister));
    expect(g).toEqual(gs);
    expect({ encoding: g.encoding, status: g.grpcStatus, compressedFlag: Buffer.from(g.body, "base64")[0] }).toEqual({ encoding: "gzip", status: "0", compressedFlag: 1 });
  });

  const connectCases: [string, string, () => string, () => Record<string, string>][] = [
    ["OK", "GetFile", () => JSON.stringify({ id: file.id }), () => bearer(key)],
    ["NOT_FOUND", "GetFile", () => '{"id":"NoSuchFileNoSuchFile1"}', () => bearer(key)],
    ["NOT_FOUND (another user's private file)", "GetFile", () => JSON.stringify({ id: file.id }), () => bearer(otherKey)],
    ["UNAUTHENTICATED (no key)", "GetFile", () => JSON.stringify({ id: file.id }), () => ({})],
    ["UNAUTHENTICATED (unknown key)", "GetFile", () => JSON.stringify({ id: file.id }), () => bearer("cubby_nope")],
    ["PERMISSION_DENIED (files.read key)", "DeleteFile", () => JSON.stringify({ id: file.id }), () => bearer(readKey)],
    ["INVALID_ARGUMENT (malformed id)", "GetFile", () => '{"id":"nope"}', () => bearer(key)],
    ["INVALID_ARGUMENT (bad slug)", "UpdateFile", () => JSON.stringify({ id: file.id, slug: "a b" }), () => bearer(key)],
    ["INVALID_ARGUMENT (malformed JSON)", "DeleteFile", () => `{"id":"${file.id}"`, () => bearer(key)],
    ["INVALID_ARGUMENT (unknown field)", "DeleteFile", () => JSON.stringify({ id: file.id, everything: true }), () => bearer(key)],
    ["DEADLINE_EXCEEDED (connect-timeout-ms: 0)", "DeleteFile", () => JSON.stringify({ id: file.id }), () => ({ ...bearer(key), "connect-timeout-ms": "0" })],
    ["INVALID_ARGUMENT (malformed connect-timeout-ms)", "GetFile", () => JSON.stringify({ id: file.id }), () => ({ ...bearer(key), "connect-timeout-ms": "soon" })],
  ];

  test.each(connectCases)("Connect JSON: %s", async (_, method, body, headers) => {
    const { fast, slow } = await connectBoth(method, body(), { "content-type": "application/json", ...headers() });
    expect(fast).toEqual(slow);
    expect(await rest(file.id)).toMatchObject({ id: file.id });
  });

  test("Connect JSON: the codes and statuses of the cases above", async () => {
    const got: Record<string, [number, string]> = {};
    for (const [name, method, body, headers] of connectCases) {
      const r = await connectRaw(method, body(), { "content-type": "application/json", ...headers() });
      got[name] = [r.status, r.status === 200 ? "ok" : (JSON.parse(r.body) as { code: string }).code];
    }
    expect(Object.values(got).map(([s, c]) => `${s} ${c}`)).toEqual([
      "200 ok",
      "404 not_found",
      "404 not_found",
      "401 unauthenticated",
      "401 unauthenticated",
      "403 permission_denied",
      "400 invalid_argument",
      "400 invalid_argument",
      "400 invalid_argument",
      "400 invalid_argument",
      "504 deadline_exceeded",
      "400 invalid_argument",
    ]);
  });

  test("Connect binary: OK, NOT_FOUND, PERMISSION_DENIED and malformed protobuf", async () => {
    const type = { "content-type": "application/proto" };
    const cases: [string, Uint8Array, Record<string, string>][] = [
      ["GetFile", encode(GetFileRequestSchema, { id: file.id }), bearer(key)],
      ["GetFile", encode(GetFileRequestSchema, { id: "NoSuchFileNoSuchFile1" }), bearer(key)],
      ["DeleteFile", encode(DeleteFileRequestSchema, { id: file.id }), bearer(readKey)],
      ["DeleteFile", Uint8Array.of(0x0a, 0x03, 0x41), bearer(key)],
    ];
    const statuses = [];
    for (const [method, body, headers] of cases) {
      const { fast, slow } = await connectBoth(method, body, { ...type, ...headers });
      expect(fast).toEqual(slow);
      statuses.push(fast.status);
    }
    expect(statuses).toEqual([200, 404, 403, 400]);
    expect(await rest(file.id)).toMatchObject({ id: file.id });
  });

  const grpcCases: [string, string, () => Uint8Array, () => Record<string, string>, string][] = [
    ["OK", "GetFile", () => frame(encode(GetFileRequestSchema, { id: file.id })), () => bearer(key), "0"],
    ["NOT_FOUND", "GetFile", () => frame(encode(GetFileRequestSchema, { id: "NoSuchFileNoSuchFile1" })), () => bearer(key), "5"],
    ["UNAUTHENTICATED", "GetFile", () => frame(encode(GetFileRequestSchema, { id: file.id })), () => ({}), "16"],
    ["PERMISSION_DENIED (files.read key)", "DeleteFile", () => frame(encode(DeleteFileRequestSchema, { id: file.id })), () => bearer(readKey), "7"],
    ["INVALID_ARGUMENT (malformed id)", "GetFile", () => frame(encode(GetFileRequestSchema, { id: "no pe" })), () => bearer(key), "3"],
    ["INVALID_ARGUMENT (malformed protobuf)", "DeleteFile", () => frame(Uint8Array.of(0x0a, 0x03, 0x41)), () => bearer(key), "3"],
    ["DEADLINE_EXCEEDED (grpc-timeout: 0m)", "DeleteFile", () => frame(encode(DeleteFileRequestSchema, { id: file.id })), () => ({ ...bearer(key), "grpc-timeout": "0m" }), "4"],
    ["DEADLINE_EXCEEDED (grpc-timeout: 500u, under a millisecond)", "DeleteFile", () => frame(encode(DeleteFileRequestSchema, { id: file.id })), () => ({ ...bearer(key), "grpc-timeout": "500u" }), "4"],
    ["INVALID_ARGUMENT (malformed grpc-timeout)", "GetFile", () => frame(encode(GetFileRequestSchema, { id: file.id })), () => ({ ...bearer(key), "grpc-timeout": "1 second" }), "3"],
    ["INVALID_ARGUMENT (truncated message)", "DeleteFile", () => frame(encode(DeleteFileRequestSchema, { id: file.id })).subarray(0, 12), () => bearer(key), "3"],
    ["INVALID_ARGUMENT (length prefix past the body)", "DeleteFile", () => frame(encode(DeleteFileRequestSchema, { id: file.id }), 0, 1000), () => bearer(key), "3"],
    ["INVALID_ARGUMENT (half a length prefix)", "DeleteFile", () => Uint8Array.of(0, 0, 0), () => bearer(key), "3"],
    ["UNIMPLEMENTED (no message)", "DeleteFile", () => new Uint8Array(0), () => bearer(key), "12"],
    ["UNIMPLEMENTED (two messages)", "DeleteFile", () => Buffer.concat([frame(encode(DeleteFileRequestSchema, { id: file.id })), frame(new Uint8Array(0))]), () => bearer(key), "12"],
    ["RESOURCE_EXHAUSTED (declared length over 4 MiB)", "DeleteFile", () => frame(new Uint8Array(10), 0, 4 * 1024 * 1024 + 1), () => bearer(key), "8"],
  ];

  test.each(grpcCases)("gRPC: %s", async (_, method, body, headers, status) => {
    const { fast, slow } = await grpcBoth(method, body(), headers());
    expect(fast).toEqual(slow);
    expect(fast.grpcStatus).toBe(status);
    expect(await rest(file.id)).toMatchObject({ id: file.id });
  });
});

describe("hostile bodies through the fast path: the right error, promptly, nothing changed", () => {
  let file: FileJson;
  beforeAll(async () => {
    file = await client(server, key).upload("hostile", "?visibility=private");
  });

  test("a compressed flag with no grpc-encoding is INTERNAL (gRPC compression.md), as connect-node answers", async () => {
    const body = frame(zlib.gzipSync(encode(DeleteFileRequestSchema, { id: file.id })), 1);
    const r = await grpcRaw("DeleteFile", body, bearer(key));
    expect({ status: r.grpcStatus, message: decodeURIComponent(r.grpcMessage ?? "") }).toEqual({ status: "13", message: "received compressed envelope, but do not know how to decompress" });
    expect(await rest(file.id)).toMatchObject({ id: file.id });
  });

  test("a gRPC message declared over 4 MiB is refused as soon as its prefix arrives, the request still open", async () => {
    const r = await grpcRaw("DeleteFile", frame(new Uint8Array(1000), 0, 5 * 1024 * 1024), bearer(key), false);
    expect({ status: r.grpcStatus, message: decodeURIComponent(r.grpcMessage ?? "") }).toEqual({ status: "8", message: "message size 5242880 is larger than configured readMaxBytes 4194304" });
    expect(await rest(file.id)).toMatchObject({ id: file.id });
  });

  test("a Connect body over 4 MiB with no Content-Length (h2c) is RESOURCE_EXHAUSTED", async () => {
    const session = http2.connect(server.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": `${SERVICE}/DeleteFile`, "content-type": "application/json", ...bearer(key) });
      stream.on("error", () => {});
      const head = new Promise<http2.IncomingHttpHeaders>((resolve) => stream.on("response", resolve));
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      const filler = Buffer.alloc(1024 * 1024, 0x20);
      for (let i = 0; i < 5; i++) stream.write(filler);
      const headers = await head;
      await new Promise((resolve) => stream.on("end", resolve));
      expect({ status: Number(headers[":status"]), body: JSON.parse(Buffer.concat(chunks).toString()) }).toEqual({
        status: 429,
        body: { code: "resource_exhausted", message: "message size is larger than configured readMaxBytes 4194304" },
      });
    } finally {
      session.destroy();
    }
    expect(await rest(file.id)).toMatchObject({ id: file.id });
  });

  test("a chunked Connect body over 4 MiB (HTTP/1.1) is RESOURCE_EXHAUSTED, read by the client, and the connection closes", async () => {
    const outcome = await new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
      const req = http.request(`${server.url}${SERVICE}/DeleteFile`, { method: "POST", headers: { "content-type": "application/json", ...bearer(key) } }, (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: text }));
      });
      req.on("error", reject);
      const filler = Buffer.alloc(256 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 6 * 1024 * 1024) {
          sent += filler.length;
          if (!req.write(filler)) return void req.once("drain", pump);
        }
        req.end();
      };
      pump();
    });
    expect(outcome).toEqual({ status: 429, connection: "close", body: JSON.stringify({ code: "resource_exhausted", message: "message size is larger than configured readMaxBytes 4194304" }) });
    expect(await rest(file.id)).toMatchObject({ id: file.id });
  });

  test("a Connect body whose Content-Length says over 4 MiB goes to connect-node, which refuses it alike", async () => {
    const r = await connectRaw("DeleteFile", " ".repeat(4 * 1024 * 1024 + 1), { "content-type": "application/json", ...bearer(key) });
    expect({ status: r.status, code: (JSON.parse(r.body) as { code: string }).code }).toEqual({ status: 429, code: "resource_exhausted" });
    expect(await rest(file.id)).toMatchObject({ id: file.id });
  });

  test("the connection serves the next request after each refusal (HTTP/1.1 keep-alive)", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const post = (body: string) =>
      new Promise<{ status: number; body: string; socket: unknown }>((resolve, reject) => {
        const req = http.request(`${server.url}${SERVICE}/GetFile`, { method: "POST", agent, headers: { "content-type": "application/json", ...bearer(key) } }, (res) => {
          let text = "";
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode!, body: text, socket: req.socket }));
        });
        req.on("error", reject);
        req.end(body);
      });
    try {
      const results = [await post("{"), await post('{"id":"nope"}'), await post('{"id":1}'), await post(JSON.stringify({ id: file.id }))];
      expect(results.map((r) => r.status)).toEqual([400, 400, 400, 200]);
      expect(new Set(results.map((r) => r.socket)).size).toBe(1);
    } finally {
      agent.destroy();
    }
  });
});

describe("metrics, access log, request ID and context are the same on the fast path", () => {
  test("cubby_rpc_handled_total counts fast-path calls by code; each has its access-log line with its request ID", async () => {
    await using logged = await startServer({ env: { LOG_FORMAT: "json" } });
    const k = await logged.mintKey("unary-log@example.com");
    const made = await client(logged, k).upload("m", "?visibility=private");
    const scrape = async () => {
      const text = await (await fetch(`${logged.url}/metrics`)).text();
      const count = (labels: string) => Number(new RegExp(`^cubby_rpc_handled_total\\{${labels.replace(/[{}/.]/g, "\\$&")}\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
      return {
        ok: count('method="/cubby.v1.FileService/GetFile",code="OK"'),
        notFound: count('method="/cubby.v1.FileService/GetFile",code="NOT_FOUND"'),
        denied: count('method="/cubby.v1.FileService/DeleteFile",code="UNAUTHENTICATED"'),
      };
    };
    const before = await scrape();
    const ok = await fetch(`${logged.url}${SERVICE}/GetFile`, {
      method: "POST",
      body: JSON.stringify({ id: made.id }),
      headers: { "content-type": "application/json", "x-request-id": "fast-path-call-1", ...bearer(k) },
    });
    const okBody = await ok.text();
    const grpcNotFound = await (async () => {
      const session = http2.connect(logged.url);
      try {
        const stream = session.request({ ":method": "POST", ":path": `${SERVICE}/GetFile`, "content-type": "application/grpc", "x-request-id": "fast-path-call-2", ...bearer(k) });
        const headers: Record<string, unknown> = {};
        stream.on("response", (h) => Object.assign(headers, h));
        stream.on("trailers", (h) => Object.assign(headers, h));
        stream.resume();
        stream.end(frame(encode(GetFileRequestSchema, { id: "NoSuchFileNoSuchFile1" })));
        await new Promise((resolve) => stream.on("close", resolve));
        return headers;
      } finally {
        session.close();
      }
    })();
    await (await fetch(`${logged.url}${SERVICE}/DeleteFile`, { method: "POST", body: JSON.stringify({ id: made.id }), headers: { "content-type": "application/json" } })).text();
    // Malformed input never reaches the implementation: connect-node's interceptor does not count it either.
    await (await fetch(`${logged.url}${SERVICE}/GetFile`, { method: "POST", body: "{", headers: { "content-type": "application/json", ...bearer(k) } })).text();
    const after = await scrape();
    expect({ ok: after.ok - before.ok, notFound: after.notFound - before.notFound, denied: after.denied - before.denied }).toEqual({ ok: 1, notFound: 1, denied: 1 });
    expect({ status: ok.status, id: ok.headers.get("x-request-id"), grpc: [grpcNotFound["grpc-status"], grpcNotFound["x-request-id"]] }).toEqual({
      status: 200,
      id: "fast-path-call-1",
      grpc: ["5", "fast-path-call-2"],
    });
    await logged.waitForOutput('"request_id":"fast-path-call-2"');
    const lines = logged
      .output()
      .split("\n")
      .filter((l) => l.includes('"request_id":"fast-path-call-'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const userId = lines[0]?.user_id;
    expect(lines.map(({ time: _t, duration_ms: _d, client_address: _c, ...rest }) => rest)).toEqual([
      { level: "info", request_id: "fast-path-call-1", method: "POST", route: `${SERVICE}/GetFile`, path: `${SERVICE}/GetFile`, status: 200, bytes: Buffer.byteLength(okBody), user_id: userId },
      { level: "info", request_id: "fast-path-call-2", method: "POST", route: `${SERVICE}/GetFile`, path: `${SERVICE}/GetFile`, status: 200, bytes: null, user_id: userId },
    ]);
    expect(typeof userId).toBe("string");
  });

  test("the text access-log line of a fast-path call (LOG_FORMAT unset)", async () => {
    const res = await fetch(`${server.url}${SERVICE}/GetFile`, { method: "POST", body: "{}", headers: { "content-type": "application/json", "x-request-id": "fast-text-1", ...bearer(key) } });
    const body = (await res.json()) as { code: string };
    await server.waitForOutput("request_id=fast-text-1");
    const line = server.output().split("\n").find((l) => l.includes("request_id=fast-text-1"));
    expect({ status: res.status, code: body.code, line: line?.replace(/duration_ms=[\d.]+/, "duration_ms=X") }).toEqual({
      status: 400,
      code: "invalid_argument",
      line: `method=POST path="${SERVICE}/GetFile" status=400 bytes=${res.headers.get("content-length")} duration_ms=X request_id=fast-text-1`,
    });
  });
});
