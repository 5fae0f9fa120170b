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
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
}

/** One connection's header clock (see the module comment); timers are injectable for tests. */
export class HeaderDeadline {
  private timer: unknown;
  private inFlight = 0;
  private expired = false;
  /** A pipelined request's headers are complete and wait for the response in flight: no clock until it is dispatched. */
  private waiting = false;
  private idleWaiters: (() => void)[] = [];
  private readonly setTimer: (fn: () => void, ms: number) => unknown;
  private readonly clearTimer: (timer: unknown) => void;

  constructor(private readonly opts: HeaderDeadlineOptions) {
    this.setTimer = opts.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = opts.clearTimer ?? ((t) => clearTimeout(t as ReturnType<typeof setTimeout>));
  }

  /**
   * Bytes arrived on the connection (called before the HTTP parser sees them).
   * @param requestComplete whether the request in flight, if any, has been read whole
   */
  onBytes(requestComplete: boolean): void {
    if (this.timer !== undefined || this.expired || this.waiting) return;
    if (this.inFlight > 0 && !requestComplete) return; // body bytes of the request in flight
    this.timer = this.setTimer(() => {
      this.timer = undefined;
      this.expired = true;
      if (this.inFlight === 0) this.opts.refuse();
    }, this.opts.timeoutMs);
  }

  /**
   * A pipelined request's headers have arrived whole while the request before it is still
   * being answered (a parser that reads ahead, http1-fast.ts, says so): its clock stops, and
   * bytes that follow it start none until it is dispatched ({@link onRequest}). It waits on the
   * server now, not on the client: a long download must not turn it into a 408.
   */
  onHeadReceived(): void {
    if (this.expired) return;
    if (this.timer !== undefined) this.clearTimer(this.timer);
    this.timer = undefined;
    this.waiting = true;
  }

  /** A request's headers are complete and it is being handled. */
  onRequest(): void {
    if (this.timer !== undefined) this.clearTimer(this.timer);
    this.timer = undefined;
    this.expired = false;
    this.waiting = false;
    this.inFlight++;
  }

  /** A response has finished (or its connection closed). */
  onResponseDone(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    if (this.inFlight > 0) return;
    for (const fn of this.idleWaiters.splice(0)) fn();
    if (this.expired) this.opts.refuse();
  }

  /** Runs `fn` once no request is in flight: now, or when the last response finishes. */
  whenIdle(fn: () => void): void {
    if (this.inFlight === 0) fn();
    else this.idleWaiters.push(fn);
  }

  /** The connection closed: stop the clock. */
  dispose(): void {
    if (this.timer !== undefined) this.clearTimer(this.timer);
    this.timer = undefined;
  }

  /** Whether a request is being handled on the connection. */
  get busy(): boolean {
    return this.inFlight > 0;
  }
}
