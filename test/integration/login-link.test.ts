// `cubby login-link --email E [--ttl 15m]` and `GET /auth/link/{token}` (CONTRACT §11): a one-time
// URL that signs E in without an identity provider (and with one), single use also when many
// requests race for it across two workers, hashed at rest, refused after its TTL and for a disabled
// user, rate limited like sign-in callbacks; and how a server without a provider tells a person
// to get one. Runs on the configured backend pair (CUBBY_TEST_BACKEND).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { runSql } from "../support/backend.ts";
import { RawHttp } from "../support/raw-http.ts";
import { runCli, startServer, type RunningServer } from "../support/server.ts";
import { startSignInServer } from "../support/sign-in-server.ts";
import { waitFor } from "../support/wait.ts";

let server: RunningServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.[Symbol.asyncDispose]());

const TOKEN_URL = /^(http:\/\/[^/]+)\/auth\/link\/([A-Za-z0-9_-]{43})\n$/;

/** Mints a link through the CLI on `on`'s stores; returns the URL as printed and the CLI's result. */
async function mint(on: RunningServer, email: string, ...args: string[]) {
  const r = await runCli(["login-link", "--email", email, ...args, "--data-dir", on.dataDir], { env: { HOSTNAME: on.url } });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: expect.stringMatching(/^this link signs .+ in once, until \d{4}-\d\d-\d\dT[\d:.]+Z\n$/) });
  const m = TOKEN_URL.exec(r.stdout);
  expect(m).not.toBeNull();
  const until = Date.parse(/until (\S+)\n$/.exec(r.stderr)![1]!);
  return { url: r.stdout.trim(), token: m![2]!, until };
}

/** GET of a link with no cookies and no redirects followed. */
const open = (url: string) => fetch(url, { redirect: "manual", headers: { accept: "text/html" } });

/** The session cookie of a 302 from a link, as `name=value`. */
function sessionCookie(r: Response): string {
  const cookie = r.headers.getSetCookie().find((c) => c.startsWith("cubby_session="));
  expect(cookie).toBeDefined();
  return cookie!.split(";")[0]!;
}

test("a link signs its user in once: 302 to the dashboard with a session cookie, the user created; the second use is refused with a page", async () => {
  const { url } = await mint(server, "New.Person@Example.com");
  const first = await open(url);
  expect(first.status).toBe(302);
  expect(first.headers.get("location")).toBe("/");
  expect(first.headers.get("cache-control")).toBe("no-store");
  const cookie = sessionCookie(first);
  const session = await (await fetch(`${server.url}/auth/session`, { headers: { cookie } })).json();
  expect(session).toMatchObject({ signed_in: true, email: "new.person@example.com" });
  // The session works on the API like any dashboard session.
  expect((await fetch(`${server.url}/v1/files`, { headers: { cookie, origin: server.url } })).status).toBe(200);

  const second = await open(url);
  expect(second.status).toBe(404);
  // The access log shows the route, never the token (a link refused by the rate limit stays valid).
  const token = new URL(url).pathname.split("/").pop()!;
  await server.waitForOutput(/path="\/auth\/link\/…" status=404/);
  expect(server.output() + server.errors()).not.toContain(token);
  expect(second.headers.get("content-type")).toStartWith("text/html");
  expect(second.headers.getSetCookie()).toEqual([]);
  expect(await second.text()).toContain("signs in once");
});

test("only a hash of the token is stored, and the link row is gone once used", async () => {
  const { url, token } = await mint(server, "hashed@example.com");
  const rows = await runSql<{ token_hash: Uint8Array; email: string }>(server.dataDir, "SELECT token_hash, email FROM login_links WHERE email = 'hashed@example.com'");
  expect(rows.length).toBe(1);
  const stored = Buffer.from(rows[0]!.token_hash);
  expect(stored.length).toBe(32);
  expect(stored.equals(new Bun.CryptoHasher("sha256").update(token).digest() as Buffer)).toBe(true);
  expect(stored.toString("latin1")).not.toContain(token);
  expect((await open(url)).status).toBe(302);
  expect(await runSql(server.dataDir, "SELECT email FROM login_links WHERE email = 'hashed@example.com'")).toEqual([]);
});

test("a link used after its TTL is refused with 410 and signs nobody in", async () => {
  const { url, until } = await mint(server, "late@example.com", "--ttl", "1s");
  await waitFor(() => Date.now() > until, "the link's one-second TTL to pass");
  const late = await open(url);
  expect(late.status).toBe(410);
  expect(late.headers.getSetCookie()).toEqual([]);
  expect(await late.text()).toContain("expired");
});

