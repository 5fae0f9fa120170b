/**
 * The fair claim of webhook deliveries (CONTRACT §13, §14 "Fair delivery"), shared by the SQLite
 * and PostgreSQL stores (storage/sqlite-webhooks.ts, storage/pg-webhooks.ts). A claim is two
 * steps:
 *
 * 1. {@link LaneWindow.read}: the webhooks that have pending deliveries, at most
 *    {@link LANE_WINDOW} of them, each with whether one is due and unclaimed, its attempts in
 *    flight (leases still running) and when it and its owner were last served. It walks the
 *    distinct webhooks of the pending deliveries through the index
 *    `webhook_deliveries_webhook_due_idx` (a skip scan: one index probe per webhook, starting
 *    after where the previous claim of this process stopped, wrapping around), and asks each
 *    webhook's own index entries for the rest. So its cost is bounded by the window, never by
 *    how many deliveries or webhooks are pending; with more webhooks pending than the window
 *    holds, each is looked at within ⌈webhooks / window⌉ claims.
 * 2. {@link allotRoundRobin} decides how many deliveries each of those webhooks gets; the store
 *    then claims them webhook by webhook (re-counting each one's attempts in flight inside the
 *    write transaction, so that the cap holds across processes and instances) and marks each
 *    webhook served (`webhooks.served_at`).
 */
import { sql, type SQL } from "drizzle-orm";
import type { ClaimedDelivery } from "./ports.ts";

/** Webhooks with pending deliveries one claim looks at, at most. */
export const LANE_WINDOW = 128;

/** A webhook with pending deliveries, as {@link lanesQuery} finds it. Times in µs. */
export interface WebhookLane {
  webhookId: string;
  ownerId: string;
  /** When one of its deliveries was last claimed; 0: never. */
  servedAt: number;
  /** The latest `servedAt` of its owner's webhooks. */
  ownerServedAt: number;
  /** Its deliveries claimed under a lease still running, by any process of any instance. */
  inFlight: number;
  /** It has a delivery due and not held by a running lease. */
  due: boolean;
}

/**
 * Rows of {@link lanesQuery} as a driver returns them: PostgreSQL's bigint and count as strings;
 * `due` 1 or null (a scalar subquery with LIMIT 1 rather than EXISTS, which PostgreSQL may turn
 * into a hashed subplan reading every pending delivery).
 */
export type LaneRow = { [K in keyof WebhookLane]: string | number | boolean | null };

/**
 * Up to `max` webhooks with pending deliveries, in ID order after `after` (""; from the first),
 * with the columns of {@link WebhookLane}, at `now` (µs). The same SQL runs on SQLite and
 * PostgreSQL: a recursive skip scan, one index probe per webhook.
 */
export function lanesQuery(now: number, after: string, max: number): SQL {
  return sql`
    WITH RECURSIVE hooks(id, k) AS (
      SELECT (SELECT min(f.webhook_id) FROM webhook_deliveries f WHERE f.delivered_at IS NULL AND f.failed_at IS NULL AND f.webhook_id > ${after}), 1
      UNION ALL
      SELECT (SELECT min(n.webhook_id) FROM webhook_deliveries n WHERE n.delivered_at IS NULL AND n.failed_at IS NULL AND n.webhook_id > hooks.id), hooks.k + 1
      FROM hooks WHERE hooks.id IS NOT NULL AND hooks.k < ${max}
    )
    SELECT w.id AS "webhookId", w.owner_id AS "ownerId", w.served_at AS "servedAt",
      (SELECT max(o.served_at) FROM webhooks o WHERE o.owner_id = w.owner_id) AS "ownerServedAt",
      (SELECT count(*) FROM webhook_deliveries c WHERE c.webhook_id = w.id AND c.delivered_at IS NULL AND c.failed_at IS NULL AND c.claimed_until > ${now}) AS "inFlight",
      (
        SELECT 1 FROM webhook_deliveries e
        WHERE e.webhook_id = w.id AND e.delivered_at IS NULL AND e.failed_at IS NULL AND e.next_attempt_at <= ${now}
          AND (e.claimed_until IS NULL OR e.claimed_until <= ${now})
        LIMIT 1
      ) AS "due"
    FROM hooks JOIN webhooks w ON w.id = hooks.id
    ORDER BY w.id`;
}

