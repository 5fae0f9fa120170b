// test-lists: workers postgres-s3
// Sign-in through a real OpenID provider (oidc-provider), sessions, and the key-management API
// (CONTRACT §5), over HTTP without a browser.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import path from "node:path";
import { Browser, IDP_CLIENT, type RunningIdp } from "../support/idp.ts";
import { startSignInServer } from "../support/sign-in-server.ts";
import { runSql } from "../support/backend.ts";
import { client, runCli, startServer, type RunningServer } from "../support/server.ts";

let stack: Awaited<ReturnType<typeof startSignInServer>>;
let idp: RunningIdp;
let server: RunningServer;
let host: string;

beforeAll(async () => {
  stack = await startSignInServer({ ALLOWED_DOMAINS: "example.com" });
  ({ idp, server, host } = stack);
});
afterAll(() => stack[Symbol.asyncDispose]());

const sameOrigin = () => ({ origin: server.url });
const cookieHeader = (b: Browser) => `cubby_session=${b.cookie(host, "cubby_session")}`;

async function signedIn(login: string): Promise<Browser> {
  const browser = new Browser();
  const res = await browser.signIn(server.url, login);
  expect(res.status).toBe(302);
  return browser;
}

describe("the sign-in flow", () => {
  test("signs in, sets a hardened session cookie, follows next, and shows the session", async () => {
    const browser = new Browser();
    const res = await browser.signIn(server.url, "alice", "/somewhere?x=1");
    const setCookie = res.headers.getSetCookie().find((c) => c.startsWith("cubby_session="))!;
    expect({ status: res.status, location: res.headers.get("location") }).toEqual({ status: 302, location: "/somewhere?x=1" });
    expect(setCookie).toMatch(/; HttpOnly/i);
    expect(setCookie).toMatch(/; SameSite=Lax/i);
    expect(setCookie).toMatch(/; Path=\//i);
    expect(setCookie).not.toMatch(/Secure/i);
    const session = await browser.fetch(`${server.url}/auth/session`);
    expect(await session.json()).toEqual({ sign_in_configured: true, signed_in: true, email: "alice@example.com" });
  });

  test("the provider's name is the display name until the user sets one (CONTRACT §15)", async () => {
    const browser = await signedIn("bob");
    const me = async () => (await browser.fetch(`${server.url}/v1/me`, { headers: sameOrigin() })).json();
    expect(await me()).toEqual({ email: "bob@example.com", display_name: "Bob", show_email_on_shares: false });
    const set = await browser.fetch(`${server.url}/v1/me`, { method: "PATCH", headers: { ...sameOrigin(), "content-type": "application/json" }, body: JSON.stringify({ display_name: "Robert" }) });
    expect(set.status).toBe(200);
    // A later sign-in keeps the name the user chose.
    await signedIn("bob");
    expect(await me()).toMatchObject({ display_name: "Robert" });
  });

  test("a bodiless redirect from the app says so (Content-Length: 0), not as an empty chunked body", async () => {
    const res = await fetch(`${server.url}/auth/login`, { redirect: "manual" });
    expect({ status: res.status, length: res.headers.get("content-length"), chunked: res.headers.get("transfer-encoding") }).toEqual({
      status: 302,
      length: "0",
      chunked: null,
    });
  });

  test("the login redirect uses PKCE S256, state, nonce and the exact redirect URI", async () => {
    const res = await fetch(`${server.url}/auth/login`, { redirect: "manual" });
    const url = new URL(res.headers.get("location")!);
    expect({
      origin: url.origin,
      response_type: url.searchParams.get("response_type"),
      scope: url.searchParams.get("scope"),
      redirect_uri: url.searchParams.get("redirect_uri"),
      method: url.searchParams.get("code_challenge_method"),
      hasChallenge: (url.searchParams.get("code_challenge") ?? "").length >= 43,
      hasState: (url.searchParams.get("state") ?? "").length > 20,
      hasNonce: (url.searchParams.get("nonce") ?? "").length > 20,
    }).toEqual({
      origin: idp.issuer,
      response_type: "code",
      scope: "openid email profile",
      redirect_uri: `${server.url}/auth/idp/callback`,
      method: "S256",
      hasChallenge: true,
      hasState: true,
      hasNonce: true,
    });
    expect(res.headers.get("set-cookie")).toMatch(/^cubby_oidc=.*HttpOnly/i);
  });

  test.each([
    ["//evil.example/x", "/"],
    ["https://evil.example/", "/"],
    ["/\\evil.example", "/"],
    ["javascript:alert(1)", "/"],
    ["/%2F%2Fevil.example", "/%2F%2Fevil.example"],
    ["/files?a=b#c", "/files?a=b#c"],
  ])("next=%p is followed only as a same-origin path (→ %p)", async (next, want) => {
    const res = await new Browser().signIn(server.url, "alice", next);
    expect(res.headers.get("location")).toBe(want);
  });

  test("an upper-case e-mail domain matches ALLOWED_DOMAINS; the address is stored lower-cased", async () => {
    const browser = await signedIn("carol");
    expect(await (await browser.fetch(`${server.url}/auth/session`)).json()).toMatchObject({ email: "carol@example.com" });
  });

  test.each([
    ["an unverified e-mail", "mallory", /not verified/],
    ["a domain outside ALLOWED_DOMAINS", "eve", /elsewhere\.org may not sign in/],
  ])("%s is refused with a clear page and no session", async (_, login, message) => {
    const browser = new Browser();
    const res = await browser.signIn(server.url, login);
    const page = await res.text();
    expect({ status: res.status, type: res.headers.get("content-type") }).toEqual({ status: 403, type: "text/html; charset=utf-8" });
    expect(page).toMatch(message);
    expect(browser.cookie(host, "cubby_session")).toBeUndefined();
  });

  test("a tampered state is refused", async () => {
    const browser = new Browser();
    const res = await browser.signIn(server.url, "alice", "/", (cb) => {
      cb.searchParams.set("state", "forged-state");
      return cb;
    });
    expect(res.status).toBe(400);
    expect(browser.cookie(host, "cubby_session")).toBeUndefined();
  });

  test("a wrong nonce is refused", async () => {
    const browser = new Browser();
    const res = await browser.signIn(server.url, "alice", "/", (cb) => {
      const flow = JSON.parse(Buffer.from(browser.cookie(host, "cubby_oidc")!, "base64url").toString());
      browser.setCookie(host, "cubby_oidc", Buffer.from(JSON.stringify({ ...flow, nonce: "wrong-nonce" })).toString("base64url"));
      return cb;
    });
    expect(await res.text()).toMatch(/nonce/);
    expect(res.status).toBe(400);
  });

  test("a replayed code is refused", async () => {
    const browser = new Browser();
    let callback!: URL;
    await browser.signIn(server.url, "alice", "/", (cb) => (callback = cb));
    // Same browser, new flow cookie, old code.
    const replay = new Browser();
    await replay.fetch(`${server.url}/auth/login`);
    const res = await replay.fetch(callback.href);
    expect(res.status).toBe(400);
    expect(replay.cookie(host, "cubby_session")).toBeUndefined();
  });

  test("a callback without the flow cookie is refused", async () => {
    const res = await fetch(`${server.url}/auth/idp/callback?code=x&state=y`);
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/start again/);
  });
});

