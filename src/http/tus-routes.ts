/**
 * The tus 1.0.0 server at /v1/uploads (https://tus.io/protocols/resumable-upload; CONTRACT §8):
 * core protocol plus creation, creation-with-upload, termination, expiration and checksum
 * (crc32c, sha1). Headers become domain values here (domain/tus.ts); service/uploads.ts decides.
 *
 * Every answer carries `Tus-Resumable: 1.0.0`; a request without it (OPTIONS and DELETE, which
 * is also the REST way to end an upload, aside) gets 412
 * with `Tus-Version` and is not processed. Errors are the contract's `google.rpc.Status` JSON
 * with tus's statuses (409 offset conflict, 410 expired, 412, 460 checksum mismatch). The
 * finished upload's file ID is sent as `Cubby-File-Id` on the last PATCH and every later HEAD.
 */
import { Elysia } from "elysia";
import type { Authenticator } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import { report } from "../context/report.ts";
import { essenceOf } from "../domain/params.ts";
import { toHttpDate } from "../domain/time.ts";
import {
  formatUploadMetadata,
  isSupportedTusVersion,
  parseUploadChecksum,
  parseUploadLength,
  parseUploadMetadata,
  parseUploadOffset,
  TUS_CHECKSUM_ALGORITHMS,
  TUS_EXTENSIONS,
  TUS_VERSION,
} from "../domain/tus.ts";
import { AppError } from "../errors.ts";
import type { UploadLinkService } from "../service/upload-links.ts";
import type { UploadService, UploadState } from "../service/uploads.ts";
import { requestContext } from "./request-context.ts";
import { errorResponse } from "./respond.ts";
import { uploaderOf } from "./uploader.ts";

export interface TusRoutesDeps {
  uploads: UploadService;
  links: UploadLinkService;
  auth: Authenticator;
  /** Public origin (HOSTNAME), for Location. */
  baseUrl: () => string;
  maxUploadBytes: number;
}

const raw = { parse: "none" } as const;
const CHUNK_TYPE = "application/offset+octet-stream";
/** Upload IDs as service/uploads.ts makes them. */
const UPLOAD_ID = /^[A-Za-z0-9_-]{26}$/;

/** The tus routes as an Elysia plugin. */
export function tusRoutes(deps: TusRoutesDeps) {
  const { uploads, links, auth } = deps;
  const uploader = (request: Request, context: RequestContext) => uploaderOf(request, context, auth, links);
  const options = () =>
    new Response(null, {
      status: 204,
      headers: {
        "tus-resumable": TUS_VERSION,
        "tus-version": TUS_VERSION,
        "tus-extension": TUS_EXTENSIONS.join(","),
        "tus-max-size": String(deps.maxUploadBytes),
        "tus-checksum-algorithm": TUS_CHECKSUM_ALGORITHMS.join(","),
      },
    });

  return new Elysia({ name: "tus-routes", prefix: "/v1/uploads" })
    .use(requestContext)
    .options("", options, raw)
    .options("/:id", options, raw)
    .post(
      "",
      tus(async (request, context) => {
        const who = await uploader(request, context);
        const h = request.headers;
        if (h.get("upload-defer-length") !== null) throw new AppError("invalid_argument", "Upload-Defer-Length: not supported; send Upload-Length");
        const length = parseUploadLength(h.get("upload-length"));
        const metadata = parseUploadMetadata(h.get("upload-metadata"));
        const withData = isChunk(h);
        const checksum = withData ? parseUploadChecksum(h.get("upload-checksum")) : undefined;
        const state = await uploads.create(who, { length, metadata, content: withData ? request.body : null, checksum });
        return new Response(null, { status: 201, headers: { location: `${deps.baseUrl()}/v1/uploads/${state.id}`, ...stateHeaders(state) } });
      }),
      raw,
    )
    .head(
      "/:id",
      tus(async (request, context, id) => {
        const state = await uploads.status(await uploader(request, context), id);
        const headers: Record<string, string> = { ...stateHeaders(state), "upload-length": String(state.length), "cache-control": "no-store" };
        if (Object.keys(state.metadata).length > 0) headers["upload-metadata"] = formatUploadMetadata(state.metadata);
        return new Response(null, { status: 200, headers });
      }),
      raw,
    )
    .patch(
      "/:id",
      tus(async (request, context, id) => {
        const who = await uploader(request, context);
        const h = request.headers;
        if (!isChunk(h)) throw new AppError("unsupported_media_type", `PATCH bodies must be Content-Type: ${CHUNK_TYPE}`);
        const offset = parseUploadOffset(h.get("upload-offset"));
        const checksum = parseUploadChecksum(h.get("upload-checksum"));
        const state = await uploads.append(who, id, offset, request.body, checksum);
        return new Response(null, { status: 204, headers: stateHeaders(state) });
      }),
      raw,
    )
    .delete(
      "/:id",
      // Also the REST way to end an upload (CONTRACT §10): no Tus-Resumable needed.
      tus(
        async (request, context, id) => {
          await uploads.terminate(await uploader(request, context), id);
          return new Response(null, { status: 204, headers: { "tus-resumable": TUS_VERSION } });
        },
        { restToo: true },
      ),
      raw,
    );
}

function isChunk(headers: Headers): boolean {
  const type = headers.get("content-type");
  return type !== null && essenceOf(type) === CHUNK_TYPE;
}

/** Upload-Offset, Upload-Expires (while unfinished; RFC 9110 HTTP-date) and Cubby-File-Id (once finished). */
function stateHeaders(state: UploadState): Record<string, string> {
  const headers: Record<string, string> = { "tus-resumable": TUS_VERSION, "upload-offset": String(state.offset) };
  if (state.fileId === null) headers["upload-expires"] = toHttpDate(state.expiresAt);
  else headers["cubby-file-id"] = state.fileId;
  return headers;
}

type TusHandler = (request: Request, context: RequestContext, id: string) => Promise<Response>;

/**
 * Wraps a tus handler: refuses a request without a supported Tus-Resumable (412 with
 * Tus-Version; with `restToo`, only one with another version: a request without the header is
 * taken as a plain REST one), checks the upload ID's shape (404: no upload has another), and renders failures
 * as the contract's JSON error with Tus-Resumable.
 */
function tus(handler: TusHandler, opts: { restToo?: boolean } = {}) {
  return async ({ request, params, requestContext }: { request: Request; params?: Record<string, string>; requestContext: RequestContext }) => {
    try {
      const version = request.headers.get("tus-resumable");
      if (!(opts.restToo === true && version === null) && !isSupportedTusVersion(version)) {
        const error = new AppError("failed_precondition", `Tus-Resumable: this server speaks tus ${TUS_VERSION}; send Tus-Resumable: ${TUS_VERSION}`);
        return withTusHeaders(errorResponse(error), { "tus-version": TUS_VERSION });
      }
      const id = params?.id ?? "";
      if (params?.id !== undefined && !UPLOAD_ID.test(id)) throw new AppError("not_found", "upload not found");
      return await handler(request, requestContext, id);
    } catch (err) {
      return withTusHeaders(errorResponse(report(err, requestContext)), {});
    }
  };
}

function withTusHeaders(response: Response, extra: Record<string, string>): Response {
  response.headers.set("tus-resumable", TUS_VERSION);
  for (const [k, v] of Object.entries(extra)) response.headers.set(k, v);
  return response;
}
