// test-lists: postgres-s3
// Types from names (CONTRACT §17, issue 39): an upload that sends no Content-Type gets the type
// registered for its name's extension (curl -T without -H, a tus upload without `filetype`, a
// guest upload, gRPC's CreateFile without content_type); a type the client sends is stored as
// sent, application/octet-stream included (the specification's rule for REST). An S3 PutObject
// with no type or application/octet-stream gets its key's type too (CONTRACT §17); WebDAV's PUT,
// where clients send application/octet-stream for everything, is tested in the WebDAV suites.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AwsClient } from "aws4fetch";
import type { FileJson } from "../../src/domain/file.ts";
import { CreateFileRequestSchema, FileService } from "../../src/gen/cubby/v1/files_pb.ts";
import { client, startServer, tempDir, type RunningServer } from "../support/server.ts";

let server: RunningServer;
let key: string;
const dir = tempDir("cubby-types-");

beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("types@example.com");
  fs.writeFileSync(path.join(dir.path, "photo.jpg"), new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]));
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  dir[Symbol.dispose]();
});

/** curl as a newcomer types it: `curl -T FILE -X POST URL`, with extra arguments. */
function curl(query: string, ...extra: string[]): FileJson {
  const run = Bun.spawnSync(["curl", "-sS", "-f", "-T", path.join(dir.path, "photo.jpg"), "-X", "POST", "-H", `Authorization: Bearer ${key}`, ...extra, `${server.url}/v1/files${query}`]);
  expect(run.exitCode, run.stderr.toString()).toBe(0);
  return JSON.parse(run.stdout.toString()) as FileJson;
}

test("curl -T with a name and no -H: the type of the name's extension, whatever its case", () => {
  expect(curl("?name=photo.jpg").content_type).toBe("image/jpeg");
  expect(curl("?name=SCAN.PDF").content_type).toBe("application/pdf");
  expect(curl("?name=notes.md").content_type).toBe("text/markdown");
});

test("no name, or an extension nobody registered: application/octet-stream", () => {
  expect(curl("").content_type).toBe("application/octet-stream");
  expect(curl("?name=data.zzzunknown").content_type).toBe("application/octet-stream");
  expect(curl("?name=README").content_type).toBe("application/octet-stream");
});

test("a type the client sends is stored as sent, application/octet-stream too", () => {
  expect(curl("?name=photo.jpg", "-H", "Content-Type: application/octet-stream").content_type).toBe("application/octet-stream");
  expect(curl("?name=photo.jpg", "-H", "Content-Type: text/plain; charset=latin1").content_type).toBe("text/plain; charset=latin1");
});

test("a guest upload link and a tus upload without filetype name their type too", async () => {
  const api = client(server, key);
  const link = (await (await api.fetch("/v1/upload-links", { method: "POST", body: "{}", headers: { "content-type": "application/json" } })).json()) as { url: string };
  const token = new URL(link.url).pathname.split("/").at(-1)!;
  const guest = await fetch(`${server.url}/u/${token}?name=clip.mp4`, { method: "POST", body: new Uint8Array([0, 0, 0, 24]) });
  expect(guest.status).toBe(200);
  expect(((await guest.json()) as FileJson).content_type).toBe("video/mp4");

  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const created = await api.fetch("/v1/uploads", {
    method: "POST",
    headers: { "tus-resumable": "1.0.0", "upload-length": "3", "upload-metadata": `filename ${b64("page.html")}` },
  });
  expect(created.status).toBe(201);
  const done = await fetch(new URL(created.headers.get("location")!, server.url), {
    method: "PATCH",
    headers: { authorization: `Bearer ${key}`, "tus-resumable": "1.0.0", "upload-offset": "0", "content-type": "application/offset+octet-stream" },
    body: new Uint8Array([60, 112, 62]),
  });
  expect(done.status).toBe(204);
  const files = (await (await api.fetch("/v1/files?q=page.html")).json()) as { files: FileJson[] };
  expect(files.files.map((f) => f.content_type)).toEqual(["text/html"]);
});

test("gRPC's CreateFile without content_type, and S3 PutObject with none or application/octet-stream, take the name's type", async () => {
  const rpc = createClient(FileService, createGrpcTransport({ baseUrl: server.url }));
  const created = await rpc.createFile(
    (async function* () {
      yield create(CreateFileRequestSchema, { name: "SCAN.pdf", content: new Uint8Array([37, 80, 68, 70]) });
    })(),
    { headers: { authorization: `Bearer ${key}` } },
  );
  expect(created.file?.contentType).toBe("application/pdf");

  const [id, secret] = (await server.mintKey("types@example.com", "--s3")).split("\n").map((l) => l.slice(l.indexOf("=") + 1)) as [string, string];
  const s3 = new AwsClient({ accessKeyId: id, secretAccessKey: secret, service: "s3", region: "us-east-1", retries: 0 });
  expect((await s3.fetch(`${server.url}/types`, { method: "PUT" })).status).toBe(200);
  const put = async (key: string, headers: Record<string, string>) => {
    const res = await s3.fetch(`${server.url}/types/${key}`, { method: "PUT", headers, body: new Uint8Array([0xff, 0xd8, 0xff]) });
    expect(res.status, await res.text()).toBe(200);
    return (await s3.fetch(`${server.url}/types/${key}`, { method: "HEAD" })).headers.get("content-type");
  };
  expect(await put("none/photo.jpg", {})).toBe("image/jpeg");
  expect(await put("octet/photo.jpg", { "content-type": "application/octet-stream" })).toBe("image/jpeg");
  expect(await put("sent/photo.jpg", { "content-type": "text/plain" })).toBe("text/plain");
  expect(await put("unknown/photo.zzz", {})).toBe("application/octet-stream");
});
