/**
 * Thumbnails of JPEG, PNG, WebP and GIF images, made in WebAssembly (a GIF's first frame in
 * JavaScript, omggif): the jSquash codecs (MozJPEG's
 * decoder, the Rust `png` crate, libwebp's decoder and encoder, the Rust `resize` crate; all from
 * the Squoosh app) decode, scale and encode; this file reads the headers and a JPEG's EXIF
 * orientation, shrinks a large image by a box filter before the Lanczos resize, and turns the
 * pixels upright.
 *
 * Why WebAssembly and not libvips or sharp: a compiled executable can only load a native addon
 * from a file, written into TMPDIR at run time and dlopen()ed there, which fails when TMPDIR is
 * mounted noexec (the reason src/domain/crc32c.ts is WebAssembly too). Each .wasm file is
 * embedded in the executable by `bun build --compile` (a `with { type: "file" }` import is a path
 * inside it) and compiled from its bytes on first use, one module at a time, the ones a
 * thumbnail needs: nothing is fetched and nothing is written to disk.
 *
 * Memory: a decoded image takes 4 bytes a pixel twice, in the decoder's WebAssembly heap (which
 * never shrinks) and in its copy in JavaScript, plus the decoder's own buffers (a progressive
 * JPEG's coefficients: 2 bytes a sample); see docs/benchmarks.md (issue 41) for a 24-megapixel
 * photo. The server makes thumbnails one at a time in a child process, whose memory goes back to
 * the system when it exits; `maxPixels` bounds the worst case before anything is decoded.
 */
// @ts-ignore: imported as a file path (type "file"), not as a module; TypeScript cannot tell.
import jpegDecWasm from "@jsquash/jpeg/codec/dec/mozjpeg_dec.wasm" with { type: "file" };
// @ts-ignore: as mozjpeg_dec.wasm; one module has the PNG decoder and encoder.
import pngWasm from "@jsquash/png/codec/pkg/squoosh_png_bg.wasm" with { type: "file" };
// @ts-ignore: as mozjpeg_dec.wasm.
import webpDecWasm from "@jsquash/webp/codec/dec/webp_dec.wasm" with { type: "file" };
// @ts-ignore: as mozjpeg_dec.wasm; libwebp's encoder built with WebAssembly SIMD.
import webpEncSimdWasm from "@jsquash/webp/codec/enc/webp_enc_simd.wasm" with { type: "file" };
// @ts-ignore: as mozjpeg_dec.wasm; the same encoder without SIMD, for a runtime that has none.
import webpEncWasm from "@jsquash/webp/codec/enc/webp_enc.wasm" with { type: "file" };
// @ts-ignore: as mozjpeg_dec.wasm; the Lanczos/Catmull-Rom resizer (not jSquash's hqx or magic kernel).
import resizeWasm from "@jsquash/resize/lib/resize/pkg/squoosh_resize_bg.wasm" with { type: "file" };
import decodeJpeg, { init as initJpegDecode } from "@jsquash/jpeg/decode";
import decodePng, { init as initPng } from "@jsquash/png/decode";
import decodeWebp, { init as initWebpDecode } from "@jsquash/webp/decode";
import encodeWebp, { init as initWebpEncode } from "@jsquash/webp/encode";
import resize, { initResize } from "@jsquash/resize";
import { GifReader } from "omggif";
import { essenceOf } from "../domain/params.ts";

/** The media types a thumbnail can be made of (the bytes are recognised by their signature). */
export const THUMBNAIL_SOURCE_TYPES: ReadonlySet<string> = new Set(["image/jpeg", "image/png", "image/webp", "image/gif"]);

/**
 * Why no thumbnail was made:
 * - `"unsupported"`: the media type is not in THUMBNAIL_SOURCE_TYPES, or the WebP is animated;
 * - `"too_large"`: the header's width × height is over `maxPixels` (nothing was decoded);
 * - `"corrupt"`: the header cannot be read, the bytes are none of the three formats, a JPEG has
 *   no EOI after its first scan (it was cut short), or the decoder failed.
 */
export class ThumbnailError extends Error {
  override readonly name = "ThumbnailError";
  constructor(
    readonly reason: "unsupported" | "too_large" | "corrupt",
    message: string,
  ) {
    super(message);
  }
}

