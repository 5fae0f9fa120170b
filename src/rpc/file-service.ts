/**
 * `cubby.v1.FileService` (CONTRACT §4): translates proto messages to domain values, calls the
 * same service layer as REST, and translates back. Nothing here decides anything.
 */
import { formatExpiry } from "../domain/expiry.ts";
import { create } from "@bufbuild/protobuf";
import { TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { RequestContext } from "../context/request-context.ts";
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
  uploadMediaType,
} from "../domain/params.ts";
import { toSecondsNanos } from "../domain/time.ts";
import type { Authenticator, HeaderSource } from "../auth/principal.ts";
import type { Principal } from "../domain/principal.ts";
import type { FileService as Files } from "../service/files.ts";
import { FileSchema, FileService, type File } from "../gen/cubby/v1/files_pb.ts";
import { rpcErrors } from "./errors.ts";
import { requestContextKey } from "./request-context.ts";
import { settle } from "../domain/later.ts";

export interface FileRpcDeps {
  files: Files;
  auth: Authenticator;
  baseUrl: () => string;
}

/** Largest content chunk in a GetFileContent message (CONTRACT §4). */
export const CONTENT_CHUNK_BYTES = 1024 * 1024;

/**
 * Who is calling a unary method, as the authenticator needs it, and the call's deadline: what
 * connect-node's HandlerContext carries (fileServiceImpl) or what the unary fast path read from
 * the request itself (rpc/unary.ts).
 */
export interface RpcCaller {
  /** The HTTP method (`POST`). */
  method: string;
  headers: HeaderSource;
  /** The request's context; undefined for a call that did not come through the listener. */
  context: RequestContext | undefined;
  /** Milliseconds left before the call's deadline (`grpc-timeout`, `connect-timeout-ms`); undefined: none. */
  timeLeftMs(): number | undefined;
}

type Impl = ServiceImpl<typeof FileService>;

/** The unary methods of FileService (CONTRACT §4), by their local names. */
export type UnaryMethodName = "getFile" | "listFiles" | "updateFile" | "publishFile" | "unpublishFile" | "deleteFile" | "updateFileExpiry";

/**
 * The unary methods as plain functions of (request message, caller), which connect-node's
 * service implementation and the unary fast path both call. They throw AppErrors (and anything
 * else) unconverted: each edge turns them into ConnectErrors with rpc/errors.ts.
 */
export type FileUnaryMethods = { [K in UnaryMethodName]: (req: Parameters<Impl[K]>[0], caller: RpcCaller) => Promise<Awaited<ReturnType<Impl[K]>>> };

/** The error of a call whose deadline passed (connect-es's own deadline signal says the same). */
function deadlineExceeded(): ConnectError {
  return new ConnectError("the operation timed out", Code.DeadlineExceeded);
}

/**
 * The unary methods (see {@link FileUnaryMethods}). A call whose deadline has passed before it
 * starts or by the time it is answered fails with DEADLINE_EXCEEDED (gRPC's deadline semantics;
 * a write done meanwhile stays done, as with any call the client gave up on).
 */
export function fileUnaryMethods(deps: FileRpcDeps): FileUnaryMethods {
  const { files, auth } = deps;
  const principal = (caller: RpcCaller) => authenticate(auth, caller);
  const toProto = (record: FileRecord): File => fileMessage(deps.baseUrl(), record);
  const timed =
    <Req, Res>(fn: (req: Req, caller: RpcCaller) => Promise<Res>) =>
    async (req: Req, caller: RpcCaller): Promise<Res> => {
      if ((caller.timeLeftMs() ?? 1) <= 0) throw deadlineExceeded();
      const res = await fn(req, caller);
      if ((caller.timeLeftMs() ?? 1) <= 0) throw deadlineExceeded();
      return res;
    };

  return {
    updateFileExpiry: timed(async (req, caller) => {
      const who = await principal(caller);
      const id = parseFileId(req.id);
      const asked = files.expiryFrom({ expire_time: emptyToUndefined(req.expireTime), ttl: emptyToUndefined(req.ttl) });
      return { expireTime: formatExpiry(await files.setExpiry(who, id, asked ?? null)) };
    }),

    getFile: timed(async (req, caller) => ({ file: toProto(await files.get(await principal(caller), parseFileId(req.id))) })),

    listFiles: timed(async (req, caller) => {
      const who = await principal(caller);
      const page = await files.list(who, parseRpcPageSize(req.pageSize), parsePageToken(req.pageToken));
      return { files: page.files.map(toProto), nextPageToken: page.next === undefined ? "" : encodePageToken(page.next) };
    }),

    updateFile: timed(async (req, caller) => {
      const who = await principal(caller);
      const file = await files.update(who, parseFileId(req.id), {
        slug: req.slug === undefined ? undefined : parseSlug(req.slug),
        name: req.name === undefined ? undefined : parseName(req.name),
        visibility: req.visibility === undefined ? undefined : parseVisibility(req.visibility),
      });
      return { file: toProto(file) };
    }),

    publishFile: timed(async (req, caller) => {
      await files.publish(await principal(caller), parseFileId(req.id));
      return {};
    }),

    unpublishFile: timed(async (req, caller) => {
      await files.unpublish(await principal(caller), parseFileId(req.id));
      return {};
    }),

    deleteFile: timed(async (req, caller) => {
      await files.delete(await principal(caller), parseFileId(req.id));
      return {};
    }),
  };
}

