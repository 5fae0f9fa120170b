/**
 * src/thumbnail/codec.ts: headers read without decoding, WebP thumbnails scaled down (never up),
 * JPEG EXIF orientation applied and no metadata carried over, decompression bombs refused before
 * decoding, and the three kinds of refusal. Inputs are made with the jSquash encoders themselves.
 */
import { describe, expect, test } from "bun:test";
import encodeJpeg from "@jsquash/jpeg/encode";
import { encode as encodePng } from "@jsquash/png";
import encodeWebp from "@jsquash/webp/encode";
import decodeWebp from "@jsquash/webp/decode";
import { imageSize, makeThumbnail, THUMBNAIL_SOURCE_TYPES, ThumbnailError } from "../../src/thumbnail/codec.ts";

type Rgba = [number, number, number, number];
interface Pixels {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}
type EncoderInput = Parameters<typeof encodeJpeg>[0];

/** An image of `width` × `height` whose pixel (x, y) is `color(x, y)`. */
function pixels(width: number, height: number, color: (x: number, y: number) => Rgba): Pixels {
  const data = new Uint8ClampedArray(width * height * 4);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(color(x, y), (y * width + x) * 4);
  return { data, width, height };
}

/** A photo-like test card: gradients and a grid, opaque. */
const card = (width: number, height: number) =>
  pixels(width, height, (x, y) => [(x * 255) / width, (y * 255) / height, (x + y) % 32 < 4 ? 255 : 96, 255]);

const jpeg = async (image: Pixels, quality = 90) => new Uint8Array(await encodeJpeg(image as unknown as EncoderInput, { quality }));
const png = async (image: Pixels) => new Uint8Array(await encodePng(image as unknown as EncoderInput));
const webp = async (image: Pixels, lossless = false) =>
  new Uint8Array(await encodeWebp(image as unknown as EncoderInput, { quality: 80, lossless: lossless ? 1 : 0 }));
const decodeOutput = async (bytes: Uint8Array) => (await decodeWebp(bytes.slice().buffer)) as Pixels;

/** The RIFF chunks of a WebP file, in order (RFC 9649 §2.3). */
function webpChunks(bytes: Uint8Array): string[] {
  const text = (at: number, n: number) => String.fromCharCode(...bytes.subarray(at, at + n));
  expect(text(0, 4)).toBe("RIFF");
  expect(text(8, 4)).toBe("WEBP");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks: string[] = [];
  for (let at = 12; at + 8 <= bytes.length; ) {
    chunks.push(text(at, 4));
    const size = view.getUint32(at + 4, true);
    at += 8 + size + (size % 2);
  }
  return chunks;
}

const contains = (bytes: Uint8Array, s: string) => Buffer.from(bytes).includes(Buffer.from(s, "latin1"));

/**
 * An APP1 "Exif\0\0" segment (CIPA DC-008 §4.5.4) with a TIFF structure (TIFF 6.0 Section 2)
 * whose IFD0 has Orientation (tag 274) and a GPS IFD pointer (tag 34853) to a GPS IFD holding
 * GPSVersionID and a GPSMapDatum text that is easy to look for.
 */
