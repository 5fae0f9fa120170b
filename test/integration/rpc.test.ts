// test-lists: postgres-s3
// gRPC, Connect and gRPC-Web on the one port (CONTRACT §4), with real clients: buf curl,
// @grpc/grpc-js, and connect-node's transports. Parity with REST for File JSON and errors.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { create, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import fs from "node:fs";
import path from "node:path";
import { checksumOf } from "../../src/domain/checksum.ts";
import { CreateFileRequestSchema, FileSchema, FileService, type File } from "../../src/gen/cubby/v1/files_pb.ts";
import { client, ROOT, startServer, type FileJson, type RunningServer } from "../support/server.ts";

const MAX_UPLOAD = 8 * 1024 * 1024;
let server: RunningServer;
let key: string;
let otherKey: string;

beforeAll(async () => {
  server = await startServer({ env: { MAX_UPLOAD_BYTES: String(MAX_UPLOAD) } });
  key = await server.mintKey("rpc@example.com");
  otherKey = await server.mintKey("rpc-other@example.com");
});
afterAll(() => server[Symbol.asyncDispose]());

const transports: Record<string, () => Transport> = {
  "Connect over HTTP/1.1": () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }),
  "Connect over h2c": () => createConnectTransport({ baseUrl: server.url, httpVersion: "2" }),
  "gRPC-Web over HTTP/1.1": () => createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }),
  "gRPC-Web over h2c": () => createGrpcWebTransport({ baseUrl: server.url, httpVersion: "2" }),
  "gRPC over h2c": () => createGrpcTransport({ baseUrl: server.url }),
};

const auth = (k: string) => ({ headers: { authorization: `Bearer ${k}` } });
const fileJson = (f: File | undefined) => toJson(FileSchema, f!, { alwaysEmitImplicit: true, useProtoFieldName: true }) as unknown as FileJson;

async function* chunks(parts: Uint8Array[], first: { slug?: string; name?: string; visibility?: string; contentType?: string }) {
  for (const [i, content] of parts.entries()) {
    yield create(CreateFileRequestSchema, i === 0 ? { ...first, content } : { content });
  }
}

describe.each(Object.keys(transports))("%s (connect-node)", (name) => {
  let rpc: Client<typeof FileService>;
  beforeAll(() => {
    rpc = createClient(FileService, transports[name]!());
  });

  test("every method, with the same File JSON as REST", async () => {
    const content = crypto.getRandomValues(new Uint8Array(300_000));
    const created = await rpc.createFile(
      chunks([content.subarray(0, 100_000), content.subarray(100_000)], { name: "a.bin", slug: "a", visibility: "private", contentType: "application/x-a" }),
      auth(key),
    );
    const file = fileJson(created.file);
    expect(file).toMatchObject({ name: "a.bin", slug: "a", visibility: "private", content_type: "application/x-a", size: "300000", checksum: checksumOf(content) });
    const rest = await client(server, key).fetch(`/v1/files/${file.id}`);
    expect(await rest.json()).toEqual(file);
    expect(fileJson((await rpc.getFile({ id: file.id }, auth(key))).file)).toEqual(file);

    const listed = await rpc.listFiles({ pageSize: 1 }, auth(key));
    expect({ first: fileJson(listed.files[0]), more: listed.nextPageToken !== "" || listed.files.length === 1 }).toEqual({ first: file, more: true });

    const updated = fileJson((await rpc.updateFile({ id: file.id, slug: "b", name: "" }, auth(key))).file);
    expect(updated).toMatchObject({ slug: "b", name: "", url: `${server.url}/${file.id}/b`, visibility: "private" });

    await rpc.publishFile({ id: file.id }, auth(key));
    expect(fileJson((await rpc.getFile({ id: file.id }, auth(key))).file).visibility).toBe("public");
    await rpc.unpublishFile({ id: file.id }, auth(key));
    expect(fileJson((await rpc.getFile({ id: file.id }, auth(key))).file).visibility).toBe("internal");

    const next = crypto.getRandomValues(new Uint8Array(50_000));
    const replaced = await rpc.updateFileContent(
      (async function* () {
        yield { id: file.id, contentType: "text/plain", content: next.subarray(0, 10) };
        yield { content: next.subarray(10) };
      })(),
      auth(key),
    );
    expect(fileJson(replaced.file)).toMatchObject({ size: "50000", checksum: checksumOf(next), content_type: "text/plain" });

    const parts: Uint8Array[] = [];
    let contentType = "";
    for await (const m of rpc.getFileContent({ id: file.id }, auth(key))) {
      if (m.contentType !== "") contentType = m.contentType;
      parts.push(m.content);
    }
    expect({ contentType, bytes: Buffer.compare(Buffer.concat(parts), next) }).toEqual({ contentType: "text/plain", bytes: 0 });

    await rpc.deleteFile({ id: file.id }, auth(key));
    expect((await client(server, key).fetch(`/v1/files/${file.id}`)).status).toBe(404);
  });

  test("an empty upload stream creates an empty file", async () => {
    const created = await rpc.createFile((async function* () {})(), auth(key));
    expect(fileJson(created.file)).toMatchObject({ size: "0", checksum: "AAAAAA==", content_type: "application/octet-stream", visibility: "internal" });
  });
});

