// test-lists: postgres-s3
// WebDAV at /dav/ (CONTRACT §12) through a real server: Basic authentication with an API key and
// its scopes, the mapping of the tree (a name clash at the top shown as `name (id).ext`), PUT
// replacing content with ID and URL kept, the limits, and both wires carrying the methods.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import http2 from "node:http2";
import { basicAuth, davFetch } from "../support/dav.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";

let server: RunningServer;
let key: string;
const MAX = 200_000;
const QUOTA = 300_000;

beforeAll(async () => {
  server = await startServer({ checkResponses: false, env: { MAX_UPLOAD_BYTES: String(MAX), QUOTA_BYTES: String(QUOTA) } });
  key = await server.mintKey("dav@example.com");
});
afterAll(() => server[Symbol.asyncDispose]());

const dav = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}, k: string | undefined = key) => davFetch(server.url, k, path, init);

/** The hrefs of a PROPFIND answer, sorted. */
async function hrefs(res: Response): Promise<string[]> {
  return [...(await res.text()).matchAll(/<D:href>([^<]+)<\/D:href>/g)].map((m) => m[1]!).sort();
}

describe("authentication", () => {
  test("no credentials, a wrong key, or a bearer header: 401 with the Basic challenge", async () => {
    const answers = await Promise.all([
      davFetch(server.url, undefined, "/dav/", { method: "PROPFIND", headers: { depth: "0" } }),
      dav("/dav/", { method: "PROPFIND", headers: { depth: "0" } }, "cubby_not-a-key"),
      fetch(`${server.url}/dav/`, { method: "PROPFIND", headers: { depth: "0", authorization: `Bearer ${key}` } }),
    ]);
    expect(answers.map((r) => [r.status, r.headers.get("www-authenticate")])).toEqual(answers.map(() => [401, 'Basic realm="cubby", charset="UTF-8"']));
  });

  test("any user name; the key's scopes apply: a files.read key reads but changes nothing (403)", async () => {
    const reader = await server.mintKey("dav@example.com", "--scope", "files.read");
    expect((await dav("/dav/scoped.txt", { method: "PUT", body: "x" })).status).toBe(201);
    const ok = await fetch(`${server.url}/dav/scoped.txt`, { headers: { authorization: basicAuth(reader, "someone else entirely") } });
    expect({ status: ok.status, body: await ok.text() }).toEqual({ status: 200, body: "x" });
    const refused = await Promise.all([
      dav("/dav/scoped.txt", { method: "PUT", body: "y" }, reader),
      dav("/dav/newdir/", { method: "MKCOL" }, reader),
      dav("/dav/scoped.txt", { method: "DELETE" }, reader),
      dav("/dav/scoped.txt", { method: "LOCK", body: '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>' }, reader),
      dav("/dav/scoped.txt", { method: "PROPPATCH", body: '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><x xmlns="urn:x">1</x></D:prop></D:set></D:propertyupdate>' }, reader),
    ]);
    expect(refused.map((r) => r.status)).toEqual([403, 403, 403, 403, 403]);
  });
});

