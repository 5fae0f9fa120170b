// HTTP/1.1 clients that keep sending after the server has answered, or pipeline a malformed
// request behind a valid one: every answer must reach them.
import { afterAll, beforeAll, expect, test } from "bun:test";
import net from "node:net";
import { startServer, type RunningServer } from "../support/server.ts";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server[Symbol.asyncDispose]());

/**
 * Sends `head` and then `bodyBytes` bytes without reading anything (as a blocking client does:
 * write everything, then read), then reads until the server closes.
 * @returns what was read, or the error that ended the read
 */
async function sendAllThenRead(head: string, bodyBytes: number): Promise<string> {
  const socket = net.connect({ host: "127.0.0.1", port: server.port, allowHalfOpen: true });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.pause();
  let failure = "";
  socket.on("error", (e) => (failure ||= `error: ${e.message}`));
  const chunk = Buffer.alloc(256 * 1024, 97);
  const write = (data: Uint8Array | string) => new Promise<void>((resolve) => socket.write(data, () => resolve()));
  await write(head);
  for (let sent = 0; sent < bodyBytes && !socket.destroyed; sent += chunk.length) await write(chunk.subarray(0, Math.min(chunk.length, bodyBytes - sent)));
  let received = "";
  socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
  socket.resume();
  await new Promise<void>((resolve) => {
    socket.once("end", () => resolve());
    socket.once("close", () => resolve());
  });
  socket.destroy();
  return received || failure;
}

test("an early 401 to a 16 MiB upload reaches a client that reads only after sending (16 of 16)", async () => {
  const size = 16 * 1024 * 1024;
  const firstLines: string[] = [];
  for (let i = 0; i < 16; i++) {
    const received = await sendAllThenRead(`POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer cubby_wrong\r\nContent-Length: ${size}\r\n\r\n`, size);
    firstLines.push(received.split("\r\n")[0]!);
  }
  expect(firstLines).toEqual(Array(16).fill("HTTP/1.1 401 Unauthorized"));
});

test("an early 400 to an upload with a bad parameter reaches the client, and the connection closes", async () => {
  const size = 8 * 1024 * 1024;
  const received = await sendAllThenRead(`POST /v1/files?visibility=nope HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer cubby_wrong\r\nContent-Length: ${size}\r\n\r\n`, size);
  expect(received.split("\r\n")[0]).toMatch(/^HTTP\/1\.1 40[01] /);
  expect(received.toLowerCase()).toContain("connection: close");
});

test("a valid request pipelined before a malformed one gets its answer, then the 400", async () => {
  const received = await sendAllThenRead("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost x\r\n\r\n", 0);
  const statuses = received.match(/HTTP\/1\.1 \d{3} [^\r]*/g);
  expect(statuses).toEqual(["HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request"]);
  expect(received).toContain('{"status":"ok"}');
});
