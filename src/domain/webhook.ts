/**
 * Webhooks (CONTRACT §13): the endpoint row, its JSON, the event types, and the parsers of what a
 * client sends. Deliveries follow Standard Webhooks (https://www.standardwebhooks.com).
 */
import { AppError } from "../errors.ts";
import { formatTimestamp } from "./time.ts";

/** Every event type of CONTRACT §13, in the order the contract lists them. */
export const EVENT_TYPES = ["file.created", "file.updated", "file.deleted", "share.downloaded", "folder.shared"] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** A webhook endpoint as stored. Times are Unix microseconds. */
export interface WebhookRow {
  id: string;
  ownerId: string;
  url: string;
  /** Space-separated {@link EventType}s. */
  events: string;
  /** `whsec_` + base64 of 32 random bytes (Standard Webhooks' secret format). */
  secret: string;
  createdAt: number;
}

/** The Webhook object of CONTRACT §13 as listed: never the secret. */
export interface WebhookJson {
  id: string;
  url: string;
  events: EventType[];
  created_at: string;
}

/** A webhook just created: the one answer that carries its secret. */
export interface NewWebhookJson extends WebhookJson {
  secret: string;
}

/** One delivery attempt as stored. Times are Unix microseconds. */
export interface WebhookAttemptRow {
  eventId: string;
  type: string;
  attemptedAt: number;
  /** The receiver's HTTP status; null when none came. */
  status: number | null;
  /** Why it failed; "" when it did not. */
  error: string;
  durationMs: number;
}

/** An attempt as GET /v1/webhooks/{id}/deliveries lists it. */
export interface WebhookAttemptJson {
  event_id: string;
  type: string;
  attempted_at: string;
  /** null: no HTTP answer (refused target, timeout, connection error). */
  status: number | null;
  error: string;
  duration_ms: number;
}

/** Longest webhook URL accepted, in characters. */
export const MAX_WEBHOOK_URL_CHARS = 2048;

/** Most webhooks one user may have: each event fans out to every one of them in its transaction. */
export const MAX_WEBHOOKS_PER_USER = 20;

/** The listed form of a webhook. */
export function toWebhookJson(row: WebhookRow): WebhookJson {
  return { id: row.id, url: row.url, events: parseStoredEvents(row.events), created_at: formatTimestamp(row.createdAt) };
}

/** An attempt's JSON. */
export function toWebhookAttemptJson(a: WebhookAttemptRow): WebhookAttemptJson {
  return { event_id: a.eventId, type: a.type, attempted_at: formatTimestamp(a.attemptedAt), status: a.status, error: a.error, duration_ms: a.durationMs };
}

/**
 * The `events` of a new webhook: absent means every type; otherwise a non-empty array of known
 * types, each at most once.
 * @throws AppError invalid_argument naming `events`
 */
export function parseEvents(raw: unknown): EventType[] {
  if (raw === undefined) return [...EVENT_TYPES];
  if (!Array.isArray(raw) || raw.length === 0) throw new AppError("invalid_argument", `events: a non-empty array of ${EVENT_TYPES.join(", ")}`);
  const seen = new Set<EventType>();
  for (const e of raw) {
    if (typeof e !== "string" || !(EVENT_TYPES as readonly string[]).includes(e)) {
      throw new AppError("invalid_argument", `events: unknown event type ${JSON.stringify(String(e)).slice(0, 60)} (known: ${EVENT_TYPES.join(", ")})`);
    }
    if (seen.has(e as EventType)) throw new AppError("invalid_argument", `events: ${e} given twice`);
    seen.add(e as EventType);
  }
  return EVENT_TYPES.filter((t) => seen.has(t));
}

/** The stored `events` column as types (unknown ones, from a newer version, are skipped). */
export function parseStoredEvents(stored: string): EventType[] {
  const listed = new Set(stored.split(" "));
  return EVENT_TYPES.filter((t) => listed.has(t));
}

/**
 * A webhook URL's syntax: absolute `http` or `https`, no credentials, no fragment, at most
 * {@link MAX_WEBHOOK_URL_CHARS}. Where it may point is the target check's (service/webhook-target.ts).
 * @returns the URL parsed
 * @throws AppError invalid_argument naming `url`
 */
export function parseWebhookUrl(raw: unknown): URL {
  if (typeof raw !== "string" || raw === "") throw new AppError("invalid_argument", "url: an http or https URL is required");
  if (raw.length > MAX_WEBHOOK_URL_CHARS) throw new AppError("invalid_argument", `url: at most ${MAX_WEBHOOK_URL_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError("invalid_argument", "url: not a URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new AppError("invalid_argument", "url: only http and https URLs are allowed");
  if (url.username !== "" || url.password !== "") throw new AppError("invalid_argument", "url: credentials in the URL are not allowed; authenticate with the signature");
  if (url.hash !== "") throw new AppError("invalid_argument", "url: a fragment is never sent; leave it out");
  return url;
}

/**
 * The body of a delivery (Standard Webhooks): `{"type","timestamp","data"}`, `timestamp` being
 * when the event happened (RFC 3339); the same bytes on every attempt.
 */
export function eventPayload(type: EventType, atMicros: number, data: unknown): string {
  return JSON.stringify({ type, timestamp: formatTimestamp(atMicros), data });
}
