// test-lists: postgres-s3
// Webhooks that are never lost (CONTRACT §13), through real servers on the run's backend and a
// real receiver on loopback verifying every signature: SIGKILL between commit and delivery, then
// a restart; a kill while deliveries are in flight; 1000 uploads under several serving processes;
// two instances on one store; targets allowed by host name and by CIDR range (a server without
// any allowance refuses a name that resolves to loopback); and https, the certificate checked
// against the URL's host name while the connection goes to the checked address.
import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import type { NewWebhookJson } from "../../src/domain/webhook.ts";
import { runSql } from "../support/backend.ts";
import { client, startServer, tempDir, type RunningServer } from "../support/server.ts";
import { OPENSSL } from "../support/tls.ts";
import { waitFor } from "../support/wait.ts";
import { startReceiver, type Receiver } from "../support/webhook-receiver.ts";

const ENV = { WEBHOOK_ALLOWED_HOSTS: "127.0.0.1", CUBBY_TEST_WEBHOOK_RETRY_MS: "200" };
/**
 * For the servers a test kills: claims held for 3 s instead of 30, so that what the killed
 * process had claimed is free again soon (each attempt here takes at most 200 ms).
 */
const KILLED_ENV = { ...ENV, CUBBY_TEST_WEBHOOK_LEASE_MS: "3000" };

async function createHook(server: RunningServer, key: string, url: string): Promise<NewWebhookJson> {
  const res = await client(server, key).fetch("/v1/webhooks", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ url }) });
  if (res.status !== 200) throw new Error(`webhook: ${res.status} ${await res.text()}`);
  return (await res.json()) as NewWebhookJson;
}

/** Events sent (`ids`), received (distinct among them), duplicated (received more than once). */
function tally(receiver: Receiver, ids: Set<string>): { sent: number; received: number; duplicated: number; unsigned: number } {
  const accepted = receiver.accepted().filter((r) => ids.has(r.data.file?.id ?? ""));
  const distinct = new Set(accepted.map((r) => r.id));
  return { sent: ids.size, received: distinct.size, duplicated: accepted.length - distinct.size, unsigned: accepted.filter((r) => !r.verified).length };
}

describe("a server killed with SIGKILL", () => {
  test("between commit and delivery: every committed event is delivered once it is back", async () => {
    using data = tempDir();
    await using receiver = startReceiver();
    receiver.answer = () => new Response(null, { status: 503 });
    const first = await startServer({ dataDir: data.path, env: KILLED_ENV });
    let key: string;
    const ids = new Set<string>();
    try {
      key = await first.mintKey("alice@example.com");
      receiver.secret = (await createHook(first, key, receiver.url())).secret;
      for (let i = 0; i < 20; i++) ids.add((await client(first, key).upload(`k${i}`, `?name=kill-${i}.txt`)).id);
      await waitFor(() => receiver.received.length > 0, "a first refused attempt");
    } finally {
      await first.kill9();
    }
    receiver.answer = () => new Response(null, { status: 204 });
    await using second = await startServer({ dataDir: data.path, env: KILLED_ENV });
    // A delivery the killed process had claimed (its attempt answered, not yet recorded) waits
    // for the claim's lease (3 s here) to end.
    await waitFor(() => tally(receiver, ids).received === ids.size, "every event after the restart", { timeoutMs: 60_000, detail: () => `${JSON.stringify(tally(receiver, ids))}; ${receiver.received.length} attempts; ${second.errors()}` });
    const figures = tally(receiver, ids);
    console.log(`SIGKILL between commit and delivery: ${JSON.stringify(figures)}`);
    expect(figures).toEqual({ sent: 20, received: 20, duplicated: 0, unsigned: 0 });
    expect(second.errors()).not.toContain("webhook deliveries:");
  }, 90_000);

  test("while deliveries are in flight: nothing lost, duplicates only of those in flight", async () => {
    using data = tempDir();
    await using receiver = startReceiver();
    const first = await startServer({ dataDir: data.path, env: KILLED_ENV });
    const ids = new Set<string>();
    let key = "";
    let hook: NewWebhookJson;
    let killStart = 0;
    let killDone = 0;
    try {
      key = await first.mintKey("alice@example.com");
      hook = await createHook(first, key, receiver.url());
      receiver.secret = hook.secret;
      // Every answer takes 200 ms, so deliveries are in flight when the kill comes.
      receiver.answer = () => Bun.sleep(200).then(() => new Response(null, { status: 204 }));
      for (let i = 0; i < 40; i++) ids.add((await client(first, key).upload(`f${i}`, `?name=flight-${i}.txt`)).id);
      await waitFor(() => receiver.open() > 0, "a delivery in flight");
    } finally {
      killStart = Date.now();
      await first.kill9();
      killDone = Date.now();
    }
    // In flight at the kill: arrived before the processes were gone, answered after it began
    // (for the figures; an answer that left the receiver just before the kill but was not yet
    // recorded is in flight too, which this count cannot see).
    const inFlightAtKill = receiver.received.filter((r) => r.at <= killDone && (r.doneAt === undefined || r.doneAt >= killStart)).length;
    // What the killed server's outbox marks delivered: none of these may be sent again. (Its
    // attempt log may hold a 2xx whose outbox row the kill left unmarked: that one is in flight.)
    const recordedBeforeKill = new Set(
      (await runSql<{ event_id: string }>(data.path, "SELECT event_id FROM webhook_deliveries WHERE delivered_at IS NOT NULL")).map((r) => r.event_id),
    );
    await using second = await startServer({ dataDir: data.path, env: KILLED_ENV });
    // Done once the restarted server has recorded a 2xx for every event the receiver has seen
    // that the killed one had not: those it had claimed wait for the claim's lease (3 s here) to end.
    const recorded = async () => {
      const res = await client(second, key).fetch(`/v1/webhooks/${hook!.id}/deliveries`);
      return new Set(((await res.json()) as { deliveries: { event_id: string; status: number | null }[] }).deliveries.filter((d) => d.status === 204).map((d) => d.event_id));
    };
    await waitFor(
      async () => {
        const done = await recorded();
        return tally(receiver, ids).received === ids.size && receiver.accepted().every((r) => done.has(r.id));
      },
      "every event received, and recorded as delivered by a live process",
      { timeoutMs: 60_000, pollMs: 250, detail: () => JSON.stringify(tally(receiver, ids)) },
    );
    const figures = tally(receiver, ids);
    console.log(`SIGKILL with deliveries in flight: ${JSON.stringify(figures)}; ${inFlightAtKill} in flight at the kill`);
    // Duplicates only of deliveries the killed server had not recorded (at least once, never
    // again once recorded).
    const seen = new Map<string, number>();
    for (const r of receiver.accepted().filter((a) => ids.has(a.data.file?.id ?? ""))) seen.set(r.id, (seen.get(r.id) ?? 0) + 1);
    const duplicatedButRecorded = [...seen].filter(([id, n]) => n > 1 && recordedBeforeKill.has(id)).map(([id]) => id);
    expect({ ...figures, duplicatedButRecorded }).toEqual({ sent: 40, received: 40, duplicated: figures.duplicated, unsigned: 0, duplicatedButRecorded: [] });
  }, 120_000);
});