/** Pixels as the jSquash codecs take and give them: RGBA, 8 bits a channel, rows top to bottom. */
interface Pixels {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

type Format = "jpeg" | "png" | "webp" | "gif";

/** What a header says: the stored size in pixels, and for a JPEG the EXIF orientation (1–8). */
interface Header {
  format: Format;
  width: number;
  height: number;
  /** TIFF 6.0 Orientation, 1 (none) when absent or invalid; only a JPEG's is read. */
  orientation: number;
  /** A WebP with the VP8X animation flag (jSquash's decoder reads still images only). */
  animated: boolean;
  /** A JPEG's offset of its first SOS marker, -1 when not read that far. */
  scanAt: number;
}

/** WebP's largest width and height (14 bits: RFC 9649 §2.5, §2.7). */
const WEBP_MAX_EDGE = 16383;

const corrupt = (message: string): ThumbnailError => new ThumbnailError("corrupt", message);

/** Which of the three formats the bytes start with, by signature; undefined when none. */
function sniff(b: Uint8Array): Format | undefined {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "jpeg";
  if (b.length >= 8 && b[0] === 0x89 && ascii(b, 1, 3) === "PNG" && b[4] === 0x0d && b[5] === 0x0a && b[6] === 0x1a && b[7] === 0x0a) return "png";
  if (b.length >= 12 && ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 4) === "WEBP") return "webp";
  if (b.length >= 6 && (ascii(b, 0, 6) === "GIF87a" || ascii(b, 0, 6) === "GIF89a")) return "gif";
  return undefined;
}

function ascii(b: Uint8Array, at: number, length: number): string {
  let s = "";
  for (let i = at; i < at + length && i < b.length; i++) s += String.fromCharCode(b[i]!);
  return s;
}

const u16be = (b: Uint8Array, at: number): number => (b[at]! << 8) | b[at + 1]!;
const u32be = (b: Uint8Array, at: number): number => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
const u16le = (b: Uint8Array, at: number): number => b[at]! | (b[at + 1]! << 8);
const u24le = (b: Uint8Array, at: number): number => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
const u32le = (b: Uint8Array, at: number): number => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

/**
 * A JPEG's frame size from its SOFn marker segment (ITU-T T.81 §B.2.2: P, Y lines, X samples
 * a line; the SOF markers are 0xC0–0xCF less DHT 0xC4, JPG 0xC8 and DAC 0xCC, Table B.1), walking
 * the marker segments from SOI (§B.1.1). With `toScan`, goes on to the first SOS and reads the
 * EXIF Orientation of the first APP1 "Exif" segment on the way (exifOrientation); otherwise stops
 * at the SOF.
 * @throws ThumbnailError "corrupt": no SOI, a byte where a marker should be, a segment running
 * past the end, SOS or EOI before any SOF, a zero width, or a zero height (the DNL marker's
 * deferred height, §B.2.5, which the decoder does not support)
 */
function jpegHeader(b: Uint8Array, toScan: boolean): Header {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) throw corrupt("not a JPEG: no SOI marker");
  let size: { width: number; height: number } | undefined;
  let orientation = 0;
  let i = 2;
  for (;;) {
    if (i + 1 >= b.length) break;
    if (b[i] !== 0xff) throw corrupt(`JPEG: no marker at byte ${i}`);
    const marker = b[i + 1]!;
    // §B.1.1.2: any marker may be preceded by fill bytes 0xFF.
    if (marker === 0xff) {
      i++;
      continue;
    }
    // TEM and RST0–RST7 stand alone, without a length (§B.1.1.3).
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    if (marker === 0xd9) break; // EOI
    if (marker === 0xda) {
      if (size === undefined) break;
      return { format: "jpeg", ...size, orientation: orientation || 1, animated: false, scanAt: i };
    }
    if (i + 4 > b.length) break;
    const length = u16be(b, i + 2);
    if (length < 2 || i + 2 + length > b.length) throw corrupt(`JPEG: the segment of marker 0x${marker.toString(16)} at byte ${i} runs past the end`);
    const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isSof && size === undefined) {
      if (length < 8) throw corrupt("JPEG: a frame header shorter than 8 bytes");
      const height = u16be(b, i + 5);
      const width = u16be(b, i + 7);
      if (width === 0 || height === 0) throw corrupt(`JPEG: a frame of ${width} × ${height}`);
      size = { width, height };
      if (!toScan) return { format: "jpeg", ...size, orientation: 1, animated: false, scanAt: -1 };
    }
    if (marker === 0xe1 && orientation === 0) orientation = exifOrientation(b.subarray(i + 4, i + 2 + length));
    i += 2 + length;
  }
  throw corrupt(size === undefined ? "JPEG: no frame header (SOFn) before the image data" : "JPEG: no image data (SOS)");
}

