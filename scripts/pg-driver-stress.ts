/**
 * PostgreSQL drivers under drizzle-orm, checked for correctness under concurrency: Bun's own
 * `Bun.sql` (drizzle-orm/bun-sql) against porsager's `postgres` (drizzle-orm/postgres-js).
 *
 *   bun scripts/pg-driver-stress.ts [--ops 4000] [--workers 64] [--only bun-sql,postgres-js]
 *
 * Starts its own PostgreSQL (test/support/postgres.ts), one fresh database per variant, and stops
 * it at the end. Each worker owns its keys and keeps a model of what it wrote, so every result
 * can be checked exactly while all workers share the driver's pool: inserts of random bytea
 * (0–64 KiB), text and bigint; selects by key through prepared statements of several shapes
 * and column sets; IN lists of varying length; raw SQL; a SQL text never seen before; updates;
 * deletes; transactions that commit and that roll back. A result with another key's row,
 * an empty or different bytea, or a value of the wrong JavaScript type is a failure.
 * Throughput is printed as a ratio to postgres-js with the same pool, measured in the same run.
 */
import { SQL } from "bun";
import { and, count, eq, inArray, like, sql } from "drizzle-orm";
import { drizzle as drizzleBunSql } from "drizzle-orm/bun-sql";
import { bigint, customType, integer, pgTable, text, type PgDatabase, type PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePostgresJs } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { startPostgres } from "../test/support/postgres.ts";

const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => "bytea",
  toDriver: (v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength),
});

export const items = pgTable("stress_items", {
  k: text("k").primaryKey(),
  n: bigint("n", { mode: "number" }).notNull(),
  big: bigint("big", { mode: "bigint" }).notNull(),
  label: text("label").notNull(),
  body: bytea("body").notNull(),
  version: integer("version").notNull(),
});

const DDL = `create table stress_items (
  k text primary key, n bigint not null, big bigint not null, label text not null,
  body bytea not null, version integer not null)`;

// Both drivers give a PgDatabase; only their result kinds differ.
export type Db = PgDatabase<PgQueryResultHKT, any>;

export type DriverName = "bun-sql" | "postgres-js";
export interface Variant {
  name: string;
  driver: DriverName;
  /** Pool size. */
  max: number;
  /** Bun.sql only: named prepared statements (its default) or not. */
  prepare?: boolean;
}

/** Opens `url` through drizzle with the variant's driver. */
export function openDb(v: Variant, url: string): { db: Db; close(): Promise<void> } {
  if (v.driver === "bun-sql") {
    const client = new SQL({ url, max: v.max, prepare: v.prepare ?? true });
    return { db: drizzleBunSql({ client }) as unknown as Db, close: () => client.close({ timeout: 5 }) };
  }
  const client = postgres(url, { max: v.max, onnotice: () => {} });
  return { db: drizzlePostgresJs({ client }) as unknown as Db, close: () => client.end({ timeout: 5 }) };
}

interface Row {
  k: string;
  n: number;
  big: bigint;
  label: string;
  body: Uint8Array;
  version: number;
}

export interface StressResult {
  ops: number;
  /** SQL statements sent (a transaction counts each of its statements and BEGIN/COMMIT). */
  statements: number;
  seconds: number;
  failures: Record<string, number>;
  /** Up to three messages per failure kind. */
  samples: Record<string, string[]>;
}

/** A small seeded PRNG (mulberry32), so a run's sequence of operations can be repeated. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n) };
}

function randomBody(size: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let off = 0; off < size; off += 65_536) crypto.getRandomValues(b.subarray(off, Math.min(size, off + 65_536)));
  return b;
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;

/**
 * Compares the selected fields of one result row with the model's row.
 * @returns the failure kind and a message, or undefined when they agree
 */
