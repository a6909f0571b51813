/**
 * /status as interLink polls it (docs/performance.md#what-is-measured-and-the-targets): one pod
 * per call, every pod once per `interval` seconds (at least `minRate` calls/s so that small
 * levels get enough samples), open loop for `seconds`. p50/p99, p99 of the calls served from the
 * status cache (those that overlapped no condor_q/condor_history in calls.log), condor tool
 * processes per 1000 calls (condor_chirp excluded: jobs run it), VmRSS, and how long the
 * sidecar's main thread ran and waited for a CPU.
 */
import {
  callsLogLines,
  errorSamples,
  type Flavour,
  fmtMiB,
  fmtMs,
  type Json,
  pct,
  readCalls,
  type Reply,
  replyFailed,
  rssKiB,
  type Running,
  schedStat,
  SIDECAR_TOOLS,
  sorted,
  table,
  type ToolCall,
} from "./kit.ts";

export interface StatusPace {
  /** Every pod once per this many seconds. */
  interval: number;
  /** At least this many calls per second. */
  minRate: number;
  /** How long a row lasts. */
  seconds: number;
  /** The most calls waiting for an answer at once. */
  maxInFlight: number;
}

export interface StatusResult {
  level: number;
  flavour: Flavour;
  /** Measured with tracing on and its collector down (--tracing-down; docs/tracing.md#when-the-collector-is-down). */
  tracingDown?: boolean;
  /** Restart of this runtime on the store with `level` pods, to the first ping (undefined: no restart). */
  restartMs?: number;
  targetRate: number;
  rate: number;
  calls: number;
  errors: number;
  /** Up to 3 distinct failures (HTTP status and the start of the body). */
  errorSamples: string[];
  p50: number;
  p99: number;
  cachedCalls: number;
  p99Cached?: number;
  condorCalls: number;
  condorPer1000: number;
  byTool: Record<string, number>;
  rssKiB?: number;
  /** The sidecar's main thread during the row: CPU time, and time runnable but waiting for a CPU (ms). */
  runMs?: number;
  waitMs?: number;
}

/** Did this status call overlap a condor_q/condor_history run (so it may have waited for one)? */
function overlapsQuery(r: Reply, queries: ToolCall[], padMs: number): boolean {
  return queries.some((q) => r.start <= q.end + 2 && r.end >= q.end - q.ms - padMs);
}

/** One row: the pods polled at interLink's pace; `toolPadMs` is a tool's start-up outside calls.log. */
export async function statusRun(
  sc: Running,
  home: string,
  pods: Json[],
  level: number,
  toolPadMs: number,
  pace: StatusPace,
): Promise<StatusResult> {
  const n = pods.length;
  const targetRate = Math.max(n / pace.interval, pace.minRate);
  const total = Math.max(1, Math.round(targetRate * pace.seconds));
  const before = callsLogLines(home);
  const replies: Reply[] = [];
  const pending = new Set<Promise<void>>();
  const sched0 = schedStat(sc.pid);
  const start = performance.now();
  for (let k = 0; k < total; k++) {
    const wait = start + (k / targetRate) * 1000 - performance.now();
    if (wait >= 1) await Bun.sleep(wait);
    while (pending.size >= pace.maxInFlight) await Promise.race(pending);
    const p: Promise<void> = sc.client
      .status(pods[k % n]!.pod)
      .catch(replyFailed)
      .then((r) => {
        if (r.status === 200 && !/^\[\{/.test(r.body)) r.status = -1; // the pod was not reported
        replies.push(r);
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  }
  await Promise.all(pending);
  const elapsed = performance.now() - start;
  const sched1 = schedStat(sc.pid);
  await Bun.sleep(50);
  const calls = readCalls(home, before).calls.filter((c) => SIDECAR_TOOLS.has(c.tool));
  const queries = calls.filter((c) => c.tool === "condor_q" || c.tool === "condor_history");
  const ok = replies.filter((r) => r.status === 200);
  const cached = ok.filter((r) => !overlapsQuery(r, queries, toolPadMs + 5));
  const byTool: Record<string, number> = {};
  for (const c of calls) byTool[c.tool] = (byTool[c.tool] ?? 0) + 1;
  const lat = sorted(ok.map((r) => r.ms));
  return {
    level,
    flavour: sc.flavour,
    targetRate,
    rate: (replies.length / elapsed) * 1000,
    calls: replies.length,
    errors: replies.length - ok.length,
    errorSamples: errorSamples(replies),
    p50: pct(lat, 50) ?? Number.NaN,
    p99: pct(lat, 99) ?? Number.NaN,
    cachedCalls: cached.length,
    p99Cached: pct(sorted(cached.map((r) => r.ms)), 99),
    condorCalls: calls.length,
    condorPer1000: (calls.length / Math.max(1, replies.length)) * 1000,
    byTool,
    rssKiB: rssKiB(sc.pid),
    runMs: sched0 && sched1 ? sched1.runMs - sched0.runMs : undefined,
    waitMs: sched0 && sched1 ? sched1.waitMs - sched0.waitMs : undefined,
  };
}

/** The progress line of a row. */
export function statusSummary(r: StatusResult): string {
  return `  ${r.calls} calls at ${r.rate.toFixed(0)}/s, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}, ${r.condorPer1000.toFixed(1)} condor procs/1000, RSS ${
    fmtMiB(r.rssKiB)
  }`;
}

/** The /status table, its targets and its errors. */
export function statusLines(rows: readonly StatusResult[], pace: StatusPace): string[] {
  const out = [
    `/status as interLink polls it: one pod per call, every pod every ${pace.interval} s (at least ${pace.minRate} calls/s), open loop for ${pace.seconds} s per row`,
    table(
      [
        "pods",
        "runtime",
        "restart→ping",
        "calls/s",
        "calls",
        "p50",
        "p99",
        "p99 cached",
        "condor procs/1000 calls",
        "errors",
        "RSS",
        "main thread ran / waited",
      ],
      rows.map((r) => [
        String(r.level),
        r.tracingDown ? `${r.flavour}, tracing on, collector down` : r.flavour,
        fmtMs(r.restartMs),
        r.rate.toFixed(0),
        String(r.calls),
        fmtMs(r.p50),
        fmtMs(r.p99),
        `${fmtMs(r.p99Cached)} (${r.cachedCalls})`,
        `${r.condorPer1000.toFixed(1)} (${Object.entries(r.byTool).map(([t, c]) => `${c} ${t.replace("condor_", "")}`).join(", ") || "none"})`,
        String(r.errors),
        fmtMiB(r.rssKiB),
        r.runMs === undefined || r.waitMs === undefined ? "–" : `${fmtMs(r.runMs)} / ${fmtMs(r.waitMs)}`,
      ]),
    ),
    "targets: with 1000 pods ≤ 5 condor processes per 1000 calls and p99 < 5 ms for calls served from the cache",
    "(p99 cached: calls that overlapped no condor_q/condor_history run, their count in brackets; main thread: the sidecar's CPU time during the row, and its time runnable but waiting for a CPU)",
  ];
  for (const r of rows) if (r.errors) out.push(`errors at ${r.level} pods on ${r.flavour}: ${r.errorSamples.join(" | ")}`);
  return out;
}
