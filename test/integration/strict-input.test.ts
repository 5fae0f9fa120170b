// test-lists: postgres-s3
// Input that would be stored differently from what the client meant is refused with 400 and
// changes nothing (issue 11): bytes that are not UTF-8, a known parameter given twice, and
// non-ASCII media types.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "node:http2";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { RawHttp } from "../support/raw-http.ts";

let server: RunningServer;
let key: string;
let file: FileJson;
const api = () => client(server, key);
beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("strict@example.com");
  file = await api().upload("content", "?name=kept.txt&visibility=public");
});
afterAll(() => server[Symbol.asyncDispose]());

async function fileCount(): Promise<number> {
  return ((await (await api().fetch("/v1/files?page_size=1000")).json()) as { files: unknown[] }).files.length;
}

/** Expects a 400 JSON error naming `what`, and that the file list and `file` did not change. */
async function refusedAndUnchanged(res: Response, what: string, countBefore: number): Promise<void> {
  expect(res.status).toBe(400);
  expect(((await res.json()) as { message: string }).message).toContain(what);
  expect(await fileCount()).toBe(countBefore);
  expect(await (await api().fetch(`/v1/files/${file.id}`)).json()).toEqual(file);
}

test("a PATCH body that is not UTF-8 is a 400", async () => {
  const before = await fileCount();
  const body = Buffer.concat([Buffer.from('{"name":"bad'), Buffer.from([0xff, 0xfe]), Buffer.from('.txt"}')]);
  const res = await api().fetch(`/v1/files/${file.id}`, { method: "PATCH", body, headers: { "content-type": "application/json" } });
  await refusedAndUnchanged(res, "UTF-8", before);
});

test.each([
  ["?name=%FF", "name"],
  ["?name=%C3", "name"],
  ["?name=%zz", "name"],
  ["?slug=%ED%A0%80", "slug"],
])("an upload with %s is a 400 and stores nothing", async (query, what) => {
  const before = await fileCount();
  await refusedAndUnchanged(await api().fetch(`/v1/files${query}`, { method: "POST", body: "x" }), what, before);
});

test("form-encoded queries still decode: + is a space, UTF-8 escapes are kept", async () => {
  const made = await api().upload("x", "?name=a+b%20%C3%A9.txt");
  expect(made.name).toBe("a b é.txt");
  await api().fetch(`/v1/files/${made.id}`, { method: "DELETE" });
});

test.each([
  ["POST", "/v1/files?name=a.txt&name=b.txt", "name"],
  ["POST", "/v1/files?visibility=public&visibility=private", "visibility"],
  ["POST", "/v1/files?slug=a&slug=a", "slug"],
  ["GET", "/v1/files?page_size=1&page_size=2", "page_size"],
  ["GET", "/v1/files?page_token=&page_token=", "page_token"],
])("%s %s (a parameter given twice) is a 400", async (method, target, what) => {
  const before = await fileCount();
  await refusedAndUnchanged(await api().fetch(target, { method, body: method === "POST" ? "x" : undefined }), `${what}: given more than once`, before);
});

test("content URLs and sign-in refuse a repeated parameter too", async () => {
  const res = await fetch(`${server.url}/${file.id}?download=1&download=0`);
  expect(res.status).toBe(400);
  expect(await res.text()).toContain("download: given more than once");
  expect((await fetch(`${server.url}/${file.id}?download=1`)).headers.get("content-disposition")).toStartWith("attachment");
  const login = await fetch(`${server.url}/auth/login?next=/a&next=/b`, { redirect: "manual" });
  expect(login.status).toBe(400);
});

test("unknown parameters, even repeated, are ignored", async () => {
  expect((await api().fetch("/v1/files?x=1&x=2&page_size=5")).status).toBe(200);
});

/** An upload over raw HTTP/1.1 with a Content-Type holding raw bytes; the status line. */
async function uploadRaw(contentType: Buffer): Promise<string> {
  using c = await RawHttp.connect(server.port);
  c.write(
    Buffer.concat([
      Buffer.from(`POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 1\r\nConnection: close\r\nContent-Type: `),
      contentType,
      Buffer.from("\r\n\r\nx"),
    ]),
  );
  await c.whenClosed();
  return c.received.toString("latin1").split("\r\n")[0]!;
}

test("a non-ASCII Content-Type is a 400 over HTTP/1.1 and HTTP/2; an ASCII one round-trips exactly", async () => {
  const before = await fileCount();
  expect(await uploadRaw(Buffer.from('text/plain; title="caf\u00e9"', "utf8"))).toBe("HTTP/1.1 400 Bad Request");
  expect(await uploadRaw(Buffer.from('text/plain; title="caf\u00e9"', "latin1"))).toBe("HTTP/1.1 400 Bad Request");
  const session = connect(server.url);
  try {
    const stream = session.request({ ":method": "POST", ":path": "/v1/files", authorization: `Bearer ${key}`, "content-type": 'text/plain; title="caf\u00e9"' });
    const status = await new Promise<number>((resolve) => stream.on("response", (h) => resolve(Number(h[":status"]))));
    stream.resume();
    stream.end("x");
    expect(status).toBe(400);
  } finally {
    session.close();
  }
  expect(await fileCount()).toBe(before);
  const exact = 'text/plain; title="a \\"b\\" c"; charset=utf-8';
  const made = await api().upload("x", "", { "content-type": exact });
  expect(made.content_type).toBe(exact);
  expect((await fetch(`${server.url}/${made.id}`, { headers: { authorization: `Bearer ${key}` } })).headers.get("content-type")).toBe(exact);
});
