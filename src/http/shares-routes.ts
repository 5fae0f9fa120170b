/**
 * REST routes for share links (CONTRACT §8): `POST` and `GET /v1/files/{id}/shares` and
 * `/v1/folders/{id}/shares` (CONTRACT §12), `POST` (several items) and `GET /v1/shares`,
 * `PATCH` and `DELETE /v1/shares/{id}` (CONTRACT §15), and the POST of a share's password form at `/s/{token}`. The share
 * URL's GET and HEAD are served on the content path (serving/content.ts, serving/share-reply.ts).
 */
import { serialize as serializeCookie } from "cookie";
import { Elysia, t } from "elysia";
import { AppError } from "../errors.ts";
import { MAX_SHARE_ITEMS, toShareDetailJson, toShareDownloadJson, toShareJson, type ShareItemJson, type ShareRow } from "../domain/share.ts";
import type { Authenticator } from "../auth/principal.ts";
import type { FileService } from "../service/files.ts";
import { checkMaxDownloads, checkSharePassword, MAX_DOWNLOADS, MAX_PASSWORD_CHARS, type ShareChanges, type ShareInput, type ShareService } from "../service/shares.ts";
import { ANYONE, AUTH, detail, errors, errorsOrPages, html, LOCATION, ok, SERVER } from "./describe.ts";
import { bodyString, checked, closedBody, expiryFields, fileIdParams, jsonBody, pagingQuery, strictQuery } from "./inputs.ts";
import { DEFAULT_PAGE_SIZE, nextPageField, nextPageToken, type Page } from "../domain/params.ts";
import { readBounded } from "./json-body.ts";
import { negotiatedError, sharePasswordPage } from "../serving/pages.ts";
import { report } from "../context/report.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";
import { checkFormPassword, SHARE_UNLOCK_COOKIE, unlockValue } from "../serving/share-reply.ts";

export interface SharesRoutesDeps {
  files: FileService;
  shares: ShareService;
  auth: Authenticator;
  baseUrl: () => string;
}

/** Largest body read for a new share or a password form, in bytes. */
const MAX_BODY_BYTES = 16 * 1024;

/** `{id}` of a folder. */
const folderIdParams = t.Object({ id: t.String({ description: "Folder ID" }) });

/** `{token}` of a share link's URL. */
const tokenParams = t.Object({ token: t.String({ description: "The share's token (from its `url`)" }) });

/** `max_downloads` of a share's body: a whole number in range, or null for no limit. */
const maxDownloadsField = checked({ type: ["integer", "null"], minimum: 1, maximum: MAX_DOWNLOADS, description: "Downloads (GETs from byte 0) before the link answers 410; null: no limit" }, (raw) => {
  if (raw !== null && typeof raw !== "number") throw new AppError("invalid_argument", "max_downloads: a whole number, or null for no limit");
  if (raw !== null) checkMaxDownloads(raw);
  return raw;
});

/**
 * `items` of `POST /v1/shares` and `PATCH /v1/shares/{id}` (CONTRACT §15): 1 … MAX_SHARE_ITEMS
 * objects, each `{"file_id"}` or `{"folder_id"}` and nothing else.
 */
const itemsField = checked(
  {
    type: "array",
    minItems: 1,
    maxItems: MAX_SHARE_ITEMS,
    items: {
      oneOf: [
        { type: "object", properties: { file_id: { type: "string" } }, required: ["file_id"], additionalProperties: false },
        { type: "object", properties: { folder_id: { type: "string" } }, required: ["folder_id"], additionalProperties: false },
      ],
    },
    description: `The files and folders the link shares, 1 to ${MAX_SHARE_ITEMS}, each once, in the order its page lists them`,
  },
  (raw): ShareItemJson[] => {
    const shape = `items: a list of 1 to ${MAX_SHARE_ITEMS} objects, each {"file_id": "…"} or {"folder_id": "…"}`;
    if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_SHARE_ITEMS) throw new AppError("invalid_argument", shape);
    return raw.map((item: unknown) => {
      const keys = item !== null && typeof item === "object" && !Array.isArray(item) ? Object.keys(item) : [];
      const value = keys.length === 1 ? (item as Record<string, unknown>)[keys[0]!] : undefined;
      if (typeof value !== "string" || (keys[0] !== "file_id" && keys[0] !== "folder_id")) throw new AppError("invalid_argument", shape);
      return keys[0] === "file_id" ? { file_id: value } : { folder_id: value };
    });
  },
);

/** A new share's settings, every one optional (CONTRACT §8): expiry, download limit, password. */
const shareSettings = {
  ...expiryFields,
  max_downloads: t.Optional(maxDownloadsField),
  password: t.Optional(
    bodyString("password", { minLength: 1, maxLength: MAX_PASSWORD_CHARS, description: "Asked for as the password of HTTP Basic authentication; its length counted in UTF-16 code units" }, (raw) => {
      checkSharePassword(raw);
      return raw;
    }),
  ),
};

