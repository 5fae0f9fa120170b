// Rate limiting of failed authentication and of sign-in callbacks, per client address, through
// the real listener (HTTP/1.1 and h2c both carry the client's address).
import { expect, test } from "bun:test";
import { WindowLimiter } from "../../src/auth/rate-limit.ts";
import { startServer } from "../support/server.ts";

test("WindowLimiter counts per key and window", () => {
  let now = 0;
  const limiter = new WindowLimiter(3, 60_000, () => now);
  for (let i = 0; i < 3; i++) limiter.record("a");
  expect([limiter.retryAfterSeconds("a"), limiter.retryAfterSeconds("b")]).toEqual([60, 0]);
  now = 59_500;
  expect(limiter.retryAfterSeconds("a")).toBe(1);
  now = 60_000;
  expect(limiter.retryAfterSeconds("a")).toBe(0);
  expect(new WindowLimiter(0).retryAfterSeconds("a")).toBe(0);
});

test("repeated failed bearer authentication gets 429 with Retry-After; other addresses are unaffected", async () => {
  await using server = await startServer({ env: { RATE_LIMIT_AUTH_FAILURES: "5" } });
  const key = await server.mintKey("limit@example.com");
  const bad = { authorization: "Bearer cubby_wrongwrongwrongwrongwrongwrongwrongwrongwro" };
  const statuses: number[] = [];
  const v4 = `http://127.0.0.1:${server.port}`;
  for (let i = 0; i < 7; i++) statuses.push((await fetch(`${v4}/v1/files`, { headers: bad })).status);
  expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
  const limited = await fetch(`${v4}/v1/files`, { headers: { authorization: `Bearer ${key}` } });
  expect({ status: limited.status, retryAfter: Number(limited.headers.get("retry-after")) > 0, body: await limited.json() }).toEqual({
    status: 429,
    retryAfter: true,
    body: { code: 8, message: expect.stringContaining("too many failed"), details: [] },
  });
  // The same key from another client address (IPv6 loopback) still works.
  const other = await fetch(`http://[::1]:${server.port}/v1/files`, { headers: { authorization: `Bearer ${key}` } });
  expect(other.status).toBe(200);
  // Public content needs no credentials and stays reachable.
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
});

test("h2c requests are limited by their client address too", async () => {
  await using server = await startServer({ env: { RATE_LIMIT_AUTH_FAILURES: "2" } });
  const codes: string[] = [];
  for (let i = 0; i < 3; i++) {
    const proc = Bun.spawn(["curl", "-s", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer nope", `${server.url}/v1/files`], { stdout: "pipe" });
    codes.push(await new Response(proc.stdout).text());
  }
  expect(codes).toEqual(["401", "401", "429"]);
});

test("a spoofed client-address header is ignored", async () => {
  await using server = await startServer({ env: { RATE_LIMIT_AUTH_FAILURES: "2" } });
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${server.url}/v1/files`, { headers: { authorization: "Bearer nope", "x-cubby-client-address": `10.0.0.${i}` } });
    statuses.push(res.status);
  }
  expect(statuses).toEqual([401, 401, 429]);
});

test("behind a trusted proxy, X-Forwarded-For names the client; from anyone else it is ignored", async () => {
  await using server = await startServer({ env: { RATE_LIMIT_AUTH_FAILURES: "2", TRUSTED_PROXIES: "127.0.0.1" } });
  const fail = async (base: string, forwardedFor: string) =>
    (await fetch(`${base}/v1/files`, { headers: { authorization: "Bearer nope", "x-forwarded-for": forwardedFor } })).status;
  const viaProxy = `http://127.0.0.1:${server.port}`;
  // Two clients behind the proxy are counted apart; a client's own forged entry on the left is not believed.
  expect([await fail(viaProxy, "203.0.113.7"), await fail(viaProxy, "203.0.113.7"), await fail(viaProxy, "10.9.9.9, 203.0.113.7")]).toEqual([401, 401, 429]);
  expect(await fail(viaProxy, "198.51.100.2")).toBe(401);
  // ::1 is not a trusted proxy: its X-Forwarded-For is ignored, so changing it does not help.
  const untrusted = `http://[::1]:${server.port}`;
  expect([await fail(untrusted, "192.0.2.1"), await fail(untrusted, "192.0.2.2"), await fail(untrusted, "192.0.2.3")]).toEqual([401, 401, 429]);
});

test("a public file is served without looking at credentials: bad keys there count as no failure", async () => {
  await using server = await startServer({ env: { RATE_LIMIT_AUTH_FAILURES: "2" } });
  const key = await server.mintKey("public@example.com");
  const upload = await fetch(`${server.url}/v1/files?visibility=public`, { method: "POST", body: "hello", headers: { authorization: `Bearer ${key}` } });
  const file = (await upload.json()) as { url: string };
  const bad = { authorization: "Bearer cubby_wrongwrongwrongwrongwrongwrongwrongwrongwro" };
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await fetch(file.url, { headers: bad })).status);
  expect(statuses).toEqual([200, 200, 200, 200]);
  // Had those been counted, this address would now be limited (429) instead of refused (401).
  expect((await fetch(`${server.url}/v1/files`, { headers: bad })).status).toBe(401);
});
