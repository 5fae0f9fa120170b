// test-lists: workers postgres-s3
// `cubby users list|disable|enable|delete|set-quota` (CONTRACT §9) against a running server on
// the configured stores, with sign-in through a real OpenID provider for sessions: the list's
// columns; a disabled user's keys and sessions refused at once (their public files and share
// links still served, sign-in refused with a clear page, guest upload links closed), enabled again; per-user quotas;
// delete without --yes changing nothing, with --yes removing rows and blobs.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { blobNames } from "../support/backend.ts";
import { Browser } from "../support/idp.ts";
import { startSignInServer } from "../support/sign-in-server.ts";
import { client, runCli, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { createUpload, patchChunk } from "../support/tus.ts";

const QUOTA = 1000;
const ENV = { QUOTA_BYTES: String(QUOTA) };
let stack: Awaited<ReturnType<typeof startSignInServer>>;
let server: RunningServer;
let host: string;

beforeAll(async () => {
  stack = await startSignInServer(ENV);
  ({ server, host } = stack);
});
afterAll(() => stack?.[Symbol.asyncDispose]());

const users = (...args: string[]) => runCli(["users", ...args, "--data-dir", server.dataDir], { env: ENV });

async function signedIn(login: string): Promise<Browser> {
  const browser = new Browser();
  expect((await browser.signIn(server.url, login)).status).toBe(302);
  return browser;
}

/** The `users list` row of `email`, split into its columns. */
async function listed(email: string): Promise<string[] | undefined> {
  const r = await users("list");
  expect(r.code).toBe(0);
  const [header, ...rows] = r.stdout.trim().split("\n");
  expect(header).toBe("EMAIL\tFILES\tBYTES\tKEYS\tLAST SEEN\tSTATUS\tQUOTA");
  return rows.map((row) => row.split("\t")).find((cols) => cols[0] === email);
}

const status = async (res: Promise<Response>) => (await res).status;

test("users list: e-mail, files, bytes (and reserved), keys, last seen, status, quota", async () => {
  const key = await server.mintKey("lister@example.com");
  await server.mintKey("lister@example.com");
  await server.mintKey("idle@example.com");
  await client(server, key).upload("a".repeat(100));
  await client(server, key).upload("b".repeat(50));
  await createUpload(server.url, key, 30);
  const row = await listed("lister@example.com");
  expect(row).toEqual(["lister@example.com", "2", "150 (+30 reserved)", "2", expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/), "enabled", "1000 (QUOTA_BYTES)"]);
  expect(await listed("idle@example.com")).toEqual(["idle@example.com", "0", "0", "1", "never", "enabled", "1000 (QUOTA_BYTES)"]);
}, 30_000);

