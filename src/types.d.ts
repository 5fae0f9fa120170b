// Module declarations for files imported as text or as embedded file paths.
declare module "*.sql" {
  const text: string;
  export default text;
}

declare module "*.css" {
  const path: string;
  export default path;
}

/** omggif 1.0 (no types of its own): the GIF reader part this project uses. */
declare module "omggif" {
  export class GifReader {
    constructor(bytes: Uint8Array);
    readonly width: number;
    readonly height: number;
    numFrames(): number;
    /** Draws frame `index` over `pixels` (RGBA, the logical screen's size). */
    decodeAndBlitFrameRGBA(index: number, pixels: Uint8Array | Uint8ClampedArray): void;
  }
  /** Writes a GIF into `buffer` (the tests make theirs with it). */
  export class GifWriter {
    constructor(buffer: Uint8Array, width: number, height: number, options?: { palette?: number[]; loop?: number });
    /** `pixels`: one palette index a pixel, rows top to bottom. */
    addFrame(x: number, y: number, width: number, height: number, pixels: Uint8Array | number[], options?: { palette?: number[]; delay?: number }): number;
    /** @returns the GIF's length in bytes */
    end(): number;
  }
}
