// Protocol detection on a new connection, without a socket: a Duplex stands in for it.
import { describe, expect, test } from "bun:test";
import { Duplex } from "node:stream";
import { classifyHead, sniffProtocol, type HeadVerdict } from "../../src/server/sniff.ts";
import { waitFor } from "../support/wait.ts";

describe("classifyHead", () => {
  test.each([
    ["the HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "http2"],
    ["its first 4 bytes are enough", "PRI ", "http2"],
    ["fewer could still be the preface", "PR", "more"],
    ["a complete HTTP/1.1 request head", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "http1"],
    ["headers ended by bare LFs (the HTTP/1 parser answers 400)", "GET / HTTP/1.1\nHost: x\n\n", "http1"],
    ["an incomplete request head", "GET / HTTP/1.1\r\nHost: x\r\n", "more"],
    ["a request line that starts like the preface but is not it", "PRIX / HTTP/1.1\r\n\r\n", "http1"],
    ["a head past the limit", `GET / HTTP/1.1\r\nX: ${"a".repeat(100)}`, "too_large"],
  ] as [string, string, HeadVerdict][])("%s: %s", (_, head, verdict) => {
    expect(classifyHead(Buffer.from(head), 64)).toBe(verdict);
  });
});

/** A connection whose client sends `chunks`; what the server writes is collected. */
function fakeConnection() {
  const written: string[] = [];
  const socket = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      written.push(chunk.toString());
      callback();
    },
  });
  return { socket, written };
}

/** Reads what is buffered on `socket` after it was handed over. */
function readBack(socket: Duplex): string {
  let all = "";
  for (let chunk = socket.read(); chunk !== null; chunk = socket.read()) all += chunk.toString();
  return all;
}

describe("sniffProtocol", () => {
  test("an HTTP/1.1 connection is handed over once its headers are complete, with every byte put back", async () => {
    const { socket } = fakeConnection();
    const handed: string[] = [];
    sniffProtocol(socket, { headerTimeoutMs: 10_000, maxHeadBytes: 1024, onHttp1: () => handed.push("http1"), onHttp2: () => handed.push("http2") });
    socket.push("GET / HTTP/1.1\r\n");
    await new Promise((resolve) => setImmediate(resolve));
    expect(handed).toEqual([]);
    socket.push("Host: x\r\n\r\n");
    await waitFor(() => handed.length > 0, "the HTTP/1.1 hand-over", 10_000, 5);
    socket.pause();
    expect({ handed, bytes: readBack(socket) }).toEqual({ handed: ["http1"], bytes: "GET / HTTP/1.1\r\nHost: x\r\n\r\n" });
    socket.destroy();
  });

  test("an HTTP/2 connection is handed over after the preface's first bytes", async () => {
    const { socket } = fakeConnection();
    const handed: string[] = [];
    sniffProtocol(socket, { headerTimeoutMs: 10_000, maxHeadBytes: 1024, onHttp1: () => handed.push("http1"), onHttp2: () => handed.push("http2") });
    socket.push("PRI * HTTP/2.0\r\n");
    await waitFor(() => handed.length > 0, "the HTTP/2 hand-over", 10_000, 5);
    expect(handed).toEqual(["http2"]);
    socket.destroy();
  });

  test("headers over the limit are refused with 431, and slow ones with 408", async () => {
    const big = fakeConnection();
    sniffProtocol(big.socket, { headerTimeoutMs: 10_000, maxHeadBytes: 16, onHttp1: () => {}, onHttp2: () => {} });
    big.socket.push("GET / HTTP/1.1\r\nX-Long: aaaaaaaaaa");
    const slow = fakeConnection();
    sniffProtocol(slow.socket, { headerTimeoutMs: 20, maxHeadBytes: 1024, onHttp1: () => {}, onHttp2: () => {} });
    slow.socket.push("GET / HTTP/1.1\r\n");
    await waitFor(() => big.written.length > 0 && slow.written.length > 0, "both refusals", 10_000, 5);
    expect([big.written[0]!.split("\r\n")[0], slow.written[0]!.split("\r\n")[0]]).toEqual(["HTTP/1.1 431 Request Header Fields Too Large", "HTTP/1.1 408 Request Timeout"]);
    big.socket.destroy();
    slow.socket.destroy();
  });
});
