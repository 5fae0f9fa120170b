/**
 * REST routes for webhooks (CONTRACT §13): `POST` and `GET /v1/webhooks`, `DELETE
 * /v1/webhooks/{id}`, `GET /v1/webhooks/{id}/deliveries`. The deliveries themselves are
 * service/webhook-deliverer.ts's.
 */
import { Elysia, t } from "elysia";
import type { Authenticator } from "../auth/principal.ts";
import { AppError } from "../errors.ts";
import { EVENT_TYPES, MAX_WEBHOOK_URL_CHARS, parseEvents, parseWebhookUrl, toWebhookAttemptJson, toWebhookJson, type EventType } from "../domain/webhook.ts";
import { DELIVERY_PAGE_SIZE, type WebhookService } from "../service/webhooks.ts";
import { MAX_PAGE_SIZE, parsePageSize } from "../domain/params.ts";
import { detail, errors, ok, AUTH } from "./describe.ts";
import { checked, closedBody, jsonBody, PAGE_TOKEN, queryParsed, strictQuery } from "./inputs.ts";
import { authRequest, requestContext } from "./request-context.ts";
import { json } from "./respond.ts";

export interface WebhooksRoutesDeps {
  webhooks: WebhookService;
  auth: Authenticator;
}

/** Largest body of a new webhook, bytes. */
const MAX_BODY_BYTES = 16 * 1024;

const newWebhookBody = jsonBody(
  closedBody({
    // events before url: TypeBox checks in this order, so a body with a bad events and no url is refused naming events.
    events: t.Optional(
      checked<EventType[]>(
        { type: "array", items: { type: "string", enum: [...EVENT_TYPES] }, minItems: 1, uniqueItems: true, description: "The event types to receive; absent: all" },
        (raw) => {
          parseEvents(raw);
          return raw as EventType[];
        },
      ),
    ),
    url: checked(
      { type: "string", format: "uri", maxLength: MAX_WEBHOOK_URL_CHARS, description: "Where events are POSTed: http or https, a public address unless WEBHOOK_ALLOWED_HOSTS allows it" },
      (raw) => {
        parseWebhookUrl(raw);
        return raw as string;
      },
    ),
  }),
  { maxBytes: MAX_BODY_BYTES, what: "the webhook" },
);

/** `{id}` of /v1/webhooks/{id}. */
const webhookIdParams = t.Object({
  id: checked({ type: "string", pattern: "^wh_[A-Za-z0-9_-]{21}$", description: "Webhook ID" }, (raw) => {
    if (typeof raw !== "string" || !/^wh_[A-Za-z0-9_-]{21}$/.test(raw)) throw new AppError("invalid_argument", "id: not a webhook ID");
    return raw;
  }),
});

/** The webhook routes as an Elysia plugin; every one needs a key or a session. */
export function webhooksRoutes(deps: WebhooksRoutesDeps) {
  const { auth, webhooks } = deps;
  return new Elysia({ name: "webhooks-routes" })
    .use(requestContext)
    .derive(async ({ request, requestContext }) => ({ principal: await auth.require(authRequest(request, requestContext)) }))
    .post(
      "/v1/webhooks",
      async ({ principal, body }) => {
        const row = await webhooks.create(principal, parseWebhookUrl(body.url), parseEvents(body.events));
        return json({ ...toWebhookJson(row), secret: row.secret });
      },
      {
        ...newWebhookBody,
        detail: detail({
          operationId: "createWebhook",
          summary: "Add a webhook: its secret is in this answer only",
          tags: ["webhooks"],
          responses: { ...ok("NewWebhook"), ...errors(400, 415, ...AUTH) },
        }),
      },
    )
    .get("/v1/webhooks", async ({ principal }) => json({ webhooks: (await webhooks.list(principal)).map(toWebhookJson) }), {
      parse: "none",
      detail: detail({ operationId: "listWebhooks", summary: "The caller's webhooks (never their secrets)", tags: ["webhooks"], responses: { ...ok("WebhookList"), ...errors(...AUTH) } }),
    })
    .delete(
      "/v1/webhooks/:id",
      async ({ principal, params }) => {
        await webhooks.delete(principal, params.id);
        return json({});
      },
      {
        params: webhookIdParams,
        parse: "none",
        detail: detail({
          operationId: "deleteWebhook",
          summary: "Delete a webhook; its undelivered events are dropped",
          tags: ["webhooks"],
          responses: { ...ok("Empty"), ...errors(400, 404, ...AUTH) },
        }),
      },
    )
    .get(
      "/v1/webhooks/:id/deliveries",
      async ({ principal, params, query }) => {
        const page = await webhooks.attempts(principal, params.id, query.page_size ?? DELIVERY_PAGE_SIZE, query.page_token);
        return json({ deliveries: page.attempts.map(toWebhookAttemptJson), next_page_token: page.next === undefined ? "" : encodeAttemptToken(page.next) });
      },
      {
        params: webhookIdParams,
        ...strictQuery({
          page_size: queryParsed({ type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DELIVERY_PAGE_SIZE, description: "Attempts per page" }, parsePageSize),
          page_token: queryParsed(PAGE_TOKEN, parseAttemptToken),
        }),
        detail: detail({
          operationId: "listWebhookDeliveries",
          summary: "A webhook's delivery attempts, newest first, a page at a time (100 unless page_size says)",
          tags: ["webhooks"],
          responses: { ...ok("WebhookDeliveryList"), ...errors(400, 404, ...AUTH) },
        }),
      },
    );
}

/** A `page_token` of the deliveries listing: base64url of `a.<seq>`, the last attempt's place in the log. */
export function encodeAttemptToken(seq: number): string {
  return Buffer.from(`a.${seq}`).toString("base64url");
}

/**
 * Decodes {@link encodeAttemptToken}'s token; "" is the first page.
 * @throws AppError invalid_argument for anything else
 */
export function parseAttemptToken(raw: string): number | undefined {
  if (raw === "") return undefined;
  const m = /^[A-Za-z0-9_-]{1,32}$/.test(raw) ? /^a\.(\d{1,15})$/.exec(Buffer.from(raw, "base64url").toString("latin1")) : null;
  if (m === null) throw new AppError("invalid_argument", "page_token: not a token this server issued");
  return Number(m[1]);
}
