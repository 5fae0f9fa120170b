/**
 * Webhooks, their outbox and the attempt log (CONTRACT §13) on SQLite: the {@link WebhookTable}
 * part of the SQLite metadata store. A claim is one `UPDATE … WHERE <still claimable>
 * RETURNING`: SQLite runs one writer at a time across processes, so each row goes to one of them.
 */
import { and, asc, desc, eq, inArray, isNull, lte, or, sql } from "drizzle-orm";
import type { Db, WriteRunner } from "./db.ts";
import type { AttemptOutcome, ClaimedDelivery, NewDelivery, WebhookAttemptRow, WebhookRow, WebhookTable } from "./ports.ts";
import { webhookAttempts, webhookDeliveries, webhooks } from "./schema.ts";

const d = webhookDeliveries;

/** Pending: neither delivered nor given up. */
const pending = and(isNull(d.deliveredAt), isNull(d.failedAt));

/** Webhook rows on SQLite: reads on the given connection, writes through the store's write runner. */
export class SqliteWebhooks implements WebhookTable {
  constructor(
    private readonly db: Db,
    private readonly write: WriteRunner,
    /** Told after deliveries were added (the store wakes the deliverer once they commit). */
    private readonly enqueued: () => void,
  ) {}

  insert(row: WebhookRow): Promise<void> {
    return this.write((db) => void db.insert(webhooks).values(row).run());
  }

  async byId(id: string): Promise<WebhookRow | undefined> {
    return this.db.select().from(webhooks).where(eq(webhooks.id, id)).get();
  }

  async listByOwner(ownerId: string): Promise<WebhookRow[]> {
    return this.db.select().from(webhooks).where(eq(webhooks.ownerId, ownerId)).orderBy(asc(webhooks.createdAt), asc(webhooks.id)).all();
  }

  delete(id: string, ownerId: string): Promise<boolean> {
    return this.write((db) => db.delete(webhooks).where(and(eq(webhooks.id, id), eq(webhooks.ownerId, ownerId))).returning({ id: webhooks.id }).all().length > 0);
  }

  async enqueue(deliveries: NewDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.write((db) => void db.insert(d).values(deliveries.map((x) => ({ ...x, nextAttemptAt: x.createdAt }))).run());
    this.enqueued();
  }

  async claim(claimer: string, now: number, leaseUntil: number, limit: number): Promise<ClaimedDelivery[]> {
    // A read first, on the read connection: an idle poll writes nothing (a commit would empty
    // every process's read caches).
    const due = this.db
      .select({ seq: d.seq })
      .from(d)
      .where(and(claimable(now), sql`NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = ${d.webhookId} AND e.subject = ${d.subject} AND e.seq < ${d.seq} AND e.delivered_at IS NULL AND e.failed_at IS NULL)`))
      .orderBy(asc(d.seq))
      .limit(limit)
      .all();
    if (due.length === 0) return [];
    const seqs = due.map((r) => r.seq);
    return this.write((db) => {
      const rows = db.update(d).set({ claimedBy: claimer, claimedUntil: leaseUntil }).where(and(inArray(d.seq, seqs), claimable(now))).returning().all();
      if (rows.length === 0) return [];
      const targets = new Map(
        db
          .select({ id: webhooks.id, url: webhooks.url, secret: webhooks.secret })
          .from(webhooks)
          .where(inArray(webhooks.id, [...new Set(rows.map((r) => r.webhookId))]))
          .all()
          .map((w) => [w.id, w]),
      );
      return rows
        .sort((a, b) => a.seq - b.seq)
        .flatMap((r) => {
          const w = targets.get(r.webhookId);
          return w === undefined ? [] : [{ seq: r.seq, eventId: r.eventId, webhookId: r.webhookId, type: r.type, subject: r.subject, payload: r.payload, createdAt: r.createdAt, attempts: r.attempts, url: w.url, secret: w.secret }];
        });
    });
  }

  settle(delivery: ClaimedDelivery, claimer: string, outcome: AttemptOutcome): Promise<void> {
    // One transaction, as on PostgreSQL: a kill between the statements must not leave a 2xx in
    // the attempt log beside an outbox row still waiting (which would be sent again).
    return this.write((writer) =>
      writer.transaction((db) => {
        db.insert(webhookAttempts)
          .values({ webhookId: delivery.webhookId, eventId: delivery.eventId, type: delivery.type, attemptedAt: outcome.attemptedAt, status: outcome.status, error: outcome.error, durationMs: outcome.durationMs })
          .run();
        const settled = outcome.delivered
          ? { deliveredAt: outcome.attemptedAt }
          : outcome.nextAttemptAt === null
            ? { failedAt: outcome.attemptedAt }
            : { nextAttemptAt: outcome.nextAttemptAt };
        db.update(d)
          .set({ ...settled, attempts: sql`${d.attempts} + 1`, claimedBy: null, claimedUntil: null, lastStatus: outcome.status, lastError: outcome.error })
          .where(and(eq(d.seq, delivery.seq), eq(d.claimedBy, claimer), pending))
          .run();
        if (outcome.delivered) {
          db.update(d)
            .set({ nextAttemptAt: outcome.attemptedAt })
            .where(and(eq(d.webhookId, delivery.webhookId), pending, sql`${d.nextAttemptAt} > ${outcome.attemptedAt}`))
            .run();
        }
      },
      { behavior: "immediate" },
      ),
    );
  }

  async attempts(webhookId: string, limit: number): Promise<WebhookAttemptRow[]> {
    const a = webhookAttempts;
    return this.db
      .select({ eventId: a.eventId, type: a.type, attemptedAt: a.attemptedAt, status: a.status, error: a.error, durationMs: a.durationMs })
      .from(a)
      .where(eq(a.webhookId, webhookId))
      .orderBy(desc(a.seq))
      .limit(limit)
      .all();
  }

  prune(before: number): Promise<number> {
    return this.write((db) => {
      const done = db.delete(d).where(and(lte(d.createdAt, before), or(sql`${d.deliveredAt} IS NOT NULL`, sql`${d.failedAt} IS NOT NULL`))).returning({ seq: d.seq }).all().length;
      const logged = db.delete(webhookAttempts).where(lte(webhookAttempts.attemptedAt, before)).returning({ seq: webhookAttempts.seq }).all().length;
      return done + logged;
    });
  }
}

/** Due at `now`, pending, and not held by a lease still running. */
function claimable(now: number) {
  return and(pending, lte(d.nextAttemptAt, now), or(isNull(d.claimedUntil), lte(d.claimedUntil, now)));
}