describe("the tree", () => {
  test("the top: folders as collections, files in no folder as members; a shared name shows as `name (id).ext`, an empty one as the ID", async () => {
    const k = await server.mintKey("tree@example.com");
    const api = client(server, k);
    const a1 = await api.upload("one", "?name=a.txt");
    const a2 = await api.upload("two", "?name=a.txt");
    const unnamed = await api.upload("three");
    const lone = await api.upload("four", "?name=lone.txt");
    expect((await dav("/dav/b/", { method: "MKCOL" }, k)).status).toBe(201);
    const clashing = await api.upload("five", "?name=b");
    expect((await dav("/dav/b/inside.txt", { method: "PUT", body: "six" }, k)).status).toBe(201);
    const listing = await dav("/dav/", { method: "PROPFIND", headers: { depth: "1" } }, k);
    expect(listing.status).toBe(207);
    expect(await hrefs(listing)).toEqual(
      ["/dav/", `/dav/a%20(${a1.id}).txt`, `/dav/a%20(${a2.id}).txt`, `/dav/${unnamed.id}`, "/dav/lone.txt", "/dav/b/", `/dav/b%20(${clashing.id})`].sort(),
    );
    const bodies = await Promise.all([`/dav/a%20(${a1.id}).txt`, `/dav/a%20(${a2.id}).txt`, `/dav/${unnamed.id}`, "/dav/lone.txt", `/dav/b%20(${clashing.id})`, "/dav/b/inside.txt"].map(async (p) => (await dav(p, {}, k)).text()));
    expect(bodies).toEqual(["one", "two", "three", "four", "five", "six"]);
    // The plain shared name names neither file; a decorated name with another file's ID names nothing.
    expect((await dav("/dav/a.txt", {}, k)).status).toBe(404);
    expect((await dav(`/dav/a%20(${lone.id}).txt`, {}, k)).status).toBe(404);
    // Another user sees none of it.
    expect(await hrefs(await dav("/dav/", { method: "PROPFIND", headers: { depth: "1" } }))).not.toContain("/dav/lone.txt");
    expect((await dav("/dav/lone.txt")).status).toBe(404);
  });

  test("PUT to an existing name replaces its content: same ID, same URL, new ETag; a new name is a new file", async () => {
    const k = await server.mintKey("put@example.com");
    const api = client(server, k);
    const first = await dav("/dav/doc.txt", { method: "PUT", body: "version 1", headers: { "content-type": "text/plain" } }, k);
    expect(first.status).toBe(201);
    const [file] = ((await (await api.fetch("/v1/files")).json()) as { files: FileJson[] }).files;
    const second = await dav("/dav/doc.txt", { method: "PUT", body: "version 2, longer" }, k);
    expect(second.status).toBe(204);
    expect(second.headers.get("etag")).not.toBe(first.headers.get("etag"));
    const after = ((await (await api.fetch("/v1/files")).json()) as { files: FileJson[] }).files;
    expect(after.map((f) => [f.id, f.url, f.size, f.name])).toEqual([[file!.id, file!.url, "17", "doc.txt"]]);
    expect(await (await api.fetch(`/${file!.id}`)).text()).toBe("version 2, longer");
    // PROPFIND's getetag is the ETag GET answers with.
    const props = await (await dav("/dav/doc.txt", { method: "PROPFIND", headers: { depth: "0" } }, k)).text();
    expect(props).toContain(`<D:getetag>${second.headers.get("etag")!.replaceAll('"', "&quot;")}</D:getetag>`);
    expect((await dav("/dav/doc.txt", {}, k)).headers.get("etag")).toBe(second.headers.get("etag"));
  });

  test("types from names: application/octet-stream or no type takes the name's type; an edit keeps a file's type; a type sent is kept (CONTRACT §17)", async () => {
    const k = await server.mintKey("types-dav@example.com");
    const api = client(server, k);
    const typeOf = async (name: string) => ((await (await api.fetch(`/v1/files?q=${encodeURIComponent(name)}`)).json()) as { files: FileJson[] }).files[0]!.content_type;
    expect((await dav("/dav/photo.jpg", { method: "PUT", body: new Uint8Array([0xff, 0xd8, 0xff]), headers: { "content-type": "application/octet-stream" } }, k)).status).toBe(201);
    expect(await typeOf("photo.jpg")).toBe("image/jpeg");
    expect((await dav("/dav/plain", { method: "PUT", body: new Uint8Array([1]) }, k)).status).toBe(201);
    expect(await typeOf("plain")).toBe("application/octet-stream");
    expect((await dav("/dav/notes", { method: "PUT", body: "first", headers: { "content-type": "text/plain" } }, k)).status).toBe(201);
    expect((await dav("/dav/notes", { method: "PUT", body: new TextEncoder().encode("edited"), headers: { "content-type": "application/octet-stream" } }, k)).status).toBe(204);
    expect(await typeOf("notes")).toBe("text/plain");
    expect((await dav("/dav/shot.jpg", { method: "PUT", body: new Uint8Array([1]), headers: { "content-type": "image/png" } }, k)).status).toBe(201);
    expect(await typeOf("shot.jpg")).toBe("image/png");
  });

  test("COPY makes a new file with the same bytes; MOVE into a folder keeps the ID; DELETE of a folder takes everything in it", async () => {
    const k = await server.mintKey("copy@example.com");
    const api = client(server, k);
    const bytes = new Uint8Array(150_000).map((_, i) => (i * 7) & 0xff);
    expect((await dav("/dav/src.bin", { method: "PUT", body: bytes }, k)).status).toBe(201);
    expect((await dav("/dav/dir/", { method: "MKCOL" }, k)).status).toBe(201);
    expect((await dav("/dav/src.bin", { method: "COPY", headers: { destination: `${server.url}/dav/dir/copy.bin` } }, k)).status).toBe(201);
    const ids = ((await (await api.fetch("/v1/files")).json()) as { files: FileJson[] }).files.map((f) => f.id);
    expect(new Uint8Array(await (await dav("/dav/dir/copy.bin", {}, k)).arrayBuffer())).toEqual(bytes);
    expect((await dav("/dav/src.bin", { method: "MOVE", headers: { destination: "/dav/dir/moved.bin" } }, k)).status).toBe(201);
    const files = ((await (await api.fetch("/v1/files")).json()) as { files: FileJson[] }).files;
    expect(files.map((f) => [f.id, f.name]).sort()).toEqual(ids.map((id) => [id, files.find((f) => f.id === id)!.name]).sort());
    expect(files.map((f) => f.name).sort()).toEqual(["copy.bin", "moved.bin"]);
    expect((await dav("/dav/dir/moved.bin", { method: "MOVE", headers: { destination: "/dav/dir/copy.bin", overwrite: "F" } }, k)).status).toBe(412);
    expect((await dav("/dav/dir/", { method: "DELETE" }, k)).status).toBe(204);
    expect(((await (await api.fetch("/v1/files")).json()) as { files: FileJson[] }).files).toEqual([]);
  });

  test("MOVE or COPY of a file onto another (an editor's save): the target keeps its ID and URL and takes the bytes; the source goes with MOVE", async () => {
    const k = await server.mintKey("save@example.com");
    const api = client(server, k);
    expect((await dav("/dav/doc.txt", { method: "PUT", body: "version 1" }, k)).status).toBe(201);
    const [doc] = ((await (await api.fetch("/v1/files")).json()) as { files: FileJson[] }).files;
    expect((await dav("/dav/.doc.txt.tmp", { method: "PUT", body: "version 2" }, k)).status).toBe(201);
    expect((await dav("/dav/.doc.txt.tmp", { method: "MOVE", headers: { destination: "/dav/doc.txt" } }, k)).status).toBe(204);
    const after = ((await (await api.fetch("/v1/files")).json()) as { files: FileJson[] }).files;
    expect(after.map((f) => [f.id, f.name])).toEqual([[doc!.id, "doc.txt"]]);
    expect(await (await fetch(doc!.url, { headers: { authorization: `Bearer ${k}` } })).text()).toBe("version 2");
    expect((await dav("/dav/other.txt", { method: "PUT", body: "version 3" }, k)).status).toBe(201);
    expect((await dav("/dav/other.txt", { method: "COPY", headers: { destination: "/dav/doc.txt" } }, k)).status).toBe(204);
    const copied = ((await (await api.fetch("/v1/files")).json()) as { files: FileJson[] }).files;
    expect(copied.map((f) => f.name).sort()).toEqual(["doc.txt", "other.txt"]);
    expect(copied.find((f) => f.name === "doc.txt")!.id).toBe(doc!.id);
    expect(await (await dav("/dav/doc.txt", {}, k)).text()).toBe("version 3");
  });

  test("MOVE or COPY onto a collection that holds the source is refused (403) and loses nothing", async () => {
    const k = await server.mintKey("nest@example.com");
    expect((await dav("/dav/A/", { method: "MKCOL" }, k)).status).toBe(201);
    expect((await dav("/dav/A/B/", { method: "MKCOL" }, k)).status).toBe(201);
    expect((await dav("/dav/A/B/f.txt", { method: "PUT", body: "keep me" }, k)).status).toBe(201);
    expect((await dav("/dav/A/B/f.txt", { method: "MOVE", headers: { destination: "/dav/A" } }, k)).status).toBe(403);
    expect((await dav("/dav/A/B/f.txt", { method: "COPY", headers: { destination: "/dav/A/" } }, k)).status).toBe(403);
    expect((await dav("/dav/A/B", { method: "MOVE", headers: { destination: "/dav/A" } }, k)).status).toBe(403);
    expect(await (await dav("/dav/A/B/f.txt", {}, k)).text()).toBe("keep me");
  });

  test("conflicts: PUT or MKCOL with no parent 409, MKCOL over something 405, DELETE of the top 403, a missing path 404", async () => {
    const answers = await Promise.all([
      dav("/dav/no/such/file.txt", { method: "PUT", body: "x" }),
      dav("/dav/no/such/", { method: "MKCOL" }),
      dav("/dav/", { method: "MKCOL" }),
      dav("/dav/", { method: "DELETE" }),
      dav("/dav/nothing-here", { method: "DELETE" }),
      dav("/dav/nothing-here", { method: "PROPFIND", headers: { depth: "0" } }),
    ]);
    expect(answers.map((r) => r.status)).toEqual([409, 409, 405, 403, 404, 404]);
  });
});