/**
 * The Orientation (tag 274 = 0x0112, SHORT, count 1) of IFD0 in an APP1 segment's payload
 * "Exif\0\0" + a TIFF structure (CIPA DC-008 Exif §4.5.4 and §4.6.4; TIFF 6.0 Section 2 for the
 * header and IFD entries, Section 8 for Orientation).
 * @returns 1–8; 0 when the segment is not Exif (another APP1, e.g. XMP), and 1 when it is Exif
 * but has no valid Orientation: a broken EXIF block does not stop the thumbnail, as it does not
 * stop a browser from showing the image
 */
function exifOrientation(app1: Uint8Array): number {
  if (app1.length < 6 || ascii(app1, 0, 4) !== "Exif" || app1[4] !== 0 || app1[5] !== 0) return 0;
  const tiff = app1.subarray(6);
  if (tiff.length < 8) return 1;
  const order = ascii(tiff, 0, 2);
  if (order !== "II" && order !== "MM") return 1;
  const le = order === "II";
  const u16 = (at: number) => (le ? u16le(tiff, at) : u16be(tiff, at));
  const u32 = (at: number) => (le ? u32le(tiff, at) : u32be(tiff, at));
  if (u16(2) !== 42) return 1;
  const ifd0 = u32(4);
  if (ifd0 < 8 || ifd0 + 2 > tiff.length) return 1;
  const count = u16(ifd0);
  for (let n = 0; n < count; n++) {
    const entry = ifd0 + 2 + 12 * n;
    if (entry + 12 > tiff.length) return 1;
    if (u16(entry) !== 0x0112) continue;
    // SHORT (type 3), one value, left-justified in the 4-byte value field.
    if (u16(entry + 2) !== 3 || u32(entry + 4) !== 1) return 1;
    const value = u16(entry + 8);
    return value >= 1 && value <= 8 ? value : 1;
  }
  return 1;
}

/**
 * A PNG's size from IHDR, the chunk that must come first after the signature (ISO/IEC 15948
 * §5.2, §11.2.2: width and height 4-byte big-endian, 1 … 2³¹−1).
 * @throws ThumbnailError "corrupt": no IHDR there, or a width or height out of range
 */
function pngHeader(b: Uint8Array): Header {
  if (b.length < 33 || u32be(b, 8) !== 13 || ascii(b, 12, 4) !== "IHDR") throw corrupt("PNG: no IHDR chunk after the signature");
  const width = u32be(b, 16);
  const height = u32be(b, 20);
  if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) throw corrupt(`PNG: an image of ${width} × ${height}`);
  return { format: "png", width, height, orientation: 1, animated: false, scanAt: -1 };
}

/**
 * A WebP's size from its first chunk (RFC 9649): "VP8 " the lossy frame header of RFC 6386 §9.1
 * (a key frame's start code 9D 01 2A, then 14-bit width and height); "VP8L" the lossless header
 * (signature 0x2F, then 14 bits width − 1 and 14 bits height − 1, RFC 9649 §3); "VP8X" the
 * extended header's canvas size (24 bits width − 1 and height − 1, §2.7) and its animation flag.
 * @throws ThumbnailError "corrupt": another first chunk, a chunk shorter than its header, a
 * missing start code or signature, or a zero size
 */
function webpHeader(b: Uint8Array): Header {
  if (b.length < 30) throw corrupt("WebP: shorter than its headers");
  const chunk = ascii(b, 12, 4);
  const p = 20; // the first chunk's payload
  let width: number;
  let height: number;
  let animated = false;
  if (chunk === "VP8 ") {
    if ((b[p]! & 1) !== 0 || b[p + 3] !== 0x9d || b[p + 4] !== 0x01 || b[p + 5] !== 0x2a) throw corrupt("WebP: a VP8 chunk without a key frame's start code");
    width = u16le(b, p + 6) & 0x3fff;
    height = u16le(b, p + 8) & 0x3fff;
  } else if (chunk === "VP8L") {
    if (b[p] !== 0x2f) throw corrupt("WebP: a VP8L chunk without its signature");
    const bits = u32le(b, p + 1);
    width = (bits & 0x3fff) + 1;
    height = ((bits >>> 14) & 0x3fff) + 1;
  } else if (chunk === "VP8X") {
    animated = (b[p]! & 0x02) !== 0;
    width = u24le(b, p + 4) + 1;
    height = u24le(b, p + 7) + 1;
  } else {
    throw corrupt(`WebP: a first chunk "${chunk}"`);
  }
  if (width === 0 || height === 0) throw corrupt(`WebP: an image of ${width} × ${height}`);
  return { format: "webp", width, height, orientation: 1, animated, scanAt: -1 };
}

