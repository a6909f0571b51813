/**
 * The benchmark's rows for status from the job event log (docs/performance.md#status-from-the-job-event-log):
 * what the schedd pays for following many jobs, and how soon a change reaches /status.
 *
 * "Ads asked for" counts, from minicondor's calls.log, the job ads each condor_q/condor_history
 * of the sidecar can return: a full condor_q (`ClusterId >= …`) every followed job, a targeted one
 * (`ClusterId == … && ProcId == …`) the ids it names, a condor_history the ids it names. It is an
 * upper bound on the ads read (a job that left is in neither answer).
 */
import { closeSync, fstatSync, mkdtempSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import type { BatchOptions } from "./batch-bench.ts";
import { type BenchRow, rowsBench } from "./bench-kit.ts";
import {
  cleanupHome,
  cpuWait,
  createHome,
  emulatorBin,
  type Json,
  pct,
  podUid,
  pool,
  readCalls,
  rssKiB,
  schedStat,
  shPod,
  SIDECAR_TOOLS,
  sorted,
  startSidecar,
  type ToolCall,
} from "./kit.ts";

export interface EventLogOptions extends BatchOptions {
  /** Followed pods for the steady-state rows (10,000 in the full run). */
  pods: number;
  /** Followed pods for the row that is not CI (50,000 in the full run; 0: skipped). */
  bigPods: number;
  /**
   * Status calls per second in that row: interLink's pace (every pod every 5 s) is 10,000 a
   * second for 50,000 pods, more than a load generator beside the sidecar on two cores sends.
   */
  bigRate: number;
  /** How long each steady-state window lasts, seconds. */
  windowSeconds: number;
  /** The sidecar's ReconcileMinutes. */
  reconcileMinutes: number;
}

const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 2 : 0)} ms`);
const mib = (kib: number | undefined) => (kib === undefined ? "–" : `${(kib / 1024).toFixed(1)} MiB`);
/** The sidecar's own time for the same calls (its request log). */
const inSidecar = (server: readonly number[]) => `in the sidecar p99 ${fmt(pct(server, 99) ?? NaN)}, p50 ${fmt(pct(server, 50) ?? NaN)}`;

/** The ads a call of the sidecar can return (see the header); `followed` for a full condor_q. */
function adsAskedFor(c: ToolCall, followed: number): number {
  const text = c.argv.join(" ");
  if (c.tool === "condor_q") {
    if (text.includes("ClusterId >=")) return followed;
    const ids = text.match(/ProcId == /g)?.length ?? 0;
    return ids; // the ping's probe (`false`) asks for none
  }
  if (c.tool === "condor_history") return c.argv.filter((a) => /^\d+\.\d+$/.test(a)).length;
  return 0;
}

function queryCost(home: string, from: number, followed: number): { ads: number; full: number; targeted: number; history: number; fullMs: number[] } {
  const calls = readCalls(home, from).calls;
  let ads = 0, full = 0, targeted = 0, history = 0;
  const fullMs: number[] = [];
  for (const c of calls) {
    if (c.tool !== "condor_q" && c.tool !== "condor_history") continue;
    ads += adsAskedFor(c, followed);
    if (c.tool === "condor_history") history++;
    else if (c.argv.join(" ").includes("ClusterId >=")) {
      full++;
      fullMs.push(c.ms);
    } else if (c.argv.join(" ").includes("ClusterId ==")) targeted++;
  }
  return { ads, full, targeted, history, fullMs };
}

function tool(home: string, name: string, args: string[]): number {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", MINICONDOR_HOME: home, MINICONDOR_ALLOW_ROOT: "1" };
  const p = Bun.spawnSync([join(import.meta.dir, "../../test/minicondor/bin", name), ...args], { env, stdout: "pipe", stderr: "pipe" });
  return p.exitCode ?? 1;
}

/**
 * What the sidecar itself took for the GET /status calls it logged after byte `from` of its log
 * (its `request` lines, from the request's start to the end of its answer): unlike the client's
 * latencies, nothing of the load generator's own event loop is in them.
 */
function serverLatencies(logPath: string, from: number): number[] {
  const fd = openSync(logPath, "r");
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.max(0, size - from));
    readSync(fd, buf, 0, buf.length, from);
    const out: number[] = [];
    for (const m of buf.toString("utf8").matchAll(/"msg":"request","method":"GET","path":"\/status","status":200,"durationMs":([\d.]+)/g)) {
      out.push(Number(m[1]));
    }
    return sorted(out);
  } finally {
    closeSync(fd);
  }
}

/** interLink's pace: every pod once per 5 s, one pod per call, for `seconds`; the latencies, at the client and in the sidecar. */
async function statusAtPace(
  s: Awaited<ReturnType<typeof startSidecar>>,
  pods: Json[],
  seconds: number,
  onTick?: (elapsedMs: number) => Promise<void> | void,
  rate = Math.max(20, pods.length / 5),
) {
  const latencies: number[] = [];
  let errors = 0;
  let leftOut = 0;
  const logFrom = statSync(s.logPath).size;
  const t0 = Date.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; Date.now() - t0 < seconds * 1000; i++) {
    const due = t0 + (i * 1000) / rate;
    if (due > Date.now()) await Bun.sleep(due - Date.now());
    await onTick?.(Date.now() - t0);
    const p = pods[i % pods.length]!;
    inflight.push(
      s.client.status(p.pod).then((r) => {
        if (r.status !== 200) return void errors++;
        latencies.push(r.ms);
        // The pod left out of the answer (HTCondor did not answer in time): interLink keeps its last state.
        if (r.body.trim() === "[]") leftOut++;
      }, () => void errors++),
    );
    if (inflight.length > 2000) await Promise.all(inflight.splice(0));
  }
  await Promise.all(inflight);
  return { latencies: sorted(latencies), errors, leftOut, rate: latencies.length / ((Date.now() - t0) / 1000), server: serverLatencies(s.logPath, logFrom) };
}

async function fill(s: Awaited<ReturnType<typeof startSidecar>>, n: number, runId: number): Promise<{ pods: Json[]; errors: number; wallMs: number }> {
  const pods = Array.from({ length: n }, (_, i) => shPod(`follow-${i}`, podUid(runId), "sleep 86400"));
  const t0 = performance.now();
  const replies = await pool(pods, 50, (p) => s.client.create(p).then((r) => r.status, () => 0));
  return { pods, errors: replies.filter((c) => c !== 200).length, wallMs: performance.now() - t0 };
}

export async function eventLogRows(o: EventLogOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const runId = Math.floor(Math.random() * 0xffffffff);
  const config = [`ReconcileMinutes: ${o.reconcileMinutes}`];

  // ---- steady state with `pods` followed jobs (2 slots: all but two stay idle)
  {
    const home = createHome({ cpus: 2 }, o.root);
    const dir = mkdtempSync(join(o.root, "follow-"));
    const s = await startSidecar({ flavour: o.flavour, dir, home, binary: o.binary, config, condorBin: emulatorBin(o.root, o.emulatorNice) });
    try {
      o.say(`event log: creating ${o.pods} pods that stay idle`);
      const f = await fill(s, o.pods, runId);
      o.say(`  ${o.pods - f.errors} created in ${fmt(f.wallMs)}, ${f.errors} errors; settling`);
      await Bun.sleep(5000);

      o.say(`event log: ${o.windowSeconds} s of status at interLink's pace, nothing changing`);
      let from = readCalls(home).lines;
      let t0 = Date.now();
      const quiet = await statusAtPace(s, f.pods, o.windowSeconds);
      const quietCost = queryCost(home, from, o.pods);
      const quietPerMinute = (quietCost.ads / ((Date.now() - t0) / 1000)) * 60;
      const rss = rssKiB(s.pid);
      rows.push(
        {
          row: `ads asked for per minute, ${o.pods} followed jobs that do not change (${o.windowSeconds} s, ReconcileMinutes ${o.reconcileMinutes})`,
          value: `${quietPerMinute.toFixed(0)} (${quietCost.full} full condor_q, ${quietCost.targeted} targeted, ${quietCost.history} condor_history)`,
          target: "≤ 10,000",
          met: quietPerMinute <= 10_000,
        },
        {
          row: `status p99 with ${o.pods} pods at interLink's pace`,
          value: `${fmt(pct(quiet.latencies, 99) ?? NaN)} (p50 ${
            fmt(pct(quiet.latencies, 50) ?? NaN)
          }, ${quiet.latencies.length} calls, ${quiet.errors} errors; ${inSidecar(quiet.server)})`,
          target: "< 5 ms",
          met: (pct(quiet.latencies, 99) ?? Infinity) < 5 && quiet.errors === 0,
        },
        {
          row: `resident memory with ${o.pods} pods`,
          value: mib(rss),
          target: "reported; ≤ 100 MiB stretch",
          met: rss === undefined ? undefined : rss <= 100 * 1024,
        },
      );

      o.say(`event log: ${o.windowSeconds} s with 100 jobs changing per minute (condor_hold, then condor_release)`);
      from = readCalls(home).lines;
      t0 = Date.now();
      const lag: number[] = [];
      let changes = 0;
      const byUid = new Map(f.pods.map((p) => [p.pod.metadata.uid as string, p]));
      const ids = [...byUid.keys()];
      // The job ids, by pod: the create answers were not kept, so ask the status once.
      const jidOf = new Map<string, string>();
      await pool(ids.slice(0, 200), 20, async (u) => {
        const r = await s.client.status(byUid.get(u)!.pod);
        const st = (JSON.parse(r.body) as Json[])[0];
        if (st?.JID) jidOf.set(u, String(st.JID));
      });
      const targets = [...jidOf.keys()];
      let k = 0;
      const watchers: Promise<void>[] = [];
      const changing = statusAtPace(s, f.pods, o.windowSeconds, (elapsed) => {
        // 100 changes per minute: one every 600 ms, alternately a hold and a release of the same job.
        if (changes >= Math.floor(elapsed / 600) || targets.length === 0) return;
        const u = targets[Math.floor(k / 2) % targets.length]!;
        const hold = k % 2 === 0;
        k++;
        changes++;
        tool(home, hold ? "condor_hold" : "condor_release", [jidOf.get(u)!]);
        const written = Date.now();
        watchers.push((async () => {
          for (let i = 0; i < 100; i++) {
            const r = await s.client.status(byUid.get(u)!.pod);
            const reason = (JSON.parse(r.body) as Json[])[0]?.containers?.[0]?.state?.waiting?.reason;
            if ((reason === "JobHeld") === hold) return void lag.push(Date.now() - written);
            await Bun.sleep(20);
          }
        })());
      });
      const busy = await changing;
      await Promise.all(watchers);
      const busyCost = queryCost(home, from, o.pods);
      const minutes = (Date.now() - t0) / 60_000;
      const lagSorted = sorted(lag);
      rows.push(
        {
          row: `ads asked for per minute, ${o.pods} followed jobs, 100 changing per minute`,
          value: `${
            (busyCost.ads / minutes).toFixed(0)
          } (${busyCost.full} full condor_q, ${busyCost.targeted} targeted, ${busyCost.history} condor_history; ${changes} changes)`,
          target: "≈ the changes plus the reconciler",
        },
        {
          row: "a change visible in /status after its event is written (condor_hold/condor_release returned)",
          value: `p99 ${fmt(pct(lagSorted, 99) ?? NaN)}, p50 ${fmt(pct(lagSorted, 50) ?? NaN)} (${lag.length} of ${changes} seen; status p99 meanwhile ${
            fmt(pct(busy.latencies, 99) ?? NaN)
          })`,
          target: "p99 < 1 s",
          met: (pct(lagSorted, 99) ?? Infinity) < 1000 && lag.length === changes,
        },
      );
      if (quietCost.fullMs.length + busyCost.fullMs.length > 0) {
        const all = sorted([...quietCost.fullMs, ...busyCost.fullMs]);
        rows.push({ row: `the reconciler's full condor_q of ${o.pods} jobs (inside the tool)`, value: `median ${fmt(pct(all, 50)!)}`, target: "reported" });
      }
    } finally {
      await s.stop();
      cleanupHome(home, true);
    }
  }

  // ---- the row that is not CI: many more followed pods, creates, status and deletes
  if (o.bigPods > 0) {
    const home = createHome({ cpus: 2 }, o.root);
    const dir = mkdtempSync(join(o.root, "follow-big-"));
    // The emulator's condor_q of every followed job takes seconds per 10,000 jobs on two shared cores (a schedd far less).
    const bigConfig = [...config, "QueryTimeoutSeconds: 300"];
    const s = await startSidecar({ flavour: o.flavour, dir, home, binary: o.binary, config: bigConfig, condorBin: emulatorBin(o.root, o.emulatorNice) });
    try {
      o.say(`event log: creating ${o.bigPods} pods that stay idle (not CI)`);
      const f = await fill(s, o.bigPods, runId + 1);
      await Bun.sleep(5000);
      const from = readCalls(home).lines;
      const rate = Math.min(o.bigRate, o.bigPods / 5);
      o.say(`  ${o.bigPods - f.errors} created in ${fmt(f.wallMs)}, ${f.errors} errors; ${Math.max(10, o.windowSeconds / 2)} s of status at ${rate} calls/s`);
      const cpu0 = schedStat(s.pid);
      const st = await statusAtPace(s, f.pods, Math.max(10, o.windowSeconds / 2), undefined, rate);
      const cpu1 = schedStat(s.pid);
      const rss = rssKiB(s.pid);
      const cost = queryCost(home, from, o.bigPods);
      // Every condor process the sidecar ran while it answered status (none may be per job).
      const tools = readCalls(home, from).calls.filter((c) => SIDECAR_TOOLS.has(c.tool)).length;
      o.say(`  status p99 ${fmt(pct(st.latencies, 99) ?? NaN)}; deleting`);
      const t0 = performance.now();
      const deletes = await pool(f.pods, 50, (p) => s.client.remove(p.pod).then((r) => r.status, () => 0));
      const delMs = performance.now() - t0;
      const p99 = pct(st.latencies, 99) ?? Infinity;
      rows.push({
        row: `${o.bigPods} followed pods (jobs that stay idle)`,
        value: `creates ${fmt(f.wallMs)} (${f.errors} errors); status p99 ${fmt(p99)}, p50 ${fmt(pct(st.latencies, 50) ?? NaN)} at ${
          st.rate.toFixed(0)
        } calls/s (${st.latencies.length} calls, ${st.errors} errors, ${st.leftOut} left out; ${inSidecar(st.server)}; sidecar ${
          cpuWait({ runMs: cpu1 && cpu0 && cpu1.runMs - cpu0.runMs, waitMs: cpu1 && cpu0 && cpu1.waitMs - cpu0.waitMs })
        }); condor processes meanwhile ${tools} (${cost.full} full condor_q, ${cost.targeted} targeted, ${cost.history} condor_history); deletes ${
          fmt(delMs)
        } (${deletes.filter((c) => c !== 200).length} errors); memory ${mib(rss)}; full condor_q ${
          cost.fullMs.length ? fmt(pct(sorted(cost.fullMs), 50)!) : "none in the window"
        }`,
        target: "0 errors; status p99 < 10 ms; no condor process per followed job; memory reported",
        met: f.errors === 0 && st.errors === 0 && st.leftOut === 0 && deletes.every((c) => c === 200) && p99 < 10 && tools < Math.max(10, o.bigPods / 100),
      });
    } finally {
      await s.stop();
      cleanupHome(home, true);
    }
  }
  return rows;
}

export const eventLogBench = rowsBench("eventlog", {
  followed: { type: "string" },
  "big-followed": { type: "string", default: "0" },
  "big-rate": { type: "string" },
  "follow-seconds": { type: "string" },
  "reconcile-minutes": { type: "string" },
}, (b) => {
  // The size knobs, so that the rows can be checked with a few hundred pods; --big-followed 50000 is the row that is not CI.
  const o: EventLogOptions = {
    root: b.root,
    flavour: "binary",
    binary: b.binary,
    quick: b.quick,
    say: b.say,
    emulatorNice: b.emulatorNice,
    pods: Math.max(1, Math.floor(b.number("followed", b.quick ? 200 : 10_000))),
    bigPods: Math.floor(b.number("big-followed", 0)),
    bigRate: Math.max(1, b.number("big-rate", 2000)),
    windowSeconds: Math.max(5, b.number("follow-seconds", b.quick ? 20 : 300)),
    reconcileMinutes: b.number("reconcile-minutes", b.quick ? 0.25 : 5),
  };
  return {
    title: `Status from the job event log: a minicondor home and a sidecar of their own, ${o.pods} followed jobs that stay idle`,
    run: () => eventLogRows(o),
  };
});