function check(got: Record<string, unknown> | undefined, want: Row, fields: (keyof Row)[]): [string, string] | undefined {
  if (got === undefined) return ["missing row", `no row for ${want.k}`];
  if ("k" in got && got.k !== want.k) return ["wrong row", `asked for ${want.k}, got ${String(got.k)}`];
  for (const f of fields) {
    const v = got[f];
    switch (f) {
      case "body": {
        if (!(v instanceof Uint8Array)) return ["wrong type", `body of ${want.k} is ${typeof v} ${Object.prototype.toString.call(v)}`];
        if (sameBytes(v, want.body)) break;
        if (v.byteLength === 0) return ["empty bytea", `body of ${want.k}: 0 bytes, wrote ${want.body.byteLength}`];
        return ["bytea mismatch", `body of ${want.k}: ${v.byteLength} bytes, wrote ${want.body.byteLength}`];
      }
      case "n":
      case "version":
        if (typeof v !== "number") return ["wrong type", `${f} of ${want.k} is ${typeof v} (${String(v)})`];
        if (v !== want[f]) return ["wrong value", `${f} of ${want.k}: ${v}, want ${want[f]}`];
        break;
      case "big":
        if (typeof v !== "bigint") return ["wrong type", `big of ${want.k} is ${typeof v} (${String(v)})`];
        if (v !== want.big) return ["wrong value", `big of ${want.k}: ${v}, want ${want.big}`];
        break;
      default:
        if (typeof v !== "string") return ["wrong type", `${f} of ${want.k} is ${typeof v}`];
        if (v !== want[f]) return ["wrong value", `${f} of ${want.k}: ${JSON.stringify(v).slice(0, 60)}, want ${JSON.stringify(want[f]).slice(0, 60)}`];
    }
  }
  return undefined;
}

class Rollback extends Error {}

/**
 * Runs `ops` operations from `workers` concurrent workers against `db` (which must hold an
 * empty stress_items table, see {@link createTable}), then checks the whole table.
 */