/** A {@link LaneRow} with numbers for numbers and a boolean for `due`. */
export function toLane(r: LaneRow): WebhookLane {
  return {
    webhookId: String(r.webhookId),
    ownerId: String(r.ownerId),
    servedAt: Number(r.servedAt),
    ownerServedAt: Number(r.ownerServedAt),
    inFlight: Number(r.inFlight),
    due: Number(r.due) === 1,
  };
}

/**
 * One process's window onto the webhooks with pending deliveries: each {@link read} looks at up
 * to {@link LANE_WINDOW} of them after where the previous one stopped, wrapping around to the
 * first, so every webhook comes into view however many there are.
 */
export class LaneWindow {
  /** The last webhook ID the previous read looked at; "" to start from the first. */
  private cursor = "";

  /**
   * The webhooks in view whose deliveries are due.
   * @param query runs {@link lanesQuery} for (after, max) and returns its rows
   */
  async read(query: (after: string, max: number) => Promise<LaneRow[]> | LaneRow[]): Promise<WebhookLane[]> {
    const start = this.cursor;
    const first = (await query(start, LANE_WINDOW)).map(toLane);
    let seen = first;
    if (first.length < LANE_WINDOW && start !== "") {
      // The end reached: on from the first, up to where this read started.
      const wrapped = (await query("", LANE_WINDOW - first.length)).map(toLane).filter((l) => l.webhookId <= start);
      seen = [...first, ...wrapped];
      this.cursor = wrapped.length === LANE_WINDOW - first.length ? wrapped[wrapped.length - 1]!.webhookId : "";
    } else {
      this.cursor = first.length === LANE_WINDOW ? first[first.length - 1]!.webhookId : "";
    }
    return seen.filter((l) => l.due);
  }
}

/**
 * Up to `limit` of a webhook's deliveries claimable at `now` (µs), earliest due first, as a
 * subquery of `seq`s: pending, due, not held by a running lease, and the first pending one of
 * their subject (events of one file go in order). Read through
 * `webhook_deliveries_webhook_due_idx`: its cost grows with this webhook's due deliveries only.
 */
export function dueOfWebhook(webhookId: string, now: number, limit: number): SQL {
  return sql`
    SELECT q.seq FROM webhook_deliveries q
    WHERE q.webhook_id = ${webhookId} AND q.delivered_at IS NULL AND q.failed_at IS NULL AND q.next_attempt_at <= ${now}
      AND (q.claimed_until IS NULL OR q.claimed_until <= ${now})
      AND NOT EXISTS (
        SELECT 1 FROM webhook_deliveries p
        WHERE p.webhook_id = q.webhook_id AND p.subject = q.subject AND p.seq < q.seq AND p.delivered_at IS NULL AND p.failed_at IS NULL
      )
    ORDER BY q.next_attempt_at, q.seq
    LIMIT ${limit}`;
}

/**
 * Claims for `claimer` until `leaseUntil` (µs) up to `limit` of a webhook's deliveries claimable
 * at `now` ({@link dueOfWebhook}), re-checking each row as it is updated, and returns them as
 * {@link ClaimedRow}s. Through the primary key and `webhook_deliveries_webhook_due_idx`.
 */
export function claimOfWebhook(claimer: string, leaseUntil: number, webhookId: string, now: number, limit: number): SQL {
  return sql`
    UPDATE webhook_deliveries SET claimed_by = ${claimer}, claimed_until = ${leaseUntil}
    WHERE seq IN (${dueOfWebhook(webhookId, now, limit)})
      AND delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ${now} AND (claimed_until IS NULL OR claimed_until <= ${now})
    RETURNING seq, event_id AS "eventId", webhook_id AS "webhookId", type, subject, payload, created_at AS "createdAt", attempts`;
}

