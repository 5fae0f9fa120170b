/**
 * `GET /metrics` (CONTRACT §9): the Prometheus text exposition format, through prom-client.
 *
 * Series (every label value comes from a small fixed set — route templates, never raw paths,
 * file names, e-mail addresses or key IDs):
 * - `cubby_http_requests_total{method,route,status}` and
 *   `cubby_http_request_duration_seconds{method,route}`: every request, whichever protocol
 *   served it (RPC requests appear under their procedure path as the route);
 * - `cubby_rpc_handled_total{method,code}`: RPC calls by procedure and gRPC status code name;
 * - `cubby_received_bytes_total` / `cubby_sent_bytes_total`: bytes read from and written to
 *   clients' connections, as the TCP sockets count them (headers and HTTP/2 framing included);
 * - `cubby_uploads_in_flight`: uploads whose bytes are being stored now (REST, RPC, tus);
 * - `cubby_files` / `cubby_stored_bytes`: files stored and the sum of their sizes;
 * - prom-client's default process and runtime metrics (`process_*`, `nodejs_*`).
 *
 * Access: loopback clients that did not come through a proxy; others with
 * `Authorization: Bearer <METRICS_TOKEN>` when it is set (401 with a wrong one), else 404.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import crypto from "node:crypto";
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from "prom-client";
import { bearerToken } from "../auth/principal.ts";
import { plainAddress } from "../context/client-address.ts";
import { AppError } from "../errors.ts";
import { errorAnswer, type Exchange } from "./exchange.ts";

/** What the store holds, for `cubby_files` and `cubby_stored_bytes`. */
export interface StoredTotals {
  files: number;
  bytes: number;
}

/** Bytes read from and written to clients' connections since start. */
export interface TransferTotals {
  received: number;
  sent: number;
}

export interface MetricsSources {
  /** Counts the stored files (a database query per scrape). */
  stored: () => Promise<StoredTotals>;
  /** Bytes moved so far (server/connections.ts). */
  transferred: () => TransferTotals;
  /**
   * In a worker (WORKERS > 1): every worker's metrics aggregated, as the exposition text
   * (process/workers.ts); undefined: this process's own.
   */
  aggregate?: (() => Promise<string>) | undefined;
}

/** Methods a label may name; any other token an HTTP client may send is `other`. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** Request durations, seconds: from a cached small GET (~1 ms) to a long download. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** The route label of a request no route matched (a 404, or a target refused before routing). */
export const UNMATCHED_ROUTE = "unmatched";

/** The gRPC status code names (grpc/doc/statuscodes.md) by Connect code. */
const GRPC_CODE_NAMES: Record<Code, string> = Object.fromEntries(
  Object.entries(Code)
    .filter(([, v]) => typeof v === "number")
    .map(([name, v]) => [v, name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase()]),
) as Record<Code, string>;

/** One (method, route, status)'s requests: their count, duration sum and bucket counts. */
interface RequestSeries {
  method: string;
  route: string;
  status: string;
  count: number;
  /** Seconds. */
  sum: number;
  /** Requests whose duration fell in each of {@link DURATION_BUCKETS} (not cumulative), then past the last. */
  buckets: number[];
}

/**
 * `cubby_http_requests_total` and `cubby_http_request_duration_seconds`, counted in plain numbers
 * per series and turned into prom-client's exposition values at a scrape. prom-client's Counter
 * and Histogram hash their label object on every call: that, not the counting, cost the small
 * GET 5–10 % of its throughput (bench workload 14); this costs three Map lookups and a short loop.
 */
class RequestCounts {
  /** Every series, by route, then method, then status: no key is built per request. */
  private readonly byRoute = new Map<string, Map<string, Map<number, RequestSeries>>>();
  private readonly series: RequestSeries[] = [];

