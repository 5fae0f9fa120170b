// The listener's connection bookkeeping and graceful stop, without sockets: Duplexes stand in.
import { describe, expect, test } from "bun:test";
import { EventEmitter } from "node:events";
import { Duplex } from "node:stream";
import { Connections, type TrackedSocket } from "../../src/server/connections.ts";
import type { NodeRequest, NodeResponse } from "../../src/server/node-bridge.ts";

function fakeSocket(remoteAddress: string): TrackedSocket {
  const socket = new Duplex({ read() {}, write: (_chunk, _encoding, callback) => callback() }) as Duplex & { remoteAddress: string; setTimeout: () => unknown };
  socket.remoteAddress = remoteAddress;
  socket.setTimeout = () => socket;
  return socket as unknown as TrackedSocket;
}

/** An HTTP/1.1 request in flight on `socket`, and its response (closed by `finish`). */
function fakeExchange(socket: TrackedSocket) {
  const res = Object.assign(new EventEmitter(), { shouldKeepAlive: true });
  const req = { socket, complete: true, httpVersionMajor: 1 } as unknown as NodeRequest;
  return { req, res: res as unknown as NodeResponse & { shouldKeepAlive: boolean }, finish: () => res.emit("close") };
}

const options = (perClient = 0) => ({ limits: { total: 0, perClient, exempt: new Set<string>() }, headerTimeoutMs: 10_000, idleTimeoutMs: 60_000 });

describe("Connections", () => {
  test("counts connections per address (IPv4-mapped ones as IPv4) and forgets them when they close", async () => {
    const connections = new Connections(options(1));
    const first = fakeSocket("::ffff:192.0.2.1");
    const second = fakeSocket("192.0.2.1");
    expect([connections.admit(first), connections.admit(second), connections.size]).toEqual([true, false, 1]);
    first.destroy();
    await new Promise((resolve) => first.once("close", resolve));
    expect([connections.size, connections.admit(fakeSocket("192.0.2.1"))]).toEqual([0, true]);
  });

  test("stop closes idle connections at once, busy ones after their response, and says Connection: close", async () => {
    const connections = new Connections(options());
    const idle = fakeSocket("192.0.2.1");
    const busy = fakeSocket("192.0.2.2");
    for (const s of [idle, busy]) {
      connections.admit(s);
      connections.watchHttp1(s);
    }
    const exchange = fakeExchange(busy);
    connections.onHttp1Request(exchange.req, exchange.res);
    let stopped = false;
    const stopping = connections.stop(10_000).then(() => (stopped = true));
    await new Promise((resolve) => idle.once("close", resolve));
    const late = fakeExchange(busy);
    connections.onHttp1Request(late.req, late.res);
    expect({ idle: idle.destroyed, busy: busy.destroyed, stopped, keepAlive: late.res.shouldKeepAlive }).toEqual({ idle: true, busy: false, stopped: false, keepAlive: false });
    exchange.finish();
    late.finish();
    await stopping;
    expect(busy.destroyed).toBe(true);
  });

  test("stop cuts what is left after the grace period", async () => {
    const connections = new Connections(options());
    const stuck = fakeSocket("192.0.2.1");
    connections.admit(stuck);
    connections.watchHttp1(stuck);
    connections.onHttp1Request(fakeExchange(stuck).req, fakeExchange(stuck).res);
    await connections.stop(30);
    expect(stuck.destroyed).toBe(true);
  });

  test("whenIdle waits for the response in flight on an HTTP/1.1 connection", () => {
    const connections = new Connections(options());
    const socket = fakeSocket("192.0.2.1");
    connections.admit(socket);
    connections.watchHttp1(socket);
    const exchange = fakeExchange(socket);
    connections.onHttp1Request(exchange.req, exchange.res);
    const ran: string[] = [];
    connections.whenIdle(socket, () => ran.push("after the response"));
    connections.whenIdle(fakeSocket("192.0.2.9"), () => ran.push("unknown connection: now"));
    expect(ran).toEqual(["unknown connection: now"]);
    exchange.finish();
    expect(ran).toEqual(["unknown connection: now", "after the response"]);
    socket.destroy();
  });
});
