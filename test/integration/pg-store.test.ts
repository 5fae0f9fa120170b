// test-lists: default
// The PostgreSQL metadata store's change signal, on a real PostgreSQL: version() follows commits
// by this store at once and by other connections through LISTEN/NOTIFY, and stops trusting the
// cache when its own pings stop coming back.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { connectPostgres } from "../../src/storage/pg-driver.ts";
import { openPgMetadata, type PgMetadataStore } from "../../src/storage/pg-metadata.ts";
import { systemClock } from "../../src/domain/time.ts";
import { ReadCache } from "../../src/service/read-cache.ts";
import { UserService } from "../../src/service/users.ts";
import { startPostgres } from "../support/postgres.ts";
import { waitFor } from "../support/wait.ts";

let pg: Awaited<ReturnType<typeof startPostgres>>;
let url: string;
let store: PgMetadataStore;
beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.createDatabase("signal");
}, 60_000);
// The last test stops PostgreSQL under the store: closing its pool then waits out the driver's
// 5 s end timeout.
afterAll(async () => {
  await store?.[Symbol.asyncDispose]();
  await pg?.stop();
}, 20_000);

const user = (id: string) => ({ id, email: `${id}@example.com`, issuer: null, subject: null, createdAt: 1 });

// A heartbeat is a commit (NOTIFY takes a transaction id), and a snapshot moves with any
// transaction id the cluster hands out: this store pings once a minute, and the store below, which
// pings every 100 ms, is opened only after these tests.
describe("the shared version", () => {
  let quiet: PgMetadataStore;
  beforeAll(async () => {
    quiet = await openPgMetadata(connectPostgres(url), { heartbeatMs: 60_000, deafAfterMs: 120_000 });
  });
  afterAll(async () => {
    await quiet?.[Symbol.asyncDispose]();
  });

  test("sharedVersion holds while nothing commits, and moves at once, with no notification awaited, on another connection's commit; a read cache sees that commit on its next read", async () => {
    const cache = new ReadCache<string | undefined>(quiet, 10);
    const email = async () => cache.get("shared", async () => (await quiet.users.byId("shared"))?.email);
    await quiet.users.insert(user("shared"));
    const v = await quiet.sharedVersion();
    expect(await quiet.sharedVersion()).toBe(v);
    expect(await email()).toBe("shared@example.com");
    expect(cache.peek("shared")).toBeUndefined(); // never trusted without asking the store
    const other = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await other`UPDATE users SET email = 'moved@example.com' WHERE id = 'shared'`;
      // The very next read: no wait for the notification.
      expect(await quiet.sharedVersion()).not.toBe(v);
      expect(await email()).toBe("moved@example.com");
    } finally {
      await other.end();
    }
  });
});

describe("the version and its heartbeat", () => {
  beforeAll(async () => {
    store = await openPgMetadata(connectPostgres(url), { heartbeatMs: 100, deafAfterMs: 400 });
  });

  test("quiet: the version holds; own commits move it at once", async () => {
    const v = store.version();
    await Bun.sleep(300); // several heartbeats: pings do not count as changes
    expect(store.version()).toBe(v);
    await store.users.insert(user("own"));
    expect(store.version()).not.toBe(v);
  });

  test("a commit through another connection moves the version when its notification arrives", async () => {
    const v = store.version();
    const other = postgres(url, { max: 1, onnotice: () => {} });
    await other`INSERT INTO users (id, email, created_at) VALUES ('other', 'other@example.com', 1)`;
    await other.end();
    await waitFor(() => store.version() !== v, "the notification", 5_000, 10);
  });

  test("ten concurrent first sign-ins of one e-mail make one user, none fails", async () => {
    const users = new UserService({ store, clock: systemClock() });
    const made = await Promise.allSettled(Array.from({ length: 10 }, () => users.findOrCreateByEmail("race@example.com")));
    expect(made.map((m) => m.status)).toEqual(Array(10).fill("fulfilled"));
    expect(new Set(made.map((m) => (m as PromiseFulfilledResult<{ id: string }>).value.id)).size).toBe(1);
  });

  test("when its pings stop coming back, nothing is cached", async () => {
    await pg.stop();
    await Bun.sleep(600);
    const a = store.version();
    expect(store.version()).not.toBe(a);
  });
});
