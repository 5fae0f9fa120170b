/**
 * Delivers the webhook outbox (CONTRACT §13), in every serving process of every instance: each
 * polls the outbox every second (and at once after a commit of its own that added events, and
 * after each attempt ends), claims due deliveries with a lease (storage WebhookTable.claim: a
 * conditional UPDATE, so one process at a time holds a delivery), and POSTs each, signed by the
 * `standardwebhooks` package (Standard Webhooks: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`).
 *
 * Fair delivery (CONTRACT §14): a webhook has at most {@link WEBHOOK_IN_FLIGHT} attempts in
 * flight across all processes and instances, a process at most {@link MAX_IN_FLIGHT}, and the
 * claim serves the webhooks with deliveries due round robin, across users first (the user served
 * least recently goes first), then across a user's webhooks (storage/webhook-claims.ts). So a
 * user's silent or failing receivers hold at most 20 × 2 attempts, 10 s each, and another
 * user's event is claimed in the next round, at once after its commit or within a poll.
 *
 * - A delivery connects to the address the target check passed (service/webhook-target.ts),
 *   naming the URL's host in `Host` and in TLS SNI (the certificate is verified against it), never
 *   through a proxy, and never follows a redirect (a 3xx is a failed attempt).
 * - An attempt gets {@link DELIVERY_TIMEOUT_MS} for the whole answer's head; the body of the
 *   answer is never read. Only a 2xx delivers.
 * - A failed attempt is retried after {@link RETRY_BASE_MS} × 2^(attempts − 1), at most an
 *   hour apart (± 20 % jitter), until {@link RETRY_WINDOW_MICROS} after the event; then it is
 *   given up and logged. A 2xx makes the webhook's other waiting deliveries due at once.
 * - A process that dies holding a claim loses it when the lease ({@link LEASE_MS}) ends, and
 *   another process retries: at least once, a duplicate only when a process died between the
 *   receiver's answer and the record of it (the `webhook-id` lets the receiver drop it).
 */
import { Webhook } from "standardwebhooks";
import pkg from "../../package.json" with { type: "json" };
import { logError } from "../log.ts";
import { yieldToLoop } from "../slices.ts";
import type { Clock } from "../domain/time.ts";
import type { AttemptOutcome, ClaimedDelivery, MetadataStore, SettledAttempt } from "../storage/ports.ts";
import { MAX_WEBHOOKS_PER_USER } from "../domain/webhook.ts";
import { checkTarget } from "./webhook-target.ts";
import type { WebhookService } from "./webhooks.ts";

/** How long an attempt may take until the receiver's status line and headers, ms. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** The first retry's delay, ms; each further one doubles it. */
export const RETRY_BASE_MS = 5_000;
/** The longest delay between two attempts, ms. */
export const MAX_RETRY_DELAY_MS = 3_600_000;
/** How long after its event a delivery is still tried, µs (24 h). */
export const RETRY_WINDOW_MICROS = 24 * 3600 * 1_000_000;
/** How long a claim holds a delivery for its process, ms: well past an attempt's timeout. */
export const LEASE_MS = 30_000;
/** How often the outbox is polled for deliveries other processes enqueued or that came due, ms. */
export const POLL_MS = 1_000;
/**
 * Attempts one webhook has in flight at most, across every process and instance (CONTRACT §14):
 * a silent receiver holds this many for 10 s each, and no more.
 */
export const WEBHOOK_IN_FLIGHT = 2;
/**
 * Attempts one process has in flight at most. Above {@link MAX_WEBHOOKS_PER_USER} ×
 * {@link WEBHOOK_IN_FLIGHT} (40): one user's silent receivers, all 20 of them, leave room in
 * every process for everybody else's deliveries.
 */
export const MAX_IN_FLIGHT = 64;
if (MAX_IN_FLIGHT <= MAX_WEBHOOKS_PER_USER * WEBHOOK_IN_FLIGHT) throw new Error("MAX_IN_FLIGHT must leave room beyond one user's webhooks");
/**
 * How long after an attempt ends the next claim waits for others to end too, ms: attempts that
 * fail at once (a port that refuses) end 64 at a time, and a claim each would read the lanes
 * (storage/webhook-claims.ts) 64 times where once claims for all of them. Far inside the 5 s
 * CONTRACT §14 gives a healthy receiver's event.
 */
const REFILL_DELAY_MS = 10;
/** Attempts started in one turn of the event loop at most. */
const START_GROUP = 8;
/** Outcomes recorded in one transaction at most ({@link WebhookDeliverer.record}). */
const SETTLE_BATCH = 8;
/** Delivered or given-up deliveries, and attempts, are kept this long for the log, µs (7 days). */
const KEEP_MICROS = 7 * 24 * 3600 * 1_000_000;
/** How often old rows are pruned, ms. */
const PRUNE_MS = 3_600_000;

