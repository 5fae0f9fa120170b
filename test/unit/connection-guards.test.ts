// The listener's guards, without a socket: connection caps and the per-request header deadline.
import { describe, expect, test } from "bun:test";
import { ConnectionLimits } from "../../src/server/connection-limits.ts";
import { HeaderDeadline, headerCheckIntervalMs } from "../../src/server/header-deadline.ts";

describe("ConnectionLimits", () => {
  test("per client, in total, exempt proxies, and release", () => {
    const limits = new ConnectionLimits({ total: 4, perClient: 2, exempt: new Set(["10.0.0.1"]) });
    expect([limits.admit("a"), limits.admit("a"), limits.admit("a")]).toEqual([true, true, false]);
    expect([limits.admit("10.0.0.1"), limits.admit("10.0.0.1"), limits.admit("10.0.0.1")]).toEqual([true, true, false]); // total 4 reached
    expect(limits.size).toBe(4);
    limits.release("a");
    expect(limits.admit("b")).toBe(true);
    limits.release("never-admitted");
    expect(limits.size).toBe(4);
  });

  test("0 means no limit", () => {
    const limits = new ConnectionLimits({ total: 0, perClient: 0, exempt: new Set() });
    for (let i = 0; i < 1000; i++) expect(limits.admit("a")).toBe(true);
  });
});

/** A deadline on a fake clock: `advance` moves it and checks the deadline, as the listener's sweep does. */
function fakeDeadline() {
  let now = 0;
  const refusals: number[] = [];
  const deadline = new HeaderDeadline({ timeoutMs: 1000, refuse: () => refusals.push(now), now: () => now });
  const advance = (ms: number) => {
    now += ms;
    deadline.check();
  };
  return { deadline, advance, refusals };
}

describe("HeaderDeadline", () => {
  test("a request whose headers are complete in time is not refused", () => {
    const { deadline, advance, refusals } = fakeDeadline();
    deadline.onBytes(true);
    advance(900);
    deadline.onRequest();
    advance(5000);
    deadline.onResponseDone();
    expect(refusals).toEqual([]);
  });

  test("the second request of a connection has its own deadline", () => {
    const { deadline, advance, refusals } = fakeDeadline();
    deadline.onBytes(true);
    deadline.onRequest();
    deadline.onResponseDone();
    advance(60_000); // silence is the idle timeout's business
    expect(refusals).toEqual([]);
    deadline.onBytes(true); // first byte of the next request
    advance(500);
    deadline.onBytes(true); // trickling
    advance(500);
    expect(refusals).toEqual([61_000]);
  });

  test("body bytes of the request in flight start no clock; a pipelined request's do, refused once the response is done", () => {
    const { deadline, advance, refusals } = fakeDeadline();
    deadline.onRequest();
    deadline.onBytes(false); // body
    advance(5000);
    expect(refusals).toEqual([]);
    deadline.onBytes(true); // the body is complete: next request
    advance(1000);
    expect(refusals).toEqual([]); // a response is still being written
    advance(1000);
    deadline.onResponseDone();
    expect(refusals).toEqual([7000]);
  });

  test("a pipelined request whose headers arrived whole waits for the response without a clock", () => {
    const { deadline, advance, refusals } = fakeDeadline();
    deadline.onRequest(); // a long download
    deadline.onBytes(true); // the next request's first bytes
    advance(500);
    deadline.onHeadReceived(); // its headers are complete: it waits on the server
    advance(5000);
    deadline.onBytes(true); // what follows it (a body, more requests) starts no clock either
    advance(5000);
    deadline.onResponseDone();
    expect(refusals).toEqual([]);
    deadline.onRequest(); // dispatched; then the clock works as before
    deadline.onResponseDone();
    deadline.onBytes(true);
    advance(1000);
    expect(refusals).toEqual([11_500]);
  });

  test("a pipelined request whose headers took too long is still refused once the response is done", () => {
    const { deadline, advance, refusals } = fakeDeadline();
    deadline.onRequest();
    deadline.onBytes(true);
    advance(1500); // expired while the response was being written
    deadline.onHeadReceived();
    deadline.onResponseDone();
    expect(refusals).toEqual([1500]);
  });

  test("whenIdle runs after the response in flight", () => {
    const { deadline } = fakeDeadline();
    const ran: string[] = [];
    deadline.whenIdle(() => ran.push("now"));
    deadline.onRequest();
    deadline.whenIdle(() => ran.push("later"));
    expect(ran).toEqual(["now"]);
    deadline.onResponseDone();
    expect(ran).toEqual(["now", "later"]);
  });

  test("is checked every quarter of the timeout, at most every second", () => {
    expect([headerCheckIntervalMs(1000), headerCheckIntervalMs(10_000), headerCheckIntervalMs(3_600_000)]).toEqual([250, 1000, 1000]);
  });
});