/**
 * A GIF's size from its Logical Screen Descriptor (GIF89a §18: width and height, 16 bits
 * little-endian each, after the 6-byte signature). Its first frame is what the thumbnail shows;
 * an animation is not refused (a still of it is what a list shows).
 * @throws ThumbnailError "corrupt": shorter than the descriptor, or a zero size
 */
function gifHeader(b: Uint8Array): Header {
  if (b.length < 13) throw corrupt("GIF: shorter than its screen descriptor");
  const width = u16le(b, 6);
  const height = u16le(b, 8);
  if (width === 0 || height === 0) throw corrupt(`GIF: an image of ${width} × ${height}`);
  return { format: "gif", width, height, orientation: 1, animated: false, scanAt: -1 };
}

function readHeader(input: Uint8Array, mediaType: string, toScan: boolean): Header {
  const type = essenceOf(mediaType);
  if (!THUMBNAIL_SOURCE_TYPES.has(type)) throw new ThumbnailError("unsupported", `no thumbnail of ${type || "an unknown type"}`);
  // By signature, not by the declared type: a PNG uploaded as image/jpeg is still a PNG (as a
  // browser shows it, WHATWG MIME Sniffing §8.1).
  const format = sniff(input);
  if (format === undefined) throw corrupt(`${type}: the bytes are no JPEG, PNG, WebP or GIF`);
  if (format === "jpeg") return jpegHeader(input, toScan);
  if (format === "png") return pngHeader(input);
  if (format === "gif") return gifHeader(input);
  return webpHeader(input);
}

/**
 * An image's width and height in pixels as stored (before any EXIF orientation), read from its
 * header only: nothing is decoded, nothing allocated in proportion to the image. Which of the
 * formats is told by the bytes' signature, not by `mediaType`.
 * - JPEG: the first SOFn marker segment (ITU-T T.81 §B.2.2);
 * - PNG: IHDR (ISO/IEC 15948 §11.2.2);
 * - WebP: the VP8, VP8L or VP8X (canvas) header (RFC 9649, RFC 6386 §9.1).
 * @param mediaType one of THUMBNAIL_SOURCE_TYPES; parameters (`; …`) and case are ignored
 * @throws ThumbnailError "unsupported" for another media type; "corrupt" when the bytes are none
 * of the three formats or the header cannot be read
 */
export function imageSize(input: Uint8Array, mediaType: string): { width: number; height: number } {
  const { width, height } = readHeader(input, mediaType, false);
  return { width, height };
}

// --- the codecs, each initialised once, on first use ---

/** Compiles an embedded .wasm file (a path inside the executable, or in node_modules from source). */
async function compile(path: string): Promise<WebAssembly.Module> {
  return WebAssembly.compile(await Bun.file(path).bytes());
}

/** Runs `init` the first time and gives its promise after; a failure is tried again next call. */
function once(init: () => Promise<void>): () => Promise<void> {
  let ready: Promise<void> | undefined;
  return () => {
    ready ??= init().catch((e: unknown) => {
      ready = undefined;
      throw e;
    });
    return ready;
  };
}

/**
 * jSquash's `init` of an Emscripten codec takes a compiled module as its first argument and the
 * Emscripten Module options as its second, though its declared type has only the options.
 * print and printErr: libjpeg's warnings ("Premature end of JPEG file") would otherwise go to
 * stdout and stderr, into the server's log lines; a failure is still thrown.
 */
type EmscriptenInit = (module: WebAssembly.Module, options: { print: (s: string) => void; printErr: (s: string) => void }) => Promise<unknown>;
const quiet = { print: () => {}, printErr: () => {} };

