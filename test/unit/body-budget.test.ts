// ByteBudget (src/body-budget.ts): the bytes request bodies hold between socket and disk, shared
// by every body reader and file appender of a process. A holder may hold up to its ceiling while
// the budget has room; once it is full and someone waits, holders past their fair share stop and
// the room that frees goes to the waiters, oldest first; a holder holding nothing may always
// take one chunk (every body moves on, whatever the others hold). Never an error.
import { expect, test } from "bun:test";
import { ByteBudget } from "../../src/body-budget.ts";

const KIB = 1024;

/** Lets queued microtasks run (the budget wakes waiters from one). */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** One turn of the event loop's timers: a test's guard can fire even while promises spin. */
const aTurnForTimers = () => new Promise<void>((r) => setTimeout(r, 0));

test("alone, a holder takes up to its ceiling; past it, or with the budget full, it may not; what it holds is counted", () => {
  const budget = new ByteBudget(1024 * KIB);
  const a = budget.join(512 * KIB);
  a.hold(256 * KIB);
  const alone = { upToCeiling: a.mayHold(256 * KIB), pastCeiling: a.mayHold(257 * KIB) };
  const b = budget.join(2048 * KIB);
  b.hold(768 * KIB);
  expect({ ...alone, full: a.mayHold(1), held: budget.held, holders: budget.holderCount, fairShare: budget.fairShare }).toEqual({
    upToCeiling: true,
    pastCeiling: false,
    full: false,
    held: 1024 * KIB,
    holders: 2,
    fairShare: 512 * KIB,
  });
});

test("a holder holding nothing may always take one chunk, however full the budget (no body waits on another's consumer)", () => {
  const budget = new ByteBudget(64 * KIB);
  const stuck = Array.from({ length: 10 }, () => budget.join(1024 * KIB));
  for (const s of stuck) s.hold(512 * KIB); // ten bodies whose consumers stopped, 80 times the capacity
  const fresh = budget.join(1024 * KIB);
  const first = fresh.mayHold(512 * KIB);
  fresh.hold(512 * KIB);
  expect({ first, second: fresh.mayHold(1) }).toEqual({ first: true, second: false });
});

test("while someone waits, holders past their fair share take no more, and the room that frees goes to the waiter", async () => {
  const budget = new ByteBudget(1024 * KIB);
  let woken = 0;
  const big = budget.join(1024 * KIB);
  big.hold(768 * KIB); // past its fair share (512 KiB of two)
  const small = budget.join(1024 * KIB, () => woken++);
  small.hold(256 * KIB); // the budget is full
  const refused = !small.mayHold(1);
  small.whenRoom();
  const contended = big.contended; // what big holds should go now (the appender writes what it gathered)
  const bigWhileWaiting = { afterRelease: (big.release(256 * KIB), big.mayHold(1)) }; // 512 KiB left: at its share
  await settle();
  expect({ refused, contended, woken, smallMay: small.mayHold(128 * KIB), waiting: budget.waitingCount, ...bigWhileWaiting }).toEqual({
    refused: true,
    contended: true,
    woken: 1,
    smallMay: true,
    waiting: 0,
    afterRelease: false,
  });
});

test("waiters are woken oldest first, as many as the freed room serves; the others stay queued for the next release", async () => {
  const budget = new ByteBudget(1024 * KIB);
  const order: string[] = [];
  const filler = budget.join(1024 * KIB);
  filler.hold(1024 * KIB);
  const holders = ["a", "b", "c", "d"].map((name) => {
    const share = budget.join(256 * KIB, () => order.push(name));
    share.hold(64 * KIB); // each holds a chunk, so each must wait for room
    return share;
  });
  for (const share of holders) share.whenRoom();
  // 900 of 1024 KiB held: 124 KiB of room, less than what one waiter may take (its fair share,
  // 204.8 KiB, less the 64 KiB it holds): one is woken.
  filler.release(380 * KIB);
  await settle();
  const first = [...order];
  filler.release(644 * KIB);
  await settle();
  expect({ first, all: order, waiting: budget.waitingCount }).toEqual({ first: ["a"], all: ["a", "b", "c", "d"], waiting: 0 });
});

