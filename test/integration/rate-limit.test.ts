// test-lists: postgres-s3
// Rate limiting of failed authentication and of sign-in callbacks, per client address, through
// the real listener (HTTP/1.1 and h2c both carry the client's address). The windows are shared
// by every process (storage/rate-limits.ts): the tests of concurrent guesses run WORKERS=2, and
// workers.test.ts and multi-instance.test.ts count across workers and instances. The tests of
// what a limited address gets run one process (WORKERS=1): a content URL answered at once from
// the caches refuses the addresses its own process knows to be limited (principal.ts).
import { expect, test } from "bun:test";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { WindowLimiter } from "../../src/auth/rate-limit.ts";
import { connectPostgres } from "../../src/storage/pg-driver.ts";
import { PgRateLimits, SqliteRateLimits } from "../../src/storage/rate-limits.ts";
import type { RateLimitTable } from "../../src/storage/ports.ts";
import { startPostgres } from "../support/postgres.ts";
import { FileService } from "../../src/gen/cubby/v1/files_pb.ts";
import { Browser, freePort, IDP_CLIENT, startIdp } from "../support/idp.ts";
import { client, startServer, tempDir } from "../support/server.ts";

test("shared windows, on SQLite and PostgreSQL: every charge from any connection counted once; refunds; a new window when one ends", async () => {
  using dir = tempDir();
  await using pg = await startPostgres();
  const url = await pg.createDatabase("limits_shared");
  const shared = [connectPostgres(url), connectPostgres(url)];
  // Two table objects on one store stand for two processes (two connections each).
  const stores: [string, [RateLimitTable, RateLimitTable]][] = [
    ["sqlite", [new SqliteRateLimits(dir.path), new SqliteRateLimits(dir.path)]],
    ["postgres", [new PgRateLimits(shared[0]!.db), new PgRateLimits(shared[1]!.db)]],
  ];
  try {
    for (const [name, [a, b]] of stores) {
      const minute = 60_000_000;
      // 40 charges at once, half through each: the counts handed out are 1..40, each once.
      const counts = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).charge("auth:x", 1_000, minute)));
      expect({ name, counts: counts.map((c) => c.count).sort((x, y) => x - y) }).toEqual({ name, counts: Array.from({ length: 40 }, (_, i) => i + 1) });
      expect(new Set(counts.map((c) => c.resetAt))).toEqual(new Set([1_000 + minute]));
      await b.refund("auth:x", 1_000 + minute);
      expect(await a.peek("auth:x", 2_000)).toEqual({ count: 39, resetAt: 1_000 + minute });
      // Another key is counted apart; a refund of a window that ended changes nothing.
      expect(await a.charge("auth:y", 2_000, minute)).toEqual({ count: 1, resetAt: 2_000 + minute });
      expect(await b.charge("auth:x", 1_000 + minute, minute)).toEqual({ count: 1, resetAt: 1_000 + 2 * minute });
      await a.refund("auth:x", 1_000 + minute);
      expect(await a.peek("auth:x", 1_000 + minute)).toEqual({ count: 1, resetAt: 1_000 + 2 * minute });
      expect(await b.peek("auth:x", 1_000 + 2 * minute)).toBeUndefined();
      expect(await a.prune(2_000 + minute)).toBe(1); // auth:y ended
    }
  } finally {
    for (const [, pair] of stores) for (const t of pair) await t.close();
    for (const d of shared) await d.end();
  }
}, 60_000);

test("the limiter: past the limit no attempt is checked; refunded attempts do not count; Retry-After is the window's rest", async () => {
  using dir = tempDir();
  let now = 5_000_000;
  const limiter = new WindowLimiter(new SqliteRateLimits(dir.path), "auth", 3, { nowMicros: () => now });
  const outcomes = await Promise.all(Array.from({ length: 10 }, () => limiter.reserve("a")));
  expect(outcomes.filter((r) => r.ok).length).toBe(3);
  expect(outcomes.find((r) => !r.ok)).toEqual({ ok: false, retryAfterSeconds: 60 });
  expect([await limiter.retryAfterSeconds("a"), await limiter.retryAfterSeconds("b"), limiter.knownLimited("a")]).toEqual([60, 0, 60]);
  const b = await limiter.reserve("b");
  if (!b.ok) throw new Error("b is not limited");
  await b.refund();
  expect((await Promise.all([1, 2, 3].map(() => limiter.reserve("b")))).every((r) => r.ok)).toBe(true);
  now += 59_500_000;
  expect(await limiter.retryAfterSeconds("a")).toBe(1);
  now += 500_000;
  expect([await limiter.retryAfterSeconds("a"), limiter.knownLimited("a"), (await limiter.reserve("a")).ok]).toEqual([0, 0, true]);
});