  /** Counts one request of `seconds`. */
  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.byRoute.get(route);
    if (byMethod === undefined) this.byRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let s = byStatus.get(status);
    if (s === undefined) {
      s = { method, route, status: String(status), count: 0, sum: 0, buckets: new Array<number>(DURATION_BUCKETS.length + 1).fill(0) };
      byStatus.set(status, s);
      this.series.push(s);
    }
    s.count++;
    s.sum += seconds;
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
    s.buckets[i]!++;
  }

  /** Registers both metrics in `registry` as prom-client collectors of these counts. */
  register(registry: Registry): void {
    const counter = {
      name: "cubby_http_requests_total",
      help: "Requests answered, by method, route template and HTTP status.",
      type: "counter",
      aggregator: "sum",
      get: () => ({ ...counter, values: this.series.map((s) => ({ labels: { method: s.method, route: s.route, status: s.status }, value: s.count })) }),
    };
    const histogram = {
      name: "cubby_http_request_duration_seconds",
      help: "Time from a request's arrival to the end of its response, by method and route template.",
      type: "histogram",
      aggregator: "sum",
      get: () => ({ ...histogram, values: this.histogramValues(histogram.name) }),
    };
    registry.registerMetric(counter as unknown as Metric);
    registry.registerMetric(histogram as unknown as Metric);
  }

  /** Cumulative buckets, sum and count per (method, route): the status is summed over. */
  private histogramValues(name: string): { metricName: string; labels: Record<string, string | number>; value: number }[] {
    const byRoute = new Map<string, { method: string; route: string; count: number; sum: number; buckets: number[] }>();
    for (const s of this.series) {
      const key = `${s.method} ${s.route}`;
      let r = byRoute.get(key);
      if (r === undefined) {
        r = { method: s.method, route: s.route, count: 0, sum: 0, buckets: new Array<number>(s.buckets.length).fill(0) };
        byRoute.set(key, r);
      }
      r.count += s.count;
      r.sum += s.sum;
      s.buckets.forEach((n, i) => (r!.buckets[i]! += n));
    }
    const values = [];
    for (const r of byRoute.values()) {
      let cumulative = 0;
      DURATION_BUCKETS.forEach((le, i) => {
        cumulative += r.buckets[i]!;
        values.push({ metricName: `${name}_bucket`, labels: { le, method: r.method, route: r.route }, value: cumulative });
      });
      values.push({ metricName: `${name}_bucket`, labels: { le: "+Inf", method: r.method, route: r.route }, value: r.count });
      values.push({ metricName: `${name}_sum`, labels: { method: r.method, route: r.route }, value: r.sum });
      values.push({ metricName: `${name}_count`, labels: { method: r.method, route: r.route }, value: r.count });
    }
    return values;
  }
}

/**
 * The server's metrics: one registry per server, observed by the access log at the end of every
 * request and by the RPC interceptor at the end of every call.
 */
