// test-lists: workers postgres-s3
// A guest's abandoned concatenation gives its link's allowance back (CONTRACT §15), against the
// real server on the configured stores (SQLite + disk, or PostgreSQL + S3 with WORKERS=2): the
// parts of a file that declare a total filling the link (Upload-Metadata group and total) hold
// all of it, so a second upload is refused; nobody concatenates them; once a guest part's life
// is over (an hour; CUBBY_TEST_GUEST_PART_MS, tests only, shortens it here) the upload sweep ends
// them, their rows and bytes go, and a file of the link's full size is accepted.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { UploadLinkJson } from "../../src/domain/upload-link.ts";
import type { UnfinishedUploadPageJson } from "../../src/http/uploads-routes.ts";
import { blobNames, runSql } from "../support/backend.ts";
import { client, startServer, type RunningServer } from "../support/server.ts";
import { patchChunk, tusFetch } from "../support/tus.ts";
import { waitFor } from "../support/wait.ts";

/** A guest part's life here (ms): long enough to see the link held on a loaded machine, short enough to wait for. */
const PART_MS = 6000;

let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ env: { CUBBY_TEST_GUEST_PART_MS: String(PART_MS) } });
});
afterAll(() => server?.[Symbol.asyncDispose]());

const b64 = (s: string) => Buffer.from(s).toString("base64");
const idOf = (url: string) => url.split("/").pop()!;
type ErrorJson = { code: number; message: string };

test("an abandoned concatenation through a link holds the link until the sweep ends its parts; then the link's whole allowance is back", async () => {
  const owner = await server.mintKey("abandoned@example.com");
  const made = await client(server, owner).fetch("/v1/upload-links", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ max_bytes: 1000 }) });
  const link = (await made.json()) as UploadLinkJson;
  const token = link.url.split("/u/")[1]!;
  const part = (length: number) =>
    tusFetch(`${server.url}/v1/uploads`, "POST", token, {
      "upload-length": String(length),
      "upload-concat": "partial",
      "upload-metadata": `filename ${b64("holiday.mov")},group ${b64("abandoned")},total ${b64("1000")}`,
    });

  // A 1 000-byte file in two parts, which says so: the whole link is held. The first part gets
  // some of its bytes; then the guest goes away, and no final upload ever names them.
  const startedAt = Date.now();
  const [first, second] = [await part(500), await part(500)];
  expect([first.status, second.status]).toEqual([201, 201]);
  const parts = [first.headers.get("location")!, second.headers.get("location")!];
  expect((await patchChunk(parts[0]!, token, 0, "p".repeat(200))).status).toBe(204);
  // The shortened life applies (an hour without CUBBY_TEST_GUEST_PART_MS).
  const expires = Date.parse(first.headers.get("upload-expires")!);
  expect(expires - startedAt).toBeLessThanOrEqual(PART_MS + 2000);

  // While the parts wait, a second upload is refused, raw or through tus, saying what holds the link.
  const raw = await fetch(`${server.url}/u/${token}?name=other.txt`, { method: "POST", body: "x" });
  const rawError = (await raw.json()) as ErrorJson;
  const tus = await tusFetch(`${server.url}/v1/uploads`, "POST", token, { "upload-length": "1" });
  expect({ raw: raw.status, tus: tus.status, message: rawError.message }).toEqual({ raw: 413, tus: 413, message: expect.stringContaining("1000 are held by its unfinished uploads") });
  // The owner sees the unfinished file by its name.
  const listed = (await (await client(server, owner).fetch("/v1/uploads")).json()) as UnfinishedUploadPageJson;
  expect(JSON.stringify(listed)).toContain("holiday.mov");

  // The sweep ends both parts: their rows and their bytes go.
  await waitFor(
    async () => {
      const rows = await runSql<{ n: number }>(server.dataDir, "SELECT count(*) AS n FROM uploads WHERE upload_link_id = ?", link.id);
      const names = await blobNames(server.dataDir);
      const bytesLeft = parts.some((u) => names.some((n) => n === `uploads/${idOf(u)}` || n.startsWith(`uploads/${idOf(u)}/`)));
      return Number(rows[0]!.n) === 0 && !bytesLeft;
    },
    "the upload sweep to end the abandoned parts",
    { timeoutMs: PART_MS + 30_000, pollMs: 200 },
  );
  expect(((await (await client(server, owner).fetch("/v1/uploads")).json()) as UnfinishedUploadPageJson).uploads).toEqual([]);
  // A guest's part said gone, not resumed.
  expect((await tusFetch(parts[0]!, "HEAD", token)).status).toBe(404);

  // The whole allowance is back: a file of the link's full size goes, and is counted once.
  const full = await fetch(`${server.url}/u/${token}?name=full.bin`, { method: "POST", body: "f".repeat(1000) });
  expect(full.status).toBe(200);
  const links = (await (await client(server, owner).fetch("/v1/upload-links")).json()) as { upload_links: UploadLinkJson[] };
  expect(links.upload_links.find((l) => l.id === link.id)).toMatchObject({ files_uploaded: 1, bytes_uploaded: 1000 });
  expect(await (await client(server, owner).fetch("/v1/usage")).json()).toMatchObject({ reserved_bytes: 0, used_bytes: 1000 });
}, 60_000);
