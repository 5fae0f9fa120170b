/**
 * The account routes of CONTRACT §15: `GET|PATCH /v1/me` (the caller's display name and whether
 * share pages show their e-mail) and, for administrators only, `GET /v1/admin/users` (paged by
 * e-mail) and `PATCH /v1/admin/users/{id}` (disabled, quota, admin). Authenticated like `/v1/*`
 * (key or same-origin session); anyone else than an administrator gets 403 on /v1/admin.
 */
import { Elysia, t } from "elysia";
import type { Authenticator } from "../auth/principal.ts";
import { MAX_DISPLAY_NAME, parseDisplayName, parseEmail } from "../domain/params.ts";
import { formatTimestamp } from "../domain/time.ts";
import { AppError } from "../errors.ts";
import type { QuotaSetting, UserAdmin, UserSummary } from "../service/user-admin.ts";
import type { Profile, UserService } from "../service/users.ts";
import { AUTH, detail, errors, ok, type Responses } from "./describe.ts";
import { booleanOf, bodyString, checked, closedBody, jsonBody, pagingQuery, queryParsed, strictQuery } from "./inputs.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";

/** Largest body read for a profile or a user's changes, in bytes. */
const MAX_BODY_BYTES = 4096;

/** `/v1/me`'s JSON (CONTRACT §15). */
export interface ProfileJson {
  email: string;
  display_name: string;
  show_email_on_shares: boolean;
}

/** A user as `GET /v1/admin/users` lists them (CONTRACT §15). Bytes; times RFC 3339. */
export interface AdminUserJson {
  id: string;
  email: string;
  display_name: string;
  admin: boolean;
  disabled: boolean;
  /** The quota that applies, bytes; null: none. */
  quota_bytes: number | null;
  /** Where it comes from: their own, QUOTA_BYTES ("default"), or "none" set for them. */
  quota_source: "own" | "default" | "none";
  /** What counts against the quota: files, unfinished uploads, WebDAV properties. */
  used_bytes: number;
  files: number;
  /** "" for never. */
  last_seen_time: string;
  created_at: string;
}

const toProfileJson = (p: Profile): ProfileJson => ({ email: p.email, display_name: p.displayName, show_email_on_shares: p.showEmailOnShares });

/** A {@link UserSummary} as the admin routes answer it. */
export function toAdminUserJson(u: UserSummary): AdminUserJson {
  return {
    id: u.id,
    email: u.email,
    display_name: u.displayName,
    admin: u.admin,
    disabled: u.disabledAt !== null,
    quota_bytes: u.quotaBytes,
    quota_source: u.quotaSource,
    used_bytes: u.fileBytes + u.reservedBytes + u.davBytes,
    files: u.files,
    last_seen_time: u.lastSeenAt === null ? "" : formatTimestamp(u.lastSeenAt),
    created_at: formatTimestamp(u.createdAt),
  };
}

const profileBody = jsonBody(
  closedBody(
    {
      display_name: t.Optional(
        bodyString(
          "display_name",
          { maxLength: MAX_DISPLAY_NAME, pattern: "^[^\\x00-\\x1F\\x7F-\\x9F\\u2028\\u2029]*$", description: `What share and folder pages call you, stored trimmed; "" (or only spaces) for the default, your e-mail's local part` },
          parseDisplayName,
        ),
      ),
      show_email_on_shares: t.Optional(checked({ type: "boolean", description: "Whether share pages also show your e-mail" }, booleanOf("show_email_on_shares"))),
    },
    "Every field optional",
  ),
  { maxBytes: MAX_BODY_BYTES, what: "the profile" },
);

const userChangesBody = jsonBody(
  closedBody(
    {
      disabled: t.Optional(checked({ type: "boolean", description: "Disabled users' keys and sessions are refused; their public files and share links stay served" }, booleanOf("disabled"))),
      quota_bytes: t.Optional(
        checked(
          {
            anyOf: [{ type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER }, { type: "null" }, { enum: ["default", "none"] }],
            description: 'Bytes; "default" follows QUOTA_BYTES; null or "none": no quota. (The CLI and the dashboard take units such as 5G and convert.)',
          },
          parseQuotaField,
        ),
      ),
      admin: t.Optional(checked({ type: "boolean", description: "Promote or demote (ADMIN_EMAILS still makes the addresses it lists administrators)" }, booleanOf("admin"))),
    },
    "Every field optional",
  ),
  { maxBytes: MAX_BODY_BYTES, what: "the user's changes" },
);

