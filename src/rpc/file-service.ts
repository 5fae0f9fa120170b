/**
 * `cubby.v1.FileService` (CONTRACT §4): translates proto messages to domain values, calls the
 * same service layer as REST, and translates back. Nothing here decides anything.
 */
import { formatExpiry } from "../domain/expiry.ts";
import { create } from "@bufbuild/protobuf";
import { TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { canonicalUrl, type FileRecord } from "../domain/file.ts";
import {
  encodePageToken,
  parseFileId,
  parseMediaType,
  parseName,
  parsePageToken,
  parseRpcPageSize,
  parseSlug,
  parseVisibility,
} from "../domain/params.ts";
import { toSecondsNanos } from "../domain/time.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { FileService as Files } from "../service/files.ts";
import { FileSchema, FileService, type File } from "../gen/cubby/v1/files_pb.ts";
import { rpcErrors } from "./errors.ts";
import { requestContextKey } from "./request-context.ts";

export interface FileRpcDeps {
  files: Files;
  auth: Authenticator;
  baseUrl: () => string;
}

/** Largest content chunk in a GetFileContent message (CONTRACT §4). */
export const CONTENT_CHUNK_BYTES = 1024 * 1024;

/** The FileService implementation. */
export function fileServiceImpl(deps: FileRpcDeps): ServiceImpl<typeof FileService> {
  const { files, auth } = deps;
  const principal = (ctx: HandlerContext) => {
    const context = ctx.values.get(requestContextKey);
    return auth.require({ method: ctx.requestMethod, headers: ctx.requestHeader, clientAddress: context?.clientAddress ?? "unknown", context });
  };
  const toProto = (record: FileRecord): File => fileMessage(deps.baseUrl(), record);

  return rpcErrors({
    async createFile(requests, ctx) {
      const who = await principal(ctx);
      const { first, content } = await splitFirst(requests, ctx.signal);
      const file = await files.create(who, {
        slug: parseSlug(first?.slug ?? ""),
        name: parseName(first?.name ?? ""),
        visibility: first === undefined || first.visibility === "" ? undefined : parseVisibility(first.visibility),
        contentType: parseMediaType(first?.contentType ?? ""),
        expiresAt: files.expiryFrom({ expire_time: emptyToUndefined(first?.expireTime), ttl: emptyToUndefined(first?.ttl) }),
        content,
        signal: ctx.signal,
      });
      return { file: toProto(file) };
    },

    async updateFileExpiry(req, ctx) {
      const who = await principal(ctx);
      const id = parseFileId(req.id);
      const asked = files.expiryFrom({ expire_time: emptyToUndefined(req.expireTime), ttl: emptyToUndefined(req.ttl) });
      return { expireTime: formatExpiry(await files.setExpiry(who, id, asked ?? null)) };
    },

    async updateFileContent(requests, ctx) {
      const who = await principal(ctx);
      const { first, content } = await splitFirst(requests, ctx.signal);
      const id = parseFileId(first?.id ?? "");
      const file = await files.replaceContent(who, id, { contentType: parseMediaType(first?.contentType ?? ""), content, signal: ctx.signal });
      return { file: toProto(file) };
    },

    async getFile(req, ctx) {
      return { file: toProto(await files.get(await principal(ctx), parseFileId(req.id))) };
    },

    async listFiles(req, ctx) {
      const who = await principal(ctx);
      const page = await files.list(who, parseRpcPageSize(req.pageSize), parsePageToken(req.pageToken));
      return { files: page.files.map(toProto), nextPageToken: page.next === undefined ? "" : encodePageToken(page.next) };
    },

    async updateFile(req, ctx) {
      const who = await principal(ctx);
      const file = await files.update(who, parseFileId(req.id), {
        slug: req.slug === undefined ? undefined : parseSlug(req.slug),
        name: req.name === undefined ? undefined : parseName(req.name),
        visibility: req.visibility === undefined ? undefined : parseVisibility(req.visibility),
      });
      return { file: toProto(file) };
    },

    async publishFile(req, ctx) {
      await files.publish(await principal(ctx), parseFileId(req.id));
      return {};
    },

    async unpublishFile(req, ctx) {
      await files.unpublish(await principal(ctx), parseFileId(req.id));
      return {};
    },

    async deleteFile(req, ctx) {
      await files.delete(await principal(ctx), parseFileId(req.id));
      return {};
    },

    async *getFileContent(req, ctx) {
      const who = await principal(ctx);
      // The same access as GetFile: a signed-in caller sees its own files and others' non-private ones.
      const { file, cached, read } = await files.openContent(async () => who, parseFileId(req.id));
      if (cached !== undefined || file.size === 0) {
        yield { contentType: file.contentType, content: cached ?? new Uint8Array(0) };
        return;
      }
      let first = true;
      const plan = { chunkBytes: CONTENT_CHUNK_BYTES, buffers: 1, signal: ctx.signal };
      for await (const chunk of read({ start: 0, length: file.size }, plan)) {
        // Connect serialises the message before it asks for the next one: the buffer is free then.
        yield { contentType: first ? file.contentType : "", content: chunk.bytes };
        chunk.release();
        first = false;
      }
    },
  });
}

/** Proto3 leaves an unset string empty: "" means "not given". */
function emptyToUndefined(s: string | undefined): string | undefined {
  return s === "" ? undefined : s;
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
