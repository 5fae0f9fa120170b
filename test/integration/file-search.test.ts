// test-lists: postgres-s3
// Search by name in the file list (`GET /v1/files?q=`, beside CONTRACT §2) against the real
// server on the configured stores: substrings, ASCII letters in either case, `%` `_` `\` taken
// literally, keyset paging with q, and a q over 256 characters refused before anything is read.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";

let server: RunningServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.[Symbol.asyncDispose]());

type Page = { files: FileJson[]; next_page_token: string };

/** A new user's key and a way to upload files named `names`, in that order (oldest first). */
async function userWith(email: string, names: string[]) {
  const key = await server.mintKey(email);
  const api = client(server, key);
  const made: FileJson[] = [];
  for (const name of names) made.push(await api.upload(name, `?name=${encodeURIComponent(name)}`));
  return { key, api, made };
}

async function search(api: ReturnType<typeof client>, q: string, extra = ""): Promise<{ status: number; body: unknown }> {
  const res = await api.fetch(`/v1/files?q=${encodeURIComponent(q)}${extra}`);
  return { status: res.status, body: await res.json() };
}

/** The names a search lists on one page of 1000. */
async function names(api: ReturnType<typeof client>, q: string): Promise<string[]> {
  const { status, body } = await search(api, q, "&page_size=1000");
  expect(status).toBe(200);
  return (body as Page).files.map((f) => f.name);
}

test("q lists the caller's files whose name contains it, ASCII letters in either case, newest first", async () => {
  const { api, made } = await userWith("searcher@example.com", ["Report-2024.PDF", "summary.txt", "annual report.txt", "REPORTER.md", "notes"]);
  await userWith("someone-else@example.com", ["report of someone else.txt"]);
  const expected = { files: [made[3], made[2], made[0]], next_page_token: "" };
  for (const q of ["report", "REPORT", "RePoRt"]) expect(await search(api, q)).toEqual({ status: 200, body: expected });
  expect(await names(api, "port-20")).toEqual(["Report-2024.PDF"]);
  expect(await names(api, ".txt")).toEqual(["annual report.txt", "summary.txt"]);
  expect(await names(api, "nothing like it")).toEqual([]);
  // An empty q is no filter; the listing is the one without q.
  const all = await (await api.fetch("/v1/files")).json();
  expect(await search(api, "")).toEqual({ status: 200, body: all });
  expect((all as Page).files).toHaveLength(5);
});

test("%, _ and \\ in q match themselves; letters beyond ASCII match only themselves", async () => {
  const { api } = await userWith("wildcards@example.com", ["100% done.txt", "1000 done.txt", "a_b.txt", "axb.txt", "back\\slash.txt", "backslash.txt", "Été.txt", "état.txt"]);
  expect(await names(api, "%")).toEqual(["100% done.txt"]);
  expect(await names(api, "0% d")).toEqual(["100% done.txt"]);
  expect(await names(api, "_")).toEqual(["a_b.txt"]);
  expect(await names(api, "A_B")).toEqual(["a_b.txt"]);
  expect(await names(api, "\\")).toEqual(["back\\slash.txt"]);
  expect(await names(api, "k\\s")).toEqual(["back\\slash.txt"]);
  // ASCII letters fold (t/T); É and é are different characters to the search.
  expect(await names(api, "ÉT")).toEqual(["Été.txt"]);
  expect(await names(api, "ét")).toEqual(["état.txt"]);
});

test("q pages like the listing: 5 matches at page_size 2 are 3 pages, none twice", async () => {
  const uploaded = ["match 1", "other a", "MATCH 2", "match 3", "other b", "Match 4", "other c", "xmatchx 5"];
  const { api, made } = await userWith("pager@example.com", uploaded);
  const matches = made.filter((f) => f.name.toLowerCase().includes("match")).toReversed();
  expect(matches).toHaveLength(5);
  const pages: Page[] = [];
  for (let token = "", n = 0; n === 0 || token !== ""; n++) {
    expect(n).toBeLessThan(5);
    const { status, body } = await search(api, "match", `&page_size=2${token === "" ? "" : `&page_token=${token}`}`);
    expect(status).toBe(200);
    pages.push(body as Page);
    token = (body as Page).next_page_token;
  }
  expect(pages).toEqual([
    { files: matches.slice(0, 2), next_page_token: expect.stringMatching(/.+/) },
    { files: matches.slice(2, 4), next_page_token: expect.stringMatching(/.+/) },
    { files: matches.slice(4), next_page_token: "" },
  ]);
  const ids = pages.flatMap((p) => p.files.map((f) => f.id));
  expect(new Set(ids).size).toBe(5);
});

test("a q of more than 256 characters is 400 and changes nothing; the files.read scope is needed", async () => {
  const { api } = await userWith("long-q@example.com", ["kept.txt"]);
  const before = await (await api.fetch("/v1/files")).json();
  for (const q of ["a".repeat(257), "é".repeat(257)]) {
    expect(await search(api, q)).toEqual({ status: 400, body: { code: 3, message: "q: the name to search for is at most 256 characters (got 257)", details: [] } });
  }
  // Refused before the other parameters are looked at.
  expect(await search(api, "a".repeat(300), "&page_size=0")).toMatchObject({ status: 400, body: { message: "q: the name to search for is at most 256 characters (got 300)" } });
  expect(await search(api, "é".repeat(256))).toEqual({ status: 200, body: { files: [], next_page_token: "" } });
  expect(await (await api.fetch("/v1/files")).json()).toEqual(before);
  const writer = client(server, await server.mintKey("long-q@example.com", "--scope", "files.write"));
  expect(await search(writer, "kept")).toEqual({ status: 403, body: { code: 7, message: "this key lacks files.read", details: [] } });
  expect((await fetch(`${server.url}/v1/files?q=kept`)).status).toBe(401);
});