describe("PROPFIND, ranges and limits", () => {
  test("Depth infinity, or none (which means infinity), is refused with DAV:propfind-finite-depth (403)", async () => {
    for (const headers of [{ depth: "infinity" }, {}] as Record<string, string>[]) {
      const res = await dav("/dav/", { method: "PROPFIND", headers });
      expect({ status: res.status, body: await res.text() }).toEqual({ status: 403, body: expect.stringContaining("<D:propfind-finite-depth>") });
    }
  });

  test("malformed XML is 400; an XML body over 1 MiB is 413", async () => {
    const bad = await dav("/dav/", { method: "PROPFIND", headers: { depth: "0" }, body: "<D:propfind xmlns:D='DAV:'><D:prop></D:propfind>" });
    const big = await dav("/dav/", { method: "PROPFIND", headers: { depth: "0" }, body: `<D:propfind xmlns:D="DAV:"><!--${"x".repeat(1024 * 1024)}--><D:allprop/></D:propfind>` });
    expect([bad.status, big.status]).toEqual([400, 413]);
  });

  test("GET takes a Range (206), as content URLs do", async () => {
    expect((await dav("/dav/ranged.txt", { method: "PUT", body: "0123456789" })).status).toBe(201);
    const res = await dav("/dav/ranged.txt", { headers: { range: "bytes=2-5" } });
    expect({ status: res.status, range: res.headers.get("content-range"), body: await res.text() }).toEqual({ status: 206, range: "bytes 2-5/10", body: "2345" });
  });

  test("a PUT past MAX_UPLOAD_BYTES is 413; past the quota, 507 Insufficient Storage; neither leaves a file", async () => {
    const k = await server.mintKey("quota@example.com");
    expect((await dav("/dav/too-big.bin", { method: "PUT", body: new Uint8Array(MAX + 1) }, k)).status).toBe(413);
    expect((await dav("/dav/first.bin", { method: "PUT", body: new Uint8Array(MAX - 10) }, k)).status).toBe(201);
    expect((await dav("/dav/second.bin", { method: "PUT", body: new Uint8Array(QUOTA - MAX + 20) }, k)).status).toBe(507);
    expect(await hrefs(await dav("/dav/", { method: "PROPFIND", headers: { depth: "1" } }, k))).toEqual(["/dav/", "/dav/first.bin"]);
  });
});

