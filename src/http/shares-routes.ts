/**
 * REST routes for share links (CONTRACT §8): `POST` and `GET /v1/files/{id}/shares`,
 * `DELETE /v1/shares/{id}`, and the POST of a share's password form at `/s/{token}`. The share
 * URL's GET and HEAD are served on the content path (serving/content.ts, http/share-content.ts).
 */
import { serialize as serializeCookie } from "cookie";
import { Elysia } from "elysia";
import { AppError } from "../errors.ts";
import { parseFileId } from "../domain/params.ts";
import { toShareJson, type ShareRow } from "../domain/share.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { FileService } from "../service/files.ts";
import type { ShareService } from "../service/shares.ts";
import { onlyFields, optionalString, readBounded, readJsonObject } from "./json-body.ts";
import { sharePasswordPage } from "./pages.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";
import { checkFormPassword, SHARE_UNLOCK_COOKIE, unlockValue } from "./share-content.ts";

export interface SharesRoutesDeps {
  files: FileService;
  shares: ShareService;
  auth: Authenticator;
  baseUrl: () => string;
}

const raw = { parse: "none" } as const;
const SHARE_FIELDS = new Set(["expire_time", "ttl", "max_downloads", "password"]);
/** Largest body read for a new share or a password form, in bytes. */
const MAX_BODY_BYTES = 16 * 1024;

/** The share routes as an Elysia plugin. */
export function sharesRoutes(deps: SharesRoutesDeps) {
  const { auth, shares } = deps;
  const toJson = (s: ShareRow) => toShareJson(deps.baseUrl(), s);
  return new Elysia({ name: "shares-routes" })
    .use(requestContext)
    .post(
      "/v1/files/:id/shares",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        const id = parseFileId(params.id);
        const body = await readJsonObject(request, { maxBytes: MAX_BODY_BYTES, emptyIsObject: true, what: "the share's settings" });
        onlyFields(body, SHARE_FIELDS);
        const max = body.max_downloads;
        if (max !== undefined && max !== null && typeof max !== "number") throw new AppError("invalid_argument", "max_downloads: a whole number, or null for no limit");
        const input = {
          expiresAt: deps.files.expiryFrom({ expire_time: optionalString(body, "expire_time"), ttl: optionalString(body, "ttl") }),
          maxDownloads: max as number | null | undefined,
          password: optionalString(body, "password"),
        };
        return json(toJson(await shares.create(principal, id, input)));
      },
      raw,
    )
    .get(
      "/v1/files/:id/shares",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        return json({ shares: (await shares.list(principal, parseFileId(params.id))).map(toJson) });
      },
      raw,
    )
    .delete(
      "/v1/shares/:id",
      async ({ request, params, requestContext }) => {
        const principal = await auth.require(authRequest(request, requestContext));
        await shares.delete(principal, params.id);
        return json({});
      },
      raw,
    )
    .post(
      "/s/:token",
      async ({ request, params, requestContext }) => {
        const form = await readPasswordForm(request);
        const { share, ok } = await checkFormPassword(deps, requestContext.clientAddress, params.token, form);
        if (!ok) {
          const page = sharePasswordPage(401, "Wrong password. Try again.");
          return new Response(page.body, { status: page.status, headers: page.headers });
        }
        const path = `/s/${params.token}`;
        const cookie = serializeCookie(SHARE_UNLOCK_COOKIE, unlockValue(share), {
          path,
          httpOnly: true,
          sameSite: "lax",
          secure: deps.baseUrl().startsWith("https:"),
          maxAge: 24 * 3600,
        });
        return new Response(null, { status: 303, headers: { location: path, "set-cookie": cookie, "cache-control": "no-store" } });
      },
      raw,
    );
}

/** `password` from the form's `application/x-www-form-urlencoded` body. @throws invalid_argument / unsupported_media_type */
async function readPasswordForm(request: Request): Promise<string> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) {
    throw new AppError("unsupported_media_type", "send the password form as application/x-www-form-urlencoded");
  }
  const text = await readBounded(request, MAX_BODY_BYTES);
  const password = new URLSearchParams(text).get("password");
  if (password === null) throw new AppError("invalid_argument", "the form has no password");
  return password;
}