test("leaving gives back what a holder held and grows the others' shares; a waiter is woken by it; leave and release are idempotent", async () => {
  const budget = new ByteBudget(512 * KIB);
  let woken = 0;
  const leaving = budget.join(1024 * KIB);
  leaving.hold(512 * KIB);
  const waiter = budget.join(1024 * KIB, () => woken++);
  waiter.hold(64 * KIB);
  waiter.whenRoom();
  leaving.leave();
  leaving.leave();
  leaving.release(100);
  leaving.hold(100); // after leaving: not counted
  await settle();
  waiter.release(1024 * KIB); // more than it holds: down to 0
  expect({ woken, held: budget.held, holders: budget.holderCount, fairShare: budget.fairShare }).toEqual({ woken: 1, held: 0, holders: 1, fairShare: 512 * KIB });
});

test("a holder refused by its own ceiling is not queued: only its own draining lets it go on", async () => {
  const budget = new ByteBudget(4096 * KIB);
  let woken = 0;
  const share = budget.join(128 * KIB, () => woken++);
  share.hold(128 * KIB);
  share.whenRoom();
  expect({ may: share.mayHold(1), waiting: budget.waitingCount }).toEqual({ may: false, waiting: 0 });
});

test("ten bodies against a budget of four chunks all finish: no body waits on another's (a model of ten S3 parts at once)", async () => {
  // Each body as the server runs it: its reader reads a chunk when its share allows, else waits
  // for room; its consumer hands the chunk to its writer, which gathers up to a batch (written at
  // once while someone waits for room) and writes in the background (a timer stands for the
  // disk). Had a reader holding nothing to wait for room too, the writers' half batches would wait
  // for chunks that never come: the test would time out instead.
  const CHUNK = 64 * KIB;
  const budget = new ByteBudget(4 * CHUNK);
  const roomFor = (onRoom: { wake?: () => void }) => new Promise<void>((resolve) => (onRoom.wake = resolve));
  const body = async () => {
    const readerRoom: { wake?: () => void } = {};
    const writerRoom: { wake?: () => void } = {};
    const reader = budget.join(4 * CHUNK, () => readerRoom.wake?.());
    const writer = budget.join(8 * CHUNK, () => writerRoom.wake?.());
    let gathered = 0;
    let writing = Promise.resolve();
    const flush = () => {
      const bytes = gathered;
      gathered = 0;
      writing = writing.then(() => new Promise<void>((resolve) => setTimeout(() => (writer.release(bytes), resolve()), 1)));
    };
    for (let i = 0; i < 40; i++) {
      while (!reader.mayHold(CHUNK)) {
        reader.whenRoom();
        await roomFor(readerRoom);
      }
      reader.hold(CHUNK); // the chunk arrived
      while (!writer.mayHold(CHUNK)) {
        if (gathered > 0) flush();
        writer.whenRoom();
        await Promise.race([writing, roomFor(writerRoom)]);
        await aTurnForTimers(); // a model that spins on promises still lets its guard's timer fire
      }
      reader.release(CHUNK);
      writer.hold(CHUNK);
      gathered += CHUNK;
      if (gathered >= 4 * CHUNK || writer.contended) flush();
    }
    if (gathered > 0) flush();
    await writing;
    reader.leave();
    writer.leave();
  };
  const finished = await Promise.race([Promise.all(Array.from({ length: 10 }, body)).then(() => "finished"), Bun.sleep(10_000).then(() => "stuck")]);
  expect({ finished, held: budget.held, holders: budget.holderCount }).toEqual({ finished: "finished", held: 0, holders: 0 });
}, 20_000);