export interface WebhookDelivererDeps {
  store: MetadataStore;
  clock: Clock;
  webhooks: WebhookService;
  /** Tests only (CUBBY_TEST_WEBHOOK_RETRY_MS): the first retry's delay, ms. */
  retryBaseMs?: number | undefined;
  /** Tests only (CUBBY_TEST_WEBHOOK_LEASE_MS): a claim's lease, ms; {@link LEASE_MS} otherwise. */
  leaseMs?: number | undefined;
}

/** The outbox's deliverer in this process; {@link start} once, {@link stop} before the store closes. */
export class WebhookDeliverer {
  /** This process's name on its claims. */
  private readonly claimer = `${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pruneTimer: ReturnType<typeof setInterval> | undefined;
  private running: Promise<void> | undefined;
  /** The attempts in flight, each settling (recorded) before it leaves. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Outcomes waiting to be recorded ({@link record}). */
  private readonly toRecord: (SettledAttempt & { resolve: () => void; reject: (err: unknown) => void })[] = [];
  /** A batch of {@link toRecord} is being written. */
  private recording = false;
  /** A wake came while a round was running: run another. */
  private again = false;
  /** A round is due {@link REFILL_DELAY_MS} after an attempt ended ({@link wakeSoon}). */
  private refill: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  /** Aborts the attempts in flight when the server stops. */
  private readonly stopping = new AbortController();

  constructor(private readonly deps: WebhookDelivererDeps) {}

  /** Starts polling, and waking after this process's own enqueues. */
  start(): void {
    this.deps.store.onEnqueued(() => this.wake());
    this.pruneTimer = setInterval(() => void this.prune(), PRUNE_MS);
    this.pruneTimer.unref();
    this.wake();
  }

  /**
   * Stops polling and aborts the attempts in flight; their deliveries are released for another
   * attempt at once (by another process, or this server once it is back).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.refill);
    clearInterval(this.pruneTimer);
    this.stopping.abort();
    await this.running;
    await Promise.all(this.inFlight);
  }

  /** Runs a round now, or right after the one running. */
  wake(): void {
    if (this.stopped) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.round().finally(() => {
      this.running = undefined;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.wake();
      } else {
        this.timer = setTimeout(() => this.wake(), POLL_MS);
        this.timer.unref();
      }
    });
  }

  /**
   * Runs a round {@link REFILL_DELAY_MS} from now, with any other attempts that end meanwhile:
   * one claim refills the room they all left.
   */
  private wakeSoon(): void {
    if (this.stopped || this.refill !== undefined) return;
    this.refill = setTimeout(() => {
      this.refill = undefined;
      this.wake();
    }, REFILL_DELAY_MS);
  }

  /**
   * Claims what is due, as far as there is room in flight, and starts each attempt without
   * waiting for it: a receiver that takes its 10 s holds one place, not the others' deliveries.
   * Each attempt that ends wakes the deliverer again (a file's next event may be due now), with
   * the others that end within {@link REFILL_DELAY_MS}.
   */
  private async round(): Promise<void> {
    try {
      while (!this.stopped) {
        const room = MAX_IN_FLIGHT - this.inFlight.size;
        if (room <= 0) return;
        await yieldToLoop();
        if (this.stopped) return;
        const now = this.deps.clock.nowMicros();
        const claimed = await this.deps.store.webhooks.claim(this.claimer, now, now + (this.deps.leaseMs ?? LEASE_MS) * 1000, room, WEBHOOK_IN_FLIGHT);
        if (claimed.length === 0) return;
        for (const [i, delivery] of claimed.entries()) {
          // Starting an attempt (sign, connect) takes a little synchronous work; 64 at once
          // would add up: a turn of the event loop between groups.
          if (i > 0 && i % START_GROUP === 0) await yieldToLoop();
          const attempt: Promise<void> = this.deliver(delivery)
            .catch((err) => logError(`webhook ${delivery.webhookId}: recording an attempt failed: ${err}`))
            .finally(() => {
              this.inFlight.delete(attempt);
              this.wakeSoon();
            });
          this.inFlight.add(attempt);
        }
      }
    } catch (err) {
      logError(`webhook deliveries: ${err}`);
    }
  }

  private async deliver(delivery: ClaimedDelivery): Promise<void> {
    const outcome = await this.attempt(delivery);
    if (outcome === undefined) return;
    await this.record(delivery, outcome);
    if (!outcome.delivered && outcome.nextAttemptAt === null) {
      logError(`webhook ${delivery.webhookId}: gave up on event ${delivery.eventId} (${delivery.type}) after ${delivery.attempts + 1} attempts over 24 h; last: ${outcome.error}`);
    }
  }

  /**
   * Records `outcome` of `delivery` with the others that ended meanwhile: up to
   * {@link SETTLE_BATCH} in one transaction, one transaction per turn of the event loop. Many
   * attempts can end in one turn (a receiver that refuses them all, 64 at once): recorded one
   * transaction each, back to back, they held the process for the sum of them (the store's
   * write queue runs each next one in a microtask); in batches, a turn apart, requests get in
   * between (CONTRACT §14).
   */
  private record(delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.toRecord.push({ delivery, outcome, resolve, reject });
      if (this.toRecord.length === 1 && !this.recording) void this.recordBatches();
    });
  }

  private async recordBatches(): Promise<void> {
    this.recording = true;
    try {
      while (this.toRecord.length > 0) {
        await yieldToLoop();
        const batch = this.toRecord.splice(0, SETTLE_BATCH);
        try {
          await this.deps.store.webhooks.settleMany(this.claimer, batch);
          for (const b of batch) b.resolve();
        } catch (err) {
          for (const b of batch) b.reject(err);
        }
      }
    } finally {
      this.recording = false;
    }
  }

  /** One attempt; undefined when the server stopped it (then the claim is released for later). */
  private async attempt(delivery: ClaimedDelivery): Promise<AttemptOutcome | undefined> {
    const { clock, webhooks } = this.deps;
    const attemptedAt = clock.nowMicros();
    const started = performance.now();
    let status: number | null = null;
    let error = "";
    try {
      const target = await checkTarget(new URL(delivery.url), webhooks.allowedHosts, webhooks.resolve, { every: false });
      const signedAt = new Date(Math.floor(clock.nowMicros() / 1000));
      const signature = new Webhook(delivery.secret).sign(delivery.eventId, signedAt, delivery.payload);
      const url = new URL(target.url.href);
      url.hostname = target.address.includes(":") ? `[${target.address}]` : target.address;
      const response = await fetch(url, {
        method: "POST",
        headers: {
          host: target.url.host,
          "content-type": "application/json",
          "user-agent": `cubby/${pkg.version} (webhooks)`,
          "webhook-id": delivery.eventId,
          "webhook-timestamp": String(Math.floor(signedAt.getTime() / 1000)),
          "webhook-signature": signature,
        },
        body: delivery.payload,
        redirect: "manual",
        proxy: false,
        tls: { serverName: target.host },
        signal: AbortSignal.any([AbortSignal.timeout(DELIVERY_TIMEOUT_MS), this.stopping.signal]),
      } as BunFetchRequestInit);
      status = response.status;
      await response.body?.cancel().catch(() => {});
      if (status < 200 || status > 299) error = status >= 300 && status < 400 ? `HTTP ${status}: redirects are not followed` : `HTTP ${status}`;
    } catch (err) {
      if (this.stopping.signal.aborted) {
        await this.deps.store.webhooks.settle(delivery, this.claimer, { attemptedAt, status: null, error: "the server stopped during the attempt", durationMs: elapsed(started), delivered: false, nextAttemptAt: attemptedAt }).catch(() => {});
        return undefined;
      }
      error = describe(err);
    }
    const delivered = error === "";
    return { attemptedAt, status, error, durationMs: elapsed(started), delivered, nextAttemptAt: delivered ? null : this.nextAttempt(delivery, clock.nowMicros()) };
  }

  /** When to try a failed delivery again, µs; null once its 24 h are over. */
  private nextAttempt(delivery: ClaimedDelivery, now: number): number | null {
    const end = delivery.createdAt + RETRY_WINDOW_MICROS;
    if (now >= end) return null;
    const base = this.deps.retryBaseMs ?? RETRY_BASE_MS;
    const delayMs = Math.min(base * 2 ** Math.min(delivery.attempts, 30), MAX_RETRY_DELAY_MS) * (0.8 + Math.random() * 0.4);
    return Math.min(now + Math.round(delayMs * 1000), end);
  }

  private async prune(): Promise<void> {
    try {
      await this.deps.store.webhooks.prune(this.deps.clock.nowMicros() - KEEP_MICROS);
    } catch (err) {
      logError(`webhook log prune: ${err}`);
    }
  }
}

function elapsed(startedMs: number): number {
  return Math.round(performance.now() - startedMs);
}

/** One line for an attempt that got no HTTP answer. */
function describe(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string };
  if (e.name === "TimeoutError") return `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`;
  const message = (e.message ?? String(err)).split("\n")[0]!.slice(0, 200);
  return e.code !== undefined && !message.includes(e.code) ? `${e.code}: ${message}` : message;
}
