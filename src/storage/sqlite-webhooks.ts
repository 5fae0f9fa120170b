/**
 * Webhooks, their outbox and the attempt log (CONTRACT §13) on SQLite: the {@link WebhookTable}
 * part of the SQLite metadata store. A claim (storage/webhook-claims.ts) reads which webhooks
 * have deliveries due, then claims their shares in one write transaction: SQLite runs one writer
 * at a time across processes, so each row goes to one of them and each webhook's cap holds.
 */
import { and, asc, desc, eq, isNull, lt, lte, or, sql } from "drizzle-orm";
import type { Db, WriteRunner } from "./db.ts";
import type { AttemptOutcome, ClaimedDelivery, NewDelivery, WebhookAttemptPageRow, WebhookRow, WebhookTable } from "./ports.ts";
import { webhookAttempts, webhookDeliveries, webhooks } from "./schema.ts";
import { allotRoundRobin, dueOfWebhook, inFlightOf, LaneWindow, lanesQuery, type LaneRow } from "./webhook-claims.ts";

const d = webhookDeliveries;

/** Pending: neither delivered nor given up. */
const pending = and(isNull(d.deliveredAt), isNull(d.failedAt));

/** Webhooks claimed from per write transaction (a few ms of work each). */
const CLAIM_SLICE = 4;

/** Webhook rows on SQLite: reads on the given connection, writes through the store's write runner. */
export class SqliteWebhooks implements WebhookTable {
  /** Which webhooks with pending deliveries this process's next claim looks at. */
  private readonly window = new LaneWindow();

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

  async claim(claimer: string, now: number, leaseUntil: number, limit: number, perWebhook: number): Promise<ClaimedDelivery[]> {
    // A read first, on the read connection: an idle poll writes nothing (a commit would empty
    // every process's read caches).
    const lanes = await this.window.read((after, max) => this.db.all<LaneRow>(lanesQuery(now, after, max)));
    const wanted = [...allotRoundRobin(lanes, limit, perWebhook)];
    const claimed: ClaimedDelivery[] = [];
    // A few webhooks per write transaction, so that no one holds the event loop long; one writer
    // at a time across processes, so the count of attempts in flight and the claim in each
    // cannot interleave with another process's.
    for (let i = 0; i < wanted.length; i += CLAIM_SLICE) {
      const slice = wanted.slice(i, i + CLAIM_SLICE);
      claimed.push(
        ...(await this.write((writer) =>
          writer.transaction(
            (db) => {
              const rows: ClaimedDelivery[] = [];
              for (const [webhookId, want] of slice) {
                const room = perWebhook - Number(db.get<{ n: number }>(inFlightOf(webhookId, now))?.n ?? 0);
                if (room <= 0) continue;
                const target = db.select({ url: webhooks.url, secret: webhooks.secret }).from(webhooks).where(eq(webhooks.id, webhookId)).get();
                if (target === undefined) continue;
                const taken = db
                  .update(d)
                  .set({ claimedBy: claimer, claimedUntil: leaseUntil })
                  .where(and(sql`${d.seq} IN (${dueOfWebhook(webhookId, now, Math.min(want, room))})`, claimable(now)))
                  .returning()
                  .all();
                if (taken.length === 0) continue;
                db.update(webhooks).set({ servedAt: now }).where(eq(webhooks.id, webhookId)).run();
                for (const r of taken.sort((a, b) => a.seq - b.seq)) rows.push(toClaimed(r, target));
              }
              return rows;
            },
            { behavior: "immediate" },
          ),
        )),
      );
    }
    return claimed;
  }

  settle(delivery: ClaimedDelivery, claimer: string, outcome: AttemptOutcome): Promise<void> {
    // One transaction, as on PostgreSQL: a kill between the statements must not leave a 2xx in
    // the attempt log beside an outbox row still waiting (which would be sent again). A webhook
    // deleted during the attempt took its outbox rows and log with it: nothing is recorded.
    return this.write((writer) =>
      writer.transaction(
        (db) => {
          if (db.select({ id: webhooks.id }).from(webhooks).where(eq(webhooks.id, delivery.webhookId)).get() === undefined) return;
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

  async attempts(webhookId: string, limit: number, beforeSeq: number | undefined): Promise<WebhookAttemptPageRow[]> {
    const a = webhookAttempts;
    return this.db
      .select({ seq: a.seq, eventId: a.eventId, type: a.type, attemptedAt: a.attemptedAt, status: a.status, error: a.error, durationMs: a.durationMs })
      .from(a)
      .where(and(eq(a.webhookId, webhookId), beforeSeq === undefined ? undefined : lt(a.seq, beforeSeq)))
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

/** A claimed outbox row with its webhook's URL and secret. */
function toClaimed(r: typeof d.$inferSelect, target: { url: string; secret: string }): ClaimedDelivery {
  return { seq: r.seq, eventId: r.eventId, webhookId: r.webhookId, type: r.type, subject: r.subject, payload: r.payload, createdAt: r.createdAt, attempts: r.attempts, url: target.url, secret: target.secret };
}

/** Due at `now`, pending, and not held by a lease still running. */
function claimable(now: number) {
  return and(pending, lte(d.nextAttemptAt, now), or(isNull(d.claimedUntil), lte(d.claimedUntil, now)));
}
