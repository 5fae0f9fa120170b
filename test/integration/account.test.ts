// test-lists: workers postgres-s3
// The account routes of CONTRACT §15 on the run's backend and WORKERS: `GET|PATCH /v1/me` (the
// display name, stored trimmed, "" back to the default; whether shares show the e-mail), and the
// administrators' `GET /v1/admin/users` (paged by e-mail) and `PATCH /v1/admin/users/{id}`
// (quota, disabled, admin), for ADMIN_EMAILS and users promoted with `cubby users promote`; 403
// for anyone else, 401 for nobody; what an administrator changes takes effect on the next request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AdminUserJson } from "../../src/http/account-routes.ts";
import { client, runCli, startServer, type RunningServer } from "../support/server.ts";

let server: RunningServer;
let root: string;
let alice: string;

beforeAll(async () => {
  server = await startServer({ env: { ADMIN_EMAILS: "Root@Example.com" } });
  root = await server.mintKey("root@example.com");
  alice = await server.mintKey("alice@example.com");
}, 60_000);
afterAll(() => server?.[Symbol.asyncDispose]());

async function call<T = Record<string, unknown>>(key: string | undefined, method: string, target: string, body?: unknown): Promise<{ status: number; body: T & { message?: string } }> {
  const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${server.url}${target}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: res.status, body: (await res.json()) as T & { message?: string } };
}

type UserList = { users: AdminUserJson[]; next_page_token: string };

describe("GET|PATCH /v1/me", () => {
  test("the default name is the e-mail's local part; a name is stored trimmed, \"\" goes back; the e-mail choice is kept", async () => {
    expect(await call(alice, "GET", "/v1/me")).toEqual({ status: 200, body: { email: "alice@example.com", display_name: "alice", show_email_on_shares: false } });
    expect(await call(alice, "PATCH", "/v1/me", { display_name: "  Alice Ångström ✓ ", show_email_on_shares: true })).toEqual({
      status: 200,
      body: { email: "alice@example.com", display_name: "Alice Ångström ✓", show_email_on_shares: true },
    });
    expect((await call(alice, "PATCH", "/v1/me", { display_name: "" })).body).toEqual({ email: "alice@example.com", display_name: "alice", show_email_on_shares: true });
    expect((await call(alice, "PATCH", "/v1/me", {})).body).toMatchObject({ display_name: "alice", show_email_on_shares: true });
  });

  test("bad changes are 400 and change nothing; a read-only key 403; nobody 401", async () => {
    await call(alice, "PATCH", "/v1/me", { display_name: "Kept" });
    for (const bad of [{ display_name: "x".repeat(101) }, { display_name: "a\nb" }, { display_name: 5 }, { show_email_on_shares: "yes" }, { email: "x@example.com" }]) {
      expect({ bad, status: (await call(alice, "PATCH", "/v1/me", bad)).status }).toEqual({ bad, status: 400 });
    }
    expect((await call(alice, "GET", "/v1/me")).body.display_name).toBe("Kept");
    expect((await call(await server.mintKey("alice@example.com", "--scope", "files.read"), "PATCH", "/v1/me", { display_name: "No" })).status).toBe(403);
    expect((await call(undefined, "GET", "/v1/me")).status).toBe(401);
  });
});