/** A row {@link claimOfWebhook} returns, as a driver gives it (PostgreSQL's bigints as strings). */
export interface ClaimedRow {
  seq: number | string;
  eventId: string;
  webhookId: string;
  type: string;
  subject: string;
  payload: string;
  createdAt: number | string;
  attempts: number | string;
}

/** A {@link ClaimedRow} with its webhook's URL and secret, as the deliverer takes it. */
export function toClaimed(r: ClaimedRow, target: { url: string; secret: string }): ClaimedDelivery {
  return {
    seq: Number(r.seq),
    eventId: r.eventId,
    webhookId: r.webhookId,
    type: r.type,
    subject: r.subject,
    payload: r.payload,
    createdAt: Number(r.createdAt),
    attempts: Number(r.attempts),
    url: target.url,
    secret: target.secret,
  };
}

/**
 * How many of a webhook's deliveries are claimed under a lease still running at `now` (µs), as
 * column `n`: its attempts in flight. Read through `webhook_deliveries_webhook_claimed_idx`.
 */
export function inFlightOf(webhookId: string, now: number): SQL {
  return sql`SELECT count(*) AS n FROM webhook_deliveries c WHERE c.webhook_id = ${webhookId} AND c.delivered_at IS NULL AND c.failed_at IS NULL AND c.claimed_until > ${now}`;
}

/** The outbox columns an attempt's outcome sets: delivered, given up, or when to try again (µs). */
export function settledColumns(outcome: { attemptedAt: number; delivered: boolean; nextAttemptAt: number | null }): { deliveredAt: number } | { failedAt: number } | { nextAttemptAt: number } {
  if (outcome.delivered) return { deliveredAt: outcome.attemptedAt };
  return outcome.nextAttemptAt === null ? { failedAt: outcome.attemptedAt } : { nextAttemptAt: outcome.nextAttemptAt };
}

/**
 * How many deliveries to claim of each webhook: `limit` in all, round robin across owners (the
 * one served least recently first) and, within an owner, across their webhooks (likewise), one
 * delivery per turn, each webhook at most `perWebhook` − its attempts in flight. A webhook may
 * get more than it has due; the claim takes what there is.
 * @returns webhook ID → deliveries to claim, in the order the turns first reached them
 */
export function allotRoundRobin(lanes: readonly WebhookLane[], limit: number, perWebhook: number): Map<string, number> {
  const byOwner = new Map<string, WebhookLane[]>();
  const order = [...lanes].sort((a, b) => a.ownerServedAt - b.ownerServedAt || cmp(a.ownerId, b.ownerId) || a.servedAt - b.servedAt || cmp(a.webhookId, b.webhookId));
  for (const lane of order) {
    if (lane.inFlight >= perWebhook) continue;
    const mine = byOwner.get(lane.ownerId);
    if (mine === undefined) byOwner.set(lane.ownerId, [lane]);
    else mine.push(lane);
  }
  const queues = [...byOwner.values()];
  const next = queues.map(() => 0);
  const allot = new Map<string, number>();
  let left = limit;
  for (let progressed = true; left > 0 && progressed; ) {
    progressed = false;
    for (let i = 0; i < queues.length && left > 0; i++) {
      const queue = queues[i]!;
      for (let tried = 0; tried < queue.length; tried++) {
        const lane = queue[next[i]! % queue.length]!;
        next[i] = next[i]! + 1;
        const given = allot.get(lane.webhookId) ?? 0;
        if (given < perWebhook - lane.inFlight) {
          allot.set(lane.webhookId, given + 1);
          left--;
          progressed = true;
          break;
        }
      }
    }
  }
  return allot;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
