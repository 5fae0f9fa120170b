/**
 * File thumbnails (CONTRACT §15): a small WebP beside a file, never part of the File object.
 * Images (JPEG, PNG, WebP, GIF) get one made here the first time one is asked for (in a child
 * process, thumbnail/maker.ts); any file may get one from its uploader's browser (a video's
 * poster, a PDF's first page), which is decoded and encoded here again like an image, so that
 * what is served is always this server's own WebP. Kept in `file_thumbnails` with the content
 * it was made from: a file whose content was replaced gets a new one, and the row goes with the
 * file. Reading a thumbnail counts no download and touches no share's limit.
 */
import { AppError } from "../errors.ts";
import type { FileRecord } from "../domain/file.ts";
import { essenceOf } from "../domain/params.ts";
import type { Clock } from "../domain/time.ts";
import type { MetadataStore } from "../storage/ports.ts";
import { THUMBNAIL_SOURCE_TYPES, ThumbnailError } from "../thumbnail/codec.ts";
import type { ThumbnailMaker } from "../thumbnail/maker.ts";
import type { FileService } from "./files.ts";

/** The longest edge of a thumbnail, pixels: sharp at 160 CSS pixels on a 2× screen. */
export const THUMBNAIL_EDGE = 320;

/** The largest image a browser may send as a file's thumbnail (bytes, CONTRACT §15): a poster, not a photo. */
export const MAX_SENT_THUMBNAIL_BYTES = 256 * 1024;

/** How long one thumbnail may take before its process is killed and the image counts as failed (ms). */
export const THUMBNAIL_TIMEOUT_MS = 30_000;

/** The most pixels an image a browser sends may have (a poster, not a photo). */
export const MAX_SENT_THUMBNAIL_PIXELS = 16_000_000;

/** The largest image this server makes a thumbnail of (bytes): bigger ones have none. */
export const MAX_SOURCE_BYTES = 64 * 1024 * 1024;

/** The media type of every thumbnail served. */
export const THUMBNAIL_MEDIA_TYPE = "image/webp";

export interface ThumbnailServiceDeps {
  store: MetadataStore;
  files: FileService;
  clock: Clock;
  maker: ThumbnailMaker;
  /** THUMBNAIL_MAX_PIXELS: images with more pixels get none; 0: this server makes none (browsers' still count). */
  maxPixels: number;
}

/**
 * Files' thumbnails (see the module comment): read, made once per content, sent by a browser,
 * removed. One making per file and content at a time in this process; two processes may each
 * make the same one once, and the second `put` stores the same picture again.
 */
export class ThumbnailService {
  /** The thumbnails being made in this process, by file ID and content: one child per file however many ask. */
  private readonly making = new Map<string, Promise<Uint8Array | undefined>>();

  constructor(private readonly deps: ThumbnailServiceDeps) {}

  /**
   * The WebP thumbnail of `file` (whoever asks was let in already): the stored one while it is of
   * the file's current content; else, for an image this server makes them of, one made now and
   * stored. Undefined when the file has none (not an image and none sent, too large, or one
   * that failed: it is not tried again until the content changes).
   * @throws AppError unavailable (503) when too many are being made at once
   */
  async of(file: FileRecord): Promise<Uint8Array | undefined> {
    const stored = await this.deps.store.thumbnails.get(file.id);
    if (stored !== undefined && stored.ofBlob === file.blob) return stored.source === "failed" ? undefined : stored.image;
    if (!this.makesOf(file)) return undefined;
    const key = `${file.id}\0${file.blob}`;
    let made = this.making.get(key);
    if (made === undefined) {
      made = this.makeAndStore(file).finally(() => this.making.delete(key));
      this.making.set(key, made);
    }
    return made;
  }

  /**
   * Which of `files` have a thumbnail to show, in one lookup (a page's worth): a stored one of
   * the current content, or an image's that {@link of} will make (unless it failed before).
   */
  async available(files: readonly FileRecord[]): Promise<Set<string>> {
    const states = await this.deps.store.thumbnails.states(files.map((f) => f.id));
    const ids = new Set<string>();
    for (const file of files) {
      const state = states.get(file.id);
      const fresh = state !== undefined && state.ofBlob === file.blob;
      if (fresh ? state.source !== "failed" : this.makesOf(file)) ids.add(file.id);
    }
    return ids;
  }

  /** Whether this server makes thumbnails of `file`'s content itself. */
  makesOf(file: FileRecord): boolean {
    return this.deps.maxPixels > 0 && THUMBNAIL_SOURCE_TYPES.has(essenceOf(file.contentType)) && file.size > 0 && file.size <= MAX_SOURCE_BYTES;
  }

  private async makeAndStore(file: FileRecord): Promise<Uint8Array | undefined> {
    let image: Uint8Array | undefined;
    try {
      image = await this.deps.maker.make(this.deps.files.copyOf(file), essenceOf(file.contentType), this.deps.maxPixels);
    } catch (err) {
      if (!(err instanceof ThumbnailError)) throw err;
    }
    const row = { fileId: file.id, ofBlob: file.blob, source: image === undefined ? ("failed" as const) : ("server" as const), image: image ?? new Uint8Array(0), createdAt: this.deps.clock.nowMicros() };
    await this.deps.store.thumbnails.put(row);
    return image;
  }

  /**
   * Stores `image` (JPEG, PNG, WebP or GIF of `mediaType`, at most {@link MAX_SENT_THUMBNAIL_BYTES})
   * as `file`'s thumbnail, made again here at {@link THUMBNAIL_EDGE}: the uploading browser's
   * poster of a video, first page of a PDF, or any picture the owner chose. The caller checked
   * that the principal may change the file.
   * @throws AppError payload_too_large (past the limit), unsupported_media_type (another type),
   *   invalid_argument (not an image it can read, or of more than {@link MAX_SENT_THUMBNAIL_PIXELS}),
   *   not_found (the file was deleted or its content replaced meanwhile), unavailable (too many
   *   being made)
   */
  async put(file: FileRecord, image: Uint8Array, mediaType: string): Promise<void> {
    const type = essenceOf(mediaType);
    if (image.byteLength > MAX_SENT_THUMBNAIL_BYTES) throw new AppError("payload_too_large", `a thumbnail may be at most ${MAX_SENT_THUMBNAIL_BYTES} bytes (got ${image.byteLength})`);
    if (!THUMBNAIL_SOURCE_TYPES.has(type)) throw new AppError("unsupported_media_type", `a thumbnail is sent as ${[...THUMBNAIL_SOURCE_TYPES].join(", ")} (got "${mediaType}")`);
    let made: Uint8Array;
    try {
      made = await this.deps.maker.make(once(image), type, MAX_SENT_THUMBNAIL_PIXELS);
    } catch (err) {
      if (err instanceof ThumbnailError) throw new AppError("invalid_argument", `the thumbnail could not be read as ${type}: ${err.message}`);
      throw err;
    }
    const stored = await this.deps.store.thumbnails.put({ fileId: file.id, ofBlob: file.blob, source: "browser", image: made, createdAt: this.deps.clock.nowMicros() });
    if (!stored) throw new AppError("not_found", "file not found (deleted, or its content replaced, while the thumbnail was made)");
  }

  /** Removes `file`'s thumbnail (an image's is made again when next asked for). @returns whether it had one */
  delete(file: FileRecord): Promise<boolean> {
    return this.deps.store.thumbnails.delete(file.id);
  }
}

/** `bytes` as a stream of one chunk. */
async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