describe("both wires", () => {
  test("HTTP/2 carries every WebDAV method; a method WebDAV does not have is 405 with Allow", async () => {
    const session = http2.connect(server.url);
    try {
      const auth = { authorization: basicAuth(key) };
      const send = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
        new Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }>((resolve, reject) => {
          const stream = session.request({ ":method": method, ":path": path, ...auth, ...headers });
          let text = "";
          let head: http2.IncomingHttpHeaders = {};
          stream.on("response", (h) => (head = h));
          stream.on("data", (c: Buffer) => (text += c.toString()));
          stream.on("end", () => resolve({ status: Number(head[":status"]), headers: head, body: text }));
          stream.on("error", reject);
          stream.end(body);
        });
      const statuses: [string, number][] = [];
      const step = async (method: string, path: string, headers: Record<string, string> = {}, body?: string) => {
        const r = await send(method, path, headers, body);
        statuses.push([method, r.status]);
        return r;
      };
      await step("OPTIONS", "/dav/");
      await step("MKCOL", "/dav/h2/");
      await step("PUT", "/dav/h2/a.txt", {}, "over h2");
      await step("PROPFIND", "/dav/h2/", { depth: "1" });
      await step("PROPPATCH", "/dav/h2/a.txt", {}, '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><x xmlns="urn:x">1</x></D:prop></D:set></D:propertyupdate>');
      const locked = await step("LOCK", "/dav/h2/a.txt", {}, '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>');
      await step("UNLOCK", "/dav/h2/a.txt", { "lock-token": String(locked.headers["lock-token"]) });
      await step("COPY", "/dav/h2/a.txt", { destination: "/dav/h2/b.txt" });
      await step("MOVE", "/dav/h2/b.txt", { destination: "/dav/h2/c.txt" });
      const got = await step("GET", "/dav/h2/c.txt");
      await step("DELETE", "/dav/h2/");
      const other = await send("PATCH", "/dav/h2/");
      expect({ statuses, body: got.body, other: [other.status, other.headers.allow] }).toEqual({
        statuses: [
          ["OPTIONS", 200],
          ["MKCOL", 201],
          ["PUT", 201],
          ["PROPFIND", 207],
          ["PROPPATCH", 207],
          ["LOCK", 200],
          ["UNLOCK", 204],
          ["COPY", 201],
          ["MOVE", 201],
          ["GET", 200],
          ["DELETE", 204],
        ],
        body: "over h2",
        other: [405, "OPTIONS, GET, HEAD, PUT, DELETE, MKCOL, COPY, MOVE, PROPFIND, PROPPATCH, LOCK, UNLOCK"],
      });
    } finally {
      session.close();
    }
  });

  test("HTTP/1.1 hands every WebDAV method to the dispatch (OPTIONS advertises class 1 and 2)", async () => {
    const res = await dav("/dav/", { method: "OPTIONS" });
    expect({ status: res.status, dav: res.headers.get("dav"), via: res.headers.get("ms-author-via") }).toEqual({ status: 200, dav: "1, 2", via: "DAV" });
    const methods = ["PROPFIND", "PROPPATCH", "COPY", "MOVE", "LOCK", "UNLOCK", "MKCOL"];
    // Each reaches WebDAV (not the app's 404): on a missing path each answers as WebDAV does.
    const statuses: Record<string, number> = {};
    for (const m of methods) statuses[m] = (await dav("/dav/missing-thing", { method: m, headers: { destination: "/dav/x", "lock-token": "<urn:x>", ...(m === "PROPFIND" ? { depth: "0" } : {}) } })).status;
    expect(statuses).toEqual({ PROPFIND: 404, PROPPATCH: 400, COPY: 404, MOVE: 404, LOCK: 400, UNLOCK: 409, MKCOL: 201 });
  });
});
