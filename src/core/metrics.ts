/**
 * A small Prometheus registry and its text exposition (format 0.0.4): counters, gauges and
 * histograms with bounded label sets. Pure: the values are pushed in (counters, histograms) or
 * asked for at scrape time (gauges, through `collect`). prom-client was the alternative; it
 * reads process data through Node's own APIs and keeps module-level state, which fits neither
 * one executable for Bun and Deno nor the rule that only src/runtime/ touches the process.
 */

/** The text exposition's content type (format 0.0.4). */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export type Labels = Readonly<Record<string, string>>;

interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  lines(): string[];
}

/** A label value as the exposition format writes it: `\`, `"` and newlines escaped. */
function labelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function labelText(labels: Labels, extra?: [string, string]): string {
  const pairs = Object.entries(labels);
  if (extra) pairs.push(extra);
  return pairs.length === 0 ? "" : `{${pairs.map(([k, v]) => `${k}="${labelValue(v)}"`).join(",")}}`;
}

/** A number as the format writes it (`+Inf`, `-Inf`, `NaN` by name). */
function num(v: number): string {
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return Number.isNaN(v) ? "NaN" : String(v);
}

/** One series per distinct set of label values, in the order first seen. */
function series<T>(make: () => T) {
  const map = new Map<string, { labels: Labels; value: T }>();
  return {
    get(labels: Labels): T {
      const key = JSON.stringify(labels);
      let s = map.get(key);
      if (!s) map.set(key, s = { labels, value: make() });
      return s.value;
    },
    all: () => [...map.values()],
  };
}

export interface Counter {
  inc(labels?: Labels, by?: number): void;
}

export interface Histogram {
  observe(labels: Labels, value: number): void;
}

export interface Registry {
  counter(name: string, help: string): Counter;
  histogram(name: string, help: string, buckets: readonly number[]): Histogram;
  /** A gauge whose series are asked for at every scrape; none means the family has no sample. */
  gauge(name: string, help: string, collect: () => readonly { labels?: Labels; value: number }[]): void;
  /** The exposition text, every family with its HELP and TYPE lines. */
  render(): string;
}

export function createRegistry(): Registry {
  const families: Family[] = [];
  const add = (f: Family) => {
    if (families.some((g) => g.name === f.name)) throw new Error(`metric ${f.name} is registered twice`);
    families.push(f);
  };
  return {
    counter(name, help) {
      const s = series(() => ({ n: 0 }));
      add({ name, help, type: "counter", lines: () => s.all().map(({ labels, value }) => `${name}${labelText(labels)} ${num(value.n)}`) });
      return { inc: (labels = {}, by = 1) => void (s.get(labels).n += by) };
    },
    histogram(name, help, buckets) {
      const bounds = [...buckets].sort((a, b) => a - b);
      const s = series(() => ({ counts: bounds.map(() => 0), sum: 0, count: 0 }));
      add({
        name,
        help,
        type: "histogram",
        lines: () =>
          s.all().flatMap(({ labels, value }) => [
            ...bounds.map((b, i) => `${name}_bucket${labelText(labels, ["le", num(b)])} ${value.counts[i]}`),
            `${name}_bucket${labelText(labels, ["le", "+Inf"])} ${value.count}`,
            `${name}_sum${labelText(labels)} ${num(value.sum)}`,
            `${name}_count${labelText(labels)} ${value.count}`,
          ]),
      });
      return {
        observe(labels, v) {
          const h = s.get(labels);
          bounds.forEach((b, i) => {
            if (v <= b) h.counts[i]!++;
          });
          h.sum += v;
          h.count++;
        },
      };
    },
    gauge(name, help, collect) {
      add({ name, help, type: "gauge", lines: () => collect().map(({ labels = {}, value }) => `${name}${labelText(labels)} ${num(value)}`) });
    },
    render() {
      return families.map((f) =>
        [`# HELP ${f.name} ${f.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`, `# TYPE ${f.name} ${f.type}`, ...f.lines()].join("\n")
      ).join("\n") + "\n";
    },
  };
}

/** The routes a request counts under; any other path is `other` (label values stay a bounded set). */
export const ROUTES = ["/create", "/delete", "/status", "/getLogs", "/system-info", "/metrics"] as const;

export const routeOf = (path: string): string => ((ROUTES as readonly string[]).includes(path) ? path : "other");

/** What the sidecar's gauges read at scrape time. */
export interface MetricsView {
  /** Records by lifecycle phase (core/lifecycle.ts), every phase present. */
  pods: Readonly<Record<string, number>>;
  /** Consecutive failures of each daemon's tool (the ping's streaks). */
  failures: { schedd: number; collector: number };
  /** PingFailureThreshold: the streak at which the ping, and `condor_up`, say down. */
  threshold: number;
  /** When the credential file expires (epoch ms), when one is configured and its expiry is known. */
  credentialExpiry?: number;
  /** Age of the status view in seconds; 0 while nothing is followed (the refresher sleeps). */
  snapshotAgeSeconds: number;
  /** condor_submit allowed at once now (core/concurrency.ts), once the service runs. */
  submitConcurrency?: number;
  /** Pods interLink no longer asks about while their jobs run (docs/status.md#pods-interlink-forgot). */
  forgottenPods?: number;
  /** With several schedds (docs/schedds.md): each one, and whether new pods go to it (it answers). */
  schedds?: readonly { name: string; up: boolean }[];
  /** Resident memory of the process, bytes. */
  rss: number;
  /** When the process started, epoch seconds. */
  startTime: number;
}

