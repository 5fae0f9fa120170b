// test-lists: postgres-s3
// The webhook outbox of the metadata store (CONTRACT §13) on the run's backend (SQLite, or
// PostgreSQL): events commit with their transaction or not at all, and wake the deliverer only
// after the commit; a claim gives each row to one claimer; one subject's rows go one at a time,
// in order; a lease that ends frees a row for another claimer, and the old claimer's late
// outcome is logged without taking it back; an idle poll writes nothing; claims are fair (a cap
// per webhook across claimers, users round robin) and read through indexes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import path from "node:path";
import { openServices, type Services } from "../../src/service/index.ts";
import type { NewDelivery } from "../../src/storage/ports.ts";
import { PgDialect } from "drizzle-orm/pg-core";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { claimOfWebhook, dueOfWebhook, inFlightOf, LANE_WINDOW, lanesQuery } from "../../src/storage/webhook-claims.ts";
import { BACKEND, backendEnv, runSql } from "../support/backend.ts";
import { tempDir } from "../support/server.ts";

const dir = tempDir();
let services: Services;
const LEASE = 30_000_000;
/** A per-webhook cap no test here reaches (the cap and the round robin have their own test). */
const UNCAPPED = 1000;

beforeAll(async () => {
  const dataDir = path.join(dir.path, "data");
  const env = await backendEnv(dataDir);
  services = await openServices({ dataDir, maxUploadBytes: 1 << 20, databaseUrl: env.DATABASE_URL });
  await services.store.users.insert({ id: "u1", email: "u1@example.com", issuer: null, subject: null, createdAt: 1 });
  await services.store.webhooks.insert({ id: "wh_a", ownerId: "u1", url: "http://127.0.0.1:9/a", events: "file.created", secret: "whsec_AAAA", createdAt: 1 });
}, 60_000);
afterAll(async () => {
  await services?.[Symbol.asyncDispose]();
  dir[Symbol.dispose]();
});

let n = 0;
/** A delivery for webhook wh_a about `subject`, created at `at` (µs). */
const delivery = (subject: string, at = 1000): NewDelivery => ({ eventId: `evt_${++n}`, webhookId: "wh_a", type: "file.created", subject, payload: "{}", createdAt: at });
const outcome = (at: number, delivered: boolean) => ({ attemptedAt: at, status: delivered ? 204 : 503, error: delivered ? "" : "HTTP 503", durationMs: 1, delivered, nextAttemptAt: delivered ? null : at + 1 });

/** Claims everything claimable at `now` and marks it delivered, so that tests start clean. */
async function drain(now: number) {
  for (;;) {
    const rows = await services.store.webhooks.claim("drain", now, now + LEASE, 100, UNCAPPED);
    if (rows.length === 0) return;
    for (const r of rows) await services.store.webhooks.settle(r, "drain", outcome(now, true));
  }
}

test("an event commits with its transaction, and wakes listeners only after the commit", async () => {
  const wakes: string[] = [];
  services.store.onEnqueued(() => wakes.push("woken"));
  await expect(
    services.store.transaction(async (tx) => {
      await tx.webhooks.enqueue([delivery("rolled-back")]);
      throw new Error("changed my mind");
    }),
  ).rejects.toThrow("changed my mind");
  expect(wakes).toEqual([]);
  expect((await services.store.webhooks.claim("p", 10_000, 10_000 + LEASE, 10, UNCAPPED)).map((r) => r.subject)).toEqual([]);
  await services.store.transaction(async (tx) => {
    await tx.webhooks.enqueue([delivery("committed")]);
    expect(wakes).toEqual([]);
  });
  expect(wakes).toEqual(["woken"]);
  expect((await services.store.webhooks.claim("p", 10_000, 10_000 + LEASE, 10, UNCAPPED)).map((r) => [r.subject, r.url, r.secret])).toEqual([["committed", "http://127.0.0.1:9/a", "whsec_AAAA"]]);
  await drain(10_000 + LEASE);
});

test("one subject's rows go one at a time, in order; other subjects meanwhile", async () => {
  await services.store.webhooks.enqueue([delivery("f1"), delivery("f1"), delivery("f2")]);
  const first = await services.store.webhooks.claim("p1", 2000, 2000 + LEASE, 10, UNCAPPED);
  expect(first.map((r) => r.subject)).toEqual(["f1", "f2"]);
  // Held by p1: nothing for p2, and f1's second row waits for the first.
  expect(await services.store.webhooks.claim("p2", 2000, 2000 + LEASE, 10, UNCAPPED)).toEqual([]);
  // A failed attempt keeps f1's second row waiting; a delivered one lets it go.
  await services.store.webhooks.settle(first[0]!, "p1", outcome(2000, false));
  expect((await services.store.webhooks.claim("p2", 3000, 3000 + LEASE, 10, UNCAPPED)).map((r) => [r.subject, r.eventId])).toEqual([["f1", first[0]!.eventId]]);
  const again = (await services.store.webhooks.attempts("wh_a", 1, undefined))[0]!;
  expect(again).toMatchObject({ eventId: first[0]!.eventId, status: 503, error: "HTTP 503" });
  // Past every lease: the rest goes (f1's second row once its first is delivered).
  await drain(4000 + LEASE);
});