test("disable: the user's keys and sessions get 401 at once, sign-in is refused, guest links take nothing; public files and share links stay served; enable restores them", async () => {
  const browser = await signedIn("dana");
  const key = await server.mintKey("dana@example.com");
  const file = await client(server, key).upload("public bytes", "?visibility=public");
  const share = (await (await client(server, key).fetch(`/v1/files/${file.id}/shares`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json()) as { url: string };
  const link = (await (await client(server, key).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json()) as { url: string };
  const guest = () => status(fetch(`${link.url}?name=g.txt`, { method: "POST", body: "from a guest" }));
  const cookie = { cookie: `cubby_session=${browser.cookie(host, "cubby_session")}` };
  expect(await status(client(server, key).fetch("/v1/files"))).toBe(200);
  expect(await status(fetch(`${server.url}/v1/files`, { headers: cookie }))).toBe(200);

  const disabled = await users("disable", "Dana@example.com");
  expect({ code: disabled.code, stderr: disabled.stderr }).toEqual({
    code: 0,
    stderr: "disabled dana@example.com; their keys and sessions are refused from now on, their public files and share links stay served\n",
  });
  const refused = await client(server, key).fetch("/v1/files");
  expect({ status: refused.status, code: ((await refused.json()) as { code: number }).code }).toEqual({ status: 401, code: 16 });
  expect(await status(fetch(`${server.url}/v1/files`, { headers: cookie }))).toBe(401);
  expect(await (await fetch(`${server.url}/auth/session`, { headers: cookie })).json()).toMatchObject({ signed_in: false });
  expect(await (await fetch(`${server.url}/${file.id}`)).text()).toBe("public bytes");
  expect(await (await fetch(share.url)).text()).toBe("public bytes");
  // Their guest upload links take nothing meanwhile.
  expect(await guest()).toBe(410);
  const again = await new Browser().signIn(server.url, "dana");
  expect({ status: again.status, page: await again.text() }).toMatchObject({ status: 403, page: expect.stringContaining("the account dana@example.com is disabled") });
  expect((await listed("dana@example.com"))?.[5]).toBe("disabled");
  expect((await users("disable", "dana@example.com")).stderr).toBe("dana@example.com was already disabled\n");

  expect((await users("enable", "dana@example.com")).code).toBe(0);
  expect(await guest()).toBe(200);
  expect(await status(client(server, key).fetch("/v1/files"))).toBe(200);
  expect(await status(fetch(`${server.url}/v1/files`, { headers: cookie }))).toBe(200);
}, 30_000);

test("set-quota: bytes, sizes with units, none (no quota even with QUOTA_BYTES) and default; bad input changes nothing", async () => {
  const key = await server.mintKey("quota-cli@example.com");
  const upload = (size: number) => status(client(server, key).fetch("/v1/files", { method: "POST", body: "q".repeat(size) }));
  const set = await users("set-quota", "quota-cli@example.com", "10");
  expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: "quota of quota-cli@example.com: 10; 0 bytes used\n" });
  expect(await upload(11)).toBe(413);
  expect(await upload(10)).toBe(200);
  // Sizes with units, as everywhere a size is read (CONTRACT §17): binary multiples.
  const withUnit = await users("set-quota", "quota-cli@example.com", "5G");
  expect({ code: withUnit.code, stderr: withUnit.stderr }).toEqual({ code: 0, stderr: "quota of quota-cli@example.com: 5368709120; 10 bytes used\n" });
  expect((await users("set-quota", "quota-cli@example.com", "1KiB")).stderr).toBe("quota of quota-cli@example.com: 1024; 10 bytes used\n");
  expect(await upload(1015)).toBe(413);
  expect(await upload(1014)).toBe(200);
  expect((await users("set-quota", "quota-cli@example.com", "none")).code).toBe(0);
  expect(await upload(QUOTA + 500)).toBe(200);
  expect((await listed("quota-cli@example.com"))?.[6]).toBe("none (set for this user)");
  expect((await users("set-quota", "quota-cli@example.com", "default")).stderr).toBe(`quota of quota-cli@example.com: 1000 (QUOTA_BYTES); ${QUOTA + 1524} bytes used\n`);
  expect(await upload(1)).toBe(413);
  expect(await upload(0)).toBe(200);

  for (const [args, message] of [
    [["quota-cli@example.com", "1 gigabyte"], 'cubby: users set-quota takes a size (bytes, or with a unit such as 5G or 500MiB), none (no quota) or default (follow QUOTA_BYTES) (got "1 gigabyte")\n'],
    [["quota-cli@example.com"], "cubby: users set-quota takes a size (bytes, or with a unit such as 5G or 500MiB), none (no quota) or default (follow QUOTA_BYTES)\n"],
    [["nobody@example.com", "5"], "cubby: no user with the e-mail nobody@example.com\n"],
    [["not-an-address", "5"], 'cubby: "not-an-address" is not an e-mail address\n'],
  ] as const) {
    const r = await users("set-quota", ...args);
    expect({ code: r.code, stderr: r.stderr, stdout: r.stdout }).toEqual({ code: 2, stderr: message, stdout: "" });
  }
  expect((await listed("quota-cli@example.com"))?.[6]).toBe("1000 (QUOTA_BYTES)");
}, 30_000);

test("delete without --yes says what it would delete and changes nothing; with --yes the user, their rows and blobs are gone", async () => {
  const browser = await signedIn("erin");
  const key = await server.mintKey("erin@example.com");
  const files: FileJson[] = [await client(server, key).upload("x".repeat(70), "?visibility=public"), await client(server, key).upload("y".repeat(30))];
  await client(server, key).fetch(`/v1/files/${files[0]!.id}/shares`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  await client(server, key).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  const upload = await createUpload(server.url, key, 20);
  expect((await patchChunk(upload, key, 0, "z".repeat(10))).status).toBe(204);
  const cookie = { cookie: `cubby_session=${browser.cookie(host, "cubby_session")}` };
  const blobs = await blobNames(server.dataDir);
  const holdings = "2 file(s) of 100 bytes, 1 API key(s), 1 session(s), 1 share link(s), 1 upload link(s), 1 unfinished upload(s)";

  const dry = await users("delete", "erin@example.com");
  expect({ code: dry.code, stderr: dry.stderr }).toEqual({
    code: 2,
    stderr: `cubby: users delete would delete erin@example.com and ${holdings}; nothing was changed: run it again with --yes\n`,
  });
  expect(await blobNames(server.dataDir)).toEqual(blobs);
  expect(await status(client(server, key).fetch(`/v1/files/${files[1]!.id}`))).toBe(200);

  const done = await users("delete", "erin@example.com", "--yes");
  expect({ code: done.code, stderr: done.stderr }).toEqual({ code: 0, stderr: `deleted erin@example.com and ${holdings}\n` });
  expect(await status(client(server, key).fetch("/v1/files"))).toBe(401);
  expect(await status(fetch(`${server.url}/v1/files`, { headers: cookie }))).toBe(401);
  expect(await status(fetch(`${server.url}/${files[0]!.id}`))).toBe(404);
  // Two blobs and the unfinished upload's partial bytes.
  expect((await blobNames(server.dataDir)).length).toBe(blobs.length - 3);
  expect(await listed("erin@example.com")).toBeUndefined();
  const unknown = await users("delete", "erin@example.com", "--yes");
  expect({ code: unknown.code, stderr: unknown.stderr }).toEqual({ code: 2, stderr: "cubby: no user with the e-mail erin@example.com\n" });
}, 30_000);

test("bad subcommands and arguments: one line, exit 2", async () => {
  for (const [args, message] of [
    [[], "cubby: users needs a subcommand: list, disable, enable, delete, set-quota, promote or demote\n"],
    [["purge"], 'cubby: unknown users subcommand "purge"\n'],
    [["list", "x"], 'cubby: users list takes no arguments (got "x")\n'],
    [["disable"], "cubby: users disable needs the user's e-mail address\n"],
    [["enable", "a@example.com", "b@example.com"], 'cubby: users enable takes one e-mail (got "b@example.com" too)\n'],
  ] as const) {
    const r = await users(...args);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 2, stderr: message });
  }
}, 30_000);
