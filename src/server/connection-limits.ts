/**
 * Caps on open connections, in total and per client address, so that one client (or a
 * botnet's worth of slow ones) cannot use up the process's file descriptors. Counted when a
 * TCP connection is accepted, before a byte is read, so the address is the TCP peer's: a
 * reverse proxy listed in TRUSTED_PROXIES carries many clients and is held only to the total.
 */
export interface ConnectionLimitsOptions {
  /** Connections open at once, all clients together (MAX_CONNECTIONS); 0: no limit. */
  total: number;
  /** Connections open at once from one address (MAX_CONNECTIONS_PER_CLIENT); 0: no limit. */
  perClient: number;
  /** Addresses exempt from the per-client limit (TRUSTED_PROXIES). */
  exempt: ReadonlySet<string>;
}

/** Counts open connections by peer address; `admit` on accept, `release` on close. */
export class ConnectionLimits {
  private open = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(private readonly opts: ConnectionLimitsOptions) {}

  /** Connections open now. */
  get size(): number {
    return this.open;
  }

  /**
   * Counts a new connection from `address` if the limits allow it.
   * @returns false when it is over a limit (the caller closes it; nothing was counted)
   */
  admit(address: string): boolean {
    if (this.opts.total > 0 && this.open >= this.opts.total) return false;
    const n = this.byAddress.get(address) ?? 0;
    if (this.opts.perClient > 0 && n >= this.opts.perClient && !this.opts.exempt.has(address)) return false;
    this.open++;
    this.byAddress.set(address, n + 1);
    return true;
  }

  /** Forgets a connection that {@link admit} counted, once it has closed. */
  release(address: string): void {
    const n = this.byAddress.get(address);
    if (n === undefined) return;
    this.open--;
    if (n <= 1) this.byAddress.delete(address);
    else this.byAddress.set(address, n - 1);
  }
}