describe("sessions", () => {
  test("logout ends the session on the server, not only in the browser", async () => {
    const browser = await signedIn("alice");
    const stolen = cookieHeader(browser);
    const out = await browser.fetch(`${server.url}/auth/logout`, { method: "POST", headers: sameOrigin() });
    expect(out.status).toBe(200);
    const res = await fetch(`${server.url}/auth/keys`, { headers: { cookie: stolen } });
    expect(res.status).toBe(401);
  });

  test("an expired session is not accepted", async () => {
    const browser = await signedIn("alice");
    await runSql(server.dataDir, "UPDATE sessions SET expires_at = 0 WHERE id = ?", browser.cookie(host, "cubby_session")!.split(".")[0]!);
    expect(await (await browser.fetch(`${server.url}/auth/session`)).json()).toMatchObject({ signed_in: false });
  });

  test("a session used with less than half its lifetime left is extended, and the cookie sent again", async () => {
    const browser = await signedIn("alice");
    const id = browser.cookie(host, "cubby_session")!.split(".")[0]!;
    const tenDays = 10 * 24 * 3600 * 1_000_000;
    const soon = Date.now() * 1000 + tenDays;
    await runSql(server.dataDir, "UPDATE sessions SET expires_at = ? WHERE id = ?", soon, id);
    const res = await browser.fetch(`${server.url}/auth/session`);
    const [row] = await runSql<{ expires_at: number | string }>(server.dataDir, "SELECT expires_at FROM sessions WHERE id = ?", id);
    const extended = Number(row!.expires_at);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("cubby_session="));
    expect({ signedIn: ((await res.json()) as { signed_in: boolean }).signed_in, extendedByDays: Math.round((extended - soon) / (24 * 3600 * 1e6)) }).toEqual({
      signedIn: true,
      extendedByDays: 20,
    });
    expect(cookie).toMatch(/Max-Age=259\d{4}/);
    // A fresh session is not rewritten on every request.
    expect((await browser.fetch(`${server.url}/auth/session`)).headers.getSetCookie()).toEqual([]);
  });

  test("a forged session token is not accepted", async () => {
    const browser = await signedIn("alice");
    const [id] = browser.cookie(host, "cubby_session")!.split(".");
    const res = await fetch(`${server.url}/auth/keys`, { headers: { cookie: `cubby_session=${id}.forgedsecret` } });
    expect(res.status).toBe(401);
    // A session ID no session can have (the cookie's %00 decodes to a NUL byte) is unknown too.
    for (const forged of [`%00${id!.slice(1)}.x`, `${"é".repeat(21)}.x`]) {
      const r = await fetch(`${server.url}/auth/keys`, { headers: { cookie: `cubby_session=${forged}` } });
      expect([forged, r.status]).toEqual([forged, 401]);
    }
  });

  test("the database holds only a hash of the session secret", async () => {
    const browser = await signedIn("alice");
    const [id, secret] = browser.cookie(host, "cubby_session")!.split(".");
    const [row] = (await runSql<{ secret_hash: Uint8Array }>(server.dataDir, "SELECT secret_hash FROM sessions WHERE id = ?", id!)) as [{ secret_hash: Uint8Array }];
    expect(Buffer.from(row.secret_hash).toString("latin1").includes(secret!)).toBe(false);
    expect(row.secret_hash.byteLength).toBe(32);
  });
});

