/**
 * The tus 1.0.0 server at /v1/uploads (https://tus.io/protocols/resumable-upload; CONTRACT §8):
 * core protocol plus creation, creation-with-upload, termination, expiration, checksum
 * (crc32c, sha1) and concatenation (partial uploads sent in parallel, then a final upload). Headers become domain values here (domain/tus.ts); service/uploads.ts decides.
 *
 * Every answer carries `Tus-Resumable: 1.0.0`; a request without it (OPTIONS and DELETE, which
 * is also the REST way to end an upload, aside) gets 412
 * with `Tus-Version` and is not processed. Errors are the contract's `google.rpc.Status` JSON
 * with tus's statuses (409 offset conflict, 410 expired, 412, 460 checksum mismatch). The
 * finished upload's file ID is sent as `Cubby-File-Id` on the last PATCH and every later HEAD.
 */
import { Elysia, t } from "elysia";
import type { Authenticator } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import { report } from "../context/report.ts";
import { essenceOf } from "../domain/params.ts";
import { toHttpDate } from "../domain/time.ts";
import {
  formatUploadMetadata,
  isSupportedTusVersion,
  parseUploadChecksum,
  parseUploadConcat,
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
import { always, ANYONE, AUTH, detail, errors, header, headerParam, LOCATION, SERVER, type Operation, type Security } from "./describe.ts";
import { PATTERNS } from "./openapi-schemas.ts";
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

// What the document says of the tus routes. Their inputs are headers the tus handlers read
// themselves (a missing or wrong Tus-Resumable is 412 with Tus-Version, not a schema's 400), and an
// upload ID of the wrong shape is 404 like any unknown upload: so no `t.*` schema, only `detail`.
const tusResumable = headerParam("tus-resumable", { const: TUS_VERSION }, "The tus version; anything else answers 412", true);
const uploadId = t.Object({ id: t.String({ description: "Upload ID (from the creation's Location)" }) });
const TUS: Security = [{ apiKey: [] }, { session: [] }, { uploadLinkToken: [] }];
const tusHeaders = {
  "tus-resumable": always("`1.0.0`"),
  "upload-offset": always("Bytes received so far", { type: "string", pattern: "^[0-9]+$" }),
  "upload-expires": header("While unfinished: when the upload expires (HTTP-date)"),
  "cubby-file-id": header("Once finished: the File's ID", { type: "string", pattern: PATTERNS.fileId }),
  "upload-concat": header("For a partial or final upload (tus concatenation): `partial`, or `final;` and its partial uploads' paths"),
};
const TUS_ERRORS = errors(400, 404, 409, 410, 412, 413, 415, 460, ...AUTH);
const tusOptions = (operationId: string) =>
  detail({
    operationId,
    summary: "What the tus server supports",
    tags: ["uploads"],
    security: ANYONE,
    responses: {
      "204": {
        description: `tus ${TUS_VERSION}; extensions ${TUS_EXTENSIONS.join(", ")}; checksums ${TUS_CHECKSUM_ALGORITHMS.join(", ")}`,
        headers: {
          "tus-resumable": always(TUS_VERSION),
          "tus-version": always(TUS_VERSION),
          "tus-extension": always(TUS_EXTENSIONS.join(",")),
          "tus-max-size": always("MAX_UPLOAD_BYTES"),
          "tus-checksum-algorithm": always(TUS_CHECKSUM_ALGORITHMS.join(",")),
        },
      },
      ...errors(...SERVER),
    },
  });
/** A tus route's options: no body parsing (the handler streams it), its `detail`. */
const tusRoute = (operation: Operation, params?: typeof uploadId) => ({ ...raw, ...(params === undefined ? {} : { params }), detail: detail({ security: TUS, ...operation }) });
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
    .options("", options, { ...raw, detail: tusOptions("tusOptions") })
    .options("/:id", options, { ...raw, params: uploadId, detail: tusOptions("tusOptionsUpload") })
    .post(
      "",
      tus(async (request, context) => {
        const who = await uploader(request, context);
        const h = request.headers;
        if (h.get("upload-defer-length") !== null) throw new AppError("invalid_argument", "Upload-Defer-Length: not supported; send Upload-Length");
        const concat = parseUploadConcat(h.get("upload-concat"));
        const metadata = parseUploadMetadata(h.get("upload-metadata"));
        const withData = isChunk(h);
        let state: UploadState;
        if (concat?.kind === "final") {
          // tus concatenation: the final's length is its partials' sum, and it takes no bytes.
          if (h.get("upload-length") !== null) throw new AppError("invalid_argument", "Upload-Length: a final upload (Upload-Concat: final) has none; its length is its partial uploads'");
          if (withData) throw new AppError("invalid_argument", "a final upload (Upload-Concat: final) takes no bytes; send them to its partial uploads");
          state = await uploads.concatenate(who, concat.uploadIds, metadata);
        } else {
          const length = parseUploadLength(h.get("upload-length"));
          const checksum = withData ? parseUploadChecksum(h.get("upload-checksum")) : undefined;
          state = await uploads.create(who, { length, metadata, content: withData ? request.body : null, checksum, partial: concat?.kind === "partial" });
        }
        return new Response(null, { status: 201, headers: { location: `${deps.baseUrl()}/v1/uploads/${state.id}`, ...stateHeaders(state) } });
      }),
      tusRoute({
        operationId: "createUpload",
        summary: "Create a resumable upload (tus creation, creation-with-upload)",
        tags: ["uploads"],
        parameters: [
          tusResumable,
          headerParam("upload-length", { type: "string", pattern: "^[0-9]+$" }, "Total size in bytes (none for a final upload)"),
          headerParam("upload-concat", { type: "string" }, "`partial` (a part sent beside others), or `final;/v1/uploads/a /v1/uploads/b …` (the file of those finished partials, in order)"),
          headerParam("upload-metadata", { type: "string" }, "`key base64value,…`: filename, filetype, slug, visibility, expire_time"),
          headerParam("upload-checksum", { type: "string" }, "`crc32c <base64>` or `sha1 <base64>` of the bytes sent with the creation"),
        ],
        requestBody: { description: "Optionally the first bytes (Content-Type: application/offset+octet-stream)", content: { "application/offset+octet-stream": {} } },
        responses: { "201": { description: "Created", headers: { ...LOCATION, ...tusHeaders } }, ...TUS_ERRORS },
      }),
    )
    .head(
      "/:id",
      tus(async (request, context, id) => {
        const state = await uploads.status(await uploader(request, context), id);
        const headers: Record<string, string> = { ...stateHeaders(state), "upload-length": String(state.length), "cache-control": "no-store" };
        if (Object.keys(state.metadata).length > 0) headers["upload-metadata"] = formatUploadMetadata(state.metadata);
        return new Response(null, { status: 200, headers });
      }),
      tusRoute(
        {
          operationId: "getUploadOffset",
          summary: "Where an upload stands",
          tags: ["uploads"],
          parameters: [tusResumable],
          responses: { "200": { description: "Upload-Offset, Upload-Length, Upload-Metadata", headers: tusHeaders }, ...TUS_ERRORS },
        },
        uploadId,
      ),
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
      tusRoute(
        {
          operationId: "appendUpload",
          summary: "Send bytes at the current offset",
          tags: ["uploads"],
          parameters: [
            tusResumable,
            headerParam("upload-offset", { type: "string", pattern: "^[0-9]+$" }, "Must equal the upload's offset (409 otherwise)", true),
            headerParam("upload-checksum", { type: "string" }, "`crc32c <base64>` or `sha1 <base64>` of this chunk (460 on mismatch)"),
          ],
          requestBody: { required: true, content: { "application/offset+octet-stream": {} } },
          responses: { "204": { description: "Accepted; the last chunk's answer carries Cubby-File-Id", headers: tusHeaders }, ...TUS_ERRORS },
        },
        uploadId,
      ),
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
      tusRoute(
        {
          operationId: "terminateUpload",
          summary: "End an upload (tus termination): its bytes are removed and what it reserved is released",
          description:
            "Also a plain REST request: without Tus-Resumable. The owner ends their own and their links' uploads; a guest those of their link. 409 while a PATCH is writing the upload.",
          tags: ["uploads"],
          parameters: [headerParam("tus-resumable", { const: TUS_VERSION }, "The tus version, or absent (a REST request); another answers 412")],
          responses: { "204": { description: "Gone", headers: { "tus-resumable": always("`1.0.0`") } }, ...TUS_ERRORS },
        },
        uploadId,
      ),
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
  if (state.concat !== null) headers["upload-concat"] = state.concat;
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