test("1000 uploads under WORKERS=2: each file.created delivered, duplicates counted", async () => {
  await using receiver = startReceiver();
  await using server = await startServer({ env: { ...ENV, WORKERS: "2" } });
  const key = await server.mintKey("alice@example.com");
  receiver.secret = (await createHook(server, key, receiver.url())).secret;
  const ids = new Set<string>();
  let next = 0;
  const uploader = async () => {
    while (next < 1000) {
      const i = next++;
      ids.add((await client(server, key).upload(`n${i}`, `?name=many-${i}.txt`)).id);
    }
  };
  await Promise.all(Array.from({ length: 16 }, uploader));
  await waitFor(() => tally(receiver, ids).received === 1000, "1000 events", 120_000, 100);
  const figures = tally(receiver, ids);
  console.log(`1000 uploads, WORKERS=2: ${JSON.stringify(figures)}`);
  expect(figures).toEqual({ sent: 1000, received: 1000, duplicated: 0, unsigned: 0 });
}, 240_000);

describe("WEBHOOK_ALLOWED_HOSTS by name and by CIDR range", () => {
  test("none: a name resolving to loopback is refused; localhost and 127.0.0.0/8: both delivered", async () => {
    await using receiver = startReceiver();
    {
      await using strict = await startServer({ env: {} });
      const key = await strict.mintKey("alice@example.com");
      for (const url of [`http://localhost:${receiver.port}/`, receiver.url()]) {
        const res = await client(strict, key).fetch("/v1/webhooks", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ url }) });
        expect({ url, status: res.status }).toEqual({ url, status: 400 });
      }
    }
    await using server = await startServer({ env: { WEBHOOK_ALLOWED_HOSTS: "localhost,127.0.0.0/8" } });
    const key = await server.mintKey("alice@example.com");
    const byName = await createHook(server, key, `http://localhost:${receiver.port}/by-name`);
    const byRange = await createHook(server, key, receiver.url("/by-range"));
    // One secret per webhook: the receiver verifies with the one its path names.
    const secrets: Record<string, string> = { [byName.id]: byName.secret, [byRange.id]: byRange.secret };
    expect(Object.keys(secrets)).toHaveLength(2);
    receiver.secret = byName.secret;
    const file = await client(server, key).upload("n", "?name=allowed.txt");
    await waitFor(() => receiver.accepted().filter((r) => r.data.file?.id === file.id).length === 2, "a delivery to each", 15_000);
    const got = receiver.accepted().filter((r) => r.data.file?.id === file.id);
    expect(got.map((r) => r.host).sort()).toEqual([`127.0.0.1:${receiver.port}`, `localhost:${receiver.port}`]);
    // The one sent to the name verified with its secret.
    expect(got.find((r) => r.host.startsWith("localhost"))!.verified).toBe(true);
  }, 60_000);
});