function exifSegment(orientation: number, littleEndian: boolean): Uint8Array {
  const tiff = new DataView(new ArrayBuffer(68 + 16));
  const le = littleEndian;
  tiff.setUint16(0, le ? 0x4949 : 0x4d4d); // "II" or "MM"
  tiff.setUint16(2, 42, le);
  tiff.setUint32(4, 8, le); // IFD0 at 8
  const entry = (at: number, tag: number, type: number, count: number, value: (at: number) => void) => {
    tiff.setUint16(at, tag, le);
    tiff.setUint16(at + 2, type, le);
    tiff.setUint32(at + 4, count, le);
    value(at + 8);
  };
  tiff.setUint16(8, 2, le); // two entries
  entry(10, 0x0112, 3, 1, (at) => tiff.setUint16(at, orientation, le)); // Orientation, SHORT
  entry(22, 0x8825, 4, 1, (at) => tiff.setUint32(at, 38, le)); // GPSInfo IFD pointer, LONG
  tiff.setUint32(34, 0, le); // no IFD1
  tiff.setUint16(38, 2, le); // the GPS IFD: two entries
  entry(40, 0x0000, 1, 4, (at) => [2, 3, 0, 0].forEach((b, i) => tiff.setUint8(at + i, b))); // GPSVersionID 2.3.0.0
  entry(52, 0x0012, 2, 16, (at) => tiff.setUint32(at, 68, le)); // GPSMapDatum, ASCII at 68
  tiff.setUint32(64, 0, le);
  new Uint8Array(tiff.buffer).set(new TextEncoder().encode("CUBBY-GPS-TEST\0\0"), 68);
  const body = new Uint8Array(tiff.buffer);
  const segment = new Uint8Array(4 + 6 + body.length);
  segment.set([0xff, 0xe1, (2 + 6 + body.length) >> 8, (2 + 6 + body.length) & 0xff]);
  segment.set(new TextEncoder().encode("Exif\0\0"), 4);
  segment.set(body, 10);
  return segment;
}

/** The JPEG with `segment` right after SOI (where Exif puts APP1). */
function withSegment(jpegBytes: Uint8Array, segment: Uint8Array): Uint8Array {
  const out = new Uint8Array(jpegBytes.length + segment.length);
  out.set(jpegBytes.subarray(0, 2));
  out.set(segment, 2);
  out.set(jpegBytes.subarray(2), 2 + segment.length);
  return out;
}

/** A PNG of the signature, an IHDR claiming `width` × `height` (8-bit RGBA) and IEND: no pixels. */
function pngHeaderOnly(width: number, height: number): Uint8Array {
  const b = new Uint8Array(8 + 25 + 12);
  const view = new DataView(b.buffer);
  b.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  view.setUint32(8, 13);
  b.set(new TextEncoder().encode("IHDR"), 12);
  view.setUint32(16, width);
  view.setUint32(20, height);
  b.set([8, 6, 0, 0, 0], 24);
  view.setUint32(29, 0); // CRC, not checked before decoding
  view.setUint32(33, 0);
  b.set(new TextEncoder().encode("IEND"), 37);
  return b;
}

/** The reason of the ThumbnailError `run` throws (fails when it throws something else or nothing). */
async function reasonOf(run: () => unknown): Promise<string> {
  try {
    await run();
  } catch (e) {
    expect(e).toBeInstanceOf(ThumbnailError);
    return (e as ThumbnailError).reason;
  }
  throw new Error("expected a ThumbnailError, got none");
}

const LIMITS = { maxEdge: 320, maxPixels: 50_000_000 };

