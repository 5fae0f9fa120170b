// The request series' exposition (serving/metrics.ts counts them in plain numbers): buckets are
// "less than or equal" and cumulative, statuses are summed over in the histogram, odd methods
// are one label value.
import { expect, test } from "bun:test";
import { Metrics } from "../../src/serving/metrics.ts";

test("request counts and duration buckets, as Prometheus's histogram semantics say", async () => {
  const m = new Metrics({ stored: async () => ({ files: 2, bytes: 30 }), transferred: () => ({ received: 5, sent: 7 }) });
  m.observeRequest("GET", "/:id", 200, 0.001); // on a bound: counted in le="0.001"
  m.observeRequest("GET", "/:id", 200, 0.0011);
  m.observeRequest("GET", "/:id", 404, 0.2);
  m.observeRequest("GET", "/:id", 200, 1000); // past the last bound: +Inf only
  m.observeRequest("BREW", "unmatched", 405, 0.01);
  const text = await m.render();
  const lines = new Set(text.split("\n"));
  expect(Number(/cubby_http_request_duration_seconds_sum\{method="GET",route="\/:id"\} (\S+)/.exec(text)![1])).toBeCloseTo(1000.2021, 9);
  for (const line of [
    'cubby_http_requests_total{method="GET",route="/:id",status="200"} 3',
    'cubby_http_requests_total{method="GET",route="/:id",status="404"} 1',
    'cubby_http_requests_total{method="other",route="unmatched",status="405"} 1',
    'cubby_http_request_duration_seconds_bucket{le="0.001",method="GET",route="/:id"} 1',
    'cubby_http_request_duration_seconds_bucket{le="0.0025",method="GET",route="/:id"} 2',
    'cubby_http_request_duration_seconds_bucket{le="0.25",method="GET",route="/:id"} 3',
    'cubby_http_request_duration_seconds_bucket{le="300",method="GET",route="/:id"} 3',
    'cubby_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/:id"} 4',
    'cubby_http_request_duration_seconds_count{method="GET",route="/:id"} 4',
    'cubby_http_request_duration_seconds_count{method="other",route="unmatched"} 1',
    "cubby_files 2",
    "cubby_stored_bytes 30",
    "cubby_received_bytes_total 5",
    "cubby_sent_bytes_total 7",
  ]) {
    expect(lines.has(line) ? line : `missing: ${line}`).toBe(line);
  }
});
