/**
 * `cubby.v1.FileService` (CONTRACT §4): translates proto messages to domain values, calls the
 * same service layer as REST, and translates back. Nothing here decides anything.
 */
import { create } from "@bufbuild/protobuf";
import { TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import fsp from "node:fs/promises";
import { canonicalUrl, type FileRecord } from "../domain/file.ts";
import {
  DEFAULT_PAGE_SIZE,
  encodePageToken,
  MAX_PAGE_SIZE,
  parseFileId,
  parseMediaType,
  parseName,
  parsePageToken,
  parseSlug,
  parseVisibility,
} from "../domain/params.ts";
import { toSecondsNanos } from "../domain/time.ts";
import { AppError } from "../errors.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { FileService as Files } from "../service/files.ts";
import type { BlobStore } from "../storage/blobs.ts";
import { FileSchema, FileService, type File } from "../gen/cubby/v1/files_pb.ts";
import { rpcErrors } from "./errors.ts";

export interface FileRpcDeps {
  files: Files;
  blobs: BlobStore;
  auth: Authenticator;
  baseUrl: () => string;
}

/** Largest content chunk in a GetFileContent message (CONTRACT §4). */
export const CONTENT_CHUNK_BYTES = 1024 * 1024;

/** The FileService implementation. */
export function fileServiceImpl(deps: FileRpcDeps): ServiceImpl<typeof FileService> {
  const { files, auth } = deps;
  const principal = (ctx: HandlerContext) => auth.require({ method: ctx.requestMethod, headers: ctx.requestHeader });
  const toProto = (record: FileRecord): File => fileMessage(deps.baseUrl(), record);

  return rpcErrors({
    async createFile(requests, ctx) {
      const who = principal(ctx);
      const { first, content } = await splitFirst(requests, ctx.signal);
      const file = await files.create(who, {
        slug: parseSlug(first?.slug ?? ""),
        name: parseName(first?.name ?? ""),
        visibility: first === undefined || first.visibility === "" ? "internal" : parseVisibility(first.visibility),
        contentType: parseMediaType(first?.contentType ?? ""),
        content,
        signal: ctx.signal,
      });
      return { file: toProto(file) };
    },

    async updateFileContent(requests, ctx) {
      const who = principal(ctx);
      const { first, content } = await splitFirst(requests, ctx.signal);
      const id = parseFileId(first?.id ?? "");
      const file = await files.replaceContent(who, id, { contentType: parseMediaType(first?.contentType ?? ""), content, signal: ctx.signal });
      return { file: toProto(file) };
    },

    getFile(req, ctx) {
      return { file: toProto(files.get(principal(ctx), parseFileId(req.id))) };
    },

    listFiles(req, ctx) {
      const who = principal(ctx);
      // proto3 cannot tell 0 from unset: 0 means the default.
      if (req.pageSize < 0 || req.pageSize > MAX_PAGE_SIZE) {
        throw new AppError("invalid_argument", `page_size: must be from 1 to ${MAX_PAGE_SIZE} (got ${req.pageSize})`);
      }
      const page = files.list(who, req.pageSize === 0 ? DEFAULT_PAGE_SIZE : req.pageSize, parsePageToken(req.pageToken));
      return { files: page.files.map(toProto), nextPageToken: page.next === undefined ? "" : encodePageToken(page.next) };
    },

    updateFile(req, ctx) {
      const who = principal(ctx);
      const file = files.update(who, parseFileId(req.id), {
        slug: req.slug === undefined ? undefined : parseSlug(req.slug),
        name: req.name === undefined ? undefined : parseName(req.name),
        visibility: req.visibility === undefined ? undefined : parseVisibility(req.visibility),
      });
      return { file: toProto(file) };
    },

    publishFile(req, ctx) {
      files.publish(principal(ctx), parseFileId(req.id));
      return {};
    },

    unpublishFile(req, ctx) {
      files.unpublish(principal(ctx), parseFileId(req.id));
      return {};
    },

    deleteFile(req, ctx) {
      files.delete(principal(ctx), parseFileId(req.id));
      return {};
    },

    async *getFileContent(req, ctx) {
      const file = files.get(principal(ctx), parseFileId(req.id));
      const handle = await fsp.open(deps.blobs.path(file.blob), "r");
      try {
        let sent = 0;
        let first = true;
        while (first || sent < file.size) {
          const chunk = new Uint8Array(Math.min(CONTENT_CHUNK_BYTES, file.size - sent));
          let filled = 0;
          while (filled < chunk.byteLength) {
            const { bytesRead } = await handle.read(chunk, filled, chunk.byteLength - filled, sent + filled);
            if (bytesRead === 0) throw new Error(`blob ${file.blob} is shorter than its recorded size ${file.size}`);
            filled += bytesRead;
          }
          sent += filled;
          yield { contentType: first ? file.contentType : "", content: chunk };
          first = false;
        }
      } finally {
        await handle.close();
      }
    },
  });
}

/** A File message for a record; its proto3 JSON equals the REST File object. */
export function fileMessage(baseUrl: string, f: FileRecord): File {
  return create(FileSchema, {
    id: f.id,
    slug: f.slug,
    url: canonicalUrl(baseUrl, f),
    name: f.name,
    contentType: f.contentType,
    size: BigInt(f.size),
    checksum: f.checksum,
    visibility: f.visibility,
    createdAt: timestamp(f.createdAt),
    updatedAt: timestamp(f.updatedAt),
  });
}

function timestamp(micros: number): Timestamp {
  return create(TimestampSchema, toSecondsNanos(micros));
}

/**
 * Reads the first message of a client stream (whose other fields apply to the whole call) and
 * returns the content of all messages, the first included, as one byte stream.
 */
async function splitFirst<T extends { content: Uint8Array }>(
  requests: AsyncIterable<T>,
  signal: AbortSignal,
): Promise<{ first: T | undefined; content: AsyncIterable<Uint8Array> }> {
  const it = requests[Symbol.asyncIterator]();
  const head = await it.next();
  const first = head.done ? undefined : head.value;
  async function* content() {
    if (first === undefined) return;
    if (first.content.byteLength > 0) yield first.content;
    for (let r = await it.next(); !r.done; r = await it.next()) {
      if (r.value.content.byteLength > 0) yield r.value.content;
    }
    await resetOrQuiet(signal, CLIENT_STREAM_SETTLE_MS);
  }
  return { first, content: content() };
}

/**
 * How long an upload waits, after its client stream ended, for a reset before it commits (ms).
 * connect-es clients whose deadline or AbortSignal fires mid-upload end the request stream
 * normally (END_STREAM) and send RST_STREAM (CANCEL or INTERNAL_ERROR) a moment later, about
 * 1 ms on loopback: committing on END_STREAM alone stored the truncated prefix (issue 11).
 */
export const CLIENT_STREAM_SETTLE_MS = 25;

/** Resolves when `signal` fires or after `ms` milliseconds, whichever comes first. */
function resetOrQuiet(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}
