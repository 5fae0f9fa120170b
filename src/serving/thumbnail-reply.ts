/**
 * A file's thumbnail as every URL that serves one answers it (CONTRACT §15): the owner's
 * `GET /v1/files/{id}/thumbnail`, a share's `?thumbnail=1` and a shared folder's
 * `?file={id}&thumbnail=1`. A WebP made by this server (service/thumbnails.ts), sandboxed like
 * content; reading one counts no download.
 */
import { AppError } from "../errors.ts";
import type { FileRecord } from "../domain/file.ts";
import { THUMBNAIL_MEDIA_TYPE, type ThumbnailService } from "../service/thumbnails.ts";
import type { ContentReply } from "./content-reply.ts";

/**
 * The reply with `file`'s thumbnail as its body (none for HEAD). `cacheControl`: the owner's
 * may be kept a minute by the browser; a share's is checked each time, like the share.
 * @throws AppError not_found when the file has none; unavailable when too many are being made
 */
export async function thumbnailReply(thumbnails: ThumbnailService, file: FileRecord, method: string, cacheControl: string): Promise<ContentReply> {
  const image = await thumbnails.of(file);
  if (image === undefined) throw new AppError("not_found", "this file has no thumbnail (only images get one made, and files whose uploader sent one)");
  return {
    status: 200,
    headers: {
      "content-type": THUMBNAIL_MEDIA_TYPE,
      "content-length": String(image.byteLength),
      "cache-control": cacheControl,
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; sandbox",
      "referrer-policy": "no-referrer",
    },
    body: method === "HEAD" ? undefined : image,
  };
}