describe("error parity: the same failure gives the same gRPC code on every protocol and the mapped HTTP status on REST", () => {
  type Case = { rpc: (c: Client<typeof FileService>, ids: Ids) => Promise<unknown>; rest: (ids: Ids) => Promise<Response>; code: Code; status: number };
  type Ids = { internal: string; private: string };
  let ids: Ids;
  beforeAll(async () => {
    const api = client(server, key);
    ids = { internal: (await api.upload("x", "?visibility=internal")).id, private: (await api.upload("x", "?visibility=private")).id };
  });
  const big = () => new Uint8Array(MAX_UPLOAD + 1);
  const cases: Record<string, Case> = {
    "INVALID_ARGUMENT (malformed id)": {
      rpc: (c) => c.getFile({ id: "nope" }, auth(key)),
      rest: () => client(server, key).fetch("/v1/files/nope"),
      code: Code.InvalidArgument,
      status: 400,
    },
    "INVALID_ARGUMENT (bad slug)": {
      rpc: (c, i) => c.updateFile({ id: i.internal, slug: "a b" }, auth(key)),
      rest: (i) => client(server, key).fetch(`/v1/files/${i.internal}`, { method: "PATCH", body: '{"slug":"a b"}', headers: { "content-type": "application/json" } }),
      code: Code.InvalidArgument,
      status: 400,
    },
    "UNAUTHENTICATED (no key)": {
      rpc: (c, i) => c.getFile({ id: i.internal }),
      rest: (i) => fetch(`${server.url}/v1/files/${i.internal}`),
      code: Code.Unauthenticated,
      status: 401,
    },
    "UNAUTHENTICATED (unknown key)": {
      rpc: (c, i) => c.getFile({ id: i.internal }, auth("cubby_nope")),
      rest: (i) => client(server, "cubby_nope").fetch(`/v1/files/${i.internal}`),
      code: Code.Unauthenticated,
      status: 401,
    },
    "PERMISSION_DENIED (not the owner)": {
      rpc: (c, i) => c.deleteFile({ id: i.internal }, auth(otherKey)),
      rest: (i) => client(server, otherKey).fetch(`/v1/files/${i.internal}`, { method: "DELETE" }),
      code: Code.PermissionDenied,
      status: 403,
    },
    "NOT_FOUND (another user's private file)": {
      rpc: (c, i) => c.getFile({ id: i.private }, auth(otherKey)),
      rest: (i) => client(server, otherKey).fetch(`/v1/files/${i.private}`),
      code: Code.NotFound,
      status: 404,
    },
    "RESOURCE_EXHAUSTED (over MAX_UPLOAD_BYTES)": {
      rpc: (c) => {
        const b = big();
        const parts = [];
        for (let off = 0; off < b.byteLength; off += 1024 * 1024) parts.push(b.subarray(off, off + 1024 * 1024));
        return c.createFile(chunks(parts, {}), auth(key));
      },
      rest: () => client(server, key).fetch("/v1/files", { method: "POST", body: big() }),
      code: Code.ResourceExhausted,
      status: 413,
    },
  };

  test.each(Object.keys(cases))("%s", async (caseName) => {
    const c = cases[caseName]!;
    const codes: Record<string, Code | "ok"> = {};
    for (const [name, transport] of Object.entries(transports)) {
      try {
        await c.rpc(createClient(FileService, transport()), ids);
        codes[name] = "ok";
      } catch (e) {
        codes[name] = ConnectError.from(e).code;
      }
    }
    const rest = await c.rest(ids);
    const body = (await rest.json()) as { code: number };
    expect({ codes, status: rest.status, restCode: body.code }).toEqual({
      codes: Object.fromEntries(Object.keys(transports).map((n) => [n, c.code])),
      status: c.status,
      restCode: c.code,
    });
  });
});