export class Metrics {
  readonly registry = new Registry();
  /** The exposition format's media type (Prometheus text 0.0.4). */
  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;
  private readonly requests = new RequestCounts();
  private readonly rpcCalls: Counter<"method" | "code">;
  private readonly uploads: Gauge;
  private readonly files: Gauge;
  private readonly storedBytes: Gauge;

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];
    this.requests.register(this.registry);
    this.rpcCalls = new Counter({ name: "cubby_rpc_handled_total", help: "RPC calls completed, by procedure and gRPC status code.", labelNames: ["method", "code"], registers });
    const transferred = sources.transferred;
    new Counter({
      name: "cubby_received_bytes_total",
      help: "Bytes read from clients' connections.",
      registers,
      collect() {
        this.reset();
        this.inc(transferred().received);
      },
    });
    new Counter({
      name: "cubby_sent_bytes_total",
      help: "Bytes written to clients' connections.",
      registers,
      collect() {
        this.reset();
        this.inc(transferred().sent);
      },
    });
    this.uploads = new Gauge({ name: "cubby_uploads_in_flight", help: "Uploads whose bytes are being stored now (REST, RPC and tus).", registers });
    // Every worker reads the same store: aggregated over workers, one's figure stands for all.
    this.files = new Gauge({ name: "cubby_files", help: "Files stored.", registers, aggregator: "first" });
    this.storedBytes = new Gauge({ name: "cubby_stored_bytes", help: "Sum of the stored files' sizes, bytes.", registers, aggregator: "first" });
    collectDefaultMetrics({ register: this.registry });
    // Gauges named like counters, which `promtool check metrics` refuses (prom-client's defaults):
    // what they count is in nodejs_active_handles / _requests / _resources by type anyway.
    for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) this.registry.removeSingleMetric(name);
  }

  /**
   * Counts one finished request.
   * @param route the route template ({@link UNMATCHED_ROUTE} when none matched)
   * @param seconds from arrival to the end of the response
   */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.requests.observe(METHODS.has(method) ? method : "other", route, status, seconds);
  }

  /** Counts one finished RPC call. @param procedure its path, `/cubby.v1.FileService/GetFile` */
  observeRpc(procedure: string, code: Code | undefined): void {
    this.rpcCalls.inc({ method: procedure, code: code === undefined ? "OK" : GRPC_CODE_NAMES[code] });
  }

  /** Runs `write` (an upload's bytes being stored) with `cubby_uploads_in_flight` one higher. */
  async countUpload<T>(write: () => Promise<T>): Promise<T> {
    this.uploads.inc();
    try {
      return await write();
    } finally {
      this.uploads.dec();
    }
  }

  /**
   * The exposition text, with the store's totals read now.
   * @throws what reading the totals throws (the scrape fails rather than showing stale numbers)
   */
  async render(): Promise<string> {
    if (this.sources.aggregate !== undefined) return this.sources.aggregate();
    await this.readTotals();
    return this.registry.metrics();
  }

  /**
   * This process's metrics as prom-client JSON, with the store's totals read now: what a worker
   * contributes to an aggregated scrape (process/workers.ts).
   */
  async snapshot(): Promise<Awaited<ReturnType<Registry["getMetricsAsJSON"]>>> {
    await this.readTotals();
    return this.registry.getMetricsAsJSON();
  }

  private async readTotals(): Promise<void> {
    const totals = await this.sources.stored();
    this.files.set(totals.files);
    this.storedBytes.set(totals.bytes);
  }

  /**
   * A Connect interceptor that counts every call once it ends: unary calls when they return or
   * throw, streamed responses when their last message is sent or the stream fails.
   */
  interceptor(): Interceptor {
    return (next) => async (req) => {
      const procedure = req.url.slice(req.url.indexOf("/", req.url.indexOf("//") + 2));
      const codeOf = (err: unknown) => (err instanceof ConnectError ? err.code : Code.Unknown);
      let res;
      try {
        res = await next(req);
      } catch (err) {
        this.observeRpc(procedure, codeOf(err));
        throw err;
      }
      if (!res.stream) {
        this.observeRpc(procedure, undefined);
        return res;
      }
      const messages = res.message;
      const observe = (code: Code | undefined) => this.observeRpc(procedure, code);
      return {
        ...res,
        message: (async function* () {
          let code: Code | undefined = Code.Canceled;
          try {
            yield* messages;
            code = undefined;
          } catch (err) {
            code = codeOf(err);
            throw err;
          } finally {
            observe(code);
          }
        })(),
      };
    };
  }
}

/**
 * Whether `ex` may read the metrics without a token: from a loopback address, and not relayed
 * by a proxy on the same machine (a forwarded request speaks for a client elsewhere).
 */
export function isLocalRequest(ex: Exchange): boolean {
  const peer = plainAddress(ex.peer ?? "");
  const loopback = peer === "::1" || peer.startsWith("127.");
  return loopback && ex.headers.get("x-forwarded-for") === null && ex.headers.get("forwarded") === null;
}

/** Compares a presented bearer token with the configured one in constant time. */
function tokenMatches(authorization: string | null, token: string): boolean {
  const presented = bearerToken(authorization);
  if (presented === undefined) return false;
  const digest = (s: string) => crypto.createHash("sha256").update(s).digest();
  return crypto.timingSafeEqual(digest(presented), digest(token));
}

/**
 * Answers `GET` or `HEAD /metrics` on `ex` under the access rule of the module comment.
 * @param token METRICS_TOKEN, or undefined
 */
export async function serveMetrics(metrics: Metrics, token: string | undefined, ex: Exchange): Promise<void> {
  if (!isLocalRequest(ex)) {
    const refused =
      token === undefined ? new AppError("not_found", "not found") : tokenMatches(ex.headers.get("authorization"), token) ? undefined : new AppError("unauthenticated", "send Authorization: Bearer <METRICS_TOKEN>");
    if (refused !== undefined) {
      const { status, headers, body } = errorAnswer(refused);
      return ex.respond(status, headers, body);
    }
  }
  const body = await metrics.render();
  ex.respond(200, { "content-type": metrics.contentType, "content-length": String(Buffer.byteLength(body)), "cache-control": "no-store" }, body);
}
