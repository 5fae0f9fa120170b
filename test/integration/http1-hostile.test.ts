// test-lists: default
// HTTP/1.1 clients that keep sending after the server has answered, or pipeline a malformed
// request behind a valid one: every answer must reach them.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { parseAll, RawHttp, type RawResponse } from "../support/raw-http.ts";
import { startServer, type RunningServer } from "../support/server.ts";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server[Symbol.asyncDispose]());

/**
 * Sends `head` and then `bodyBytes` bytes without reading anything (as a blocking client does:
 * write everything, then read), then reads until the server ends the connection.
 * @returns every response received (to requests other than HEAD)
 * @throws when nothing arrived, with the error that ended the connection
 */
async function sendAllThenRead(head: string, bodyBytes: number): Promise<{ responses: RawResponse[] }> {
  using c = await RawHttp.connect(server.port, { allowHalfOpen: true });
  c.socket.pause();
  const chunk = Buffer.alloc(256 * 1024, 97);
  const write = (data: Uint8Array) => new Promise<void>((resolve) => c.socket.write(data, () => resolve()));
  await write(Buffer.from(head, "latin1"));
  for (let sent = 0; sent < bodyBytes && !c.socket.destroyed; sent += chunk.length) await write(chunk.subarray(0, Math.min(chunk.length, bodyBytes - sent)));
  c.socket.resume();
  await c.whenEnded(30_000);
  if (c.length === 0) throw new Error(`no answer: ${c.error?.message ?? "the connection ended empty"}`);
  return { responses: parseAll(c.received) };
}

test("an early 401 to a 16 MiB upload reaches a client that reads only after sending (16 of 16)", async () => {
  const size = 16 * 1024 * 1024;
  const firstLines: string[] = [];
  for (let i = 0; i < 16; i++) {
    const { responses } = await sendAllThenRead(`POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer cubby_wrong\r\nContent-Length: ${size}\r\n\r\n`, size);
    firstLines.push(responses[0]?.statusLine ?? "(none)");
  }
  expect(firstLines).toEqual(Array(16).fill("HTTP/1.1 401 Unauthorized"));
});

test("an early 400 to an upload with a bad parameter reaches the client, and the connection closes", async () => {
  const size = 8 * 1024 * 1024;
  const { responses } = await sendAllThenRead(`POST /v1/files?visibility=nope HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer cubby_wrong\r\nContent-Length: ${size}\r\n\r\n`, size);
  expect(responses[0]?.statusLine).toMatch(/^HTTP\/1\.1 40[01] /);
  expect(responses[0]?.headers.connection?.toLowerCase()).toBe("close");
});

test("a valid request pipelined before a malformed one gets its answer, then the 400", async () => {
  const { responses } = await sendAllThenRead("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost x\r\n\r\n", 0);
  expect(responses.map((r) => r.statusLine)).toEqual(["HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request"]);
  expect(responses[0]!.body.toString()).toContain('{"status":"ok"}');
});

// Requests refused before any handler saw them still leave one access-log line each (issue 25):
// the status, the client's address, and what of the request line could be read.

/** The access-log lines printed so far for `path`. */
const linesFor = (s: RunningServer, path: string) =>
  s
    .output()
    .split("\n")
    .filter((l) => l.includes(`path=${JSON.stringify(path)} `));

for (const [what, request, expected] of [
  ["a header line with no colon", "GET /log-no-colon?x=1 HTTP/1.1\r\nHost x\r\n\r\n", { status: 400, method: "GET", path: "/log-no-colon" }],
  ["an invalid method token", "G@T /log-bad-method HTTP/1.1\r\nHost: x\r\n\r\n", { status: 400, method: "-", path: "/log-bad-method" }],
  ["a 70 KiB header block", `GET /log-big-head HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(70 * 1024)}\r\n\r\n`, { status: 431, method: "GET", path: "/log-big-head" }],
  ["a malformed request pipelined behind a valid one", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nPOST /log-pipelined HTTP/1.1\r\nHost x\r\n\r\n", { status: 400, method: "POST", path: "/log-pipelined" }],
] as const) {
  test(`${what} is answered ${expected.status} and leaves one access-log line`, async () => {
    const { responses } = await sendAllThenRead(request, 0);
    expect(responses.at(-1)?.status).toBe(expected.status);
    await server.waitForOutput(`path=${JSON.stringify(expected.path)} `);
    const lines = linesFor(server, expected.path);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^method=${expected.method.replace("-", "\\-")} path="${expected.path}" status=${expected.status} bytes=0 duration_ms=[\\d.]+ request_id=\\S+ client=127\\.0\\.0\\.1$`));
  });
}

test("a request line that cannot be read at all is logged with - for method and path", async () => {
  const before = server.output().split("\n").filter((l) => /^method=- path="-" status=400 .* client=127\.0\.0\.1$/.test(l)).length;
  const { responses } = await sendAllThenRead("\u0001\u0002 nonsense\r\n\r\n", 0);
  expect(responses[0]?.statusLine).toBe("HTTP/1.1 400 Bad Request");
  await server.waitForOutput(/method=- path="-" status=400 /);
  const count = () => server.output().split("\n").filter((l) => /^method=- path="-" status=400 .* client=127\.0\.0\.1$/.test(l)).length;
  expect(count()).toBe(before + 1);
});

test("a request whose headers run out of time (408) leaves a JSON access-log line with the client's address (LOG_FORMAT=json)", async () => {
  await using slow = await startServer({ env: { HEADER_TIMEOUT_SECONDS: "1", LOG_FORMAT: "json" } });
  using c = await RawHttp.connect(slow.port);
  c.write("GET /log-too-slow HTTP/1.1\r\nHost: x\r\n");
  await c.whenClosed();
  expect(parseAll(c.received).map((r) => r.statusLine)).toEqual(["HTTP/1.1 408 Request Timeout"]);
  await slow.waitForOutput('"status":408');
  const lines = slow
    .output()
    .split("\n")
    .filter((l) => l.includes('"status":408'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines.map(({ method, path, status, client_address }) => ({ method, path, status, client_address }))).toEqual([
    { method: "GET", path: "/log-too-slow", status: 408, client_address: "127.0.0.1" },
  ]);
});
