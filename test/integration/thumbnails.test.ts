// test-lists: postgres-s3 alone
// Thumbnails (CONTRACT §15) through a real server on the run's backend: an image's made on the
// first request (a WebP of at most 320 px, no metadata) and kept in file_thumbnails; a browser's
// poster for a video sent with PUT and made again; refusals (type, size, not an image, another
// user's file); none for other files, a corrupt image, or a decompression bomb (recorded once as
// failed); a replaced content's thumbnail made anew, a deleted file's row gone with it; shares
// (a file's, a folder's) serving thumbnails without counting a download, their pages showing
// them and a free share's og:image; and a big photo made while /healthz stays quick.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import encodeJpeg from "@jsquash/jpeg/encode";
import { encode as encodePng } from "@jsquash/png";
import { GifWriter } from "omggif";
import type { FolderJson } from "../../src/domain/folder.ts";
import type { ShareDetailJson } from "../../src/domain/share.ts";
import { runSql } from "../support/backend.ts";
import { client, startServer, type FileJson, type RunningServer } from "../support/server.ts";
import { expectNoStall, whileProbing } from "../support/stall-probe.ts";

let server: RunningServer;
let alice: string;
let bob: string;

beforeAll(async () => {
  server = await startServer();
  alice = await server.mintKey("alice@example.com");
  bob = await server.mintKey("bob@example.com");
}, 60_000);
afterAll(async () => {
  await server?.[Symbol.asyncDispose]();
});

type EncoderInput = Parameters<typeof encodeJpeg>[0];

/** A photo-like picture of `width` × `height`: gradients and a grid, opaque. */
function picture(width: number, height: number): EncoderInput {
  const data = new Uint8ClampedArray(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set([(x * 255) / width, (y * 255) / height, (x + y) % 32 < 4 ? 255 : 96, 255], (y * width + x) * 4);
  }
  return { data, width, height, colorSpace: "srgb" } as unknown as EncoderInput;
}

const jpeg = async (width: number, height: number) => new Uint8Array(await encodeJpeg(picture(width, height), { quality: 85 }));

/**
 * `image` with an APP1 Exif segment after SOI whose text names a place (what a phone writes with
 * GPS on): a thumbnail must carry none of it.
 */
function withExifText(image: Uint8Array, text: string): Uint8Array {
  const tiff = Buffer.concat([Buffer.from("II*\0\x08\0\0\0\0\0", "latin1"), Buffer.from(text, "latin1")]);
  const payload = Buffer.concat([Buffer.from("Exif\0\0", "latin1"), tiff]);
  const segment = Buffer.concat([Buffer.from([0xff, 0xe1, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]), payload]);
  return Buffer.concat([image.subarray(0, 2), segment, image.subarray(2)]);
}

/** Width and height of a WebP (RFC 9649: VP8 lossy, VP8L lossless, VP8X extended). */
function webpSize(bytes: Uint8Array): { width: number; height: number } {
  const b = Buffer.from(bytes);
  expect(b.toString("latin1", 0, 4)).toBe("RIFF");
  expect(b.toString("latin1", 8, 12)).toBe("WEBP");
  const kind = b.toString("latin1", 12, 16);
  if (kind === "VP8 ") return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  if (kind === "VP8L") {
    const bits = b.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  return { width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
}

async function upload(name: string, content: Uint8Array | string, type: string, key = alice, folderId?: string): Promise<FileJson> {
  const where = folderId === undefined ? "" : `&folder_id=${folderId}`;
  const res = await client(server, key).fetch(`/v1/files?name=${encodeURIComponent(name)}${where}`, { method: "POST", body: content, headers: { "content-type": type } });
  expect(res.status).toBe(200);
  return (await res.json()) as FileJson;
}

const thumbnail = (id: string, key = alice) => client(server, key).fetch(`/v1/files/${id}/thumbnail`);
const sendThumbnail = (id: string, body: Uint8Array | string, type: string, key = alice) =>
  client(server, key).fetch(`/v1/files/${id}/thumbnail`, { method: "PUT", body, headers: { "content-type": type } });
const rows = (id: string) => runSql<{ source: string; of_blob: string; size: number }>(server.dataDir, "SELECT source, of_blob, length(image) AS size FROM file_thumbnails WHERE file_id = ?", id);

async function call<T>(key: string, method: string, target: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await client(server, key).fetch(target, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }) });
  return { status: res.status, body: (await res.json()) as T };
}