/** `quota_bytes` of a user's changes: bytes, "default", or null / "none". @throws AppError invalid_argument */
function parseQuotaField(raw: unknown): QuotaSetting {
  if (raw === null || raw === "none") return "none";
  if (raw === "default") return "default";
  if (typeof raw !== "number" || !Number.isSafeInteger(raw) || raw < 0) throw new AppError("invalid_argument", 'quota_bytes: a whole number of bytes, "default", or null for no quota');
  return raw;
}

/** A `page_token` of the users listing: base64url of the last e-mail of the previous page. @throws AppError invalid_argument */
function parseUserPageToken(raw: string): string {
  if (raw === "") return "";
  try {
    if (!/^[A-Za-z0-9_-]{1,512}$/.test(raw)) throw new Error();
    return parseEmail(Buffer.from(raw, "base64url").toString("utf8"));
  } catch {
    throw new AppError("invalid_argument", "page_token: not a token this server issued");
  }
}

/** The account routes as an Elysia plugin. */
export function accountRoutes(deps: { users: UserService; userAdmin: UserAdmin; auth: Authenticator }) {
  const { users, userAdmin } = deps;
  const op = (operationId: string, summary: string, tags: string[], responses: Responses) => detail({ operationId, summary, tags, responses: { ...responses, ...errors(400, ...AUTH) } });
  return new Elysia({ name: "account-routes" })
    .use(requestContext)
    .derive(async ({ request, requestContext }) => ({ principal: await deps.auth.require(authRequest(request, requestContext)) }))
    .get("/v1/me", async ({ principal }) => json(toProfileJson(await users.profile(principal)), 200, { "cache-control": "no-store" }), {
      parse: "none",
      detail: op("getProfile", "Your e-mail, the name share pages show and whether they show your e-mail (CONTRACT §15)", ["account"], ok("Profile")),
    })
    .patch(
      "/v1/me",
      async ({ principal, body }) => json(toProfileJson(await users.updateProfile(principal, { displayName: body.display_name, showEmailOnShares: body.show_email_on_shares }))),
      { ...profileBody, detail: op("updateProfile", "Change your display name or whether share pages show your e-mail", ["account"], { ...ok("Profile"), ...errors(415) }) },
    )
    .get(
      "/v1/admin/users",
      async ({ principal, query }) => {
        const page = await userAdmin.page(principal, query.page_size ?? 50, query.page_token ?? "");
        return json({ users: page.users.map(toAdminUserJson), next_page_token: page.next === undefined ? "" : Buffer.from(page.next).toString("base64url") }, 200, { "cache-control": "no-store" });
      },
      {
        ...strictQuery({ page_size: pagingQuery.page_size, page_token: queryParsed({ description: '`next_page_token` of the previous page; absent or "" for the first' }, parseUserPageToken) }),
        detail: op("listUsers", "Every user by e-mail with their usage and state; administrators only (CONTRACT §15)", ["admin"], ok("AdminUserList")),
      },
    )
    .patch(
      "/v1/admin/users/:id",
      async ({ principal, params, body }) => json(toAdminUserJson(await userAdmin.update(principal, params.id, { disabled: body.disabled, quota: body.quota_bytes === undefined ? undefined : parseQuotaField(body.quota_bytes), admin: body.admin }))),
      {
        params: t.Object({ id: t.String({ description: "User ID (from GET /v1/admin/users)" }) }),
        ...userChangesBody,
        detail: op("updateUser", "Disable or enable a user, set their quota, promote or demote them; administrators only (CONTRACT §15)", ["admin"], { ...ok("AdminUser"), ...errors(404, 415) }),
      },
    );
}
