/**
 * The header timeout of an HTTP/1.1 connection, for every request on it, not only the first
 * (slowloris on kept-alive connections). A request's clock starts with the first byte that
 * arrives for it while the connection is idle, or while the request in flight has been read
 * whole (a pipelined next request), and stops when its headers are complete and it is
 * dispatched. When the clock runs out, the connection is refused with 408 once no response
 * is being written on it. A connection that sends nothing at all is left to the idle timeout.
 *
 * Node.js does this in its HTTP parser (`server.headersTimeout`); Bun's `node:http` does not,
 * so the listener drives this from the socket's `data` events, which it sees before Bun's
 * parser does.
 */
export interface HeaderDeadlineOptions {
  timeoutMs: number;
  /** Answers 408 and closes the connection. */
  refuse: () => void;
  /** The clock, in milliseconds (`performance.now` unless a test gives its own). */
  now?: () => number;
}

/**
 * One connection's header clock (see the module comment). It keeps no timer of its own: a
 * timer set and cleared for every request cost a small GET ~1 µs of its ~18 (issue 16), so the
 * connection's owner calls {@link check} periodically for all its connections at once
 * (Connections, every {@link headerCheckIntervalMs}), and a request that runs out of time is
 * refused at most one interval late.
 */
export class HeaderDeadline {
  /** When the running clock started (ms), or -1 when no clock runs. */
  private startedAt = -1;
  private inFlight = 0;
  private expired = false;
  /** A pipelined request's headers are complete and wait for the response in flight: no clock until it is dispatched. */
  private waiting = false;
  private idleWaiters: (() => void)[] = [];
  private readonly now: () => number;

  constructor(private readonly opts: HeaderDeadlineOptions) {
    this.now = opts.now ?? (() => performance.now());
  }

  /**
   * Bytes arrived on the connection (called before the HTTP parser sees them).
   * @param requestComplete whether the request in flight, if any, has been read whole
   */
  onBytes(requestComplete: boolean): void {
    if (this.startedAt >= 0 || this.expired || this.waiting) return;
    if (this.inFlight > 0 && !requestComplete) return; // body bytes of the request in flight
    this.startedAt = this.now();
  }

  /**
   * Refuses the connection if the running clock has run out: now when no response is being
   * written, else once it is done ({@link onResponseDone}).
   */
  check(): void {
    if (this.startedAt < 0 || this.now() - this.startedAt < this.opts.timeoutMs) return;
    this.startedAt = -1;
    this.expired = true;
    if (this.inFlight === 0) this.opts.refuse();
  }

  /**
   * A pipelined request's headers have arrived whole while the request before it is still
   * being answered (a parser that reads ahead, http1-fast.ts, says so): its clock stops, and
   * bytes that follow it start none until it is dispatched ({@link onRequest}). It waits on the
   * server now, not on the client: a long download must not turn it into a 408.
   */
  onHeadReceived(): void {
    if (this.expired) return;
    this.startedAt = -1;
    this.waiting = true;
  }

  /** A request's headers are complete and it is being handled. */
  onRequest(): void {
    this.startedAt = -1;
    this.expired = false;
    this.waiting = false;
    this.inFlight++;
  }

  /** A response has finished (or its connection closed). */
  onResponseDone(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    if (this.inFlight > 0) return;
    if (this.idleWaiters.length > 0) for (const fn of this.idleWaiters.splice(0)) fn();
    if (this.expired) this.opts.refuse();
  }

  /** Runs `fn` once no request is in flight: now, or when the last response finishes. */
  whenIdle(fn: () => void): void {
    if (this.inFlight === 0) fn();
    else this.idleWaiters.push(fn);
  }

  /** The connection closed: stop the clock. */
  dispose(): void {
    this.startedAt = -1;
  }

  /** Whether a request is being handled on the connection. */
  get busy(): boolean {
    return this.inFlight > 0;
  }
}

/**
 * How often a listener checks its connections' header clocks (ms): a quarter of the timeout, at
 * most a second, so a request is refused between the timeout and 1¼ of it (at most 1 s late).
 */
export function headerCheckIntervalMs(timeoutMs: number): number {
  return Math.max(10, Math.min(1000, timeoutMs / 4));
}
