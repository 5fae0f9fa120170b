// Where a request's context begins (AccessLog.begin) and its line is written once its Node
// response closes (NodeExchange.open), without a socket.
import { expect, test } from "bun:test";
import { EventEmitter } from "node:events";
import { AccessLog } from "../../src/serving/access-log.ts";
import type { NodeRequest, NodeResponse } from "../../src/server/node-bridge.ts";
import { NodeExchange } from "../../src/server/node-exchange.ts";

/** What the dispatch does for a request: its context begun, the exchange opened with it. */
function open(log: AccessLog, req: NodeRequest, res: NodeResponse, path: string) {
  const ex = new NodeExchange(req, res, log);
  const context = log.begin(ex.method, path, ex.peer, ex.headers.get("x-forwarded-for"), ex.headers.get("x-request-id"));
  ex.open(context);
  return context;
}

function fakeResponse() {
  const headers = new Map<string, string>();
  const res = Object.assign(new EventEmitter(), {
    statusCode: 200,
    setHeader: (name: string, value: string) => headers.set(name, value),
    getHeader: (name: string) => headers.get(name),
  });
  return { res: res as unknown as NodeResponse, headers };
}

test("the context is decided once; the ID is echoed; the line is written when the response closes", () => {
  const lines: string[] = [];
  const log = new AccessLog((line) => lines.push(line), new Set(["10.0.0.1"]));
  const req = { method: "GET", headers: { "x-forwarded-for": "203.0.113.7", "x-request-id": "abc" }, socket: { remoteAddress: "::ffff:10.0.0.1" } } as unknown as NodeRequest;
  const { res, headers } = fakeResponse();
  const context = open(log, req, res, "/v1/files");
  expect({ requestId: context.requestId, clientAddress: context.clientAddress, echoed: headers.get("x-request-id"), lines }).toEqual({
    requestId: "abc",
    clientAddress: "203.0.113.7",
    echoed: "abc",
    lines: [],
  });
  headers.set("content-length", "12");
  (res as unknown as { statusCode: number }).statusCode = 404;
  res.emit("close");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^method=GET path="\/v1\/files" status=404 bytes=12 duration_ms=\d+\.\d request_id=abc$/);
});

test("an unusable X-Request-Id is replaced; X-Forwarded-For from an untrusted peer is ignored", () => {
  const log = new AccessLog(() => {}, new Set());
  const req = { method: "GET", headers: { "x-forwarded-for": "203.0.113.7", "x-request-id": "has spaces" }, socket: { remoteAddress: "192.0.2.5" } } as unknown as NodeRequest;
  const context = open(log, req, fakeResponse().res, "/");
  expect({ idLength: context.requestId.length, clientAddress: context.clientAddress }).toEqual({ idLength: 12, clientAddress: "192.0.2.5" });
});

test("requestLineOf reads the refused request's method and path, or -", async () => {
  const { requestLineOf } = await import("../../src/server/http1-head.ts");
  const pipelined = Buffer.from("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nPOST /b?q=1 HTTP/1.1\r\nHost x\r\n\r\n");
  expect([
    requestLineOf(Buffer.from("GET /a?x=1 HTTP/1.1\r\nHost x\r\n\r\n"), 21),
    requestLineOf(Buffer.from("G@T /a HTTP/1.1\r\n\r\n"), 1),
    requestLineOf(pipelined, pipelined.indexOf("Host x") + 4),
    requestLineOf(Buffer.from("GET /big HTTP/1.1\r\nX: aaaa")),
    requestLineOf(Buffer.from("\u0001\u0002 nonsense\r\n\r\n"), 0),
    requestLineOf(Buffer.from("GET http://example.com/ HTTP/1.1\r\n\r\n"), 3),
    requestLineOf(Buffer.from("GET /é HTTP/1.1\r\n\r\n", "latin1")),
    requestLineOf(undefined),
  ]).toEqual([
    { method: "GET", path: "/a" },
    { method: "-", path: "/a" },
    { method: "POST", path: "/b" },
    { method: "GET", path: "/big" },
    { method: "-", path: "-" },
    { method: "GET", path: "-" },
    { method: "GET", path: "-" },
    { method: "-", path: "-" },
  ]);
});

test("a login link's token never reaches the log: its path is kept as /auth/link/…", () => {
  const log = new AccessLog(() => {}, new Set());
  const token = "A".repeat(43);
  expect(log.begin("GET", `/auth/link/${token}`, "127.0.0.1", null, null).path).toBe("/auth/link/…");
  expect(log.begin("GET", "/auth/link/", "127.0.0.1", null, null).path).toBe("/auth/link/");
  expect(log.begin("GET", "/auth/login", "127.0.0.1", null, null).path).toBe("/auth/login");
});
