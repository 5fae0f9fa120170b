// test-lists: workers postgres-s3 alone
// `cubby login-link --email E [--ttl 15m]` and its URL `/auth/link/{token}` (CONTRACT §11 as
// amended in turn 4, issue 37 item 7): opening the URL (GET or HEAD, any client, any number of
// times) shows a page naming the account with one Sign in button; only that button's same-origin
// POST /auth/link (token in the body) signs E in, once, also when many requests race for it across
// two workers. Hashed at rest; 410 after the TTL for 7 days (the sweep keeps expired links that
// long), 404 once used or unknown; refused for a disabled user; rate limited like sign-in
// callbacks; the token in no log line, whatever the path's spelling and the outcome; and how a
// server without a provider tells a person to get a link. Runs on the configured backend pair
// (CUBBY_TEST_BACKEND).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { BACKEND, runSql } from "../support/backend.ts";
import { RawHttp, type RawResponse } from "../support/raw-http.ts";
import { runCli, startServer, type RunningServer } from "../support/server.ts";
import { startSignInServer } from "../support/sign-in-server.ts";
import { describeStall, STALL_LIMIT_MS, whileProbing } from "../support/stall-probe.ts";
import { waitFor } from "../support/wait.ts";

let server: RunningServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.[Symbol.asyncDispose]());

const TOKEN_URL = /^(http:\/\/[^/]+)\/auth\/link\/([A-Za-z0-9_-]{43})\n$/;
const DAY_MICROS = 24 * 3600 * 1_000_000;

/** Mints a link through the CLI on `on`'s stores; returns the URL as printed and the CLI's result. */
async function mint(on: RunningServer, email: string, ...args: string[]) {
  const r = await runCli(["login-link", "--email", email, ...args, "--data-dir", on.dataDir], { env: { HOSTNAME: on.url } });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: expect.stringMatching(/^this link signs .+ in once, until \d{4}-\d\d-\d\dT[\d:.]+Z\n$/) });
  const m = TOKEN_URL.exec(r.stdout);
  expect(m).not.toBeNull();
  const until = Date.parse(/until (\S+)\n$/.exec(r.stderr)![1]!);
  return { url: r.stdout.trim(), token: m![2]!, until };
}

/** A browser navigation to a link (GET, or HEAD): no cookies, no redirects followed. */
const open = (url: string, method = "GET", headers: Record<string, string> = {}) => fetch(url, { method, redirect: "manual", headers: { accept: "text/html", ...headers } });

/** What a browser sends with the page's form: same-origin by Fetch Metadata, `Origin: null` under `Referrer-Policy: no-referrer`. */
const BROWSER_FORM = { "sec-fetch-site": "same-origin", origin: "null" };

/** The Sign in button's POST: `body` form-encoded to /auth/link, with `headers` (a browser's by default). */
const post = (on: RunningServer, body: string, headers: Record<string, string> = BROWSER_FORM) =>
  fetch(`${on.url}/auth/link`, { method: "POST", redirect: "manual", headers: { accept: "text/html", "content-type": "application/x-www-form-urlencoded", ...headers }, body });

/** Uses a link the way a person does: opens the page, then submits its one form as it is. */
async function signInWith(on: RunningServer, url: string): Promise<Response> {
  const page = await open(url);
  expect(page.status).toBe(200);
  const form = formOf(await page.text());
  expect(form.action).toBe("/auth/link");
  return post(on, new URLSearchParams(form.fields).toString());
}

/** The page's form: its action, method, hidden fields and buttons. */
function formOf(html: string) {
  const forms = [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)];
  expect(forms.length).toBe(1);
  const [, attributes, inner] = forms[0]!;
  const attr = (source: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(source)?.[1];
  const fields: Record<string, string> = {};
  for (const [input] of inner!.matchAll(/<input\b[^>]*>/g)) fields[attr(input, "name")!] = attr(input, "value") ?? "";
  const buttons = [...inner!.matchAll(/<button\b[^>]*>([^<]*)<\/button>/g)].map((b) => b[1]);
  return { action: attr(attributes!, "action"), method: attr(attributes!, "method"), fields, buttons };
}

/** The session cookie of a sign-in's redirect, as `name=value`. */
function sessionCookie(r: Response): string {
  const cookie = r.headers.getSetCookie().find((c) => c.startsWith("cubby_session="));
  expect(cookie).toBeDefined();
  return cookie!.split(";")[0]!;
}

/** The rows of login_links for `email`. */
const linkRows = (on: RunningServer, email: string) => runSql<{ email: string }>(on.dataDir, "SELECT email FROM login_links WHERE email = ?", email);

