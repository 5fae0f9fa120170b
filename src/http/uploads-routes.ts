/**
 * `GET /v1/uploads` (CONTRACT §10): the caller's unfinished resumable uploads, their own and
 * those guests are making through their upload links, so an owner sees what is held in their
 * name and can end one (`DELETE /v1/uploads/{id}`, the tus termination of tus-routes.ts, which
 * takes a plain REST request too). Authenticated like `/v1/*` (key or same-origin session);
 * needs files.read. The tus protocol itself lives in tus-routes.ts.
 */
import { Elysia } from "elysia";
import type { Authenticator } from "../auth/principal.ts";
import { formatExpiry } from "../domain/expiry.ts";
import { DEFAULT_PAGE_SIZE, nextPageToken } from "../domain/params.ts";
import { AppError } from "../errors.ts";
import { formatTimestamp } from "../domain/time.ts";
import type { UnfinishedUpload, UploadService } from "../service/uploads.ts";
import { AUTH, detail, errors, ok } from "./describe.ts";
import { pagingQuery, strictQuery } from "./inputs.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";

/**
 * An unfinished upload as listed. `name` is its Upload-Metadata `filename` ("" when none);
 * `offset` and `length` are bytes (Upload-Offset, Upload-Length); `upload_link_id` is the guest
 * link it comes through, null for the caller's own; `url` is where tus resumes or ends it;
 * `expire_time` when it is swept unless finished (RFC 3339).
 */
export interface UnfinishedUploadJson {
  id: string;
  url: string;
  name: string;
  offset: number;
  length: number;
  upload_link_id: string | null;
  expire_time: string;
  created_at: string;
}

/** The JSON of one page of `GET /v1/uploads`. */
export interface UnfinishedUploadPageJson {
  uploads: UnfinishedUploadJson[];
  next_page_token: string;
}

/** An {@link UnfinishedUpload} as `GET /v1/uploads` lists it. */
export function toUnfinishedUploadJson(baseUrl: string, u: UnfinishedUpload): UnfinishedUploadJson {
  return {
    id: u.id,
    url: `${baseUrl}/v1/uploads/${u.id}`,
    name: u.metadata.filename ?? "",
    offset: u.offset,
    length: u.length,
    upload_link_id: u.uploadLinkId,
    expire_time: formatExpiry(u.expiresAt),
    created_at: formatTimestamp(u.createdAt),
  };
}

/** The GET /v1/uploads route as an Elysia plugin. */
export function uploadsRoutes(deps: { uploads: UploadService; auth: Authenticator; baseUrl: () => string }) {
  return new Elysia({ name: "uploads-routes" })
    .use(requestContext)
    .onTransform(({ request }) => {
      // Elysia answers HEAD with a GET route; /v1/uploads has no HEAD (tus HEADs an upload's URL).
      if (request.method !== "GET") throw new AppError("not_found", "not found");
    })
    .derive(async ({ request, requestContext }) => ({ principal: await deps.auth.require(authRequest(request, requestContext)) }))
    .get(
      "/v1/uploads",
      async ({ principal, query }) => {
        const page = await deps.uploads.list(principal, query.page_size ?? DEFAULT_PAGE_SIZE, query.page_token);
        const body: UnfinishedUploadPageJson = {
          uploads: page.uploads.map((u) => toUnfinishedUploadJson(deps.baseUrl(), u)),
          next_page_token: nextPageToken(page),
        };
        return json(body, 200, { "cache-control": "no-store" });
      },
      {
        ...strictQuery(pagingQuery),
        detail: detail({
          operationId: "listUploads",
          summary: "The caller's unfinished uploads: their own and those made through their upload links, newest first",
          description:
            "An upload made through a guest link holds a file and its Upload-Length of the link's max_files and max_bytes from its creation until it finishes, expires or is ended (DELETE), and its Upload-Length of the owner's quota.",
          tags: ["uploads"],
          responses: { ...ok("UnfinishedUploadPage"), ...errors(400, ...AUTH) },
        }),
      },
    );
}