describe("imageSize reads headers only", () => {
  test("JPEG, PNG, lossy WebP, lossless WebP (VP8L) and WebP with alpha (VP8X)", async () => {
    const image = card(123, 45);
    const translucent = pixels(77, 66, (x) => [10, 20, 30, x * 3]);
    expect(imageSize(await jpeg(image), "image/jpeg")).toEqual({ width: 123, height: 45 });
    expect(imageSize(await png(image), "image/png")).toEqual({ width: 123, height: 45 });
    const lossy = await webp(image);
    expect(webpChunks(lossy)[0]).toBe("VP8 ");
    expect(imageSize(lossy, "image/webp")).toEqual({ width: 123, height: 45 });
    const lossless = await webp(image, true);
    expect(webpChunks(lossless)[0]).toBe("VP8L");
    expect(imageSize(lossless, "image/webp")).toEqual({ width: 123, height: 45 });
    const alpha = await webp(translucent);
    expect(webpChunks(alpha)[0]).toBe("VP8X");
    expect(imageSize(alpha, "image/webp")).toEqual({ width: 77, height: 66 });
  });

  test("a header claiming 100 000 × 100 000 is read as such, without any pixel data", () => {
    expect(imageSize(pngHeaderOnly(100_000, 100_000), "image/png")).toEqual({ width: 100_000, height: 100_000 });
  });

  test("the format is told by the signature; the type's parameters and case do not matter", async () => {
    const bytes = await png(card(20, 10));
    expect(imageSize(bytes, "image/jpeg")).toEqual({ width: 20, height: 10 });
    expect(imageSize(bytes, "Image/PNG; charset=binary")).toEqual({ width: 20, height: 10 });
  });

  test("unreadable headers are corrupt, other types unsupported", async () => {
    const jpegBytes = await jpeg(card(64, 64));
    expect(await reasonOf(() => imageSize(jpegBytes.subarray(0, 10), "image/jpeg"))).toBe("corrupt");
    expect(await reasonOf(() => imageSize(pngHeaderOnly(0, 10), "image/png"))).toBe("corrupt");
    expect(await reasonOf(() => imageSize(new TextEncoder().encode("hello, world, not an image"), "image/png"))).toBe("corrupt");
    expect(await reasonOf(() => imageSize(new Uint8Array(0), "image/webp"))).toBe("corrupt");
    expect(await reasonOf(() => imageSize(jpegBytes, "text/plain"))).toBe("unsupported");
    expect(await reasonOf(() => imageSize(jpegBytes, "image/bmp"))).toBe("unsupported");
    expect(await reasonOf(() => imageSize(new TextEncoder().encode("GIF89a\x01"), "image/gif"))).toBe("corrupt");
    expect(imageSize(new Uint8Array([...new TextEncoder().encode("GIF89a"), 0x90, 0x01, 0xc8, 0x00, 0, 0, 0]), "image/gif")).toEqual({ width: 400, height: 200 });
    expect([...THUMBNAIL_SOURCE_TYPES].sort()).toEqual(["image/gif", "image/jpeg", "image/png", "image/webp"]);
  });
});