test("opening a link (GET or HEAD, as often as a chat preview likes) shows a page naming the account with one Sign in button, and uses nothing up", async () => {
  const { url, token } = await mint(server, "New.Person@Example.com");
  const previews = [
    await open(url, "HEAD", { "user-agent": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)" }),
    await open(url, "GET", { "user-agent": "Mozilla/5.0 (compatible; SkypeUriPreview Preview/0.5)", accept: "*/*" }),
    await open(url, "HEAD"),
    await open(url),
  ];
  for (const r of previews) {
    expect({ status: r.status, cookies: r.headers.getSetCookie() }).toEqual({ status: 200, cookies: [] });
    expect({
      type: r.headers.get("content-type"),
      cache: r.headers.get("cache-control"),
      referrer: r.headers.get("referrer-policy"),
      csp: r.headers.get("content-security-policy"),
    }).toEqual({ type: "text/html; charset=utf-8", cache: "no-store", referrer: "no-referrer", csp: expect.stringContaining("form-action 'self'") });
  }
  const html = await previews[3]!.text();
  expect(html).toContain("new.person@example.com");
  expect(formOf(html)).toEqual({ action: "/auth/link", method: "post", fields: { token }, buttons: ["Sign in"] });
  // Nothing was used: the link is still there, and nobody was created.
  expect(await linkRows(server, "new.person@example.com")).toHaveLength(1);
  expect(await runSql(server.dataDir, "SELECT id FROM users WHERE email = 'new.person@example.com'")).toEqual([]);
});

test("the page's button signs in once: 303 to the dashboard with a session cookie, the user created; the link then answers 404", async () => {
  const { url } = await mint(server, "first@example.com");
  const signedIn = await signInWith(server, url);
  expect({ status: signedIn.status, location: signedIn.headers.get("location"), cache: signedIn.headers.get("cache-control") }).toEqual({ status: 303, location: "/", cache: "no-store" });
  const cookie = sessionCookie(signedIn);
  const session = await (await fetch(`${server.url}/auth/session`, { headers: { cookie } })).json();
  expect(session).toMatchObject({ signed_in: true, email: "first@example.com" });
  // The session works on the API like any dashboard session.
  expect((await fetch(`${server.url}/v1/files`, { headers: { cookie, origin: server.url } })).status).toBe(200);

  const again = await open(url);
  expect(again.status).toBe(404);
  expect(again.headers.get("content-type")).toStartWith("text/html");
  expect(again.headers.getSetCookie()).toEqual([]);
  expect(await again.text()).toContain("signs in once");
  const token = new URL(url).pathname.split("/").pop()!;
  const reused = await post(server, `token=${token}`);
  expect({ status: reused.status, cookies: reused.headers.getSetCookie() }).toEqual({ status: 404, cookies: [] });
});

test("a program uses a link with one POST of its token (curl -d token=…), no Origin needed", async () => {
  const { token } = await mint(server, "script@example.com");
  const r = await post(server, `token=${token}`, {});
  expect(r.status).toBe(303);
  expect(sessionCookie(r)).toStartWith("cubby_session=");
});

test("the POST refuses another site with 403 and leaves the link usable; a same-origin Origin is accepted", async () => {
  const { url, token } = await mint(server, "csrf@example.com");
  for (const headers of <Record<string, string>[]>[
    { "sec-fetch-site": "cross-site", origin: "https://evil.example" },
    { "sec-fetch-site": "same-site", origin: "null" },
    { "sec-fetch-site": "none" },
    { origin: "https://evil.example" },
    { origin: "null" },
  ]) {
    const r = await post(server, `token=${token}`, headers);
    expect({ headers, status: r.status, cookies: r.headers.getSetCookie() }).toEqual({ headers, status: 403, cookies: [] });
    expect(await r.text()).toContain("cross-origin");
  }
  expect((await open(url)).status).toBe(200);
  const ours = await post(server, `token=${token}`, { origin: server.url });
  expect(ours.status).toBe(303);
});

test("a POST without a usable form is refused with a page saying what to send", async () => {
  const { url, token } = await mint(server, "forms@example.com");
  const asJson = await fetch(`${server.url}/auth/link`, { method: "POST", headers: { "content-type": "application/json", ...BROWSER_FORM }, body: JSON.stringify({ token }) });
  expect(asJson.status).toBe(415);
  for (const body of ["", "other=1", `token=${token}&token=${token}`, `token=${token}&pad=${"x".repeat(2000)}`]) {
    const r = await post(server, body);
    expect({ status: r.status, type: r.headers.get("content-type") }).toEqual({ status: 400, type: "text/html; charset=utf-8" });
  }
  expect((await open(url)).status).toBe(200);
});

test("only a hash of the token is stored, and the link row is gone once used", async () => {
  const { url, token } = await mint(server, "hashed@example.com");
  const rows = await runSql<{ token_hash: Uint8Array; email: string }>(server.dataDir, "SELECT token_hash, email FROM login_links WHERE email = 'hashed@example.com'");
  expect(rows.length).toBe(1);
  const stored = Buffer.from(rows[0]!.token_hash);
  expect(stored.length).toBe(32);
  expect(stored.equals(new Bun.CryptoHasher("sha256").update(token).digest() as Buffer)).toBe(true);
  expect(stored.toString("latin1")).not.toContain(token);
  expect((await signInWith(server, url)).status).toBe(303);
  expect(await linkRows(server, "hashed@example.com")).toEqual([]);
});

test("a link for a disabled user: the page says so (403, nothing used); its POST is refused with 403 and uses it up", async () => {
  const key = await server.mintKey("off@example.com");
  expect(key.length).toBeGreaterThan(0);
  expect((await runCli(["users", "disable", "off@example.com", "--data-dir", server.dataDir])).code).toBe(0);
  const { url, token } = await mint(server, "off@example.com");
  const page = await open(url);
  expect(page.status).toBe(403);
  expect(await page.text()).toContain("disabled");
  expect(await linkRows(server, "off@example.com")).toHaveLength(1);
  const refused = await post(server, `token=${token}`);
  expect({ status: refused.status, cookies: refused.headers.getSetCookie() }).toEqual({ status: 403, cookies: [] });
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

test("a token that is malformed or unknown gets the same 404 page, opened or posted", async () => {
  for (const token of ["short", "A".repeat(43), "%00".repeat(15)]) {
    const r = await open(`${server.url}/auth/link/${token}`);
    expect({ status: r.status, type: r.headers.get("content-type") }).toEqual({ status: 404, type: "text/html; charset=utf-8" });
    expect((await post(server, `token=${token}`)).status).toBe(404);
  }
});

test("after its TTL a link answers 410 (opened or posted) for 7 days, through every sweep; then the sweep deletes it and it answers 404", async () => {
  await using swept = await startServer({ env: { CUBBY_TEST_EXPIRY_SWEEP_MS: "50" } });
  const late = await mint(swept, "late@example.com", "--ttl", "1s");
  await waitFor(() => Date.now() > late.until, "the link's one-second TTL to pass");
  const sixDays = await mint(swept, "six-days@example.com");
  const eightDays = await mint(swept, "eight-days@example.com");
  const nowMicros = Date.now() * 1000;
  await runSql(swept.dataDir, "UPDATE login_links SET expires_at = ? WHERE email = ?", nowMicros - 6 * DAY_MICROS, "six-days@example.com");
  await runSql(swept.dataDir, "UPDATE login_links SET expires_at = ? WHERE email = ?", nowMicros - 8 * DAY_MICROS, "eight-days@example.com");
  // A sweep has run after the one-second link expired once the eight-day-old one is gone.
  await waitFor(async () => (await linkRows(swept, "eight-days@example.com")).length === 0, "the sweep to delete the link expired 8 days ago");
  for (const link of [late, sixDays]) {
    const page = await open(link.url);
    expect({ status: page.status, cookies: page.headers.getSetCookie() }).toEqual({ status: 410, cookies: [] });
    expect(await page.text()).toContain("expired");
    const used = await post(swept, `token=${link.token}`);
    expect({ status: used.status, cookies: used.headers.getSetCookie() }).toEqual({ status: 410, cookies: [] });
    // Posting an expired link does not make it unknown: it still answers 410.
    expect((await open(link.url, "HEAD")).status).toBe(410);
  }
  expect((await open(eightDays.url)).status).toBe(404);
  expect(await runSql(swept.dataDir, "SELECT id FROM users WHERE email IN ('late@example.com', 'six-days@example.com')")).toEqual([]);
});

test("the sweep deletes 20 000 links past their 7 days without holding a serving process (CONTRACT §14)", async () => {
  await using swept = await startServer({ env: { CUBBY_TEST_EXPIRY_SWEEP_MS: "50" }, checkResponses: false });
  const n = 20_000;
  await runSql(
    swept.dataDir,
    BACKEND === "sqlite-disk"
      ? "WITH RECURSIVE i(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM i WHERE k < ?) INSERT INTO login_links (token_hash, email, created_at, expires_at) SELECT randomblob(32), 'bulk@example.com', 0, 9007199254740991 FROM i"
      : "INSERT INTO login_links (token_hash, email, created_at, expires_at) SELECT sha256(k::text::bytea), 'bulk@example.com', 0, 9007199254740991 FROM generate_series(1, ?::int) k",
    n,
  );
  // Due a moment from now, when the probe runs.
  await runSql(swept.dataDir, "UPDATE login_links SET expires_at = ? WHERE email = 'bulk@example.com'", Date.now() * 1000 - 7 * DAY_MICROS + 1_500_000);
  // Waited for in the server's output: a query from this process would hold the probe's loop.
  const { stall } = await whileProbing(swept.url, () => swept.waitForOutput(`removed ${n} login link(s) expired over 7 days ago`, 30_000));
  expect(await runSql(swept.dataDir, "SELECT email FROM login_links WHERE email = 'bulk@example.com' LIMIT 1")).toEqual([]);
  console.log(`sweep of ${n} expired login links: ${describeStall(stall)}`);
  expect(stall.worstMs).toBeLessThanOrEqual(STALL_LIMIT_MS);
}, 60_000);

/** Sends `count` requests at once, each on its own connection, and returns their statuses, sorted. */
async function atOnce(port: number, request: string, count: number): Promise<number[]> {
  const conns = await Promise.all(Array.from({ length: count }, () => RawHttp.connect(port)));
  try {
    for (const c of conns) c.write(request);
    return (await Promise.all(conns.map((c) => c.next("POST")))).map((r) => r.status).sort();
  } finally {
    for (const c of conns) c[Symbol.dispose]();
  }
}

test("with two workers, 24 simultaneous uses of each of 8 links sign in exactly once per link, however often it was opened", async () => {
  await using two = await startServer({ env: { WORKERS: "2" } });
  for (let round = 0; round < 8; round++) {
    const { url, token } = await mint(two, `race${round}@example.com`);
    const opened = await Promise.all(Array.from({ length: 4 }, () => open(url)));
    expect(opened.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const body = `token=${token}`;
    const request = `POST /auth/link HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/html\r\nSec-Fetch-Site: same-origin\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    expect(await atOnce(two.port, request, 24)).toEqual([303, ...Array<number>(23).fill(404)]);
  }
}, 60_000);

test("opening and using count against RATE_LIMIT_SIGN_INS: past it, even a valid link gets 429 with Retry-After", async () => {
  await using limited = await startServer({ env: { RATE_LIMIT_SIGN_INS: "3" } });
  const { url, token } = await mint(limited, "limited@example.com");
  // Opening a valid link is given back: it costs nothing.
  for (let i = 0; i < 5; i++) expect((await open(url)).status).toBe(200);
  for (let i = 0; i < 3; i++) expect((await open(`${limited.url}/auth/link/${"x".repeat(43)}`)).status).toBe(404);
  for (const refused of [await open(url), await post(limited, `token=${token}`)]) {
    expect({ status: refused.status, cookies: refused.headers.getSetCookie() }).toEqual({ status: 429, cookies: [] });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  }
});

/**
 * Spellings of a link's path: as printed, and as a client or an attacker may write it (dot
 * segments, `%2F`, double slashes, `..`, percent-encoded letters, `\`, upper case, absolute form).
 */
const SPELLINGS: ((token: string) => string)[] = [
  (t) => `/auth/link/${t}`,
  (t) => `/auth/./link/${t}`,
  (t) => `/auth/%2e/link/${t}`,
  (t) => `/auth%2Flink/${t}`,
  (t) => `/auth%2flink%2F${t}`,
  (t) => `//auth/link/${t}`,
  (t) => `/auth//link/${t}`,
  (t) => `/auth/link//${t}`,
  (t) => `/auth/link/../link/${t}`,
  (t) => `/auth/link/%2e/${t}`,
  (t) => `/auth/%6Cink/${t}`,
  (t) => `/%61uth/li%6E%6B/${t}`,
  (t) => `/AUTH/LINK/${t}`,
  (t) => `/auth\\link\\${t}`,
  (t) => `/auth/link/${t}/`,
  (t) => `/auth/link/${t}?x=1`,
  (t) => `http://127.0.0.1/auth/./link/${t}`,
];

/** Sends `method target` with `Host: host` on its own connection. */
async function send(port: number, method: string, target: string, host = "127.0.0.1"): Promise<RawResponse> {
  using c = await RawHttp.connect(port);
  c.write(`${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nAccept: text/html\r\nConnection: close\r\n\r\n`);
  return await c.next(method);
}

/**
 * Every spelling × GET and HEAD, each also with a malformed authority (which the dispatch
 * refuses with 400 before routing, and logs with the target as sent), for `token`.
 * @returns the statuses of the canonical spelling's GETs
 */
async function everySpelling(on: RunningServer, token: string): Promise<number[]> {
  const canonical: number[] = [];
  for (const spell of SPELLINGS) {
    for (const method of ["GET", "HEAD"]) {
      const r = await send(on.port, method, spell(token));
      if (spell === SPELLINGS[0] && method === "GET") canonical.push(r.status);
      const refused = await send(on.port, method, spell(token).replace("127.0.0.1", "bad^host"), "bad^host");
      expect({ target: spell(token), status: refused.status }).toEqual({ target: spell(token), status: 400 });
    }
  }
  return canonical;
}

/** Waits until `on` has logged a request sent now (access-log lines are written in batches). */
async function logFlushed(on: RunningServer): Promise<void> {
  const id = `flush${randomBytes(6).toString("hex")}`;
  await fetch(`${on.url}/healthz`, { headers: { "x-request-id": id } });
  await on.waitForOutput(id);
}

test("the token is in no log line, whatever the path's spelling and the outcome (valid, used, expired, unknown, rate limited), text and JSON logs", async () => {
  // Spellings other than the link's own are not in /openapi.json: the responses are not checked.
  await using text = await startServer({ checkResponses: false });
  await using json = await startServer({ env: { LOG_FORMAT: "json" }, checkResponses: false });
  for (const on of [text, json]) {
    const valid = await mint(on, "spelled@example.com");
    const used = await mint(on, "spelled-used@example.com");
    expect((await post(on, `token=${used.token}`)).status).toBe(303);
    const expired = await mint(on, "spelled-expired@example.com");
    await runSql(on.dataDir, "UPDATE login_links SET expires_at = ? WHERE email = ?", Date.now() * 1000 - DAY_MICROS, "spelled-expired@example.com");
    const unknown = randomBytes(32).toString("base64url");
    const outcomes = { valid: valid.token, used: used.token, expired: expired.token, unknown };
    const statuses: Record<string, number[]> = {};
    for (const [outcome, token] of Object.entries(outcomes)) statuses[outcome] = await everySpelling(on, token);
    expect(statuses).toEqual({ valid: [200], used: [404], expired: [410], unknown: [404] });
    await logFlushed(on);
    const printed = on.output() + on.errors();
    expect(printed).toContain(on === json ? '"path":"/auth/link/…"' : 'path="/auth/link/…"');
    for (const token of Object.values(outcomes)) expect(printed).not.toContain(token);
    // The page's token is never sent on as a Referer: the page says so to the browser.
    expect((await send(on.port, "GET", `/auth/./link/${valid.token}`)).headers["referrer-policy"]).toBe("no-referrer");
  }
}, 60_000);

test("the token is in no log line when the address is rate limited, whatever the path's spelling", async () => {
  // Spellings other than the link's own are not in /openapi.json: the responses are not checked.
  await using limited = await startServer({ env: { RATE_LIMIT_SIGN_INS: "1" }, checkResponses: false });
  const { token } = await mint(limited, "spelled-limited@example.com");
  // From the address the spellings come from (fetch may reach "localhost" over ::1).
  expect((await send(limited.port, "GET", `/auth/link/${"y".repeat(43)}`)).status).toBe(404);
  expect(await everySpelling(limited, token)).toEqual([429]);
  await logFlushed(limited);
  const printed = limited.output() + limited.errors();
  expect(printed).toContain('path="/auth/link/…" status=429');
  expect(printed).not.toContain(token);
}, 60_000);

test("without a provider, the start-up line and the sign-in page say how to get a link", async () => {
  expect(server.output() + server.errors()).toContain("to sign in to the dashboard, run: cubby login-link --email you@example.com");
  const page = await open(`${server.url}/auth/login`);
  expect(page.status).toBe(404);
  expect(await page.text()).toContain("cubby login-link --email you@example.com");
});

test("with an identity provider configured, a link signs in too, and the start-up line has no hint", async () => {
  await using stack = await startSignInServer();
  const { url } = await mint(stack.server, "both@example.com");
  const r = await signInWith(stack.server, url);
  expect(r.status).toBe(303);
  const session = await (await fetch(`${stack.server.url}/auth/session`, { headers: { cookie: sessionCookie(r) } })).json();
  expect(session).toMatchObject({ signed_in: true, email: "both@example.com", sign_in_configured: true });
  expect(stack.server.output() + stack.server.errors()).not.toContain("cubby login-link");
}, 30_000);