describe("@grpc/grpc-js (an independent gRPC client)", () => {
  // biome-ignore lint: loaded dynamically from the .proto file
  let stub: any;
  const md = () => {
    const m = new grpc.Metadata();
    m.set("authorization", `Bearer ${key}`);
    return m;
  };
  const unary = <T>(method: string, req: object, meta = md()) =>
    new Promise<T>((resolve, reject) => stub[method](req, meta, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))));

  beforeAll(() => {
    const def = protoLoader.loadSync(path.join(ROOT, "proto/cubby/v1/files.proto"), {
      includeDirs: [path.join(ROOT, "proto")],
      keepCase: true,
      longs: String,
      defaults: true,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as { cubby: { v1: { FileService: grpc.ServiceClientConstructor } } };
    stub = new pkg.cubby.v1.FileService(`localhost:${server.port}`, grpc.credentials.createInsecure(), {
      "grpc.max_send_message_length": 4 * 1024 * 1024,
    });
  });
  afterAll(() => stub?.close());

  test("3 MiB client-streamed upload in several messages, server-streamed download, byte- and checksum-exact", async () => {
    const content = crypto.getRandomValues(new Uint8Array(3 * 1024 * 1024));
    const created = await new Promise<{ file: FileJson & { size: string } }>((resolve, reject) => {
      const call = stub.CreateFile(md(), (err: Error | null, res: { file: FileJson }) => (err ? reject(err) : resolve(res)));
      const piece = 700 * 1024;
      for (let off = 0; off < content.byteLength; off += piece) {
        const msg = off === 0 ? { name: "three.bin", visibility: "public", content_type: "application/octet-stream" } : {};
        call.write({ ...msg, content: Buffer.from(content.subarray(off, off + piece)) });
      }
      call.end();
    });
    expect({ size: created.file.size, checksum: created.file.checksum, name: created.file.name }).toEqual({
      size: String(content.byteLength),
      checksum: checksumOf(content),
      name: "three.bin",
    });

    const received: Buffer[] = [];
    const sizes: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const call = stub.GetFileContent({ id: created.file.id }, md());
      call.on("data", (m: { content: Buffer }) => {
        received.push(m.content);
        sizes.push(m.content.byteLength);
      });
      call.on("error", reject);
      call.on("end", resolve);
    });
    const all = Buffer.concat(received);
    expect({ exact: Buffer.compare(all, content), checksum: checksumOf(all), maxChunk: Math.max(...sizes) <= 1024 * 1024, chunks: sizes.length }).toEqual({
      exact: 0,
      checksum: checksumOf(content),
      maxChunk: true,
      chunks: 3,
    });
  });

  test("unary methods and an error code", async () => {
    const made = await client(server, key).upload("grpc-js", "?visibility=private");
    const got = await unary<{ file: FileJson & { created_at: unknown } }>("GetFile", { id: made.id });
    expect({ id: got.file.id, size: got.file.size, checksum: got.file.checksum }).toEqual({ id: made.id, size: made.size, checksum: made.checksum });
    await unary("PublishFile", { id: made.id });
    await unary("UpdateFile", { id: made.id, slug: "via-grpc" });
    const list = await unary<{ files: { id: string }[] }>("ListFiles", { page_size: 1000 });
    expect(list.files.map((f) => f.id)).toContain(made.id);
    await unary("DeleteFile", { id: made.id });
    const err = await unary("GetFile", { id: made.id }).catch((e: grpc.ServiceError) => e);
    expect((err as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
    const anon = await unary("GetFile", { id: made.id }, new grpc.Metadata()).catch((e: grpc.ServiceError) => e);
    expect((anon as grpc.ServiceError).code).toBe(grpc.status.UNAUTHENTICATED);
  });
});

describe("buf curl", () => {
  const buf = path.join(ROOT, "node_modules/.bin/buf");
  let file: FileJson;
  beforeAll(async () => {
    file = await client(server, key).upload("hello buf", "?visibility=public&name=buf.txt");
  });

  const protocols: [string, string[]][] = [
    ["connect", ["--protocol", "connect"]],
    ["grpcweb over HTTP/1.1", ["--protocol", "grpcweb"]],
    ["grpcweb over h2c", ["--protocol", "grpcweb", "--http2-prior-knowledge"]],
    ["grpc over h2c", ["--protocol", "grpc", "--http2-prior-knowledge"]],
  ];
  const schemas: [string, string[]][] = [
    ["--schema proto", ["--schema", path.join(ROOT, "proto")]],
    ["reflection", []],
  ];

  test.each(protocols.flatMap(([p, pargs]) => schemas.map(([s, sargs]) => [p, s, [...pargs, ...sargs]] as const)))(
    "%s with %s",
    async (_, __, args) => {
      const proc = Bun.spawn(
        [buf, "curl", ...args, "-H", `Authorization: Bearer ${key}`, "-d", JSON.stringify({ id: file.id }), `${server.url}/cubby.v1.FileService/GetFile`],
        { stdout: "pipe", stderr: "pipe" },
      );
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      expect({ code, err }).toEqual({ code: 0, err: "" });
      const got = JSON.parse(out) as { file: { id: string; checksum: string; size: string; name: string } };
      expect({ id: got.file.id, checksum: got.file.checksum, size: got.file.size, name: got.file.name }).toEqual({
        id: file.id,
        checksum: file.checksum,
        size: file.size,
        name: "buf.txt",
      });
    },
  );

  test("reflection lists the services", async () => {
    const proc = Bun.spawn([buf, "curl", "--http2-prior-knowledge", "--protocol", "grpc", "--list-services", server.url], { stdout: "pipe", stderr: "pipe" });
    const out = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    expect(out.trim().split("\n").sort()).toEqual(["cubby.v1.FileService", "cubby.v1.FolderService", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]);
  });
});

