/**
 * `GET /v1/usage` (beside CONTRACT §9): the caller's storage usage and quota, for the
 * dashboard's "used X of Y" and for scripts. Authenticated like `/v1/*` (key or same-origin
 * session) and needs files.read.
 */
import { Elysia } from "elysia";
import type { Authenticator } from "../auth/principal.ts";
import { requireScope } from "../domain/principal.ts";
import type { Quotas, Usage } from "../service/quota.ts";
import { AUTH, detail, errors, ok } from "./describe.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";

/**
 * The JSON of GET /v1/usage. Bytes as numbers (exact below 2^53, 8 PiB). `used_bytes` =
 * `file_bytes` + `reserved_bytes` (unfinished resumable uploads) + `dav_bytes` (WebDAV dead
 * properties and lock owners, CONTRACT §14) is what the quota is checked against; `quota_bytes` is null when there is none.
 */
export interface UsageJson {
  files: number;
  file_bytes: number;
  reserved_bytes: number;
  dav_bytes: number;
  used_bytes: number;
  quota_bytes: number | null;
}

/** A {@link Usage} as GET /v1/usage answers it. */
export function toUsageJson(u: Usage): UsageJson {
  return { files: u.files, file_bytes: u.fileBytes, reserved_bytes: u.reservedBytes, dav_bytes: u.davBytes, used_bytes: u.usedBytes, quota_bytes: u.quotaBytes };
}

/** The /v1/usage route as an Elysia plugin. */
export function usageRoutes(deps: { quotas: Quotas; auth: Authenticator }) {
  return new Elysia({ name: "usage-routes" })
    .use(requestContext)
    .derive(async ({ request, requestContext }) => ({ principal: await deps.auth.require(authRequest(request, requestContext)) }))
    .get(
      "/v1/usage",
      async ({ principal }) => {
        requireScope(principal, "files.read");
        return json(toUsageJson(await deps.quotas.usage(principal.userId)), 200, { "cache-control": "no-store" });
      },
      {
        parse: "none",
        detail: detail({ operationId: "getUsage", summary: "The caller's storage use and quota", tags: ["files"], responses: { ...ok("Usage"), ...errors(400, ...AUTH) } }),
      },
    );
}