/** The caller's principal (every FileService and FolderService method needs one, CONTRACT §4). @throws AppError as Authenticator.require */
export function authenticate(auth: Authenticator, caller: RpcCaller): Promise<Principal> {
  return auth.require({ method: caller.method, headers: caller.headers, clientAddress: caller.context?.clientAddress ?? "unknown", context: caller.context });
}

/** The caller of a call connect-node serves. */
export function callerOf(ctx: HandlerContext): RpcCaller {
  return { method: ctx.requestMethod, headers: ctx.requestHeader, context: ctx.values.get(requestContextKey), timeLeftMs: () => ctx.timeoutMs() };
}

/** The FileService implementation for connect-node: the unary methods above, and the streams. */
export function fileServiceImpl(deps: FileRpcDeps, unary: FileUnaryMethods = fileUnaryMethods(deps)): ServiceImpl<typeof FileService> {
  const { files, auth } = deps;
  const principal = (ctx: HandlerContext) => authenticate(auth, callerOf(ctx));
  const toProto = (record: FileRecord): File => fileMessage(deps.baseUrl(), record);

  return rpcErrors({
    async createFile(requests, ctx) {
      const who = await principal(ctx);
      const { first, content } = await splitFirst(requests, ctx.signal);
      const file = await files.create(who, {
        slug: parseSlug(first?.slug ?? ""),
        name: parseName(first?.name ?? ""),
        visibility: first === undefined || first.visibility === "" ? undefined : parseVisibility(first.visibility),
        contentType: uploadMediaType(first?.contentType ?? "", first?.name ?? ""),
        expiresAt: files.expiryFrom({ expire_time: emptyToUndefined(first?.expireTime), ttl: emptyToUndefined(first?.ttl) }),
        content,
        signal: ctx.signal,
      });
      return { file: toProto(file) };
    },

    async updateFileContent(requests, ctx) {
      const who = await principal(ctx);
      const { first, content } = await splitFirst(requests, ctx.signal);
      const id = parseFileId(first?.id ?? "");
      const file = await files.replaceContent(who, id, { contentType: parseMediaType(first?.contentType ?? ""), content, signal: ctx.signal });
      return { file: toProto(file) };
    },

    getFile: (req, ctx) => unary.getFile(req, callerOf(ctx)),
    listFiles: (req, ctx) => unary.listFiles(req, callerOf(ctx)),
    updateFile: (req, ctx) => unary.updateFile(req, callerOf(ctx)),
    publishFile: (req, ctx) => unary.publishFile(req, callerOf(ctx)),
    unpublishFile: (req, ctx) => unary.unpublishFile(req, callerOf(ctx)),
    deleteFile: (req, ctx) => unary.deleteFile(req, callerOf(ctx)),
    updateFileExpiry: (req, ctx) => unary.updateFileExpiry(req, callerOf(ctx)),

    async *getFileContent(req, ctx) {
      const who = await principal(ctx);
      // The same access as GetFile: a signed-in caller sees its own files and others' non-private ones.
      const { file, cached, read } = await settle(files.openContent(() => who, parseFileId(req.id)));
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

/** A google.protobuf.Timestamp of Unix microseconds. */
export function timestamp(micros: number): Timestamp {
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