describe("an image's thumbnail", () => {
  let photo: FileJson;

  beforeAll(async () => {
    photo = await upload("beach.jpg", withExifText(await jpeg(1200, 800), "GPSLatitude 48.8584 Eiffel Tower"), "image/jpeg");
  });

  test("is made on the first request: a WebP of 320 px on its longer edge, the shape kept, no metadata", async () => {
    const res = await thumbnail(photo.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/webp");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(webpSize(bytes)).toEqual({ width: 320, height: 213 });
    expect(Buffer.from(bytes).includes("Eiffel")).toBe(false);
    expect(Buffer.from(bytes).includes("Exif")).toBe(false);
    expect(await rows(photo.id)).toEqual([{ source: "server", of_blob: expect.any(String), size: bytes.byteLength }]);
    // The kept one is served again, byte for byte.
    expect(new Uint8Array(await (await thumbnail(photo.id)).arrayBuffer())).toEqual(bytes);
  });

  test("an image of many read chunks reaches the codec intact (each chunk copied before its buffer is reused)", async () => {
    // Noise does not compress: about 2.4 MiB, ten of the 256 KiB chunks a blob is read in.
    const noise = picture(800, 800) as unknown as { data: Uint8ClampedArray };
    for (let i = 0; i < noise.data.length; i++) if (i % 4 !== 3) noise.data[i] = (Math.random() * 256) | 0;
    const file = await upload("noise.png", new Uint8Array(await encodePng(noise as unknown as EncoderInput)), "image/png");
    expect(Number(file.size)).toBeGreaterThan(2 * 1024 * 1024);
    for (let i = 0; i < 4; i++) {
      const res = await thumbnail(file.id);
      expect(res.status).toBe(200);
      expect(webpSize(new Uint8Array(await res.arrayBuffer()))).toEqual({ width: 320, height: 320 });
      expect((await client(server, alice).fetch(`/v1/files/${file.id}/thumbnail`, { method: "DELETE" })).status).toBe(200);
    }
  });

  test("a GIF's first frame (CONTRACT §15: JPEG, PNG, WebP and GIF)", async () => {
    // 400 × 200, two frames (an animation): the first is what the thumbnail shows.
    const [w, h] = [400, 200];
    const buffer = new Uint8Array(1024 * 1024);
    const gif = new GifWriter(buffer, w, h, { palette: [0x1e6bd6, 0xf5b642], loop: 0 });
    gif.addFrame(0, 0, w, h, Uint8Array.from({ length: w * h }, (_, i) => (i % w < w / 2 ? 0 : 1)), { delay: 50 });
    gif.addFrame(0, 0, w, h, new Uint8Array(w * h).fill(1), { delay: 50 });
    const file = await upload("wave.gif", buffer.subarray(0, gif.end()), "image/gif");
    const res = await thumbnail(file.id);
    expect(res.status).toBe(200);
    expect(webpSize(new Uint8Array(await res.arrayBuffer()))).toEqual({ width: 320, height: 160 });
  });

  test("another user cannot see a private file's (404) nor send one (404)", async () => {
    const secret = await client(server, alice).fetch(`/v1/files?name=secret.jpg&visibility=private`, { method: "POST", body: await jpeg(64, 64), headers: { "content-type": "image/jpeg" } });
    const id = ((await secret.json()) as FileJson).id;
    expect((await thumbnail(id, bob)).status).toBe(404);
    expect((await sendThumbnail(id, await jpeg(32, 32), "image/jpeg", bob)).status).toBe(404);
    expect(await rows(id)).toEqual([]);
  });

  test("replacing the content makes a new one; deleting the file removes it", async () => {
    const file = await upload("tall.png", new Uint8Array(await encodePng(picture(300, 600))), "image/png");
    expect(webpSize(new Uint8Array(await (await thumbnail(file.id)).arrayBuffer()))).toEqual({ width: 160, height: 320 });
    const before = (await rows(file.id))[0]!.of_blob;
    const replaced = await client(server, alice).fetch(`/v1/files/${file.id}/content`, { method: "PUT", body: await jpeg(640, 160), headers: { "content-type": "image/jpeg" } });
    expect(replaced.status).toBe(200);
    expect(webpSize(new Uint8Array(await (await thumbnail(file.id)).arrayBuffer()))).toEqual({ width: 320, height: 80 });
    expect((await rows(file.id))[0]!.of_blob).not.toBe(before);
    expect((await client(server, alice).fetch(`/v1/files/${file.id}`, { method: "DELETE" })).status).toBe(200);
    expect(await rows(file.id)).toEqual([]);
  });
});

describe("files without a thumbnail", () => {
  test("a text file has none: 404 as JSON, nothing stored", async () => {
    const file = await upload("notes.txt", "hello", "text/plain");
    const res = await thumbnail(file.id);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { message: string }).message).toMatch(/no thumbnail/);
    expect(await rows(file.id)).toEqual([]);
  });

  test("a corrupt JPEG and a PNG claiming 100 000 × 100 000 pixels get none, recorded once as failed", async () => {
    const corrupt = await upload("broken.jpg", Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(2000, 7)]), "image/jpeg");
    const ihdr = Buffer.from("89504e470d0a1a0a0000000d49484452000186a0000186a00806000000", "hex");
    const bomb = await upload("bomb.png", Buffer.concat([ihdr, Buffer.alloc(64)]), "image/png");
    for (const file of [corrupt, bomb]) {
      expect((await thumbnail(file.id)).status).toBe(404);
      expect(await rows(file.id)).toEqual([{ source: "failed", of_blob: expect.any(String), size: 0 }]);
      expect((await thumbnail(file.id)).status).toBe(404);
    }
  });
});

