/**
 * Webhooks, their outbox and the attempt log (CONTRACT §13) on PostgreSQL: the
 * {@link WebhookTable} part of the PostgreSQL metadata store. A claim (storage/webhook-claims.ts)
 * reads which webhooks have deliveries due, then, in one transaction, locks those webhooks' rows
 * (skipping any another process holds) and claims each one's share with a conditional UPDATE:
 * of two instances claiming at once one gets each row, and each webhook's cap holds.
 */
import { and, asc, desc, eq, inArray, isNull, lt, lte, or, sql } from "drizzle-orm";
import type { PgDb } from "./pg-metadata.ts";
import type { AttemptOutcome, ClaimedDelivery, NewDelivery, SettledAttempt, WebhookAttemptPageRow, WebhookRow, WebhookTable } from "./ports.ts";
import { webhookAttempts, webhookDeliveries, webhooks } from "./pg-schema.ts";
import { allotRoundRobin, claimOfWebhook, inFlightOf, LaneWindow, lanesQuery, settledColumns, toClaimed, type ClaimedRow, type LaneRow } from "./webhook-claims.ts";

const d = webhookDeliveries;

/** Pending: neither delivered nor given up. */
const pending = and(isNull(d.deliveredAt), isNull(d.failedAt));

/** Webhook rows on PostgreSQL, on the pool or inside a transaction (whichever `db` is). */
export class PgWebhooks implements WebhookTable {
  /** Which webhooks with pending deliveries this process's next claim looks at. */
  private readonly window = new LaneWindow();

  constructor(
    private readonly db: PgDb,
    /** Told after deliveries were added (the store wakes the deliverer once they commit). */
    private readonly enqueued: () => void,
  ) {}

  async insert(row: WebhookRow): Promise<void> {
    await this.db.insert(webhooks).values(row);
  }

  async byId(id: string): Promise<WebhookRow | undefined> {
    return (await this.db.select().from(webhooks).where(eq(webhooks.id, id)))[0];
  }

  async listByOwner(ownerId: string): Promise<WebhookRow[]> {
    return this.db.select().from(webhooks).where(eq(webhooks.ownerId, ownerId)).orderBy(asc(webhooks.createdAt), asc(webhooks.id));
  }

  async delete(id: string, ownerId: string): Promise<boolean> {
    return (await this.db.delete(webhooks).where(and(eq(webhooks.id, id), eq(webhooks.ownerId, ownerId))).returning({ id: webhooks.id })).length > 0;
  }

  async enqueue(deliveries: NewDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.db.insert(d).values(deliveries.map((x) => ({ ...x, nextAttemptAt: x.createdAt })));
    this.enqueued();
  }

  async claim(claimer: string, now: number, leaseUntil: number, limit: number, perWebhook: number): Promise<ClaimedDelivery[]> {
    // A read first: an idle poll writes nothing.
    const lanes = await this.window.read(async (after, max) => (await this.db.execute(lanesQuery(now, after, max))) as unknown as LaneRow[]);
    const wanted = allotRoundRobin(lanes, limit, perWebhook);
    if (wanted.size === 0) return [];
    return this.db.transaction(async (tx) => {
      // Each webhook's row lock serializes its claims and settles across processes and
      // instances, so that the count of its attempts in flight below stays true until commit.
      // One being claimed or settled by another process is skipped now (its turn comes next
      // round); NO KEY UPDATE does not hold up the outbox inserts (their foreign key check
      // takes KEY SHARE), but a DELETE of the webhook waits for it.
      const locked = await tx
        .select({ id: webhooks.id, url: webhooks.url, secret: webhooks.secret })
        .from(webhooks)
        .where(inArray(webhooks.id, [...wanted.keys()]))
        .orderBy(asc(webhooks.id))
        .for("no key update", { skipLocked: true });
      const targets = new Map(locked.map((w) => [w.id, w]));
      const claimed: ClaimedDelivery[] = [];
      const served: string[] = [];
      for (const [webhookId, want] of wanted) {
        const target = targets.get(webhookId);
        if (target === undefined) continue;
        const [live] = (await tx.execute(inFlightOf(webhookId, now))) as unknown as { n: string | number }[];
        const room = perWebhook - Number(live?.n ?? 0);
        if (room <= 0) continue;
        const rows = (await tx.execute(claimOfWebhook(claimer, leaseUntil, webhookId, now, Math.min(want, room)))) as unknown as ClaimedRow[];
        if (rows.length === 0) continue;
        served.push(webhookId);
        for (const r of rows.sort((a, b) => Number(a.seq) - Number(b.seq))) claimed.push(toClaimed(r, target));
      }
      if (served.length > 0) await tx.update(webhooks).set({ servedAt: now }).where(inArray(webhooks.id, served));
      return claimed;
    });
  }

  settle(delivery: ClaimedDelivery, claimer: string, outcome: AttemptOutcome): Promise<void> {
    return this.settleMany(claimer, [{ delivery, outcome }]);
  }

  async settleMany(claimer: string, settled: readonly SettledAttempt[]): Promise<void> {
    if (settled.length === 0) return;
    await this.db.transaction(async (tx) => {
      // The webhooks' row locks first, in ID order, as a claim takes them: a DELETE of one waits
      // for this transaction, or, committed first, leaves no row here and nothing to record for
      // it (the attempt's log row would break its foreign key).
      const ids = [...new Set(settled.map((x) => x.delivery.webhookId))].sort();
      const live = new Set((await tx.select({ id: webhooks.id }).from(webhooks).where(inArray(webhooks.id, ids)).orderBy(asc(webhooks.id)).for("no key update")).map((w) => w.id));
      for (const { delivery, outcome } of settled) {
        if (!live.has(delivery.webhookId)) continue;
        await tx
          .insert(webhookAttempts)
          .values({ webhookId: delivery.webhookId, eventId: delivery.eventId, type: delivery.type, attemptedAt: outcome.attemptedAt, status: outcome.status, error: outcome.error, durationMs: outcome.durationMs });
        await tx
          .update(d)
          .set({ ...settledColumns(outcome), attempts: sql`${d.attempts} + 1`, claimedBy: null, claimedUntil: null, lastStatus: outcome.status, lastError: outcome.error })
          .where(and(eq(d.seq, delivery.seq), eq(d.claimedBy, claimer), pending));
        if (outcome.delivered) {
          await tx
            .update(d)
            .set({ nextAttemptAt: outcome.attemptedAt })
            .where(and(eq(d.webhookId, delivery.webhookId), pending, sql`${d.nextAttemptAt} > ${outcome.attemptedAt}`));
        }
      }
    });
  }

  async attempts(webhookId: string, limit: number, beforeSeq: number | undefined): Promise<WebhookAttemptPageRow[]> {
    const a = webhookAttempts;
    return this.db
      .select({ seq: a.seq, eventId: a.eventId, type: a.type, attemptedAt: a.attemptedAt, status: a.status, error: a.error, durationMs: a.durationMs })
      .from(a)
      .where(and(eq(a.webhookId, webhookId), beforeSeq === undefined ? undefined : lt(a.seq, beforeSeq)))
      .orderBy(desc(a.seq))
      .limit(limit);
  }

  async prune(before: number): Promise<number> {
    const done = await this.db.delete(d).where(and(lte(d.createdAt, before), or(sql`${d.deliveredAt} IS NOT NULL`, sql`${d.failedAt} IS NOT NULL`))).returning({ seq: d.seq });
    const logged = await this.db.delete(webhookAttempts).where(lte(webhookAttempts.attemptedAt, before)).returning({ seq: webhookAttempts.seq });
    return done.length + logged.length;
  }
}