const newShareBody = jsonBody(closedBody(shareSettings, "Every field optional; an empty body is `{}`"), { maxBytes: MAX_BODY_BYTES, emptyIsObject: true, what: "the share's settings" });

/** `POST /v1/shares`'s body (CONTRACT §15): the items, and a share's settings as for one file. */
const newItemsShareBody = jsonBody(closedBody({ items: itemsField, ...shareSettings }, "`items` required; the rest optional"), { maxBytes: MAX_BODY_BYTES, what: "the share's items and settings" });

/** `PATCH /v1/shares/{id}`'s body (CONTRACT §15): what is given changes, what is not stays. */
const shareChangesBody = jsonBody(
  closedBody(
    {
      ...expiryFields,
      items: t.Optional(itemsField),
      max_downloads: t.Optional(maxDownloadsField),
      password: t.Optional(
        checked({ type: ["string", "null"], minLength: 1, maxLength: MAX_PASSWORD_CHARS, description: "A new password; null removes it. Either way, what the old one unlocked is locked again" }, (raw) => {
          if (raw !== null && typeof raw !== "string") throw new AppError("invalid_argument", "password: a string, or null for none");
          if (raw !== null) checkSharePassword(raw);
          return raw;
        }),
      ),
    },
    'Every field optional; `expire_time` "" means never; `items` makes it a share of those items',
  ),
  { maxBytes: MAX_BODY_BYTES, what: "the share's changes" },
);