test("two instances on one store: 300 uploads through both, each event delivered once", async () => {
  using data = tempDir();
  await using receiver = startReceiver();
  // Started together on one data directory: one PostgreSQL database on postgres-s3, one SQLite file otherwise.
  const [a, b] = await Promise.all([startServer({ dataDir: data.path, env: ENV }), startServer({ dataDir: data.path, env: ENV })]);
  await using _a = a!;
  await using _b = b!;
  const key = await a!.mintKey("alice@example.com");
  receiver.secret = (await createHook(a!, key, receiver.url())).secret;
  const ids = new Set<string>();
  let next = 0;
  const uploader = async () => {
    while (next < 300) {
      const i = next++;
      ids.add((await client(i % 2 === 0 ? a! : b!, key).upload(`t${i}`, `?name=two-${i}.txt`)).id);
    }
  };
  await Promise.all(Array.from({ length: 8 }, uploader));
  await waitFor(() => tally(receiver, ids).received === 300, "300 events", { timeoutMs: 60_000, pollMs: 100, detail: () => JSON.stringify(tally(receiver, ids)) });
  const figures = tally(receiver, ids);
  console.log(`two instances, 300 uploads: ${JSON.stringify(figures)}`);
  expect(figures).toEqual({ sent: 300, received: 300, duplicated: 0, unsigned: 0 });
}, 120_000);

test("https: the delivery connects to the checked address and verifies the certificate against the URL's host name", async () => {
  using dir = tempDir();
  // Certificates for a name only (no IP address in subjectAltName): one for localhost, one for another name.
  const cert = (name: string) => {
    const run = Bun.spawnSync([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", `/CN=${name}`,
      "-addext", `subjectAltName=DNS:${name}`, "-keyout", path.join(dir.path, `${name}.key`), "-out", path.join(dir.path, `${name}.pem`)], { stderr: "pipe" });
    if (run.exitCode !== 0) throw new Error(run.stderr.toString());
    return { cert: fs.readFileSync(path.join(dir.path, `${name}.pem`), "utf8"), key: fs.readFileSync(path.join(dir.path, `${name}.key`), "utf8") };
  };
  const good = cert("localhost");
  const wrong = cert("elsewhere.test");
  fs.writeFileSync(path.join(dir.path, "cas.pem"), good.cert + wrong.cert);
  const seen: string[] = [];
  const tlsReceiver = (tls: { cert: string; key: string }) =>
    Bun.serve({ hostname: "127.0.0.1", port: 0, tls, fetch: async (r) => (seen.push(`${r.headers.get("host")} ${(JSON.parse(await r.text()) as { type: string }).type}`), new Response(null, { status: 204 })) });
  const right = tlsReceiver(good);
  const mismatched = tlsReceiver(wrong);
  try {
    await using server = await startServer({ env: { WEBHOOK_ALLOWED_HOSTS: "localhost", NODE_EXTRA_CA_CERTS: path.join(dir.path, "cas.pem") } });
    const key = await server.mintKey("alice@example.com");
    const ok = await createHook(server, key, `https://localhost:${right.port}/hook`);
    const refused = await createHook(server, key, `https://localhost:${mismatched.port}/hook`);
    await client(server, key).upload("t", "?name=tls.txt");
    await waitFor(() => seen.length === 1, "the delivery over TLS", 15_000);
    const attempts = async (id: string) => ((await (await client(server, key).fetch(`/v1/webhooks/${id}/deliveries`)).json()) as { deliveries: { status: number | null; error: string }[] }).deliveries;
    const failed = await waitFor(async () => (await attempts(refused.id))[0], "the attempt to the receiver with another name's certificate", 15_000);
    expect(seen).toEqual([`localhost:${right.port} file.created`]);
    // The receiver's answer is recorded once it has arrived: the log may lag the receiver a moment.
    expect(await waitFor(async () => (await attempts(ok.id))[0], "the delivered attempt in the log", 15_000)).toMatchObject({ status: 204, error: "" });
    expect(failed.status).toBeNull();
    expect(failed.error).toContain("ERR_TLS_CERT_ALTNAME_INVALID");
  } finally {
    await Promise.all([right.stop(true), mismatched.stop(true)]);
  }
}, 60_000);