test("GET /v1/thumbnails says which of a page's files have one: images (made or to be made) and sent ones, not failed ones, others', or other types", async () => {
  const image = await upload("list-a.jpg", await jpeg(64, 64), "image/jpeg");
  const text = await upload("list-b.txt", "words", "text/plain");
  const broken = await upload("list-c.png", "not a png", "image/png");
  expect((await thumbnail(broken.id)).status).toBe(404); // now recorded as failed
  const video = await upload("list-d.mp4", Buffer.alloc(64, 1), "video/mp4");
  const bare = await upload("list-e.mp4", Buffer.alloc(64, 2), "video/mp4");
  expect((await sendThumbnail(video.id, await jpeg(32, 32), "image/jpeg")).status).toBe(200);
  const bobsRes = await client(server, bob).fetch("/v1/files?name=list-f.jpg&visibility=private", { method: "POST", body: await jpeg(32, 32), headers: { "content-type": "image/jpeg" } });
  const bobs = (await bobsRes.json()) as FileJson;
  const ask = (ids: string[], key = alice) => client(server, key).fetch(`/v1/thumbnails?file_ids=${ids.join(",")}`);
  const res = await ask([image.id, text.id, broken.id, video.id, bare.id, bobs.id]);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ file_ids: [image.id, video.id] });
  // Nothing was made by asking: the image's is made when it is fetched.
  expect(await rows(image.id)).toEqual([]);
  expect(await (await ask([bobs.id], bob)).json()).toEqual({ file_ids: [bobs.id] });
  expect((await ask(Array.from({ length: 101 }, () => image.id))).status).toBe(400);
  expect((await ask(["not-an-id"])).status).toBe(400);
  expect((await client(server).fetch(`/v1/thumbnails?file_ids=${image.id}`)).status).toBe(401);
});

describe("a thumbnail sent by the uploading browser (a video's poster)", () => {
  let video: FileJson;

  beforeAll(async () => {
    video = await upload("clip.mp4", Buffer.alloc(4096, 1), "video/mp4");
  });

  test("a video has none until one is sent; the one sent is made again as a WebP and kept as the browser's", async () => {
    expect((await thumbnail(video.id)).status).toBe(404);
    const sent = await sendThumbnail(video.id, await jpeg(640, 360), "image/jpeg");
    expect(sent.status).toBe(200);
    expect(await sent.json()).toEqual({});
    const res = await thumbnail(video.id);
    expect(res.status).toBe(200);
    expect(webpSize(new Uint8Array(await res.arrayBuffer()))).toEqual({ width: 320, height: 180 });
    expect((await rows(video.id))[0]!.source).toBe("browser");
  });

  test("refused: another type (415), more than 256 KiB (413), bytes that are no image (400); the kept one stays", async () => {
    const kept = await rows(video.id);
    expect((await sendThumbnail(video.id, "<svg/>", "image/svg+xml")).status).toBe(415);
    expect((await sendThumbnail(video.id, new Uint8Array(256 * 1024 + 1), "image/jpeg")).status).toBe(413);
    const notImage = await sendThumbnail(video.id, "not a picture at all", "image/png");
    expect(notImage.status).toBe(400);
    expect(((await notImage.json()) as { message: string }).message).toMatch(/could not be read as image\/png/);
    expect(await rows(video.id)).toEqual(kept);
  });

  test("DELETE removes it (404 after); deleting one there is not is 404", async () => {
    expect((await client(server, alice).fetch(`/v1/files/${video.id}/thumbnail`, { method: "DELETE" })).status).toBe(200);
    expect((await thumbnail(video.id)).status).toBe(404);
    expect((await client(server, alice).fetch(`/v1/files/${video.id}/thumbnail`, { method: "DELETE" })).status).toBe(404);
  });
});