describe("/v1/admin/users", () => {
  test("an ADMIN_EMAILS address lists every user by e-mail, a page at a time, with usage and state", async () => {
    await client(server, alice).upload("12345", "?name=five.txt");
    const first = await call<UserList>(root, "GET", "/v1/admin/users?page_size=1");
    expect(first.status).toBe(200);
    expect(first.body.users.map((u) => u.email)).toEqual(["alice@example.com"]);
    expect(first.body.users[0]).toEqual({
      id: expect.any(String),
      email: "alice@example.com",
      display_name: "Kept",
      admin: false,
      disabled: false,
      quota_bytes: null,
      quota_source: "default",
      used_bytes: 5,
      files: 1,
      last_seen_time: expect.stringMatching(/Z$/),
      created_at: expect.stringMatching(/Z$/),
    });
    const rest = await call<UserList>(root, "GET", `/v1/admin/users?page_size=1000&page_token=${first.body.next_page_token}`);
    expect(rest.body.users.map((u) => [u.email, u.admin])).toEqual([["root@example.com", true]]);
    expect(rest.body.next_page_token).toBe("");
    expect((await call(root, "GET", "/v1/admin/users?page_token=bm9wZQ")).status).toBe(400);
  });

  test("others are refused: 403 for a user, 401 for nobody", async () => {
    expect(await call(alice, "GET", "/v1/admin/users")).toMatchObject({ status: 403, body: { message: expect.stringContaining("administrator") } });
    expect((await call(alice, "PATCH", "/v1/admin/users/whoever", { disabled: true })).status).toBe(403);
    expect((await call(undefined, "GET", "/v1/admin/users")).status).toBe(401);
  });

  test("a quota, disabling and promoting take effect at once; bad changes are 400, an unknown user 404", async () => {
    const bob = await server.mintKey("bob@example.com");
    const id = (await call<UserList>(root, "GET", "/v1/admin/users")).body.users.find((u) => u.email === "bob@example.com")!.id;

    expect((await call<AdminUserJson>(root, "PATCH", `/v1/admin/users/${id}`, { quota_bytes: 4 })).body).toMatchObject({ quota_bytes: 4, quota_source: "own" });
    const refused = await fetch(`${server.url}/v1/files?name=big.txt`, { method: "POST", body: "12345", headers: { authorization: `Bearer ${bob}` } });
    expect(refused.status).toBe(413);
    expect((await call<AdminUserJson>(root, "PATCH", `/v1/admin/users/${id}`, { quota_bytes: null })).body).toMatchObject({ quota_bytes: null, quota_source: "none" });
    expect((await call<AdminUserJson>(root, "PATCH", `/v1/admin/users/${id}`, { quota_bytes: "default" })).body).toMatchObject({ quota_source: "default" });

    expect((await call<AdminUserJson>(root, "PATCH", `/v1/admin/users/${id}`, { disabled: true })).body.disabled).toBe(true);
    expect((await call(bob, "GET", "/v1/me")).status).toBe(401);
    expect((await call<AdminUserJson>(root, "PATCH", `/v1/admin/users/${id}`, { disabled: false })).body.disabled).toBe(false);
    expect((await call(bob, "GET", "/v1/me")).status).toBe(200);

    expect((await call<AdminUserJson>(root, "PATCH", `/v1/admin/users/${id}`, { admin: true })).body.admin).toBe(true);
    expect((await call(bob, "GET", "/v1/admin/users")).status).toBe(200);
    expect((await call<AdminUserJson>(root, "PATCH", `/v1/admin/users/${id}`, { admin: false })).body.admin).toBe(false);
    expect((await call(bob, "GET", "/v1/admin/users")).status).toBe(403);

    for (const bad of [{ quota_bytes: -1 }, { quota_bytes: 1.5 }, { quota_bytes: "5G" }, { disabled: "yes" }, { admin: 1 }, { email: "x@example.com" }]) {
      expect({ bad, status: (await call(root, "PATCH", `/v1/admin/users/${id}`, bad)).status }).toEqual({ bad, status: 400 });
    }
    expect((await call(root, "PATCH", "/v1/admin/users/nosuchuser", { disabled: true })).status).toBe(404);
    // A read-only key of an administrator lists but does not change.
    const reader = await server.mintKey("root@example.com", "--scope", "files.read");
    expect((await call(reader, "GET", "/v1/admin/users")).status).toBe(200);
    expect((await call(reader, "PATCH", `/v1/admin/users/${id}`, { disabled: true })).status).toBe(403);
  });

  test("cubby users promote and demote; a demoted ADMIN_EMAILS address stays an administrator", async () => {
    const carol = await server.mintKey("carol@example.com");
    // The operator runs the CLI with the server's environment.
    const cli = (...args: string[]) => runCli(["users", ...args, "--data-dir", server.dataDir], { env: { ADMIN_EMAILS: "root@example.com" } });
    expect(await cli("promote", "carol@example.com")).toMatchObject({ code: 0, stderr: "promoted carol@example.com\n" });
    expect((await call(carol, "GET", "/v1/admin/users")).status).toBe(200);
    const listed = (await cli("list")).stdout.split("\n").find((l) => l.startsWith("carol@example.com\t"))!;
    expect(listed.split("\t")[5]).toBe("enabled, admin");
    expect(await cli("demote", "carol@example.com")).toMatchObject({ code: 0, stderr: "demoted carol@example.com\n" });
    expect((await call(carol, "GET", "/v1/admin/users")).status).toBe(403);
    expect(await cli("demote", "root@example.com")).toMatchObject({ code: 0, stderr: "demoted root@example.com (still an administrator: ADMIN_EMAILS lists them)\n" });
    expect((await call(root, "GET", "/v1/admin/users")).status).toBe(200);
    expect(await cli("promote", "nobody@example.com")).toMatchObject({ code: 2 });
  });
});
