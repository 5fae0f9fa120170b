/**
 * A webhook receiver for tests: a real HTTP server (Bun.serve) on loopback that verifies every
 * delivery's signature with the endpoint's secret exactly as a receiver would, with the
 * `standardwebhooks` package's verifier, and records what arrived. What it answers is the test's
 * to choose (`answer`), so it can be down (503), slow, silent or redirecting.
 */
import { Webhook } from "standardwebhooks";

/** One delivery as received. */
export interface Received {
  id: string;
  type: string;
  data: Record<string, unknown> & { file?: { id: string; name: string } };
  /** Whether the signature verified with the secret. */
  verified: boolean;
  /** The Host header it came with. */
  host: string;
  at: number;
  /** Whether the receiver answered it with a 2xx (it counts as delivered). */
  accepted: boolean;
  /** When the answer was given (Date.now()); undefined until then. */
  doneAt?: number;
}

export interface Receiver extends AsyncDisposable {
  /** `http://127.0.0.1:<port>` + path. */
  url(path?: string): string;
  port: number;
  /** Every delivery, in arrival order (verified or not). */
  received: Received[];
  /** The deliveries answered with a 2xx, in arrival order. */
  accepted(): Received[];
  /** Set once the webhook exists: what signatures are verified with. */
  secret: string;
  /**
   * What to answer; the default is 204. Return a Response, or a promise of one (a slow
   * receiver), or a promise that never settles (a silent one).
   */
  answer: (r: Received) => Response | Promise<Response>;
  /** How many requests are being answered right now. */
  open(): number;
}

/** Starts a receiver on 127.0.0.1, port 0. Dispose it to stop it (connections cut). */
export function startReceiver(): Receiver {
  let inFlight = 0;
  const receiver: Receiver = {
    received: [],
    secret: "",
    answer: () => new Response(null, { status: 204 }),
    url: (path = "/hook") => `http://127.0.0.1:${server.port}${path}`,
    port: 0,
    open: () => inFlight,
    accepted: () => receiver.received.filter((r) => r.accepted),
    async [Symbol.asyncDispose]() {
      await server.stop(true);
    },
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      inFlight++;
      try {
        const body = await request.text();
        const headers = Object.fromEntries(request.headers);
        let verified = false;
        try {
          new Webhook(receiver.secret).verify(body, headers);
          verified = true;
        } catch {
          verified = false;
        }
        const parsed = (() => {
          try {
            return JSON.parse(body) as { type: string; data: Received["data"] };
          } catch {
            return { type: "?", data: {} };
          }
        })();
        const r: Received = { id: headers["webhook-id"] ?? "", type: parsed.type, data: parsed.data, verified, host: headers.host ?? "", at: Date.now(), accepted: false };
        receiver.received.push(r);
        const response = await receiver.answer(r);
        r.accepted = response.ok;
        r.doneAt = Date.now();
        return response;
      } finally {
        inFlight--;
      }
    },
  });
  receiver.port = server.port!;
  return receiver;
}