describe("key management", () => {
  test("a bearer key on /auth/keys is told a session is needed, not that credentials are missing", async () => {
    const key = await server.mintKey("bearer-on-auth@example.com");
    const res = await fetch(`${server.url}/auth/keys`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { message: string }).message).toStartWith("this needs a dashboard session (sign in and use its cookie): an API key cannot mint");
  });

  test("mint (shown once), use, list without the secret, revoke", async () => {
    const browser = await signedIn("alice");
    const minted = await browser.fetch(`${server.url}/auth/keys`, {
      method: "POST",
      body: JSON.stringify({ name: "laptop" }),
      headers: { ...sameOrigin(), "content-type": "application/json" },
    });
    const key = (await minted.json()) as Record<string, unknown> & { id: string; key: string; created_at: string };
    expect(key).toEqual({
      id: expect.any(String),
      name: "laptop",
      key: expect.stringMatching(/^cubby_[A-Za-z0-9_-]{43}$/),
      scopes: ["files.read", "files.write"],
      expire_time: "",
      created_at: expect.stringMatching(/Z$/),
      last_used_at: null,
    });

    expect((await fetch(`${server.url}/v1/files`, { headers: { authorization: `Bearer ${key.key}` } })).status).toBe(200);
    const listed = (await (await browser.fetch(`${server.url}/auth/keys`)).json()) as { keys: Record<string, unknown>[] };
    expect(listed.keys.find((k) => k.id === key.id)).toEqual({
      id: key.id,
      name: "laptop",
      scopes: ["files.read", "files.write"],
      expire_time: "",
      created_at: key.created_at,
      last_used_at: expect.stringMatching(/Z$/),
    });
    expect(JSON.stringify(listed)).not.toContain(key.key);

    const revoked = await browser.fetch(`${server.url}/auth/keys/${key.id}`, { method: "DELETE", headers: sameOrigin() });
    expect({ status: revoked.status, body: await revoked.json() }).toEqual({ status: 200, body: {} });
    expect((await fetch(`${server.url}/v1/files`, { headers: { authorization: `Bearer ${key.key}` } })).status).toBe(401);
    expect((await browser.fetch(`${server.url}/auth/keys/${key.id}`, { method: "DELETE", headers: sameOrigin() })).status).toBe(404);
    // IDs no key can have are not found, on every store (PostgreSQL refuses a NUL byte in text).
    for (const id of ["%00", "a%00b", "%C3%A9", "x".repeat(65)]) {
      expect([id, (await browser.fetch(`${server.url}/auth/keys/${id}`, { method: "DELETE", headers: sameOrigin() })).status]).toEqual([id, 404]);
    }
  });

  test("scopes and expiry: a read-only key that expires in an hour; bad settings are 400 and mint nothing", async () => {
    const browser = await signedIn("alice");
    const post = (body: unknown) =>
      browser.fetch(`${server.url}/auth/keys`, { method: "POST", body: JSON.stringify(body), headers: { ...sameOrigin(), "content-type": "application/json" } });
    const before = ((await (await browser.fetch(`${server.url}/auth/keys`)).json()) as { keys: unknown[] }).keys.length;
    const res = await post({ name: "reader", scopes: ["files.read"], ttl: "1h" });
    const key = (await res.json()) as { scopes: string[]; expire_time: string };
    expect({ status: res.status, scopes: key.scopes }).toEqual({ status: 200, scopes: ["files.read"] });
    const expires = Date.parse(key.expire_time);
    expect(expires - Date.now()).toBeGreaterThan(3500_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(3600_000);
    for (const bad of [{ scopes: [] }, { scopes: ["files.admin"] }, { scopes: "files.read" }, { ttl: "1w" }, { ttl: "1h", expire_time: "2030-01-01T00:00:00Z" }, { expire_time: "2001-01-01T00:00:00Z" }]) {
      const r = await post(bad);
      expect({ bad, status: r.status, code: ((await r.json()) as { code: number }).code }).toEqual({ bad, status: 400, code: 3 });
    }
    expect(((await (await browser.fetch(`${server.url}/auth/keys`)).json()) as { keys: unknown[] }).keys.length).toBe(before + 1);
  });

  test("a key without a body gets an empty name", async () => {
    const browser = await signedIn("alice");
    const res = await browser.fetch(`${server.url}/auth/keys`, { method: "POST", headers: sameOrigin() });
    expect(((await res.json()) as { name: string }).name).toBe("");
  });

  test("another user's key cannot be revoked", async () => {
    const alice = await signedIn("alice");
    const bob = await signedIn("bob");
    const minted = (await (await alice.fetch(`${server.url}/auth/keys`, { method: "POST", headers: sameOrigin() })).json()) as { id: string };
    expect((await bob.fetch(`${server.url}/auth/keys/${minted.id}`, { method: "DELETE", headers: sameOrigin() })).status).toBe(404);
  });

  test("a bearer key cannot reach /auth/keys", async () => {
    const key = await server.mintKey("alice@example.com");
    const res = await fetch(`${server.url}/auth/keys`, { method: "POST", headers: { authorization: `Bearer ${key}`, origin: server.url } });
    expect(res.status).toBe(401);
    expect((await fetch(`${server.url}/auth/keys`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
  });

  test("a user the CLI created is linked on first sign-in with that e-mail", async () => {
    expect((await runCli(["keys", "create", "--email", "bob@example.com", "--name", "from-cli", "--data-dir", server.dataDir])).code).toBe(0);
    const bob = await signedIn("bob");
    const listed = (await (await bob.fetch(`${server.url}/auth/keys`)).json()) as { keys: { name: string }[] };
    expect(listed.keys.map((k) => k.name)).toContain("from-cli");
  });
});

describe("cross-origin requests authenticated by the cookie are refused (403), same-origin ones pass", () => {
  test.each([
    ["POST", "/auth/keys"],
    ["DELETE", "/auth/keys/nonexistent"],
    ["POST", "/v1/files"],
    ["POST", "/auth/logout"],
  ])("%s %s", async (method, p) => {
    const browser = await signedIn("alice");
    const variants: Record<string, string>[] = [{ origin: "http://evil.example" }, { "sec-fetch-site": "cross-site" }, { "sec-fetch-site": "same-site" }, {}];
    for (const headers of variants) {
      const res = await browser.fetch(`${server.url}${p}`, { method, headers });
      expect({ headers, status: res.status }).toEqual({ headers, status: 403 });
    }
    expect(await (await browser.fetch(`${server.url}/auth/session`)).json()).toMatchObject({ signed_in: true });
  });

  test("the cookie works for the API from the same origin", async () => {
    const browser = await signedIn("alice");
    const up = await browser.fetch(`${server.url}/v1/files?visibility=private`, { method: "POST", body: "from the dashboard", headers: { "sec-fetch-site": "same-origin" } });
    const file = (await up.json()) as { id: string; url: string };
    expect(up.status).toBe(200);
    expect(await (await browser.fetch(file.url)).text()).toBe("from the dashboard");
    expect((await browser.fetch(`${server.url}/v1/files/${file.id}`)).status).toBe(200);
  });

  test("a browser navigation to a private file while signed out goes to sign-in and comes back", async () => {
    const owner = await signedIn("alice");
    const up = await owner.fetch(`${server.url}/v1/files?visibility=internal`, { method: "POST", body: "x", headers: sameOrigin() });
    const file = (await up.json()) as { id: string; url: string };
    const visitor = new Browser();
    const first = await visitor.fetch(file.url, { headers: { accept: "text/html" } });
    const next = new URL(first.headers.get("location")!, server.url).searchParams.get("next")!;
    const res = await visitor.signIn(server.url, "bob", next);
    expect(res.headers.get("location")).toBe(`/${file.id}`);
    expect(await (await visitor.fetch(`${server.url}/${file.id}`)).text()).toBe("x");
  });
});

describe("without a provider", () => {
  test("/auth/login explains how to configure one; /auth/session says so", async () => {
    await using plain = await startServer();
    const login = await fetch(`${plain.url}/auth/login`);
    expect({ status: login.status, mentions: (await login.text()).includes("IDP_CLIENT_ID") }).toEqual({ status: 404, mentions: true });
    expect(await (await fetch(`${plain.url}/auth/session`)).json()).toEqual({ sign_in_configured: false, signed_in: false, email: "" });
  });

  test("a dashboard visit and a signed-out browser opening an internal link meet no 5xx", async () => {
    await using plain = await startServer();
    const key = await plain.mintKey("owner@example.com");
    const file = await client(plain, key).upload("x", "?visibility=internal");
    const browser = { accept: "text/html" };
    const statuses: Record<string, number> = {};
    for (const p of ["/", "/app.js", "/app.css", "/auth/session", `/${file.id}`, "/auth/idp/callback?code=x&state=y"]) {
      statuses[p] = (await fetch(`${plain.url}${p}`, { headers: browser, redirect: "manual" })).status;
    }
    // The internal link sends the browser to sign-in, which tells the recipient the file needs
    // a sign-in and how a person gets one, never the server's configuration (CONTRACT §15).
    const landed = await fetch(`${plain.url}/${file.id}`, { headers: browser });
    const page = await landed.text();
    expect({
      statuses,
      landed: landed.status,
      says: page.includes("This file needs you to sign in") && page.includes("sign-in link"),
      configuration: /IDP_|cubby login-link|Sign-in is not configured|href="\/"/.test(page),
    }).toEqual({
      statuses: { "/": 200, "/app.js": 200, "/app.css": 200, "/auth/session": 200, [`/${file.id}`]: 302, "/auth/idp/callback?code=x&state=y": 404 },
      landed: 401,
      says: true,
      configuration: false,
    });
  });

  test("with an https HOSTNAME the cookies are __Host- prefixed and Secure", async () => {
    await using secure = await startServer({ env: { HOSTNAME: "https://cubby.example", IDP_ISSUER: idp.issuer, ...IDP_CLIENT } });
    const res = await fetch(`${secure.url}/auth/login`, { redirect: "manual" });
    expect(res.headers.get("set-cookie")).toMatch(/^__Host-cubby_oidc=.*; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
  });
});

describe("RPC with the session cookie", () => {
  test("a same-origin Connect call works; a cross-origin one is PERMISSION_DENIED", async () => {
    const browser = await signedIn("alice");
    const call = (origin: string) =>
      browser.fetch(`${server.url}/cubby.v1.FileService/ListFiles`, {
        method: "POST",
        body: "{}",
        headers: { "content-type": "application/json", origin },
      });
    const ok = await call(server.url);
    expect({ status: ok.status, hasFiles: "files" in ((await ok.json()) as object) }).toEqual({ status: 200, hasFiles: true });
    const evil = await call("http://evil.example");
    expect({ status: evil.status, code: ((await evil.json()) as { code: string }).code }).toEqual({ status: 403, code: "permission_denied" });
  });
});
