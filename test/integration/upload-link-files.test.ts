// test-lists: workers postgres-s3
// What arrived through a guest upload link (`GET /v1/upload-links/{id}/files`, beside CONTRACT
// §8) against the real server on the configured stores: files uploaded through the link by raw
// POST and by tus (tus-js-client, and an empty upload finished at creation), newest first, paged,
// as File JSON; not files uploaded otherwise or through another link; deleted files drop out; a
// deleted link still lists; another user's link is 404; files.read is needed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { UploadLinkJson } from "../../src/domain/upload-link.ts";
import { client, startServer, tempDir, type FileJson, type RunningServer } from "../support/server.ts";
import { createUpload, patchChunk, randomFile, tusFetch, tusUpload } from "../support/tus.ts";

let server: RunningServer;
let key: string;
let work: { path: string } & Disposable;

beforeAll(async () => {
  server = await startServer();
  key = await server.mintKey("arrivals@example.com");
  work = tempDir("cubby-arrivals-");
});

afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
  work?.[Symbol.dispose]();
});

type Page = { files: FileJson[]; next_page_token: string };

async function makeLink(as = key): Promise<UploadLinkJson & { token: string }> {
  const res = await client(server, as).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  if (res.status !== 200) throw new Error(`link: ${res.status} ${await res.text()}`);
  const link = (await res.json()) as UploadLinkJson;
  return { ...link, token: link.url.split("/u/")[1]! };
}

async function guestPost(token: string, body: string, name: string): Promise<FileJson> {
  const res = await fetch(`${server.url}/u/${token}?name=${encodeURIComponent(name)}`, { method: "POST", body });
  if (res.status !== 200) throw new Error(`guest upload: ${res.status} ${await res.text()}`);
  return (await res.json()) as FileJson;
}

async function arrivals(linkId: string, as = key, query = ""): Promise<{ status: number; body: unknown }> {
  const res = await client(server, as).fetch(`/v1/upload-links/${linkId}/files${query}`);
  return { status: res.status, body: await res.json() };
}

/** The caller's file as GET /v1/files/{id} answers it. */
async function fileOf(id: string): Promise<FileJson> {
  return (await (await client(server, key).fetch(`/v1/files/${id}`)).json()) as FileJson;
}

test("a link lists what arrived through it by raw POST and by tus, newest first, and nothing else", async () => {
  const link = await makeLink();
  const other = await makeLink();
  const raw1 = await guestPost(link.token, "first", "one.txt");
  // Uploads the owner makes themselves, and through another link, are not the link's.
  await client(server, key).upload("mine", "?name=mine.txt");
  const ownTus = await createUpload(server.url, key, 3);
  expect((await patchChunk(ownTus, key, 0, "own")).status).toBe(204);
  await guestPost(other.token, "elsewhere", "other-link.txt");
  const source = randomFile(work.path, "guest.bin", 2 * 1024 * 1024 + 5);
  const viaTus = await tusUpload(source.path, { endpoint: `${server.url}/v1/uploads`, token: link.token, chunkSize: 1024 * 1024, metadata: { filename: "guest.bin" } });
  const empty = await tusFetch(`${server.url}/v1/uploads`, "POST", link.token, { "upload-length": "0", "upload-metadata": `filename ${btoa("empty.txt")}` });
  expect(empty.status).toBe(201);
  const emptyId = empty.headers.get("cubby-file-id")!;
  const raw2 = await guestPost(link.token, "second", "two.txt");

  const expected = [await fileOf(raw2.id), await fileOf(emptyId), await fileOf(viaTus.fileId!), raw1];
  expect(expected.map((f) => f.name)).toEqual(["two.txt", "empty.txt", "guest.bin", "one.txt"]);
  expect(await arrivals(link.id)).toEqual({ status: 200, body: { files: expected, next_page_token: "" } });
  for (const f of (((await arrivals(link.id)).body as Page).files)) expect(Object.keys(f)).toHaveLength(10);
  expect(((await arrivals(other.id)).body as Page).files.map((f) => f.name)).toEqual(["other-link.txt"]);

  // Paged like the file list.
  const first = (await arrivals(link.id, key, "?page_size=3")).body as Page;
  expect(first).toEqual({ files: expected.slice(0, 3), next_page_token: expect.stringMatching(/.+/) });
  expect(await arrivals(link.id, key, `?page_size=3&page_token=${first.next_page_token}`)).toEqual({ status: 200, body: { files: expected.slice(3), next_page_token: "" } });

  // A file deleted since is not listed; a deleted link still lists what arrived through it.
  expect((await client(server, key).fetch(`/v1/files/${emptyId}`, { method: "DELETE" })).status).toBe(200);
  expect((await client(server, key).fetch(`/v1/upload-links/${link.id}`, { method: "DELETE" })).status).toBe(200);
  expect(await arrivals(link.id)).toEqual({ status: 200, body: { files: [expected[0], expected[2], expected[3]], next_page_token: "" } });
}, 30_000);

test("only the link's owner sees its files (404 otherwise), with files.read; bad input is 400", async () => {
  const link = await makeLink();
  await guestPost(link.token, "x", "x.txt");
  const notFound = { status: 404, body: { code: 5, message: "upload link not found", details: [] } };
  const stranger = await server.mintKey("stranger@example.com");
  expect(await arrivals(link.id, stranger)).toEqual(notFound);
  expect(await arrivals("A".repeat(21))).toEqual(notFound);
  const writer = await server.mintKey("arrivals@example.com", "--scope", "files.write");
  expect(await arrivals(link.id, writer)).toEqual({ status: 403, body: { code: 7, message: "this key lacks files.read", details: [] } });
  const reader = await server.mintKey("arrivals@example.com", "--scope", "files.read");
  expect(((await arrivals(link.id, reader)).body as Page).files.map((f) => f.name)).toEqual(["x.txt"]);
  expect(await arrivals("not-an-id")).toMatchObject({ status: 400, body: { code: 3 } });
  expect(await arrivals(link.id, key, "?page_size=0")).toMatchObject({ status: 400, body: { code: 3 } });
  expect(await arrivals(link.id, key, "?page_token=bogus")).toMatchObject({ status: 400, body: { code: 3 } });
  expect((await fetch(`${server.url}/v1/upload-links/${link.id}/files`)).status).toBe(401);
  // The link's token is no credential for it.
  expect((await arrivals(link.id, link.token)).status).toBe(401);
});