/** The share routes as an Elysia plugin. */
export function sharesRoutes(deps: SharesRoutesDeps) {
  return (
    new Elysia({ name: "shares-routes" })
      .use(requestContext)
      // The password form of a share link: anyone with the link, so before authentication.
      .post(
        "/s/:token",
        async ({ request, params, requestContext }) => {
          let share: ShareRow;
          try {
            const form = await readPasswordForm(request);
            const checked = await checkFormPassword(deps, requestContext.clientAddress, params.token, form);
            if (!checked.ok) {
              const page = sharePasswordPage(401, "Wrong password. Try again.");
              return new Response(page.body, { status: page.status, headers: page.headers });
            }
            share = checked.share;
          } catch (err) {
            // The form is a recipient's (CONTRACT §15): too many wrong passwords (429), a share
            // gone meanwhile (410), are pages for them, with their way back, as the share's own
            // URL answers them; a program posting the form gets the JSON of §2.
            const error = report(err, requestContext);
            const answer = negotiatedError(error, request.headers.get("accept"), request.method, undefined, "recipient");
            return new Response(answer.body ?? null, { status: answer.status, headers: answer.headers });
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
        {
          params: tokenParams,
          parse: "none",
          detail: detail({
            operationId: "unlockShare",
            summary: "The password form's POST: leaves an unlock cookie and redirects back",
            tags: ["shares"],
            security: ANYONE,
            requestBody: {
              required: true,
              content: { "application/x-www-form-urlencoded": { schema: { type: "object", properties: { password: { type: "string" } }, required: ["password"] } } },
            },
            responses: {
              "303": { description: "Unlocked: back to the share's URL", headers: LOCATION },
              "401": { description: "Wrong password: the form again", content: html },
              ...errorsOrPages(400, 404, 410, 415, 429, ...SERVER),
            },
          }),
        },
      )
      .use(sharesOfFiles(deps))
  );
}

/** The authenticated share routes: their own plugin, so that its authentication runs for them alone. */
function sharesOfFiles(deps: SharesRoutesDeps) {
  const { auth, shares } = deps;
  const toJson = (s: ShareRow) => toShareJson(deps.baseUrl(), s);
  const pageJson = (page: Page<ShareRow>) => json({ shares: page.items.map(toJson), ...nextPageField(page) });
  const inputOf = (body: { expire_time?: string | undefined; ttl?: string | undefined; max_downloads?: number | null | undefined; password?: string | undefined }): ShareInput => ({
    expiresAt: deps.files.expiryFrom({ expire_time: body.expire_time, ttl: body.ttl }),
    maxDownloads: body.max_downloads,
    password: body.password,
  });
  return (
    new Elysia({ name: "shares-of-files" })
      .use(requestContext)
      .derive(async ({ request, requestContext }) => ({ principal: await auth.require(authRequest(request, requestContext)) }))
      .post(
        "/v1/files/:id/shares",
        async ({ principal, params, body }) => {
          return json(toJson(await shares.create(principal, params.id, inputOf(body))));
        },
        {
          params: fileIdParams,
          ...newShareBody,
          detail: detail({
            operationId: "createShare",
            summary: "Share a file by link",
            tags: ["shares"],
            responses: { ...ok("Share"), ...errors(400, 404, 415, ...AUTH) },
          }),
        },
      )
      .get("/v1/files/:id/shares", async ({ principal, params, query }) => pageJson(await shares.list(principal, params.id, query.page_size ?? DEFAULT_PAGE_SIZE, query.page_token)), {
        params: fileIdParams,
        ...strictQuery(pagingQuery),
        detail: detail({ operationId: "listShares", summary: "A file's share links", tags: ["shares"], responses: { ...ok("ShareList"), ...errors(400, 404, ...AUTH) } }),
      })
      .post(
        "/v1/folders/:id/shares",
        async ({ principal, params, body }) => {
          return json(toJson(await shares.createForFolder(principal, params.id, inputOf(body))));
        },
        {
          params: folderIdParams,
          ...newShareBody,
          detail: detail({
            operationId: "createFolderShare",
            summary: "Share a folder by link: a page of its files and one ZIP (CONTRACT §12)",
            tags: ["shares"],
            responses: { ...ok("Share"), ...errors(400, 404, 415, ...AUTH) },
          }),
        },
      )
      .get("/v1/folders/:id/shares", async ({ principal, params, query }) => pageJson(await shares.listForFolder(principal, params.id, query.page_size ?? DEFAULT_PAGE_SIZE, query.page_token)), {
        params: folderIdParams,
        ...strictQuery(pagingQuery),
        detail: detail({ operationId: "listFolderShares", summary: "A folder's share links", tags: ["shares"], responses: { ...ok("ShareList"), ...errors(400, 404, ...AUTH) } }),
      })
      .post(
        "/v1/shares",
        async ({ principal, body }) => {
          return json(toShareDetailJson(deps.baseUrl(), await shares.createForItems(principal, body.items, inputOf(body))));
        },
        {
          ...newItemsShareBody,
          detail: detail({
            operationId: "createItemsShare",
            summary: "Share several files and folders by one link: a page listing them, each downloadable, and all as one ZIP (CONTRACT §15)",
            tags: ["shares"],
            responses: { ...ok("ShareDetail"), ...errors(400, 404, 415, ...AUTH) },
          }),
        },
      )
      .get(
        "/v1/shares",
        async ({ principal, query }) => {
          const page = await shares.listAll(principal, query.page_size ?? DEFAULT_PAGE_SIZE, query.page_token);
          return json({ shares: page.items.map((s) => toShareDetailJson(deps.baseUrl(), s)), next_page_token: nextPageToken(page) });
        },
        {
          ...strictQuery(pagingQuery),
          detail: detail({
            operationId: "listAllShares",
            summary: "Every share link of the caller's, files' and folders', newest first, with what each holds and its last download (CONTRACT §15)",
            tags: ["shares"],
            responses: { ...ok("ShareDetailList"), ...errors(400, ...AUTH) },
          }),
        },
      )
      .get(
        "/v1/shares/:id/downloads",
        async ({ principal, params, query }) => {
          const page = await shares.downloads(principal, params.id, query.page_size ?? DEFAULT_PAGE_SIZE, query.page_token);
          return json({ downloads: page.items.map(toShareDownloadJson), next_page_token: nextPageToken(page) }, 200, { "cache-control": "no-store" });
        },
        {
          params: t.Object({ id: t.String({ description: "Share ID" }) }),
          ...strictQuery(pagingQuery),
          detail: detail({
            operationId: "listShareDownloads",
            summary: "A share's access log, newest first: when, what, how many bytes, whether it completed, from which network (CONTRACT §15; kept 90 days)",
            tags: ["shares"],
            responses: { ...ok("ShareDownloadList"), ...errors(400, 404, ...AUTH) },
          }),
        },
      )
      .patch(
        "/v1/shares/:id",
        async ({ principal, params, body }) => {
          const changes: ShareChanges = {
            expiresAt: deps.files.expiryFrom({ expire_time: body.expire_time, ttl: body.ttl }, { allowClear: true }),
            maxDownloads: body.max_downloads,
            password: body.password,
            items: body.items,
          };
          return json(toShareDetailJson(deps.baseUrl(), await shares.update(principal, params.id, changes)));
        },
        {
          params: t.Object({ id: t.String({ description: "Share ID" }) }),
          ...shareChangesBody,
          detail: detail({
            operationId: "updateShare",
            summary: "Change a share link's expiry, download limit, password or items (CONTRACT §15)",
            tags: ["shares"],
            responses: { ...ok("ShareDetail"), ...errors(400, 404, 415, ...AUTH) },
          }),
        },
      )
      .delete(
        "/v1/shares/:id",
        async ({ principal, params }) => {
          await shares.delete(principal, params.id);
          return json({});
        },
        {
          params: t.Object({ id: t.String({ description: "Share ID" }) }),
          parse: "none",
          detail: detail({
            operationId: "deleteShare",
            summary: "Delete a share link (its URL answers 410 from then on)",
            tags: ["shares"],
            responses: { ...ok("Empty"), ...errors(400, 404, ...AUTH) },
          }),
        },
      )
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