const ready: Record<Format | "resize" | "webpEncode", () => Promise<void>> = {
  jpeg: once(async () => {
    await (initJpegDecode as unknown as EmscriptenInit)(await compile(jpegDecWasm as unknown as string), quiet);
  }),
  png: once(async () => {
    await initPng(await compile(pngWasm as unknown as string));
  }),
  webp: once(async () => {
    await (initWebpDecode as unknown as EmscriptenInit)(await compile(webpDecWasm as unknown as string), quiet);
  }),
  webpEncode: once(async () => {
    // jSquash picks the SIMD build's glue code when the runtime validates a SIMD module, so the
    // module given must be the SIMD one exactly then: it compiles exactly when SIMD is there.
    let module: WebAssembly.Module;
    try {
      module = await compile(webpEncSimdWasm as unknown as string);
    } catch {
      module = await compile(webpEncWasm as unknown as string);
    }
    await (initWebpEncode as unknown as EmscriptenInit)(module, quiet);
  }),
  resize: once(async () => {
    await initResize(await compile(resizeWasm as unknown as string));
  }),
  // omggif is JavaScript: nothing to compile.
  gif: async () => {},
};

/** The bytes as one whole ArrayBuffer, as the decoders take them (copied only when a view of a larger one). */
function ownBuffer(input: Uint8Array): ArrayBuffer {
  const whole = input.byteOffset === 0 && input.byteLength === input.buffer.byteLength && input.buffer instanceof ArrayBuffer;
  return whole ? (input.buffer as ArrayBuffer) : input.slice().buffer;
}

/** Whether an EOI marker (FF D9, T.81 §B.2.1) follows the first scan: a JPEG cut short has none. */
function jpegHasEnd(b: Uint8Array, scanAt: number): boolean {
  // From the end: EOI is normally the last two bytes; data appended after it (a trailer) is rare.
  for (let i = b.length - 2; i > scanAt; i--) if (b[i] === 0xff && b[i + 1] === 0xd9) return true;
  return false;
}

async function decode(input: Uint8Array, format: Format): Promise<Pixels> {
  await ready[format]();
  const bytes = ownBuffer(input);
  try {
    if (format === "jpeg") return (await decodeJpeg(bytes)) as Pixels;
    if (format === "png") return (await decodePng(bytes)) as Pixels;
    if (format === "gif") return gifFirstFrame(input);
    return (await decodeWebp(bytes)) as Pixels;
  } catch (e) {
    // A module that failed to instantiate is no fault of the image.
    if (e instanceof WebAssembly.LinkError || e instanceof WebAssembly.CompileError) throw e;
    // libjpeg's fatal errors end in exit(1), thrown as Emscripten's ExitStatus (no Error, a message).
    const message = typeof e === "object" && e !== null && "message" in e ? String(e.message) : String(e);
    throw corrupt(`${format}: the decoder failed: ${message}`);
  }
}

/**
 * A GIF's first frame drawn on its logical screen, RGBA (omggif, in JavaScript: LZW needs no
 * WebAssembly); what no frame covers stays transparent.
 * @throws what omggif throws for a broken file (decode turns it into "corrupt")
 */
function gifFirstFrame(input: Uint8Array): Pixels {
  const reader = new GifReader(input);
  if (reader.numFrames() === 0) throw new Error("no frame");
  const data = new Uint8ClampedArray(reader.width * reader.height * 4);
  reader.decodeAndBlitFrameRGBA(0, data);
  return { data, width: reader.width, height: reader.height };
}

/** sRGB (IEC 61966-2-1) 8-bit code → linear light, 0 … 1. */
const TO_LINEAR = Float32Array.from({ length: 256 }, (_, v) => {
  const c = v / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
});
/** Linear light quantised to 12 bits (0 … 4095) → the nearest sRGB 8-bit code. */
const LINEAR_STEPS = 4095;
const TO_SRGB = Uint8Array.from({ length: LINEAR_STEPS + 1 }, (_, i) => {
  const l = i / LINEAR_STEPS;
  return Math.round(255 * (l <= 0.0031308 ? l * 12.92 : 1.055 * l ** (1 / 2.4) - 0.055));
});

/**
 * The image shrunk by an integer factor `k` with a box filter: each output pixel is the mean of
 * a k × k block (the blocks of the last row and column may be smaller), taken in linear light
 * and weighted by alpha (premultiplied), as libvips' shrink before its Lanczos reduce. It reads
 * the full image once and keeps one row of sums, so the resizer is handed a small image: given
 * the full 24-megapixel one, its WebAssembly heap took a second copy of it and ~450 MB more.
 */
