/**
 * Webhooks, their outbox and the attempt log (CONTRACT §13) on SQLite: the {@link WebhookTable}
 * part of the SQLite metadata store. A claim (storage/webhook-claims.ts) reads which webhooks
 * have deliveries due, then claims their shares in one write transaction: SQLite runs one writer
 * at a time across processes, so each row goes to one of them and each webhook's cap holds.
 */
import { and, asc, desc, eq, lt, lte, or, sql, type SQL } from "drizzle-orm";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import type { SQLQueryBindings } from "bun:sqlite";
import { yieldToLoop } from "../slices.ts";
import { BUSY_TIMEOUT_MS, METADATA_SYNCHRONOUS, type Db, type WriteRunner } from "./db.ts";
import type { AttemptOutcome, ClaimedDelivery, NewDelivery, SettledAttempt, WebhookAttemptPageRow, WebhookRow, WebhookTable } from "./ports.ts";
import { webhookAttempts, webhookDeliveries, webhooks } from "./schema.ts";
import { allotRoundRobin, claimOfWebhook, inFlightOf, LaneWindow, lanesQuery, settledColumns, toClaimed, type ClaimedRow, type LaneRow } from "./webhook-claims.ts";

const d = webhookDeliveries;

/** Webhooks claimed from per write transaction (a few ms of work each). */
const CLAIM_SLICE = 4;

const dialect = new SQLiteSyncDialect();

/** Runs a statement built with drizzle's sql`` through bun:sqlite's statement cache. */
function run<T>(client: Db["$client"], statement: SQL): T[] {
  const { sql: text, params } = dialect.sqlToQuery(statement);
  return client.query<T, SQLQueryBindings[]>(text).all(...(params as SQLQueryBindings[]));
}

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
      if (i > 0) await yieldToLoop(); // the write queue resolves in microtasks: let requests in between
      const slice = wanted.slice(i, i + CLAIM_SLICE);
      claimed.push(
        ...(await this.writeWithoutWaiting((writer) => {
          // bun:sqlite's query() keeps each statement compiled: a claim costs its rows, not its parsing.
          const c = writer.$client;
          const target = c.query<{ url: string; secret: string }, [string]>("SELECT url, secret FROM webhooks WHERE id = ?");
          const served = c.query("UPDATE webhooks SET served_at = ? WHERE id = ?");
          const rows: ClaimedDelivery[] = [];
          for (const [webhookId, want] of slice) {
            const room = perWebhook - Number(run<{ n: number }>(c, inFlightOf(webhookId, now))[0]?.n ?? 0);
            if (room <= 0) continue;
            const to = target.get(webhookId);
            if (to === null) continue;
            const taken = run<ClaimedRow>(c, claimOfWebhook(claimer, leaseUntil, webhookId, now, Math.min(want, room)));
            if (taken.length === 0) continue;
            served.run(now, webhookId);
            for (const r of taken.sort((a, b) => Number(a.seq) - Number(b.seq))) rows.push(toClaimed(r, to));
          }
          return rows;
        })),
      );
    }
    return claimed;
  }

  settle(delivery: ClaimedDelivery, claimer: string, outcome: AttemptOutcome): Promise<void> {
    return this.settleMany(claimer, [{ delivery, outcome }]);
  }

  settleMany(claimer: string, settled: readonly SettledAttempt[]): Promise<void> {
    // One transaction, as on PostgreSQL: a kill between the statements must not leave a 2xx in
    // the attempt log beside an outbox row still waiting (which would be sent again). A webhook
    // deleted during the attempt took its outbox rows and log with it: nothing is recorded.
    if (settled.length === 0) return Promise.resolve();
    return this.writeWithoutWaiting((writer) => {
      // bun:sqlite's query() keeps each statement compiled: a batch costs its rows, not its parsing.
      const exists = writer.$client.query<{ id: string }, [string]>("SELECT id FROM webhooks WHERE id = ?");
      const log = writer.$client.query("INSERT INTO webhook_attempts (webhook_id, event_id, type, attempted_at, status, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)");
      const outcomeOf = writer.$client.query(
        `UPDATE webhook_deliveries SET delivered_at = ?, failed_at = ?, next_attempt_at = coalesce(?, next_attempt_at), attempts = attempts + 1,
           claimed_by = NULL, claimed_until = NULL, last_status = ?, last_error = ?
         WHERE seq = ? AND claimed_by = ? AND delivered_at IS NULL AND failed_at IS NULL`,
      );
      const dueNow = writer.$client.query("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = ? AND delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at > ?");
      const live = new Map<string, boolean>();
      for (const { delivery, outcome } of settled) {
        let alive = live.get(delivery.webhookId);
        if (alive === undefined) {
          alive = exists.get(delivery.webhookId) !== null;
          live.set(delivery.webhookId, alive);
        }
        if (!alive) continue;
        log.run(delivery.webhookId, delivery.eventId, delivery.type, outcome.attemptedAt, outcome.status, outcome.error, outcome.durationMs);
        const set = settledColumns(outcome);
        outcomeOf.run(
          "deliveredAt" in set ? set.deliveredAt : null,
          "failedAt" in set ? set.failedAt : null,
          "nextAttemptAt" in set ? set.nextAttemptAt : null,
          outcome.status,
          outcome.error,
          delivery.seq,
          claimer,
        );
        if (outcome.delivered) dueNow.run(outcome.attemptedAt, delivery.webhookId, outcome.attemptedAt);
      }
    });
  }

  /**
   * Runs `work` in an IMMEDIATE transaction on the write connection without sleeping in
   * SQLite's busy handler while another process holds the write lock: the deliverer's writes
   * (claims, outcomes) are background work, and with several workers delivering at once a
   * synchronous wait for each other's locks held a process for hundreds of ms. On SQLITE_BUSY
   * the lock is asked again after an asynchronous pause (1 ms doubling to 50 ms, jittered); after
   * {@link BUSY_TIMEOUT_MS} of that, the write waits as every other write does.
   *
   * And without an fsync of its own (`PRAGMA synchronous = NORMAL` for its commit; the
   * database's other commits stay FULL): a commit's fsync holds the event loop (8–40 ms each on
   * this project's CI disk, a claim or an outcome batch each), and these rows need no more than
   * at-least-once delivery asks. A power cut may lose the last claims (their deliveries are
   * claimed again: the lease was never seen) or outcomes (the attempt is made again, a duplicate
   * the receiver drops by `webhook-id`); the next FULL commit's fsync makes them durable, and
   * SQLite's WAL stays consistent either way (https://www.sqlite.org/pragma.html#pragma_synchronous).
   */
  private async writeWithoutWaiting<T>(work: (writer: Db) => T): Promise<T> {
    const started = performance.now();
    for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, 50)) {
      const patient = performance.now() - started >= BUSY_TIMEOUT_MS;
      const outcome = await this.write((writer) => {
        if (!patient) writer.$client.exec("PRAGMA busy_timeout = 0");
        writer.$client.exec("PRAGMA synchronous = NORMAL");
        try {
          return { done: true as const, value: writer.transaction(() => work(writer), { behavior: "immediate" }) };
        } catch (err) {
          if (!patient && (err as { code?: string }).code === "SQLITE_BUSY") return { done: false as const };
          throw err;
        } finally {
          writer.$client.exec(`PRAGMA synchronous = ${METADATA_SYNCHRONOUS}`);
          if (!patient) writer.$client.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
        }
      });
      if (outcome.done) return outcome.value;
      await new Promise((resolve) => setTimeout(resolve, pauseMs * (0.5 + Math.random())));
    }
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