export interface SidecarMetrics {
  /** A request has ended (the HTTP adapter's record). */
  request(r: { path: string; status: number; durationMs: number }): void;
  /** A condor tool has ended: `ok` (exit 0), `error` or `timeout`; `schedd` with several schedds (its label). */
  command(tool: string, outcome: "ok" | "error" | "timeout", seconds: number, schedd?: string): void;
  /** A condor_submit started with this many pods. */
  submitBatch(size: number): void;
  render(): string;
}

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const TOOL_SECONDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const BATCH = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

/** The sidecar's metric families (docs/metrics.md): names, types and labels that dashboards and alerts use. */
export function createSidecarMetrics(view: () => MetricsView): SidecarMetrics {
  const r = createRegistry();
  const requests = r.counter("htcondor_sidecar_http_requests_total", "HTTP requests served, by route and status code (the ping is a /status).");
  const requestSeconds = r.histogram(
    "htcondor_sidecar_http_request_duration_seconds",
    "Time to serve an HTTP request, by route (a log follow counts until its stream ends).",
    SECONDS,
  );
  const commands = r.counter(
    "htcondor_sidecar_condor_commands_total",
    "condor_* tool runs, by tool and outcome (ok: exit 0; error; timeout: killed at its timeout).",
  );
  const commandSeconds = r.histogram("htcondor_sidecar_condor_command_duration_seconds", "Wall time of a condor_* tool run, by tool.", TOOL_SECONDS);
  const batches = r.histogram("htcondor_sidecar_submit_batch_size", "Pods per condor_submit.", BATCH);
  r.gauge(
    "htcondor_sidecar_pods",
    "Pod records by lifecycle phase: creating, submitted (job followed), finished (final status recorded), removing, deleted (tombstones).",
    () => Object.entries(view().pods).map(([phase, value]) => ({ labels: { phase }, value })),
  );
  r.gauge(
    "htcondor_sidecar_condor_up",
    "1 while the daemon's tool answers, 0 once its failure streak reached PingFailureThreshold (the ping then answers 503).",
    () => {
      const v = view();
      return (["schedd", "collector"] as const).map((daemon) => ({ labels: { daemon }, value: v.failures[daemon] >= v.threshold ? 0 : 1 }));
    },
  );
  r.gauge(
    "htcondor_sidecar_condor_consecutive_failures",
    "The current failure streak of the daemon's tool (the schedd's counts one failure per 10 s at most).",
    () => {
      const v = view();
      return (["schedd", "collector"] as const).map((daemon) => ({ labels: { daemon }, value: v.failures[daemon] }));
    },
  );
  r.gauge(
    "htcondor_sidecar_credential_expiry_timestamp_seconds",
    "When the credential (--proxy, --token-file, --token-dir) expires, epoch seconds, the soonest of several; absent without one, or when its expiry is unknown.",
    () => {
      const exp = view().credentialExpiry;
      return exp === undefined ? [] : [{ value: Math.floor(exp / 1000) }];
    },
  );
  r.gauge(
    "htcondor_sidecar_queue_snapshot_age_seconds",
    "Age of the status view (the last condor_q of the refresher); 0 while no job is followed.",
    () => [{ value: view().snapshotAgeSeconds }],
  );
  r.gauge(
    "htcondor_sidecar_submit_concurrency",
    "condor_submit processes allowed at once now, chosen from their pace, at most MaxConcurrentSubmits.",
    () => {
      const n = view().submitConcurrency;
      return n === undefined ? [] : [{ value: n }];
    },
  );
  r.gauge(
    "htcondor_sidecar_schedd_up",
    "With several schedds: 1 while the schedd answers and takes new pods, 0 while it does not (its pods keep their last state); absent with one schedd.",
    () => (view().schedds ?? []).map((s) => ({ labels: { schedd: s.name }, value: s.up ? 1 : 0 })),
  );
  r.gauge(
    "htcondor_sidecar_forgotten_pods",
    "Pods whose job is queued or running but that interLink no longer asks about while it asks about others (docs/status.md#pods-interlink-forgot).",
    () => [{ value: view().forgottenPods ?? 0 }],
  );
  r.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", () => [{ value: view().rss }]);
  r.gauge("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds.", () => [{ value: view().startTime }]);
  return {
    request(q) {
      const route = routeOf(q.path);
      requests.inc({ route, code: String(q.status) });
      requestSeconds.observe({ route }, q.durationMs / 1000);
    },
    command(tool, outcome, seconds, schedd) {
      const by: Record<string, string> = schedd === undefined ? {} : { schedd };
      commands.inc({ tool, outcome, ...by });
      commandSeconds.observe({ tool, ...by }, seconds);
    },
    submitBatch: (size) => batches.observe({}, size),
    render: () => r.render(),
  };
}