describe("thumbnails through shares", () => {
  test("a file's share: ?thumbnail=1 counts no download; its page shows it; a free share's og:image is it", async () => {
    const photo = await upload("share.jpg", await jpeg(800, 600), "image/jpeg");
    const limited = (await call<ShareDetailJson>(alice, "POST", `/v1/files/${photo.id}/shares`, { max_downloads: 1 })).body;
    const at = new URL(limited.url).pathname;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}${at}?thumbnail=1`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/webp");
      await res.arrayBuffer();
    }
    expect(await (await fetch(`${server.url}${at}?status=1`)).json()).toMatchObject({ download_count: 0, downloads_left: 1 });
    const page = await (await fetch(`${server.url}${at}`, { headers: { accept: "text/html" } })).text();
    expect(page).toContain(`src="${at}?thumbnail=1"`);
    expect(page).not.toContain('property="og:image"');

    const free = (await call<ShareDetailJson>(alice, "POST", `/v1/files/${photo.id}/shares`, {})).body;
    const freePage = await (await fetch(free.url, { headers: { "user-agent": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)" } })).text();
    expect(freePage).toContain(`<meta property="og:image" content="${free.url}?thumbnail=1">`);
  });

  test("a shared folder: each file's thumbnail by ?file={id}&thumbnail=1, counted never, listed on its page", async () => {
    const folder = (await call<FolderJson>(alice, "POST", "/v1/folders", { name: "Album" })).body;
    const photo = await upload("a.jpg", await jpeg(400, 400), "image/jpeg", alice, folder.id);
    const text = await upload("b.txt", "words", "text/plain", alice, folder.id);
    const share = (await call<ShareDetailJson>(alice, "POST", `/v1/folders/${folder.id}/shares`, { max_downloads: 2 })).body;
    const at = new URL(share.url).pathname;
    const res = await fetch(`${server.url}${at}?file=${photo.id}&thumbnail=1`);
    expect(res.status).toBe(200);
    expect(webpSize(new Uint8Array(await res.arrayBuffer()))).toEqual({ width: 320, height: 320 });
    expect((await fetch(`${server.url}${at}?file=${text.id}&thumbnail=1`)).status).toBe(404);
    expect((await fetch(`${server.url}${at}?thumbnail=1`)).status).toBe(400);
    expect((await fetch(`${server.url}${at}?file=${photo.id}&thumbnail=2`)).status).toBe(400);
    expect(await (await fetch(`${server.url}${at}?status=1`)).json()).toMatchObject({ download_count: 0 });
    const page = await (await fetch(`${server.url}${at}`, { headers: { accept: "text/html" } })).text();
    expect(page).toContain(`src="${at}?file=${photo.id}&amp;thumbnail=1"`);
    expect(page).not.toContain(`?file=${text.id}&amp;thumbnail=1`);
  });

  test("a share with a password wants it for the thumbnail too", async () => {
    const photo = await upload("locked.jpg", await jpeg(200, 100), "image/jpeg");
    const share = (await call<ShareDetailJson>(alice, "POST", `/v1/files/${photo.id}/shares`, { password: "open sesame" })).body;
    expect((await fetch(`${share.url}?thumbnail=1`)).status).toBe(401);
    const res = await fetch(`${share.url}?thumbnail=1`, { headers: { authorization: `Basic ${btoa("x:open sesame")}` } });
    expect(res.status).toBe(200);
    expect(webpSize(new Uint8Array(await res.arrayBuffer()))).toEqual({ width: 200, height: 100 });
  });
});

test("a 24-megapixel photo's thumbnail is made in its own process: /healthz never waits on it (CONTRACT §14)", async () => {
  const big = await upload("big.jpg", await jpeg(6000, 4000), "image/jpeg");
  const { result, stall } = await whileProbing(server.url, async () => {
    const res = await thumbnail(big.id);
    return { status: res.status, size: webpSize(new Uint8Array(await res.arrayBuffer())) };
  });
  expect(result).toEqual({ status: 200, size: { width: 320, height: 213 } });
  expectNoStall(stall);
}, 90_000);
