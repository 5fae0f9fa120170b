/**
 * Webhooks, their outbox and the attempt log (CONTRACT §13) on PostgreSQL: the
 * {@link WebhookTable} part of the PostgreSQL metadata store. A claim is one `UPDATE … WHERE
 * <still claimable> RETURNING`: PostgreSQL re-checks the condition on each row it locks, so of
 * two instances claiming at once one gets the row and the other skips it.
 */
import { and, asc, desc, eq, inArray, isNull, lte, or, sql } from "drizzle-orm";
import type { PgDb } from "./pg-metadata.ts";
import type { AttemptOutcome, ClaimedDelivery, NewDelivery, WebhookAttemptRow, WebhookRow, WebhookTable } from "./ports.ts";
import { webhookAttempts, webhookDeliveries, webhooks } from "./pg-schema.ts";

const d = webhookDeliveries;

/** Pending: neither delivered nor given up. */
const pending = and(isNull(d.deliveredAt), isNull(d.failedAt));

/** Webhook rows on PostgreSQL, on the pool or inside a transaction (whichever `db` is). */
export class PgWebhooks implements WebhookTable {
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

  async claim(claimer: string, now: number, leaseUntil: number, limit: number): Promise<ClaimedDelivery[]> {
    // A read first: an idle poll writes nothing.
    const due = await this.db
      .select({ seq: d.seq })
      .from(d)
      .where(and(claimable(now), sql`NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = ${d.webhookId} AND e.subject = ${d.subject} AND e.seq < ${d.seq} AND e.delivered_at IS NULL AND e.failed_at IS NULL)`))
      .orderBy(asc(d.seq))
      .limit(limit);
    if (due.length === 0) return [];
    const rows = await this.db
      .update(d)
      .set({ claimedBy: claimer, claimedUntil: leaseUntil })
      .where(and(inArray(d.seq, due.map((r) => r.seq)), claimable(now)))
      .returning();
    if (rows.length === 0) return [];
    const targets = new Map(
      (await this.db
        .select({ id: webhooks.id, url: webhooks.url, secret: webhooks.secret })
        .from(webhooks)
        .where(inArray(webhooks.id, [...new Set(rows.map((r) => r.webhookId))]))).map((w) => [w.id, w]),
    );
    return rows
      .sort((a, b) => a.seq - b.seq)
      .flatMap((r) => {
        const w = targets.get(r.webhookId);
        return w === undefined ? [] : [{ seq: r.seq, eventId: r.eventId, webhookId: r.webhookId, type: r.type, subject: r.subject, payload: r.payload, createdAt: r.createdAt, attempts: r.attempts, url: w.url, secret: w.secret }];
      });
  }

  async settle(delivery: ClaimedDelivery, claimer: string, outcome: AttemptOutcome): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx
        .insert(webhookAttempts)
        .values({ webhookId: delivery.webhookId, eventId: delivery.eventId, type: delivery.type, attemptedAt: outcome.attemptedAt, status: outcome.status, error: outcome.error, durationMs: outcome.durationMs });
      const settled = outcome.delivered
        ? { deliveredAt: outcome.attemptedAt }
        : outcome.nextAttemptAt === null
          ? { failedAt: outcome.attemptedAt }
          : { nextAttemptAt: outcome.nextAttemptAt };
      await tx
        .update(d)
        .set({ ...settled, attempts: sql`${d.attempts} + 1`, claimedBy: null, claimedUntil: null, lastStatus: outcome.status, lastError: outcome.error })
        .where(and(eq(d.seq, delivery.seq), eq(d.claimedBy, claimer), pending));
      if (outcome.delivered) {
        await tx
          .update(d)
          .set({ nextAttemptAt: outcome.attemptedAt })
          .where(and(eq(d.webhookId, delivery.webhookId), pending, sql`${d.nextAttemptAt} > ${outcome.attemptedAt}`));
      }
    });
  }

  async attempts(webhookId: string, limit: number): Promise<WebhookAttemptRow[]> {
    const a = webhookAttempts;
    return this.db
      .select({ eventId: a.eventId, type: a.type, attemptedAt: a.attemptedAt, status: a.status, error: a.error, durationMs: a.durationMs })
      .from(a)
      .where(eq(a.webhookId, webhookId))
      .orderBy(desc(a.seq))
      .limit(limit);
  }

  async prune(before: number): Promise<number> {
    const done = await this.db.delete(d).where(and(lte(d.createdAt, before), or(sql`${d.deliveredAt} IS NOT NULL`, sql`${d.failedAt} IS NOT NULL`))).returning({ seq: d.seq });
    const logged = await this.db.delete(webhookAttempts).where(lte(webhookAttempts.attemptedAt, before)).returning({ seq: webhookAttempts.seq });
    return done.length + logged.length;
  }
}

/** Due at `now`, pending, and not held by a lease still running. */
function claimable(now: number) {
  return and(pending, lte(d.nextAttemptAt, now), or(isNull(d.claimedUntil), lte(d.claimedUntil, now)));
}
