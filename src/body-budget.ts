/**
 * The process's budget of request-body bytes held in memory between the socket and the disk:
 * what the body reader has read ahead of its consumer (server/body-reader.ts) and what the file
 * appenders hold until written (storage/file-appender.ts), for every upload at once.
 *
 * Each body reader and each appender holds a {@link BudgetShare}. A holder may hold up to its own
 * ceiling while the budget has room; once it is full and someone waits for room, a holder past
 * its fair share (capacity / holders) takes no more until it drains, so the room that frees goes
 * to the holders that waited, oldest first. Nothing is ever refused: a reader over its share
 * pauses its connection (back-pressure), an appender writes what it has and waits for its writes.
 *
 * No deadlock, by two rules: a holder holding nothing may always take one chunk, and what a
 * holder holds drains by its own progress (a reader's queue as its consumer reads, an appender's
 * chunks as it writes them; refused more, or with others waiting, it writes what it gathered
 * rather than wait for a whole batch). So no body waits on another's: a first version let a
 * reader holding nothing start only when the budget had room, and ten appenders each holding
 * half a batch waited for the next chunk from readers waiting for room.
 *
 * Why (docs/benchmarks.md, issue 42): ten 8 MiB parts of an S3 multipart upload arrive at once,
 * and with 1 MiB of read-ahead and 2 MiB of write buffers each they held ~35 MiB between them,
 * where one upload holds 3 MiB; the budget keeps the sum near {@link BODY_BUDGET_BYTES} however
 * many bodies arrive together, and leaves a lone upload its whole read-ahead and buffers.
 */

/** One holder's part of a {@link ByteBudget}: the bytes it holds now, and whether it may hold more. */
export class BudgetShare {
  private bytes = 0;
  private gone = false;

  /** Use {@link ByteBudget.join}. */
  constructor(
    private readonly budget: ByteBudget,
    /** The most this holder ever holds past its first chunk, in bytes (its read-ahead, its buffers). */
    readonly ceiling: number,
    /** Called once, some time after {@link whenRoom}, when the budget has room again. */
    readonly onRoom: (() => void) | undefined,
  ) {}

  /** Bytes this holder holds. */
  get held(): number {
    return this.bytes;
  }

  /** Whether some holder waits for room: what can be given back now should be. */
  get contended(): boolean {
    return this.budget.waitingCount > 0;
  }

  /**
   * Whether holding `bytes` more keeps to the rules (module comment): always when nothing is held;
   * else within the ceiling, while the budget is not full (the chunk that fills it may pass it:
   * by one chunk at most), and, while a holder waits for room, within the fair share.
   */
  mayHold(bytes = 1): boolean {
    if (this.bytes === 0) return true;
    const after = this.bytes + bytes;
    if (after > this.ceiling) return false;
    return this.budget.admits(after);
  }

  /** Counts `bytes` (≥ 0) as held. Never refuses: what has arrived is held; {@link mayHold} decides whether more may come. */
  hold(bytes: number): void {
    if (this.gone) return;
    this.bytes += bytes;
    this.budget.changed(bytes);
  }

  /** Counts `bytes` as no longer held (given to a consumer, written, dropped), and wakes holders waiting for room. */
  release(bytes: number): void {
    if (this.gone) return;
    const n = Math.min(bytes, this.bytes);
    this.bytes -= n;
    this.budget.changed(-n);
  }

  /**
   * Asks for {@link onRoom} once the budget has room, when it is the budget (not this holder's own
   * ceiling) that refuses it more; otherwise the holder's own draining is what lets it go on.
   */
  whenRoom(): void {
    if (this.gone || this.bytes + 1 > this.ceiling) return;
    this.budget.enqueue(this);
  }

  /** Leaves the budget: what it held is released, its waiting ends, the others' fair shares grow. Idempotent. */
  leave(): void {
    if (this.gone) return;
    this.budget.changed(-this.bytes);
    this.bytes = 0;
    this.gone = true;
    this.budget.remove(this);
  }
}