test("repeated failed bearer authentication gets 429 with Retry-After; other addresses are unaffected", async () => {
  await using server = await startServer({ env: { WORKERS: "1", RATE_LIMIT_AUTH_FAILURES: "5" } });
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
  await using server = await startServer({ env: { WORKERS: "1", RATE_LIMIT_AUTH_FAILURES: "2" } });
  const codes: string[] = [];
  for (let i = 0; i < 3; i++) {
    const proc = Bun.spawn(["curl", "-s", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer nope", `${server.url}/v1/files`], { stdout: "pipe" });
    codes.push(await new Response(proc.stdout).text());
  }
  expect(codes).toEqual(["401", "401", "429"]);
});

test("a spoofed client-address header is ignored", async () => {
  await using server = await startServer({ env: { WORKERS: "1", RATE_LIMIT_AUTH_FAILURES: "2" } });
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${server.url}/v1/files`, { headers: { authorization: "Bearer nope", "x-cubby-client-address": `10.0.0.${i}` } });
    statuses.push(res.status);
  }
  expect(statuses).toEqual([401, 401, 429]);
});

test("behind a trusted proxy, X-Forwarded-For names the client; from anyone else it is ignored", async () => {
  await using server = await startServer({ env: { WORKERS: "1", RATE_LIMIT_AUTH_FAILURES: "2", TRUSTED_PROXIES: "127.0.0.1" } });
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
  await using server = await startServer({ env: { WORKERS: "1", RATE_LIMIT_AUTH_FAILURES: "2" } });
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

// Issue 11: once an address is limited, a request that presents credentials gets the REST 429
// everywhere its credentials are looked at, never a 401 or "signed out" that hides the limit.

/** Fails authentication from `base` until the limit (of `limit` failures) bites. */
async function exhaust(base: string, limit: number): Promise<void> {
  const statuses: number[] = [];
  for (let i = 0; i <= limit; i++) {
    statuses.push((await fetch(`${base}/v1/files`, { headers: { authorization: "Bearer cubby_wrongwrongwrongwrongwrongwrongwrongwrongwro" } })).status);
  }
  expect(statuses).toEqual([...Array<number>(limit).fill(401), 429]);
}

/**
 * What a client can tell apart in an answer: the status, Retry-After, the error body and its
 * type (an HTML page, for a browser navigation, by its heading).
 */
async function outcome(res: Response) {
  const text = await res.text();
  const html = (res.headers.get("content-type") ?? "").startsWith("text/html");
  return {
    status: res.status,
    retryAfter: Number(res.headers.get("retry-after")) > 0,
    wwwAuthenticate: res.headers.get("www-authenticate"),
    contentType: res.headers.get("content-type"),
    body: text === "" ? undefined : html ? /<h1>([^<]*)<\/h1>/.exec(text)?.[1] : JSON.parse(text),
  };
}

const LIMITED = {
  status: 429,
  retryAfter: true,
  wwwAuthenticate: null,
  contentType: "application/json",
  body: { code: 8, message: expect.stringContaining("too many failed"), details: [] },
};

/** curl over h2c (prior knowledge): status and Retry-After. */
async function h2c(url: string, headers: Record<string, string>): Promise<{ status: number; retryAfter: boolean }> {
  const args = Object.entries(headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]);
  const proc = Bun.spawn(["curl", "-s", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", ...args, url], { stdout: "pipe" });
  const head = await new Response(proc.stdout).text();
  return { status: Number(/^HTTP\/2 (\d+)/.exec(head)?.[1]), retryAfter: /^retry-after: *[1-9]\d*\r?$/im.test(head) };
}

test("a valid key from a limited address gets REST's 429 on content URLs too, on every path; anonymous requests are answered as before", async () => {
  await using server = await startServer({ env: { WORKERS: "1", RATE_LIMIT_AUTH_FAILURES: "2" } });
  const key = await server.mintKey("content-limit@example.com");
  const internal = await client(server, key).upload("internal", "?visibility=internal&slug=notes");
  const pub = await client(server, key).upload("public", "?visibility=public");
  const v4 = `http://127.0.0.1:${server.port}`;
  const withKey = { authorization: `Bearer ${key}` };
  await exhaust(v4, 2);

  const rest = await outcome(await fetch(`${v4}/v1/files`, { headers: withKey }));
  expect(rest).toEqual(LIMITED);
  const content = {
    // /{id} and /{id}/{slug}: content URLs, answered on the listener.
    fast: await outcome(await fetch(`${v4}/${internal.id}`, { headers: withKey })),
    fastSlug: await outcome(await fetch(`${v4}/${internal.id}/notes`, { headers: withKey })),
    // A browser navigation is not sent to sign in (signing in would not help): a page says so (CONTRACT §11).
    navigation: await outcome(await fetch(`${v4}/${internal.id}`, { headers: { ...withKey, accept: "text/html" }, redirect: "manual" })),
    // A slug with an escape: the same path, which redirects to the canonical URL.
    appRoute: await outcome(await fetch(`${v4}/${internal.id}/old%20name`, { headers: withKey, redirect: "manual" })),
  };
  expect(content).toEqual({
    fast: LIMITED,
    fastSlug: LIMITED,
    navigation: { ...LIMITED, contentType: "text/html; charset=utf-8", body: "Too many requests" },
    appRoute: LIMITED,
  });
  const head = await fetch(`${v4}/${internal.id}`, { method: "HEAD", headers: withKey });
  expect({ status: head.status, retryAfter: Number(head.headers.get("retry-after")) > 0 }).toEqual({ status: 429, retryAfter: true });
  expect([await h2c(`${v4}/${internal.id}`, withKey), await h2c(`${v4}/${internal.id}/old%20name`, withKey)]).toEqual([
    { status: 429, retryAfter: true },
    { status: 429, retryAfter: true },
  ]);

  // The limiter counts failed authentications: a request without credentials is none, and is
  // answered as it always was.
  const anonymous = {
    internal: (await fetch(`${v4}/${internal.id}`)).status,
    navigation: (await fetch(`${v4}/${internal.id}`, { headers: { accept: "text/html" }, redirect: "manual" })).status,
    public: (await fetch(pub.url.replace(server.url, v4))).status,
  };
  expect(anonymous).toEqual({ internal: 401, navigation: 302, public: 200 });
  // A public file is served without looking at credentials (see the test above), so a key sent
  // along changes nothing there.
  expect((await fetch(pub.url.replace(server.url, v4), { headers: withKey })).status).toBe(200);
  // Another address is not limited: the same key opens the file.
  expect((await fetch(`http://[::1]:${server.port}/${internal.id}`, { headers: withKey })).status).toBe(200);
});

test("RPC from a limited address gets RESOURCE_EXHAUSTED over gRPC and Connect", async () => {
  await using server = await startServer({ env: { WORKERS: "1", RATE_LIMIT_AUTH_FAILURES: "2" } });
  const key = await server.mintKey("rpc-limit@example.com");
  const v4 = `http://127.0.0.1:${server.port}`;
  await exhaust(v4, 2);
  const codeOf = async (transport: Transport) => {
    try {
      await createClient(FileService, transport).listFiles({ pageSize: 1 }, { headers: { authorization: `Bearer ${key}` } });
      return "ok";
    } catch (err) {
      return Code[ConnectError.from(err).code];
    }
  };
  expect({
    grpc: await codeOf(createGrpcTransport({ baseUrl: v4 })),
    connect: await codeOf(createConnectTransport({ baseUrl: v4, httpVersion: "1.1" })),
  }).toEqual({ grpc: "ResourceExhausted", connect: "ResourceExhausted" });
});

test("/auth/session with a session cookie from a limited address answers 429, not signed out", async () => {
  const port = await freePort();
  await using idp = await startIdp([`http://localhost:${port}/auth/idp/callback`]);
  await using server = await startServer({ port, env: { WORKERS: "1", IDP_ISSUER: idp.issuer, ...IDP_CLIENT, RATE_LIMIT_AUTH_FAILURES: "2" } });
  const browser = new Browser();
  expect((await browser.signIn(server.url, "carol")).status).toBe(302);
  const cookie = { cookie: `cubby_session=${browser.cookie(`localhost:${port}`, "cubby_session")}` };
  const key = await server.mintKey("carol@example.com");
  const internal = await client(server, key).upload("internal", "?visibility=internal");
  const v4 = `http://127.0.0.1:${port}`;
  const v6 = `http://[::1]:${port}`;
  expect(await (await fetch(`${v4}/auth/session`, { headers: cookie })).json()).toEqual({ sign_in_configured: true, signed_in: true, email: "carol@example.com" });
  await exhaust(v4, 2);

  expect({
    session: await outcome(await fetch(`${v4}/auth/session`, { headers: cookie })),
    rest: await outcome(await fetch(`${v4}/v1/files`, { headers: cookie })),
    content: await outcome(await fetch(`${v4}/${internal.id}`, { headers: cookie })),
  }).toEqual({ session: LIMITED, rest: LIMITED, content: LIMITED });
  // Without a cookie there is nothing to limit: the dashboard still learns it is signed out.
  expect(await (await fetch(`${v4}/auth/session`)).json()).toEqual({ sign_in_configured: true, signed_in: false, email: "" });
  // The session itself is fine, as another address shows.
  expect(await (await fetch(`${v6}/auth/session`, { headers: cookie })).json()).toEqual({ sign_in_configured: true, signed_in: true, email: "carol@example.com" });
});

// CONTRACT §10: charged before the check, across every process. 29 wrong guesses and the right
// credential sent at once to two workers: exactly the limit of them are checked, the rest 429.

test("WORKERS=2: 29 wrong keys and a right one sent at once, limit 5: five checked, the rest 429", async () => {
  await using server = await startServer({ env: { WORKERS: "2", RATE_LIMIT_AUTH_FAILURES: "5" } });
  const key = await server.mintKey("concurrent@example.com"); // minted by the CLI: no worker has verified it
  const v4 = `http://127.0.0.1:${server.port}`;
  const keys = [...Array.from({ length: 29 }, (_, i) => `cubby_wrong${String(i).padStart(40, "0")}`), key];
  const statuses = await Promise.all(keys.map(async (k) => (await fetch(`${v4}/v1/files`, { headers: { authorization: `Bearer ${k}` } })).status));
  const checked = statuses.filter((s) => s !== 429);
  expect({ checked: checked.length, others: [...new Set(checked)].every((s) => s === 401 || s === 200) }).toEqual({ checked: 5, others: true });
  // The window is full: the right key from this address is refused too, on either worker.
  for (let i = 0; i < 4; i++) expect((await fetch(`${v4}/v1/files`, { headers: { authorization: `Bearer ${key}`, connection: "close" } })).status).toBe(429);
});

test("WORKERS=2: 29 wrong share passwords and the right one sent at once, limit 5: five checked, the rest 429", async () => {
  await using server = await startServer({ env: { WORKERS: "2", RATE_LIMIT_AUTH_FAILURES: "5" } });
  const key = await server.mintKey("share-guess@example.com");
  const file = await client(server, key).upload("secret bytes");
  const created = await fetch(`${server.url}/v1/files/${file.id}/shares`, { method: "POST", body: JSON.stringify({ password: "correct horse" }), headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });
  const share = (await created.json()) as { url: string };
  const basic = (password: string) => ({ authorization: `Basic ${Buffer.from(`any:${password}`).toString("base64")}` });
  const guesses = [...Array.from({ length: 29 }, (_, i) => `wrong ${i}`), "correct horse"];
  const statuses = await Promise.all(guesses.map(async (p) => (await fetch(share.url, { headers: basic(p) })).status));
  const checked = statuses.filter((s) => s !== 429);
  expect({ checked: checked.length, others: checked.every((s) => s === 401 || s === 200) }).toEqual({ checked: 5, others: true });
});