function boxShrink(image: Pixels, k: number): Pixels {
  const { data: src, width: w, height: h } = image;
  const ow = Math.ceil(w / k);
  const oh = Math.ceil(h / k);
  const out = new Uint8ClampedArray(ow * oh * 4);
  const sums = new Float64Array(ow * 4); // per output pixel: Σα·R, Σα·G, Σα·B (linear), Σα
  for (let oy = 0; oy < oh; oy++) {
    const y0 = oy * k;
    const y1 = Math.min(h, y0 + k);
    sums.fill(0);
    for (let y = y0; y < y1; y++) {
      let i = y * w * 4;
      for (let ox = 0, x = 0; ox < ow; ox++) {
        const xEnd = Math.min(w, x + k);
        let r = 0;
        let g = 0;
        let b = 0;
        let a = 0;
        for (; x < xEnd; x++, i += 4) {
          const alpha = src[i + 3]!;
          r += alpha * TO_LINEAR[src[i]!]!;
          g += alpha * TO_LINEAR[src[i + 1]!]!;
          b += alpha * TO_LINEAR[src[i + 2]!]!;
          a += alpha;
        }
        const o = ox * 4;
        sums[o] = sums[o]! + r;
        sums[o + 1] = sums[o + 1]! + g;
        sums[o + 2] = sums[o + 2]! + b;
        sums[o + 3] = sums[o + 3]! + a;
      }
    }
    const rows = y1 - y0;
    for (let ox = 0; ox < ow; ox++) {
      const o = ox * 4;
      const a = sums[o + 3]!;
      const at = (oy * ow + ox) * 4;
      const count = rows * (Math.min(w, (ox + 1) * k) - ox * k);
      if (a > 0) {
        out[at] = TO_SRGB[Math.round((sums[o]! / a) * LINEAR_STEPS)]!;
        out[at + 1] = TO_SRGB[Math.round((sums[o + 1]! / a) * LINEAR_STEPS)]!;
        out[at + 2] = TO_SRGB[Math.round((sums[o + 2]! / a) * LINEAR_STEPS)]!;
      }
      out[at + 3] = Math.round(a / count);
    }
  }
  return { data: out, width: ow, height: oh };
}

/**
 * The pixels as they are shown, from the pixels as stored and a TIFF 6.0 Orientation (Section 8):
 * the value says where the stored 0th row and 0th column are shown; 1 top/left (as stored),
 * 2 top/right (mirrored), 3 bottom/right (turned 180°), 4 bottom/left (flipped), 5 left/top
 * (transposed), 6 right/top (turned 90° clockwise), 7 right/bottom (transversed), 8 left/bottom
 * (turned 90° counter-clockwise). 5–8 swap width and height.
 */
function orient(image: Pixels, orientation: number): Pixels {
  if (orientation < 2 || orientation > 8) return image;
  const { width: w, height: h } = image;
  const data = image.data.byteOffset % 4 === 0 ? image.data : image.data.slice();
  const src = new Uint32Array(data.buffer, data.byteOffset, w * h);
  const out = new Uint32Array(w * h);
  const swap = orientation >= 5;
  const outWidth = swap ? h : w;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let dx: number;
      let dy: number;
      switch (orientation) {
        case 2: [dx, dy] = [w - 1 - x, y]; break;
        case 3: [dx, dy] = [w - 1 - x, h - 1 - y]; break;
        case 4: [dx, dy] = [x, h - 1 - y]; break;
        case 5: [dx, dy] = [y, x]; break;
        case 6: [dx, dy] = [h - 1 - y, x]; break;
        case 7: [dx, dy] = [h - 1 - y, w - 1 - x]; break;
        default: [dx, dy] = [y, w - 1 - x]; break; // 8
      }
      out[dy * outWidth + dx] = src[y * w + x]!;
    }
  }
  return { data: new Uint8ClampedArray(out.buffer), width: outWidth, height: swap ? w : h };
}

