// The Prometheus text exposition (src/core/metrics.ts; docs/metrics.md) and the metrics listener's address.
import { describe, expect, test } from "bun:test";
import { createRegistry, createSidecarMetrics, routeOf } from "../../src/core/metrics.ts";
import { listenAddress, UsageError } from "../../src/flags.ts";

describe("the exposition writer", () => {
  test("counters, histograms and gauges, with HELP and TYPE, cumulative buckets and escaped labels", () => {
    const r = createRegistry();
    const c = r.counter("a_total", "A counter.");
    c.inc({ k: 'x"y\\z\nw' });
    c.inc({ k: 'x"y\\z\nw' }, 2);
    c.inc({ k: "b" });
    const h = r.histogram("b_seconds", "A histogram.", [1, 0.5]);
    h.observe({ r: "/x" }, 0.2);
    h.observe({ r: "/x" }, 0.7);
    h.observe({ r: "/x" }, 3);
    r.gauge("c", "A gauge.", () => [{ value: Infinity }, { labels: { p: "q" }, value: 1.5 }]);
    r.gauge("d", "An absent gauge.", () => []);
    expect(r.render()).toBe(
      [
        "# HELP a_total A counter.",
        "# TYPE a_total counter",
        'a_total{k="x\\"y\\\\z\\nw"} 3',
        'a_total{k="b"} 1',
        "# HELP b_seconds A histogram.",
        "# TYPE b_seconds histogram",
        'b_seconds_bucket{r="/x",le="0.5"} 1',
        'b_seconds_bucket{r="/x",le="1"} 2',
        'b_seconds_bucket{r="/x",le="+Inf"} 3',
        'b_seconds_sum{r="/x"} 3.9',
        'b_seconds_count{r="/x"} 3',
        "# HELP c A gauge.",
        "# TYPE c gauge",
        "c +Inf",
        'c{p="q"} 1.5',
        "# HELP d An absent gauge.",
        "# TYPE d gauge",
        "",
      ].join("\n"),
    );
  });

  test("a family registered twice is an error", () => {
    const r = createRegistry();
    r.counter("x_total", "x");
    expect(() => r.counter("x_total", "x")).toThrow(/registered twice/);
  });

  test.each([
    ["/create", "/create"],
    ["/status", "/status"],
    ["/metrics", "/metrics"],
    ["/status/", "other"],
    ["/pods/7c9e6679", "other"],
    ["/", "other"],
  ])("route of %p is %p (label values stay a bounded set)", (path, route) => expect(routeOf(path)).toBe(route));

  test("condor_up follows the ping's threshold; every phase is a series", () => {
    const m = createSidecarMetrics(() => ({
      pods: { creating: 1, submitted: 2, finished: 0, removing: 0, deleted: 4 },
      failures: { schedd: 3, collector: 2 },
      threshold: 3,
      snapshotAgeSeconds: 1.5,
      submitConcurrency: 2,
      rss: 1024,
      startTime: 1700000000,
    }));
    const t = m.render();
    expect(t).toContain('htcondor_sidecar_condor_up{daemon="schedd"} 0\nhtcondor_sidecar_condor_up{daemon="collector"} 1');
    expect(t).toContain('htcondor_sidecar_pods{phase="deleted"} 4');
    expect(t).toContain("htcondor_sidecar_queue_snapshot_age_seconds 1.5");
    expect(t).toContain("htcondor_sidecar_submit_concurrency 2");
    expect(t).not.toMatch(/^htcondor_sidecar_credential_expiry_timestamp_seconds /m);
  });
});

describe("--metrics-listen and MetricsListen", () => {
  test.each([
    ["127.0.0.1:9100", { host: "127.0.0.1", port: 9100 }],
    ["[::1]:9100", { host: "::1", port: 9100 }],
    ["localhost:0", { host: "localhost", port: 0 }],
  ])("%p", (text, want) => expect(listenAddress(text, "--metrics-listen")).toEqual(want));
  test.each(["9100", "127.0.0.1", "::1:9100", "[localhost]:9100", "127.0.0.1:70000", "a b:1", ""])(
    "refused: %p",
    (text) => expect(() => listenAddress(text, "--metrics-listen")).toThrow(UsageError),
  );
});