test("a lease that ends frees the row; the old claimer's late outcome is logged, not applied", async () => {
  await services.store.webhooks.enqueue([delivery("leased", 5000)]);
  const [held] = await services.store.webhooks.claim("dead", 5000, 5000 + LEASE, 10, UNCAPPED);
  expect(held?.subject).toBe("leased");
  expect(await services.store.webhooks.claim("alive", 5000 + LEASE - 1, 5000 + 2 * LEASE, 10, UNCAPPED)).toEqual([]);
  const [retaken] = await services.store.webhooks.claim("alive", 5000 + LEASE, 5000 + 2 * LEASE, 10, UNCAPPED);
  expect(retaken?.eventId).toBe(held!.eventId);
  await services.store.webhooks.settle(held!, "dead", outcome(5000 + LEASE, true));
  // Still alive's: not claimable by a third, and alive's outcome applies.
  expect(await services.store.webhooks.claim("third", 5000 + LEASE + 1, 5000 + 3 * LEASE, 10, UNCAPPED)).toEqual([]);
  await services.store.webhooks.settle(retaken!, "alive", outcome(5000 + LEASE + 2, true));
  expect((await services.store.webhooks.attempts("wh_a", 2, undefined)).map((a) => a.eventId)).toEqual([held!.eventId, held!.eventId]);
  expect(await services.store.webhooks.claim("third", 5000 + 5 * LEASE, 5000 + 6 * LEASE, 10, UNCAPPED)).toEqual([]);
});

test("concurrent claimers get disjoint rows; an idle poll leaves the store's version alone", async () => {
  await services.store.webhooks.enqueue(Array.from({ length: 60 }, (_, i) => delivery(`c${i}`, 7000)));
  const claims = await Promise.all(["a", "b", "c", "d"].map((who) => services.store.webhooks.claim(who, 7000, 7000 + LEASE, 60, UNCAPPED)));
  const all = claims.flat().map((r) => r.subject);
  expect(all).toHaveLength(60);
  expect(new Set(all).size).toBe(60);
  for (const [i, rows] of claims.entries()) for (const r of rows) await services.store.webhooks.settle(r, ["a", "b", "c", "d"][i]!, outcome(7000, true));
  const version = services.store.version();
  expect(await services.store.webhooks.claim("idle", 8000, 8000 + LEASE, 10, UNCAPPED)).toEqual([]);
  expect(services.store.version()).toBe(version);
});

test("fair claims: at most perWebhook in flight per webhook, whoever claims; users served round robin, the least recently served first", async () => {
  await services.store.users.insert({ id: "u2", email: "u2@example.com", issuer: null, subject: null, createdAt: 1 });
  await services.store.users.insert({ id: "u3", email: "u3@example.com", issuer: null, subject: null, createdAt: 1 });
  for (let i = 0; i < 3; i++) await services.store.webhooks.insert({ id: `wh_n${i}`, ownerId: "u2", url: `http://127.0.0.1:9/n${i}`, events: "file.created", secret: "whsec_NNNN", createdAt: 1 });
  await services.store.webhooks.insert({ id: "wh_v", ownerId: "u3", url: "http://127.0.0.1:9/v", events: "file.created", secret: "whsec_VVVV", createdAt: 1 });
  const at = 20_000;
  const many = (webhookId: string, count: number): NewDelivery[] => Array.from({ length: count }, (_, i) => ({ eventId: `evt_${++n}`, webhookId, type: "file.created", subject: `${webhookId}-${i}`, payload: "{}", createdAt: at }));
  // u2's three webhooks have 10 each, older than u3's one.
  await services.store.webhooks.enqueue([...many("wh_n0", 10), ...many("wh_n1", 10), ...many("wh_n2", 10)]);
  const first = await services.store.webhooks.claim("p1", at, at + LEASE, 100, 2);
  expect(first.map((r) => r.webhookId).sort()).toEqual(["wh_n0", "wh_n0", "wh_n1", "wh_n1", "wh_n2", "wh_n2"]);
  // Another process: the cap counts the first one's leases too.
  expect(await services.store.webhooks.claim("p2", at, at + LEASE, 100, 2)).toEqual([]);
  // u3's event comes later but goes first: u3 was never served, u2 just was.
  await services.store.webhooks.enqueue(many("wh_v", 3));
  for (const r of first) await services.store.webhooks.settle(r, "p1", outcome(at + 1, true));
  const second = await services.store.webhooks.claim("p2", at + 2, at + 2 + LEASE, 3, 2);
  // Turns: wh_v, wh_n0, wh_v (u3 again, the least recently served); returned by webhook.
  expect(second.map((r) => r.webhookId)).toEqual(["wh_v", "wh_v", "wh_n0"]);
  for (const r of second) await services.store.webhooks.settle(r, "p2", outcome(at + 3, true));
  await drain(at + 4);
});