/** Bytes held by many holders at once, kept near a capacity: see the module comment. */
export class ByteBudget {
  private total = 0;
  private readonly holders = new Set<BudgetShare>();
  /** Holders waiting for room, in the order they asked (a Set keeps insertion order). */
  private readonly waiting = new Set<BudgetShare>();

  /** @param capacity bytes all holders may hold together (each may still take one chunk when holding nothing) */
  constructor(readonly capacity: number) {}

  /** Bytes held by all holders. */
  get held(): number {
    return this.total;
  }

  /** Holders in the budget now. */
  get holderCount(): number {
    return this.holders.size;
  }

  /** Holders waiting for room now. */
  get waitingCount(): number {
    return this.waiting.size;
  }

  /** The capacity divided evenly between the holders, in bytes. */
  get fairShare(): number {
    return Math.floor(this.capacity / Math.max(1, this.holders.size));
  }

  /**
   * A new holder.
   * @param ceiling the most it may hold past its first chunk, in bytes
   * @param onRoom called when room frees after the holder asked ({@link BudgetShare.whenRoom}); called
   *   from a microtask, never from inside {@link BudgetShare.release}
   */
  join(ceiling: number, onRoom?: () => void): BudgetShare {
    const share = new BudgetShare(this, ceiling, onRoom);
    this.holders.add(share);
    return share;
  }

  /** @internal the capacity and fairness rules of {@link BudgetShare.mayHold}; `after`: what the holder would hold */
  admits(after: number): boolean {
    return this.total < this.capacity && (this.waiting.size === 0 || after <= this.fairShare);
  }

  /** @internal */
  changed(delta: number): void {
    this.total += delta;
    if (delta < 0 && this.waiting.size > 0 && this.total < this.capacity) this.wake();
  }

  /** @internal */
  enqueue(share: BudgetShare): void {
    // Not woken now even if there is room: a holder refused for fairness would be woken, refused
    // and queued again in a loop of microtasks. Only a release or a departure wakes.
    this.waiting.delete(share);
    this.waiting.add(share);
  }

  /** @internal */
  remove(share: BudgetShare): void {
    this.holders.delete(share);
    this.waiting.delete(share);
    // The others' fair shares grew.
    if (this.waiting.size > 0 && this.total < this.capacity) this.wake();
  }

  private waking = false;

  /**
   * Wakes waiting holders, oldest first, for as much room as there is (each counted for what it
   * may take up to its fair share). In a microtask: a woken holder's callback (resuming a
   * connection, resolving a promise) never runs inside another holder's release.
   */
  private wake(): void {
    if (this.waking) return;
    this.waking = true;
    queueMicrotask(() => {
      this.waking = false;
      let room = this.capacity - this.total;
      const fair = this.fairShare;
      const woken: BudgetShare[] = [];
      for (const share of this.waiting) {
        if (room <= 0) break;
        this.waiting.delete(share);
        woken.push(share);
        room -= Math.max(1, Math.min(fair, share.ceiling) - share.held);
      }
      for (const share of woken) share.onRoom?.();
    });
  }
}

/**
 * Bytes of request bodies the process holds between sockets and disk at most (plus one chunk
 * per holder, which a holder holding nothing may always take). A lone upload keeps its 3 MiB
 * (1 MiB of read-ahead, 2 MiB of writes); ten at once hold about a chunk each. Measured (issue
 * 42, docs/benchmarks.md): ten bodies of 100 MiB at once written through the appender from
 * memory peaked 12, 21 and 28 MiB over idle with 4, 8 and 16 MiB, at 418, 400 and 373 MB/s: a
 * smaller budget cost no speed.
 */
export const BODY_BUDGET_BYTES = 4 * 1024 * 1024;

/** The process's budget, shared by every request body and every file appender. */
export const bodyBudget = new ByteBudget(BODY_BUDGET_BYTES);