describe("makeThumbnail", () => {
  test("a 600 × 400 JPEG becomes a 320 × 213 WebP (aspect kept), with no metadata", async () => {
    const out = await makeThumbnail(await jpeg(card(600, 400), 85), "image/jpeg", LIMITS);
    expect({ width: out.width, height: out.height }).toEqual({ width: 320, height: 213 });
    expect(webpChunks(out.image)).toEqual(["VP8 "]);
    expect(imageSize(out.image, "image/webp")).toEqual({ width: 320, height: 213 });
    const decoded = await decodeOutput(out.image);
    expect({ width: decoded.width, height: decoded.height }).toEqual({ width: 320, height: 213 });
  });

  test("a portrait PNG with alpha keeps its alpha (VP8X + ALPH) and its aspect", async () => {
    // 200 × 300, transparent on the left fading to opaque on the right.
    const source = pixels(200, 300, (x, y) => [200, y % 256, 40, Math.round((x * 255) / 199)]);
    const out = await makeThumbnail(await png(source), "image/png", { maxEdge: 120, maxPixels: 1_000_000 });
    expect({ width: out.width, height: out.height }).toEqual({ width: 80, height: 120 });
    const chunks = webpChunks(out.image);
    expect(chunks).toContain("ALPH");
    expect(chunks[0]).toBe("VP8X");
    const decoded = await decodeOutput(out.image);
    const alphaAt = (x: number, y: number) => decoded.data[(y * decoded.width + x) * 4 + 3]!;
    expect(alphaAt(1, 60)).toBeLessThan(20);
    expect(alphaAt(78, 60)).toBeGreaterThan(235);
  });

  test("a WebP is scaled like the others", async () => {
    const out = await makeThumbnail(await webp(card(500, 500)), "image/webp", LIMITS);
    expect({ width: out.width, height: out.height }).toEqual({ width: 320, height: 320 });
    expect(imageSize(out.image, "image/webp")).toEqual({ width: 320, height: 320 });
  });

  test("a large image (box shrink, then Lanczos): colours kept, transparent pixels' colour does not bleed", async () => {
    // 2400 × 1600: red left half, mid-grey right half (sRGB 128); 8× the target, so a box shrink by 4.
    const halves = pixels(2400, 1600, (x) => (x < 1200 ? [255, 0, 0, 255] : [128, 128, 128, 255]));
    const out = await makeThumbnail(await png(halves), "image/png", { maxEdge: 300, maxPixels: 10_000_000 });
    expect({ width: out.width, height: out.height }).toEqual({ width: 300, height: 200 });
    const decoded = await decodeOutput(out.image);
    const at = (image: Pixels, x: number, y: number) => [...image.data.subarray((y * image.width + x) * 4, (y * image.width + x) * 4 + 4)];
    const near = (got: number[], want: number[], tolerance: number) => got.every((v, i) => Math.abs(v - want[i]!) <= tolerance);
    expect(near(at(decoded, 60, 100), [255, 0, 0, 255], 12)).toBe(true);
    expect(near(at(decoded, 240, 100), [128, 128, 128, 255], 6)).toBe(true);
    // 1600 × 1600: the left half fully transparent but green, the right half opaque blue.
    const cut = pixels(1600, 1600, (x) => (x < 800 ? [0, 255, 0, 0] : [0, 0, 255, 255]));
    const clear = await decodeOutput((await makeThumbnail(await png(cut), "image/png", { maxEdge: 200, maxPixels: 10_000_000 })).image);
    expect(clear.width).toBe(200);
    expect(at(clear, 20, 100)[3]).toBeLessThan(8);
    // Next to the edge, inside the opaque half: blue, no green from the transparent side.
    expect(near(at(clear, 104, 100), [0, 0, 255, 255], 24)).toBe(true);
  });

  test("an image within maxEdge keeps its size (no upscaling)", async () => {
    const out = await makeThumbnail(await jpeg(card(100, 50)), "image/jpeg", LIMITS);
    expect({ width: out.width, height: out.height }).toEqual({ width: 100, height: 50 });
    expect(imageSize(out.image, "image/webp")).toEqual({ width: 100, height: 50 });
    const thin = await makeThumbnail(await png(card(2000, 3)), "image/png", LIMITS);
    expect({ width: thin.width, height: thin.height }).toEqual({ width: 320, height: 1 });
  });

  test("EXIF Orientation 6 with a GPS IFD: the thumbnail is turned upright, no Exif or GPS in it", async () => {
    const source = withSegment(await jpeg(card(600, 400), 85), exifSegment(6, false));
    expect(contains(source, "Exif")).toBe(true);
    expect(contains(source, "CUBBY-GPS-TEST")).toBe(true);
    expect(imageSize(source, "image/jpeg")).toEqual({ width: 600, height: 400 }); // as stored
    const out = await makeThumbnail(source, "image/jpeg", LIMITS);
    expect({ width: out.width, height: out.height }).toEqual({ width: 213, height: 320 });
    expect(out.height).toBeGreaterThan(out.width);
    expect(webpChunks(out.image)).toEqual(["VP8 "]);
    for (const s of ["Exif", "EXIF", "XMP ", "GPS", "CUBBY-GPS-TEST", "MM\u0000*", "II*\u0000"]) expect(contains(out.image, s)).toBe(false);
  });

  // Stored: red top-left, green top-right, blue bottom-left, white bottom-right (64 × 32).
  // Shown, per TIFF 6.0's Orientation (where the stored 0th row and 0th column go), as
  // [top-left, top-right, bottom-left, bottom-right] of the shown image.
  const R: Rgba = [255, 0, 0, 255];
  const G: Rgba = [0, 255, 0, 255];
  const B: Rgba = [0, 0, 255, 255];
  const W: Rgba = [255, 255, 255, 255];
  const shown: Record<number, [Rgba, Rgba, Rgba, Rgba]> = {
    1: [R, G, B, W], // top, left: as stored
    2: [G, R, W, B], // top, right: mirrored left to right
    3: [W, B, G, R], // bottom, right: turned 180°
    4: [B, W, R, G], // bottom, left: mirrored top to bottom
    5: [R, B, G, W], // left, top: transposed
    6: [B, R, W, G], // right, top: turned 90° clockwise
    7: [W, G, B, R], // right, bottom: transversed
    8: [G, W, R, B], // left, bottom: turned 90° counter-clockwise
  };
  const quadrants = pixels(64, 32, (x, y) => (y < 16 ? (x < 32 ? R : G) : x < 32 ? B : W));
  test.each([1, 2, 3, 4, 5, 6, 7, 8])("EXIF Orientation %i (big- and little-endian TIFF) is applied as TIFF 6.0 defines it", async (orientation) => {
    for (const littleEndian of [false, true]) {
      const source = withSegment(await jpeg(quadrants, 95), exifSegment(orientation, littleEndian));
      const out = await makeThumbnail(source, "image/jpeg", LIMITS);
      const [w, h] = orientation >= 5 ? [32, 64] : [64, 32];
      expect({ width: out.width, height: out.height }).toEqual({ width: w, height: h });
      const decoded = await decodeOutput(out.image);
      const at = (x: number, y: number) => [...decoded.data.subarray((y * w + x) * 4, (y * w + x) * 4 + 3)];
      const near = (got: number[], want: Rgba) => got.every((v, i) => Math.abs(v - want[i]!) < 60);
      const corners = [at(w / 4, h / 4), at((3 * w) / 4, h / 4), at(w / 4, (3 * h) / 4), at((3 * w) / 4, (3 * h) / 4)];
      expect(corners.map((c, i) => near(c, shown[orientation]![i]!))).toEqual([true, true, true, true]);
    }
  });

  test("an invalid or absent Orientation leaves the image as stored", async () => {
    const plain = await jpeg(card(60, 40));
    for (const source of [plain, withSegment(plain, exifSegment(0, true)), withSegment(plain, exifSegment(9, false))]) {
      const out = await makeThumbnail(source, "image/jpeg", LIMITS);
      expect({ width: out.width, height: out.height }).toEqual({ width: 60, height: 40 });
    }
  });

  test("a PNG header claiming 100 000 × 100 000 is refused too_large before decoding, quickly", async () => {
    const rssBefore = process.memoryUsage().rss;
    const started = performance.now();
    expect(await reasonOf(() => makeThumbnail(pngHeaderOnly(100_000, 100_000), "image/png", LIMITS))).toBe("too_large");
    expect(performance.now() - started).toBeLessThan(50);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(16 * 1024 * 1024);
    // A JPEG whose frame header claims 65 535 × 65 535: the same.
    const big = await jpeg(card(16, 16));
    const sof = big.findIndex((b, i) => b === 0xff && (big[i + 1] === 0xc0 || big[i + 1] === 0xc2));
    big.set([0xff, 0xff, 0xff, 0xff], sof + 5);
    expect(imageSize(big, "image/jpeg")).toEqual({ width: 65_535, height: 65_535 });
    expect(await reasonOf(() => makeThumbnail(big, "image/jpeg", LIMITS))).toBe("too_large");
    // maxPixels is width × height: exactly at the limit is allowed.
    const exact = await makeThumbnail(await png(card(40, 25)), "image/png", { maxEdge: 320, maxPixels: 1000 });
    expect(exact.width).toBe(40);
    expect(await reasonOf(() => makeThumbnail(pngHeaderOnly(40, 26), "image/png", { maxEdge: 320, maxPixels: 1000 }))).toBe("too_large");
  });

  test("truncated or garbage bytes are corrupt, and the codecs still work after", async () => {
    const jpegBytes = await jpeg(card(300, 200));
    const pngBytes = await png(card(300, 200));
    const webpBytes = await webp(card(300, 200));
    const garbage = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) & 0xff);
    const cases: [string, Uint8Array, string][] = [
      ["JPEG cut in half (no EOI)", jpegBytes.subarray(0, jpegBytes.length >> 1), "image/jpeg"],
      ["JPEG cut inside its headers", jpegBytes.subarray(0, 100), "image/jpeg"],
      ["JPEG whose Huffman tables are garbage", (() => {
        const b = jpegBytes.slice();
        const dht = b.findIndex((v, i) => v === 0xff && b[i + 1] === 0xc4);
        b.fill(0xee, dht + 4, dht + 40);
        return b;
      })(), "image/jpeg"],
      ["PNG cut short", pngBytes.subarray(0, pngBytes.length - 40), "image/png"],
      ["PNG header only", pngHeaderOnly(300, 200), "image/png"],
      ["WebP cut short", webpBytes.subarray(0, webpBytes.length >> 1), "image/webp"],
      ["WebP's RIFF header only", webpBytes.subarray(0, 16), "image/webp"],
      ["garbage as JPEG", garbage, "image/jpeg"],
      ["garbage as PNG", garbage, "image/png"],
      ["a JPEG signature then garbage", Uint8Array.from([0xff, 0xd8, 0xff, ...garbage]), "image/jpeg"],
      ["nothing", new Uint8Array(0), "image/webp"],
    ];
    for (const [what, bytes, type] of cases) {
      expect({ what, reason: await reasonOf(() => makeThumbnail(bytes, type, LIMITS)) }).toEqual({ what, reason: "corrupt" });
    }
    for (const [bytes, type] of [[jpegBytes, "image/jpeg"], [pngBytes, "image/png"], [webpBytes, "image/webp"]] as const) {
      expect((await makeThumbnail(bytes, type, LIMITS)).width).toBe(300);
    }
  });

  test("text/plain and other types are unsupported, and so is an animated WebP", async () => {
    const jpegBytes = await jpeg(card(30, 20));
    expect(await reasonOf(() => makeThumbnail(jpegBytes, "text/plain", LIMITS))).toBe("unsupported");
    expect(await reasonOf(() => makeThumbnail(jpegBytes, "image/svg+xml", LIMITS))).toBe("unsupported");
    // RIFF "WEBP" with a VP8X chunk whose animation flag (0x02) is set, canvas 10 × 10.
    const animated = new Uint8Array(30 + 8);
    const view = new DataView(animated.buffer);
    animated.set(new TextEncoder().encode("RIFF"), 0);
    view.setUint32(4, animated.length - 8, true);
    animated.set(new TextEncoder().encode("WEBPVP8X"), 8);
    view.setUint32(16, 10, true);
    animated[20] = 0x02;
    animated.set([9, 0, 0, 9, 0, 0], 24);
    expect(imageSize(animated, "image/webp")).toEqual({ width: 10, height: 10 });
    expect(await reasonOf(() => makeThumbnail(animated, "image/webp", LIMITS))).toBe("unsupported");
  });

  test("the input is not changed, and a view into a larger buffer works", async () => {
    const jpegBytes = await jpeg(card(100, 80));
    const padded = new Uint8Array(jpegBytes.length + 7);
    padded.set(jpegBytes, 3);
    const view = padded.subarray(3, 3 + jpegBytes.length);
    const copy = view.slice();
    const out = await makeThumbnail(view, "image/jpeg", { maxEdge: 50, maxPixels: 10_000 });
    expect({ width: out.width, height: out.height }).toEqual({ width: 50, height: 40 });
    expect(view).toEqual(copy);
  });

  test("opts out of range are a RangeError", async () => {
    const jpegBytes = await jpeg(card(10, 10));
    await expect(makeThumbnail(jpegBytes, "image/jpeg", { maxEdge: 0, maxPixels: 100 })).rejects.toBeInstanceOf(RangeError);
    await expect(makeThumbnail(jpegBytes, "image/jpeg", { maxEdge: 1.5, maxPixels: 100 })).rejects.toBeInstanceOf(RangeError);
    await expect(makeThumbnail(jpegBytes, "image/jpeg", { maxEdge: 10, maxPixels: Number.NaN })).rejects.toBeInstanceOf(RangeError);
  });
});