test("a link for a disabled user is refused with 403 and used up", async () => {
  const key = await server.mintKey("off@example.com");
  expect(key.length).toBeGreaterThan(0);
  expect((await runCli(["users", "disable", "off@example.com", "--data-dir", server.dataDir])).code).toBe(0);
  const { url } = await mint(server, "off@example.com");
  const refused = await open(url);
  expect(refused.status).toBe(403);
  expect(await refused.text()).toContain("disabled");
  expect((await runCli(["users", "enable", "off@example.com", "--data-dir", server.dataDir])).code).toBe(0);
  expect((await open(url)).status).toBe(404);
});

test("bad input to the CLI is one line, exit 2, and stores nothing", async () => {
  const count = async () => (await runSql<{ n: number | string }>(server.dataDir, "SELECT COUNT(*) AS n FROM login_links"))[0]!.n;
  const before = await count();
  for (const [args, message] of [
    [["--email", "x@example.com", "--ttl", "25h"], 'cubby: ttl: a login link works at most 24 hours (got "25h")\n'],
    [["--email", "x@example.com", "--ttl", "soon"], expect.stringMatching(/^cubby: ttl: expected a whole number and a unit/)],
    [["--email", "not-an-address"], expect.stringMatching(/^cubby: .*e-mail/)],
    [[], "cubby: login-link needs --email, the address of who the link signs in\n"],
    [["extra", "--email", "x@example.com"], 'cubby: login-link takes no arguments (got "extra")\n'],
  ] as const) {
    const r = await runCli(["login-link", ...args, "--data-dir", server.dataDir]);
    expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code: 2, stdout: "", stderr: message });
  }
  expect(await count()).toBe(before);
});

test("a token that is malformed or unknown gets the same 404 page", async () => {
  for (const token of ["short", "A".repeat(43), "%00".repeat(15)]) {
    const r = await open(`${server.url}/auth/link/${token}`);
    expect(r.status).toBe(404);
    expect(r.headers.get("content-type")).toStartWith("text/html");
  }
});

test("with two workers, 24 simultaneous uses of each of 8 links sign in exactly once per link", async () => {
  await using two = await startServer({ env: { WORKERS: "2" } });
  for (let round = 0; round < 8; round++) {
    const { token } = await mint(two, `race${round}@example.com`);
    const conns = await Promise.all(Array.from({ length: 24 }, () => RawHttp.connect(two.port)));
    try {
      for (const c of conns) c.write(`GET /auth/link/${token} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/html\r\nConnection: close\r\n\r\n`);
      const statuses = (await Promise.all(conns.map((c) => c.next()))).map((r) => r.status).sort();
      expect(statuses).toEqual([302, ...Array<number>(23).fill(404)]);
    } finally {
      for (const c of conns) c[Symbol.dispose]();
    }
  }
}, 60_000);

test("uses count against RATE_LIMIT_SIGN_INS: past it, even a valid link gets 429 with Retry-After", async () => {
  await using limited = await startServer({ env: { RATE_LIMIT_SIGN_INS: "3" } });
  for (let i = 0; i < 3; i++) expect((await open(`${limited.url}/auth/link/${"x".repeat(43)}`)).status).toBe(404);
  const { url } = await mint(limited, "limited@example.com");
  const refused = await open(url);
  expect(refused.status).toBe(429);
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
});

test("without a provider, the start-up line and the sign-in page say how to get a link", async () => {
  expect(server.output() + server.errors()).toContain("to sign in to the dashboard, run: cubby login-link --email you@example.com");
  const page = await open(`${server.url}/auth/login`);
  expect(page.status).toBe(404);
  expect(await page.text()).toContain("cubby login-link --email you@example.com");
});

test("with an identity provider configured, a link signs in too, and the start-up line has no hint", async () => {
  await using stack = await startSignInServer();
  const { url } = await mint(stack.server, "both@example.com");
  const r = await open(url);
  expect(r.status).toBe(302);
  const session = await (await fetch(`${stack.server.url}/auth/session`, { headers: { cookie: sessionCookie(r) } })).json();
  expect(session).toMatchObject({ signed_in: true, email: "both@example.com", sign_in_configured: true });
  expect(stack.server.output() + stack.server.errors()).not.toContain("cubby login-link");
}, 30_000);
