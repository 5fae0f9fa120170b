// test-lists: postgres-s3
// The authorization matrix of CONTRACT §2 and §3: owner / another user / anonymous / revoked
// key × private / internal / public × every action, through a real server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { runSql } from "../support/backend.ts";
import { client, runCli, startServer, type FileJson, type RunningServer } from "../support/server.ts";

let server: RunningServer;
let ownerKey: string;
let otherKey: string;
let revokedKey: string;

beforeAll(async () => {
  server = await startServer();
  ownerKey = await server.mintKey("owner@example.com");
  otherKey = await server.mintKey("other@example.com");
  revokedKey = await server.mintKey("revoked@example.com");
  const list = await runCli(["keys", "list", "--email", "revoked@example.com", "--data-dir", server.dataDir]);
  const id = list.stdout.split("\n")[1]!.split("\t")[0]!;
  expect((await runCli(["keys", "revoke", id, "--data-dir", server.dataDir])).code).toBe(0);
});
afterAll(() => server[Symbol.asyncDispose]());

type Actor = "owner" | "other" | "anonymous" | "revoked";
type Vis = "private" | "internal" | "public";
const actors: Actor[] = ["owner", "other", "anonymous", "revoked"];
const visibilities: Vis[] = ["private", "internal", "public"];

function keyOf(actor: Actor): string | undefined {
  return { owner: ownerKey, other: otherKey, anonymous: undefined, revoked: revokedKey }[actor];
}

const actions: Record<string, (api: ReturnType<typeof client>, file: FileJson) => Promise<Response>> = {
  "get metadata": (api, f) => api.fetch(`/v1/files/${f.id}`),
  replace: (api, f) => api.fetch(`/v1/files/${f.id}/content`, { method: "PUT", body: "new" }),
  patch: (api, f) =>
    api.fetch(`/v1/files/${f.id}`, { method: "PATCH", body: '{"slug":"x"}', headers: { "content-type": "application/json" } }),
  publish: (api, f) => api.fetch(`/v1/files/${f.id}/publish`, { method: "POST" }),
  unpublish: (api, f) => api.fetch(`/v1/files/${f.id}/unpublish`, { method: "POST" }),
  delete: (api, f) => api.fetch(`/v1/files/${f.id}`, { method: "DELETE" }),
  "open content": (api, f) => api.fetch(`/${f.id}`),
};

/** The status CONTRACT §2/§3 requires. */
function expected(actor: Actor, vis: Vis, action: string): number {
  if (action === "open content") {
    if (vis === "public" || actor === "owner") return 200;
    if (actor === "other") return vis === "internal" ? 200 : 404;
    return 401; // anonymous, and a revoked key counts as no credentials
  }
  if (actor === "anonymous" || actor === "revoked") return 401;
  if (actor === "owner") return 200;
  if (vis === "private") return 404;
  return action === "get metadata" ? 200 : 403;
}

const cases = actors.flatMap((actor) =>
  visibilities.flatMap((vis) => Object.keys(actions).map((action) => [actor, vis, action, expected(actor, vis, action)] as const)),
);

describe("matrix", () => {
  test.each(cases)("%s × %s × %s → %d", async (actor, vis, action, status) => {
    const file = await client(server, ownerKey).upload("content", `?visibility=${vis}`);
    const res = await actions[action]!(client(server, keyOf(actor)), file);
    expect(res.status).toBe(status);
    // A refused action changes nothing.
    if (status !== 200) {
      expect(await (await client(server, ownerKey).fetch(`/v1/files/${file.id}`)).json()).toEqual(file);
    }
  });
});

test("another user's private file answers exactly like a missing one", async () => {
  const file = await client(server, ownerKey).upload("secret", "?visibility=private");
  const other = client(server, otherKey);
  for (const [name, action] of Object.entries(actions)) {
    const forPrivate = await action(other, file);
    const forMissing = await action(other, { ...file, id: "AAAAAAAAAAAAAAAAAAAAA" });
    const shape = async (r: Response) => ({ status: r.status, body: await r.text(), type: r.headers.get("content-type") });
    expect({ name, ...(await shape(forPrivate)) }).toEqual({ name, ...(await shape(forMissing)) });
  }
});

test("list shows only the caller's own files", async () => {
  const mine = await client(server, otherKey).upload("mine", "?visibility=public");
  const res = await client(server, otherKey).fetch("/v1/files?page_size=1000");
  const files = ((await res.json()) as { files: FileJson[] }).files;
  expect(files.map((f) => f.id)).toContain(mine.id);
  const ownersFiles = ((await (await client(server, ownerKey).fetch("/v1/files?page_size=1000")).json()) as { files: FileJson[] }).files;
  expect(ownersFiles.map((f) => f.id)).not.toContain(mine.id);
  expect((await fetch(`${server.url}/v1/files`)).status).toBe(401);
});

test("a key revoked by the CLI (another process) is refused on the very next request, however warm the server's lookups", async () => {
  const key = await server.mintKey("warm@example.com");
  const api = client(server, key);
  const file = await api.upload("warm", "?visibility=private");
  const paths = [`/${file.id}`, `/v1/files/${file.id}`];
  for (let i = 0; i < 50; i++) for (const p of paths) expect((await api.fetch(p)).status).toBe(200);
  const list = await runCli(["keys", "list", "--email", "warm@example.com", "--data-dir", server.dataDir]);
  const id = list.stdout.split("\n")[1]!.split("\t")[0]!;
  expect((await runCli(["keys", "revoke", id, "--data-dir", server.dataDir])).code).toBe(0);
  for (const p of paths) expect({ p, status: (await api.fetch(p)).status }).toEqual({ p, status: 401 });
});

test("a file deleted through another connection is gone on the very next request", async () => {
  const api = client(server, ownerKey);
  const file = await api.upload("soon gone", "?visibility=public");
  for (let i = 0; i < 50; i++) expect((await fetch(file.url)).status).toBe(200);
  // Another connection, as `cubby fsck` quarantining a damaged file would use.
  await runSql(server.dataDir, "DELETE FROM files WHERE id = ?", file.id);
  expect((await fetch(file.url)).status).toBe(404);
  expect((await api.fetch(`/v1/files/${file.id}`)).status).toBe(404);
});