/**
 * A WebP thumbnail of a JPEG, PNG or WebP image, its longer edge at most `maxEdge` pixels.
 *
 * In order: the header is read (imageSize) and an image over `maxPixels` refused before anything
 * is decoded, so a decompression bomb (a small file that decodes to gigabytes) allocates nothing;
 * the image is decoded to RGBA; a JPEG's EXIF Orientation (CIPA DC-008, TIFF 6.0 tag 274) is
 * applied, so a portrait photo stored sideways comes out portrait; it is scaled so that the
 * longer edge is `maxEdge`, never up (an image already within it keeps its size), the aspect
 * ratio kept to the nearest pixel and no edge under 1, in linear light with premultiplied alpha:
 * first by a box filter of an integer factor to no less than twice the target (when that factor
 * is 2 or more; boxShrink), then by a Lanczos-3 filter (jSquash's resize); it is encoded as lossy WebP at quality 75 (libwebp), with its alpha channel when any
 * pixel is not opaque (a VP8X + ALPH file). The output holds pixels only: no EXIF, XMP, ICC or
 * GPS of the source is carried over (pixels are taken as sRGB).
 *
 * The orientation is applied to the scaled pixels (scaling commutes with it), so only the
 * thumbnail is turned, not the full image.
 *
 * @param mediaType the stored file's type, one of THUMBNAIL_SOURCE_TYPES (parameters and case
 * ignored); the format itself is told by the bytes' signature
 * @param opts.maxEdge the longest edge of the thumbnail in pixels, an integer ≥ 1 (capped at
 * WebP's 16 383)
 * @param opts.maxPixels the most pixels (stored width × height) that will be decoded, ≥ 1
 * @returns the WebP bytes and their width and height in pixels, as shown (after orientation)
 * @throws ThumbnailError "unsupported" (another type, an animated WebP), "too_large" (over
 * maxPixels), "corrupt" (an unreadable header, a JPEG cut short before its EOI, a decoder
 * failure); RangeError for an opts out of range; any other error is the codecs' own (not the
 * image's fault)
 */
export async function makeThumbnail(
  input: Uint8Array,
  mediaType: string,
  opts: { maxEdge: number; maxPixels: number },
): Promise<{ image: Uint8Array; width: number; height: number }> {
  if (!Number.isInteger(opts.maxEdge) || opts.maxEdge < 1) throw new RangeError(`maxEdge must be an integer ≥ 1, not ${opts.maxEdge}`);
  if (!(opts.maxPixels >= 1)) throw new RangeError(`maxPixels must be ≥ 1, not ${opts.maxPixels}`);
  const header = readHeader(input, mediaType, true);
  if (header.width * header.height > opts.maxPixels) {
    throw new ThumbnailError("too_large", `${header.width} × ${header.height} pixels is over ${opts.maxPixels}`);
  }
  if (header.animated) throw new ThumbnailError("unsupported", "an animated WebP");
  if (header.format === "jpeg" && !jpegHasEnd(input, header.scanAt)) throw corrupt("JPEG: no EOI marker after the image data (cut short)");

  const encoderReady = Promise.all([ready.resize(), ready.webpEncode()]);
  let image = await decode(input, header.format);
  await encoderReady;
  if (image.width !== header.width || image.height !== header.height) {
    throw corrupt(`${header.format}: decoded ${image.width} × ${image.height}, the header said ${header.width} × ${header.height}`);
  }

  // The target as shown, then as stored (5–8 swap the edges).
  const swap = header.orientation >= 5;
  const [shownW, shownH] = swap ? [image.height, image.width] : [image.width, image.height];
  const edge = Math.min(opts.maxEdge, WEBP_MAX_EDGE);
  const scale = Math.min(1, edge / Math.max(shownW, shownH));
  const targetW = Math.max(1, Math.round(shownW * scale));
  const targetH = Math.max(1, Math.round(shownH * scale));
  const [storedW, storedH] = swap ? [targetH, targetW] : [targetW, targetH];
  // A box shrink first, by the largest integer that leaves at least twice the target (so the
  // Lanczos filter still has 2× or more to work on), when that integer is 2 or more.
  const k = Math.floor(Math.min(image.width / storedW, image.height / storedH) / 2);
  if (k >= 2) image = boxShrink(image, k);
  if (storedW !== image.width || storedH !== image.height) {
    image = (await resize(image as unknown as Parameters<typeof resize>[0], { width: storedW, height: storedH, method: "lanczos3", premultiply: true, linearRGB: true })) as Pixels;
  }
  image = orient(image, header.orientation);
  const webp = await encodeWebp(image as unknown as Parameters<typeof encodeWebp>[0], { quality: 75 });
  return { image: new Uint8Array(webp), width: image.width, height: image.height };
}