test("more webhooks with deliveries due than one claim looks at: the window moves on, and every one is reached", async () => {
  await services.store.users.insert({ id: "u4", email: "u4@example.com", issuer: null, subject: null, createdAt: 1 });
  const ids = Array.from({ length: LANE_WINDOW + 22 }, (_, i) => `wh_w${String(i).padStart(4, "0")}`);
  for (const id of ids) await services.store.webhooks.insert({ id, ownerId: "u4", url: "http://127.0.0.1:9/w", events: "file.created", secret: "whsec_WWWW", createdAt: 1 });
  const at = 25_000;
  await services.store.webhooks.enqueue(ids.map((webhookId) => ({ eventId: `evt_${++n}`, webhookId, type: "file.created", subject: "one", payload: "{}", createdAt: at })));
  const reached = new Set<string>();
  const sizes: number[] = [];
  for (let i = 0; i < 3 && reached.size < ids.length; i++) {
    const rows = await services.store.webhooks.claim("w", at, at + LEASE, 1000, 2);
    sizes.push(rows.length);
    for (const r of rows) reached.add(r.webhookId);
    for (const r of rows) await services.store.webhooks.settle(r, "w", outcome(at, true));
  }
  // No claim looked at more than the window; two or three claims reached them all.
  expect(Math.max(...sizes)).toBeLessThanOrEqual(LANE_WINDOW);
  expect(reached.size).toBe(ids.length);
});

test("the claim's queries read through indexes, whatever other webhooks have pending", async () => {
  const now = 30_000;
  // 3 000 deliveries pending for other webhooks, due and not.
  for (let i = 0; i < 3; i++) {
    await services.store.webhooks.enqueue(Array.from({ length: 1000 }, (_, j) => ({ eventId: `evt_${++n}`, webhookId: `wh_n${i}`, type: "file.created", subject: `bulk-${j}`, payload: "{}", createdAt: j % 2 === 0 ? now : now * 10 })));
  }
  const dataDir = path.join(dir.path, "data");
  const plans: string[] = [];
  for (const query of [lanesQuery(now, "", LANE_WINDOW), lanesQuery(now, "wh_n0", LANE_WINDOW), dueOfWebhook("wh_a", now, 2), claimOfWebhook("p", now + LEASE, "wh_a", now, 2), inFlightOf("wh_a", now)]) {
    if (BACKEND === "sqlite-disk") {
      const { sql: text, params } = new SQLiteSyncDialect().sqlToQuery(query);
      const rows = await runSql<{ detail: string }>(dataDir, `EXPLAIN QUERY PLAN ${text}`, ...(params as (string | number)[]));
      plans.push(...rows.map((r) => r.detail).filter((d) => /webhook_deliveries|webhooks/.test(d)));
    } else {
      const { sql: text, params } = new PgDialect().sqlToQuery(query);
      await runSql(dataDir, "ANALYZE webhook_deliveries, webhooks");
      const rows = await runSql<{ "QUERY PLAN": string }>(dataDir, `EXPLAIN ${text}`, ...(params as (string | number)[]));
      if (process.env.SHOW_PLANS) console.log(rows.map((r) => r["QUERY PLAN"]).join("\n"));
      plans.push(...rows.map((r) => r["QUERY PLAN"].trim()).filter((d) => /on webhook_deliveries|on webhooks/.test(d)));
    }
  }
  expect(plans.length).toBeGreaterThan(0);
  // Every read of the outbox is a search through one of its indexes, never a scan of the table
  // (the webhooks, a few per user, are joined by their primary key, or scanned when the planner
  // finds the table small).
  const scans = plans.filter((p) => (BACKEND === "sqlite-disk" ? /^SCAN [a-z]\b/.test(p) && !/USING (COVERING )?INDEX/.test(p) && !/^SCAN w\b/.test(p) : /Seq Scan on webhook_deliveries/.test(p)));
  expect({ scans, plans }).toEqual({ scans: [], plans });
  if (process.env.SHOW_PLANS) console.log(plans.join("\n"));
  await runSql(dataDir, "UPDATE webhook_deliveries SET delivered_at = ? WHERE delivered_at IS NULL", now);
});