describe("REST and content over h2c (curl --http2-prior-knowledge)", () => {
  async function curl(args: string[]) {
    const proc = Bun.spawn(["curl", "-sS", "--http2-prior-knowledge", ...args], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(err);
    return out;
  }

  test("upload, metadata, content, range and an error, all over HTTP/2", async () => {
    const dir = fs.mkdtempSync("/tmp/cubby-h2-");
    const src = path.join(dir, "in.bin");
    fs.writeFileSync(src, crypto.getRandomValues(new Uint8Array(5_000_000)));
    const created = JSON.parse(await curl(["-T", src, "-X", "POST", "-H", `Authorization: Bearer ${key}`, `${server.url}/v1/files?visibility=public`])) as FileJson;
    expect(created.size).toBe("5000000");
    expect(await curl(["-o", path.join(dir, "out.bin"), "-w", "%{http_version} %{http_code}", created.url])).toBe("2 200");
    expect(Buffer.compare(fs.readFileSync(path.join(dir, "out.bin")), fs.readFileSync(src))).toBe(0);
    expect(await curl(["-r", "0-9", "-o", "/dev/null", "-w", "%{http_version} %{http_code} %{size_download}", created.url])).toBe("2 206 10");
    expect(JSON.parse(await curl(["-H", `Authorization: Bearer ${key}`, `${server.url}/v1/files/${created.id}`]))).toEqual(created);
    expect(await curl(["-o", "/dev/null", "-w", "%{http_code}", `${server.url}/v1/files`])).toBe("401");
    fs.rmSync(dir, { recursive: true });
  });
});

describe("malformed protobuf is INVALID_ARGUMENT, never INTERNAL", () => {
  // Field 1 declared as a 3-byte string with one byte present: "premature EOF" in every parser.
  const garbage = Uint8Array.of(0x0a, 0x03, 0x41);
  const envelope = (flags = 0) => Buffer.concat([Buffer.from([flags, 0, 0, 0, garbage.length]), garbage]);

  /** One gRPC call over h2c with a raw body; the response's grpc-status and grpc-message. */
  async function grpcRaw(method: string, body: Buffer, contentType = "application/grpc"): Promise<Record<string, string>> {
    const { connect } = await import("node:http2");
    const session = connect(server.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": `/cubby.v1.FileService/${method}`, "content-type": contentType, te: "trailers", authorization: `Bearer ${key}` });
      const status: Record<string, string> = {};
      const take = (h: Record<string, unknown>) => {
        for (const name of ["grpc-status", "grpc-message"]) if (typeof h[name] === "string") status[name] = decodeURIComponent(h[name] as string);
      };
      stream.on("response", take);
      stream.on("trailers", take);
      stream.on("data", () => {});
      stream.end(body);
      await new Promise((resolve) => stream.on("close", resolve));
      return status;
    } finally {
      session.close();
    }
  }

  test("Connect unary (application/proto): 400 invalid_argument", async () => {
    const res = await fetch(`${server.url}/cubby.v1.FileService/GetFile`, {
      method: "POST",
      headers: { "content-type": "application/proto", authorization: `Bearer ${key}` },
      body: garbage,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("parse binary") });
  });

  test("gRPC unary and client-streaming: grpc-status 3", async () => {
    expect(await grpcRaw("GetFile", envelope())).toMatchObject({ "grpc-status": "3", "grpc-message": expect.stringContaining("parse binary") });
    const before = (await (await client(server, key).fetch("/v1/files?page_size=1000")).json()) as { files: unknown[] };
    expect(await grpcRaw("CreateFile", envelope())).toMatchObject({ "grpc-status": "3" });
    const after = (await (await client(server, key).fetch("/v1/files?page_size=1000")).json()) as { files: unknown[] };
    expect(after.files.length).toBe(before.files.length);
  });

  test("gRPC-Web unary: grpc-status 3", async () => {
    const res = await fetch(`${server.url}/cubby.v1.FileService/GetFile`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", authorization: `Bearer ${key}` },
      body: envelope(),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    const trailer = (res.headers.get("grpc-status") ?? "") + bytes.toString("latin1");
    expect(trailer).toMatch(/grpc-status:\s*3|^3/);
  });
});
