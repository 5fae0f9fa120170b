// test-lists: postgres-s3
// The Host header and the request target never change what is routed (issue 11): requests are
// routed on their path alone, a malformed Host or :authority is a 400, and absolute-form targets
// are reduced to their path.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { H2Error, RawH2 } from "../support/h2-raw.ts";
import { client, startServer, type RunningServer } from "../support/server.ts";
import { parseResponses, RawHttp } from "../support/raw-http.ts";

let server: RunningServer;
let key: string;
beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("target@example.com");
  await client(server, key).upload("mine", "?name=mine.txt");
});
afterAll(() => server[Symbol.asyncDispose]());

/** Sends one raw HTTP/1.1 request (which should say `Connection: close`) and reads until the server closes. */
async function raw(request: string): Promise<{ status: number; body: string }> {
  using c = await RawHttp.connect(server.port);
  c.write(request);
  await c.whenClosed();
  const [response] = parseResponses(c.received, ["GET"], true);
  return { status: response?.status ?? Number.NaN, body: response?.body.toString("latin1") ?? "" };
}

const get = (target: string, ...headers: string[]) =>
  raw(`GET ${target} HTTP/1.1\r\n${headers.map((h) => `${h}\r\n`).join("")}Authorization: Bearer ${key}\r\nConnection: close\r\n\r\n`);

test("a Host that looks like a path does not change the route", async () => {
  const res = await get("/healthz", "Host: x/v1/files?");
  expect(res.status).toBe(400);
  expect(res.body).not.toContain("mine.txt");
});

test.each(["a b", "[::1", "x:99999", "x:1:2", "[::1]x", "x@y", "é.example"])("Host %p is a 400 with a JSON error", async (host) => {
  const res = await get("/healthz", `Host: ${host}`);
  expect(res.status).toBe(400);
  expect(JSON.parse(res.body)).toMatchObject({ code: 3, message: expect.stringContaining("Host") });
});

test.each(["nas", "localhost:8080", "[::1]:80", "127.0.0.1", "cubby.example.org", ""])("Host %p is served", async (host) => {
  expect((await get("/healthz", `Host: ${host}`)).status).toBe(200);
});

test("two Host headers are a 400 (RFC 9112 §3.2)", async () => {
  expect((await get("/healthz", "Host: a", "Host: b")).status).toBe(400);
});

test("an absolute-form target is routed on its path, whatever its authority", async () => {
  const res = await get("http://elsewhere.example/v1/files?page_size=5", "Host: nas");
  expect(res.status).toBe(200);
  expect(res.body).toContain("mine.txt");
  expect((await get("http://x/v1/files?", "Host: nas")).status).toBe(200);
  expect((await get("http://a b/healthz", "Host: nas")).status).toBe(400);
});

test("a target that is not a path is a 400; OPTIONS * is answered", async () => {
  expect((await get("healthz", "Host: nas")).status).toBe(400);
  expect((await raw("OPTIONS * HTTP/1.1\r\nHost: nas\r\nConnection: close\r\n\r\n")).status).toBeLessThan(500);
});

test("HTTP/1.0 without a Host is served, REST and RPC", async () => {
  expect((await raw("GET /healthz HTTP/1.0\r\n\r\n")).status).toBe(200);
  const rpc = await raw(
    `POST /cubby.v1.FileService/ListFiles HTTP/1.0\r\nContent-Type: application/json\r\nAuthorization: Bearer ${key}\r\nContent-Length: 2\r\n\r\n{}`,
  );
  expect(rpc.status).toBe(200);
  expect(rpc.body).toContain("mine.txt");
});

test("over HTTP/2 a malformed :authority is refused", async () => {
  await using c = await RawH2.connect(server.port);
  const request = (id: number, authority: string, path: string) =>
    c.headers(id, [[":method", "GET"], [":scheme", "http"], [":authority", authority], [":path", path], ["authorization", `Bearer ${key}`]], true);
  request(1, "x/v1/files?", "/healthz");
  request(3, "x:99999", "/healthz");
  request(5, "nas:8080", "/healthz");
  // Bun's HTTP/2 layer resets a stream whose :authority holds a "/" before cubby sees it.
  expect(await c.response(1)).toMatchObject({ resetCode: H2Error.PROTOCOL_ERROR, headers: {} });
  expect((await c.response(3)).headers[":status"]).toBe("400");
  expect((await c.response(5)).headers[":status"]).toBe("200");
});