export async function runStress(db: Db, opts: { ops: number; workers: number; seed?: number; opTimeoutMs?: number }): Promise<StressResult> {
  const failures: Record<string, number> = {};
  const samples: Record<string, string[]> = {};
  const fail = (kind: string, message: string) => {
    failures[kind] = (failures[kind] ?? 0) + 1;
    const s = (samples[kind] ??= []);
    if (s.length < 3) s.push(message);
  };
  const kPh = sql.placeholder("k");
  const prepared = {
    all: db.select().from(items).where(eq(items.k, kPh)).prepare("stress_all"),
    meta: db.select({ k: items.k, n: items.n, label: items.label }).from(items).where(eq(items.k, kPh)).prepare("stress_meta"),
    body: db.select({ body: items.body, big: items.big }).from(items).where(eq(items.k, kPh)).prepare("stress_body"),
    byPrefix: db
      .select({ k: items.k, version: items.version })
      .from(items)
      .where(like(items.k, sql.placeholder("prefix")))
      .orderBy(items.k)
      .prepare("stress_prefix"),
    count: db.select({ c: count() }).from(items).where(like(items.k, sql.placeholder("prefix"))).prepare("stress_count"),
    byVersion: db
      .select({ n: items.n, big: items.big, version: items.version })
      .from(items)
      .where(and(eq(items.k, kPh), eq(items.version, sql.placeholder("v"))))
      .prepare("stress_version"),
    insert: db
      .insert(items)
      .values({ k: kPh, n: sql.placeholder("n"), big: sql.placeholder("big"), label: sql.placeholder("label"), body: sql.placeholder("body"), version: 1 })
      .returning({ k: items.k, version: items.version })
      .prepare("stress_insert"),
  };

  const models = new Map<string, Row>(); // every worker's rows, for the final check
  const uncertain = new Set<string>(); // keys whose state an error left unknown
  let started = 0;
  let statements = 0;
  let seq = 0;
  const timeoutMs = opts.opTimeoutMs ?? 15_000;

  const worker = async (w: number) => {
    const rnd = prng((opts.seed ?? 1) * 1000 + w);
    const prefix = `w${w}-`;
    const mine = new Map<string, Row>();
    const keys = () => [...mine.keys()];
    const pick = () => keys()[rnd.int(mine.size)]!;
    // Half inside int4, half up to 2^53: Bun.sql keys its prepared statements by the parameters'
    // inferred types as well as the SQL text, so one text gets several statements.
    const randomN = () => (rnd.next() < 0.5 ? -1 : 1) * Math.floor(rnd.next() * (rnd.next() < 0.5 ? 2 ** 31 : Number.MAX_SAFE_INTEGER));
    const newRow = (): Row => ({
      k: `${prefix}${seq++}`,
      n: randomN(),
      big: BigInt.asIntN(64, (BigInt(rnd.int(2 ** 32)) << 32n) | BigInt(rnd.int(2 ** 32))),
      label: `label ${w} ${rnd.int(1e9)} ${[..."é∑😀"].slice(0, rnd.int(4)).join("")}`,
      body: randomBody(rnd.next() < 0.05 ? 0 : rnd.int(65_537)),
      version: 1,
    });
    const set = (r: Row) => {
      mine.set(r.k, r);
      models.set(r.k, r);
    };
    const forget = (k: string) => {
      mine.delete(k);
      models.delete(k);
    };
    const verify = (got: Record<string, unknown> | undefined, want: Row, fields: (keyof Row)[], what: string) => {
      const bad = check(got, want, fields);
      if (bad) fail(bad[0], `${what}: ${bad[1]}`);
    };

    while (started < opts.ops) {
      started++;
      const roll = mine.size === 0 ? 0 : rnd.next();
      let mutating: string[] = [];
      const op = async () => {
        if (roll < 0.18 || mine.size < 3) {
          const r = newRow();
          mutating = [r.k];
          statements++;
          const got = await prepared.insert.execute({ k: r.k, n: r.n, big: r.big, label: r.label, body: r.body });
          set(r);
          verify(got[0], r, ["version"], "insert returning");
          if (got.length !== 1) fail("wrong row count", `insert returning ${got.length} rows`);
        } else if (roll < 0.32) {
          const r = mine.get(pick())!;
          statements++;
          const got = await prepared.all.execute({ k: r.k });
          verify(got[0], r, ["k", "n", "big", "label", "body", "version"], "select all (prepared)");
          if (got.length > 1) fail("wrong row count", `select all ${r.k}: ${got.length} rows`);
        } else if (roll < 0.42) {
          const r = mine.get(pick())!;
          statements++;
          const got = await prepared.meta.execute({ k: r.k });
          verify(got[0], r, ["k", "n", "label"], "select meta (prepared)");
        } else if (roll < 0.5) {
          const r = mine.get(pick())!;
          statements++;
          const got = await prepared.body.execute({ k: r.k });
          verify(got[0], r, ["body", "big"], "select body (prepared)");
        } else if (roll < 0.54) {
          statements++;
          const got = await prepared.byPrefix.execute({ prefix: `${prefix}%` });
          const want = keys().sort();
          const gotKeys = got.map((g) => g.k);
          if (JSON.stringify(gotKeys) !== JSON.stringify(want)) fail("wrong row", `prefix ${prefix}: got [${gotKeys.slice(0, 4)}…] (${gotKeys.length}), want ${want.length}`);
          else for (const g of got) verify(g, mine.get(g.k)!, ["version"], "select by prefix (prepared)");
        } else if (roll < 0.58) {
          statements++;
          const got = await prepared.count.execute({ prefix: `${prefix}%` });
          if (typeof got[0]?.c !== "number") fail("wrong type", `count is ${typeof got[0]?.c}`);
          else if (got[0].c !== mine.size) fail("wrong value", `count ${prefix}: ${got[0].c}, want ${mine.size}`);
        } else if (roll < 0.62) {
          const r = mine.get(pick())!;
          statements++;
          const got = await prepared.byVersion.execute({ k: r.k, v: r.version });
          verify(got[0], r, ["n", "big", "version"], "select by key and version (prepared)");
        } else if (roll < 0.69) {
          // IN lists of 1–8 keys: a different SQL text (and parameter count) per length.
          const ks = [...new Set(Array.from({ length: 1 + rnd.int(8) }, pick))];
          statements++;
          const got = await db.select({ k: items.k, label: items.label, n: items.n }).from(items).where(inArray(items.k, ks));
          if (got.length !== ks.length) fail("wrong row count", `IN (${ks.length} keys): ${got.length} rows`);
          for (const g of got) {
            const want = mine.get(g.k);
            if (want === undefined || !ks.includes(g.k)) fail("wrong row", `IN list got ${g.k}`);
            else verify(g, want, ["label", "n"], "select IN list");
          }
        } else if (roll < 0.74) {
          const r = mine.get(pick())!;
          statements++;
          const got = (await db.execute(sql`select k, length(body)::int as len, n::text as ntext from stress_items where k = ${r.k}`)) as unknown as Record<string, unknown>[];
          const g = got[0];
          if (g === undefined) fail("missing row", `raw select ${r.k}`);
          else if (g.k !== r.k) fail("wrong row", `raw select asked ${r.k}, got ${String(g.k)}`);
          else if (g.len !== r.body.byteLength || g.ntext !== String(r.n)) fail("wrong value", `raw select ${r.k}: len ${String(g.len)} n ${String(g.ntext)}, want ${r.body.byteLength} ${r.n}`);
        } else if (roll < 0.77) {
          // A SQL text never sent before (a dynamic query), between prepared ones.
          const r = mine.get(pick())!;
          const nonce = sql.raw(String(seq++));
          statements++;
          const got = await db
            .select({ k: items.k, big: items.big, body: items.body })
            .from(items)
            .where(and(eq(items.k, r.k), sql`${nonce} = ${nonce}`));
          verify(got[0], r, ["k", "big", "body"], "select with a new SQL text");
        } else if (roll < 0.87) {
          const old = mine.get(pick())!;
          mutating = [old.k];
          const next: Row = { ...old, label: `updated ${rnd.int(1e9)}`, n: randomN(), version: old.version + 1 };
          if (rnd.next() < 0.5) next.body = randomBody(rnd.int(65_537));
          statements++;
          const got = await db
            .update(items)
            .set({ label: next.label, n: next.n, body: next.body, version: sql`${items.version} + 1` })
            .where(eq(items.k, old.k))
            .returning({ k: items.k, version: items.version, label: items.label });
          set(next);
          verify(got[0], next, ["k", "version", "label"], "update returning");
        } else if (roll < 0.92) {
          const r = mine.get(pick())!;
          mutating = [r.k];
          statements++;
          const got = await db.delete(items).where(eq(items.k, r.k)).returning({ k: items.k });
          forget(r.k);
          if (got.length !== 1 || got[0]!.k !== r.k) fail("wrong row", `delete ${r.k} returned ${JSON.stringify(got.map((g) => g.k))}`);
        } else if (roll < 0.98) {
          // A transaction that commits: insert one, update another, read both back inside it.
          const added = newRow();
          const old = mine.get(pick())!;
          const changed: Row = { ...old, label: `tx ${rnd.int(1e9)}`, version: old.version + 1 };
          mutating = [added.k, old.k];
          statements += 5;
          await db.transaction(async (tx) => {
            await tx.insert(items).values({ ...added });
            await tx.update(items).set({ label: changed.label, version: changed.version }).where(eq(items.k, old.k));
            const got = await tx.select().from(items).where(inArray(items.k, [added.k, old.k])).orderBy(items.k);
            const byKey = new Map(got.map((g) => [g.k, g]));
            verify(byKey.get(added.k), added, ["k", "n", "big", "label", "body", "version"], "select inside a transaction");
            verify(byKey.get(old.k), changed, ["k", "label", "version", "body"], "select inside a transaction");
          });
          set(added);
          set(changed);
        } else {
          // A transaction rolled back: neither its insert nor its delete may remain.
          const added = newRow();
          const victim = mine.get(pick())!;
          statements += 5;
          try {
            await db.transaction(async (tx) => {
              await tx.insert(items).values({ ...added });
              await tx.delete(items).where(eq(items.k, victim.k));
              throw new Rollback();
            });
          } catch (e) {
            if (!(e instanceof Rollback)) throw e;
          }
          const got = await db.select().from(items).where(inArray(items.k, [added.k, victim.k]));
          if (got.length !== 1) fail("rollback", `after rollback ${got.length} rows of [${added.k}, ${victim.k}]`);
          else verify(got[0], victim, ["k", "n", "big", "label", "body", "version"], "select after rollback");
        }
      };
      let timer: Timer | undefined;
      try {
        await Promise.race([
          op(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        const code = (e as { code?: string }).code;
        fail(msg.startsWith("timeout") ? "timeout" : `error ${code ?? msg.slice(0, 50)}`, msg.slice(0, 200));
        // The statement may or may not have taken effect: stop checking those keys.
        for (const k of mutating) {
          forget(k);
          uncertain.add(k);
        }
      } finally {
        clearTimeout(timer);
      }
    }
  };

  const t0 = performance.now();
  await Promise.all(Array.from({ length: opts.workers }, (_, w) => worker(w)));
  const seconds = (performance.now() - t0) / 1000;

  // The whole table against the models.
  try {
    const rows = await db.select().from(items);
    const seen = new Set<string>();
    for (const r of rows) {
      seen.add(r.k);
      if (uncertain.has(r.k)) continue;
      const want = models.get(r.k);
      if (want === undefined) fail("final state", `row ${r.k} should not exist`);
      else {
        const bad = check(r, want, ["k", "n", "big", "label", "body", "version"]);
        if (bad) fail("final state", `${bad[0]}: ${bad[1]}`);
      }
    }
    for (const k of models.keys()) if (!seen.has(k)) fail("final state", `row ${k} is missing`);
  } catch (e) {
    fail("final state", `reading the table failed: ${String(e).slice(0, 200)}`);
  }
  return { ops: started, statements, seconds, failures, samples };
}

export async function createTable(db: Db): Promise<void> {
  await db.execute(sql.raw(DDL));
}

const VARIANTS: Variant[] = [
  { name: "postgres-js", driver: "postgres-js", max: 10 },
  { name: "bun-sql", driver: "bun-sql", max: 10 },
  { name: "postgres-js max=1", driver: "postgres-js", max: 1 },
  { name: "bun-sql max=1", driver: "bun-sql", max: 1 },
  { name: "bun-sql prepare=false", driver: "bun-sql", max: 10, prepare: false },
];

async function main() {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const i = args.indexOf(`--${name}`);
    return i === -1 ? undefined : args[i + 1];
  };
  const ops = Number(flag("ops") ?? 4000);
  const workers = Number(flag("workers") ?? 64);
  const seed = Number(flag("seed") ?? 1);
  const only = flag("only")?.split(",");
  const variants = only === undefined ? VARIANTS : VARIANTS.filter((v) => only.includes(v.name));
  console.log(`pg-driver-stress: ${ops} operations per variant, ${workers} concurrent workers, seed ${seed}; Bun ${Bun.version}`);

  await using pg = await startPostgres();
  const results: [Variant, StressResult][] = [];
  for (const [i, v] of variants.entries()) {
    const url = await pg.createDatabase(`stress_${i}`);
    const { db, close } = openDb(v, url);
    let r: StressResult;
    try {
      await createTable(db);
      r = await runStress(db, { ops, workers, seed });
    } finally {
      await Promise.race([close(), Bun.sleep(10_000)]);
    }
    results.push([v, r]);
    const failed = Object.values(r.failures).reduce((a, b) => a + b, 0);
    console.log(`\n${v.name}: ${r.ops} operations (${r.statements} statements) in ${r.seconds.toFixed(2)} s, ${Math.round(r.ops / r.seconds)} ops/s, ${failed} failures`);
    for (const [kind, n] of Object.entries(r.failures).sort((a, b) => b[1] - a[1])) {
      console.log(`  ${String(n).padStart(6)}  ${kind}`);
      for (const s of r.samples[kind] ?? []) console.log(`          e.g. ${s}`);
    }
  }

  console.log("\n| variant | operations | failures | ops/s | vs postgres-js, same pool |");
  console.log("|---|---|---|---|---|");
  for (const [v, r] of results) {
    const anchor = results.find(([a]) => a.driver === "postgres-js" && a.max === v.max);
    const ratio = anchor === undefined ? "—" : `${(r.ops / r.seconds / (anchor[1].ops / anchor[1].seconds)).toFixed(2)}×`;
    const failed = Object.values(r.failures).reduce((a, b) => a + b, 0);
    console.log(`| ${v.name} | ${r.ops} | ${failed} | ${Math.round(r.ops / r.seconds)} | ${ratio} |`);
  }
}

if (import.meta.main) await main();
