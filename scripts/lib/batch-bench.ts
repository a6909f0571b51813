/**
 * The benchmark's batching rows (docs/performance.md): many pods per condor process.
 * Each measurement runs on a minicondor home and a sidecar of its own, so that one row's queue
 * does not slow the next. Two more rows are read off the sidecar's own tables (sidecar-bench.ts):
 * status at 1000 pods, and a lone create.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { type BenchRow, rowsBench } from "./bench-kit.ts";
import {
  cleanupHome,
  cpuWait,
  createHome,
  emulatorBin,
  type Flavour,
  fmtMs,
  type Json,
  pct,
  podUid,
  readCalls,
  type Reply,
  schedStat,
  shPod,
  sorted,
  startSidecar,
} from "./kit.ts";
import type { SidecarResult } from "./sidecar-bench.ts";

export interface BatchOptions {
  root: string;
  flavour: Flavour;
  binary: string;
  /** Smaller counts, to check the script. */
  quick: boolean;
  /** minicondor's tools, schedd and jobs run at this niceness (kit.ts emulatorBin). */
  emulatorNice: number;
  say: (msg: string) => void;
}

/** Refresh period of the sidecar under test (the default StatusCacheSeconds). */
const REFRESH_SECONDS = 2;

const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 2 : 0)} ms`);

async function withSidecar<T>(
  o: BatchOptions,
  cpus: number,
  config: string[],
  args: string[],
  fn: (s: Awaited<ReturnType<typeof startSidecar>>, home: string) => Promise<T>,
): Promise<T> {
  const home = createHome({ cpus }, o.root);
  const dir = mkdtempSync(join(o.root, "batch-"));
  const s = await startSidecar({ flavour: o.flavour, dir, home, binary: o.binary, config, args, condorBin: emulatorBin(o.root, o.emulatorNice) });
  try {
    return await fn(s, home);
  } finally {
    await s.stop();
    cleanupHome(home, true);
  }
}

const tools = (home: string, name: string, from = 0) => readCalls(home, from).calls.filter((c) => c.tool === name);

/**
 * `n` creates sent at once: time until every one is answered, condor_submit processes (and the
 * time measured inside them), errors, and the CPU time of the sidecar's main thread meanwhile.
 */
async function burst(s: Awaited<ReturnType<typeof startSidecar>>, home: string, pods: Json[]) {
  const sched0 = schedStat(s.pid);
  const t0 = performance.now();
  const replies = await Promise.all(pods.map((p) => s.client.create(p).catch((): Reply => ({ status: 0, body: "", ms: 0, start: 0, end: 0 }))));
  const wallMs = performance.now() - t0;
  const sched1 = schedStat(s.pid);
  const submits = tools(home, "condor_submit");
  const cpu: { runMs?: number; waitMs?: number } = sched0 && sched1 ? { runMs: sched1.runMs - sched0.runMs, waitMs: sched1.waitMs - sched0.waitMs } : {};
  return {
    wallMs,
    submits: submits.length,
    submitMs: submits.reduce((sum, c) => sum + c.ms, 0),
    cpu,
    errors: replies.filter((r) => r.status !== 200).length,
  };
}

export async function batchRows(o: BatchOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const n = o.quick ? 20 : 100;
  const big = o.quick ? 50 : 1000;
  const runId = Math.floor(Math.random() * 0xffffffff);
  let seq = 0;
  const pods = (count: number, script = "sleep 86400") => Array.from({ length: count }, () => shPod(`batch-${++seq}`, podUid(runId), script));

  o.say(`batching: ${n} concurrent creates, then ${n} concurrent deletes (defaults)`);
  const batched = await withSidecar(o, 4, [], [], async (s, home) => {
    const ps = pods(n);
    const b = await burst(s, home, ps);
    const rmBefore = tools(home, "condor_rm").length;
    const deletes = await Promise.all(ps.map((p) => s.client.remove(p.pod)));
    return { ...b, removes: tools(home, "condor_rm").length - rmBefore, deleteErrors: deletes.filter((d) => d.status !== 200).length };
  });
  o.say(
    `  ${batched.submits} condor_submit (${fmt(batched.submitMs)} inside the tool), all answered in ${fmt(batched.wallMs)}; sidecar ${
      cpuWait(batched.cpu)
    }; ${batched.removes} condor_rm for ${n} deletes`,
  );
  o.say(`batching: ${n} concurrent creates with MaxSubmitBatch: 1`);
  const single = await withSidecar(o, 4, ["MaxSubmitBatch: 1"], [], (s, home) => burst(s, home, pods(n)));
  o.say(`  ${single.submits} condor_submit, all answered in ${fmt(single.wallMs)}`);
  o.say(`batching: ${big} concurrent creates (defaults)`);
  const thousand = await withSidecar(o, 4, [], [], (s, home) => burst(s, home, pods(big)));
  o.say(`  ${thousand.submits} condor_submit, all answered in ${fmt(thousand.wallMs)}, ${thousand.errors} errors`);

  const speedup = single.wallMs / batched.wallMs;
  rows.push(
    {
      row: `${n} concurrent creates: condor_submit processes`,
      value: String(batched.submits),
      target: "≤ 5",
      met: batched.submits <= 5 && batched.errors === 0,
    },
    {
      row: `${n} concurrent creates: time until all answered`,
      value: `${fmt(batched.wallMs)} (MaxSubmitBatch 1: ${fmt(single.wallMs)}, ${speedup.toFixed(1)}× faster; batched: sidecar ${cpuWait(batched.cpu)}, ${
        fmt((batched.cpu.runMs ?? NaN) / n)
      } per create; ${batched.submits} condor_submit ran ${fmt(batched.submitMs)} in all, measured inside the tool)`,
      target: "≥ 10× faster than MaxSubmitBatch 1",
      met: speedup >= 10,
    },
    {
      row: `${big} concurrent creates: time until all answered`,
      value: `${fmt(thousand.wallMs)} (${thousand.submits} condor_submit, ${thousand.errors} errors)`,
      target: "reported",
    },
    {
      row: `${n} concurrent deletes: condor_rm processes`,
      value: String(batched.removes),
      target: "≤ 5",
      met: batched.removes <= 5 && batched.deleteErrors === 0,
    },
  );

  // 200 jobs finish while interLink polls each pod every 5 s: dummy jobs (a second each) on 20
  // slots, so that they end in waves over the run.
  const finishing = o.quick ? 40 : 200;
  o.say(`batching: status while ${finishing} jobs finish (each pod polled every 5 s)`);
  const f = await withSidecar(o, 20, [], ["--dummy-job"], async (s, home) => {
    const ps = pods(finishing, "true");
    await Promise.all(ps.map((p) => s.client.create(p)));
    const from = readCalls(home).lines;
    const sched0 = schedStat(s.pid);
    const t0 = Date.now();
    const latencies: number[] = [];
    const done = new Set<string>();
    let errors = 0;
    const deadline = t0 + 180_000;
    // One pod per call, each pod every 5 s, spread evenly: finishing / 5 calls per second.
    const gapMs = 5000 / finishing;
    let i = 0;
    while (done.size < finishing && Date.now() < deadline) {
      const p = ps[i++ % finishing]!;
      const started = t0 + i * gapMs;
      if (started > Date.now()) await Bun.sleep(started - Date.now());
      void s.client.status(p.pod).then(
        (r) => {
          latencies.push(r.ms);
          if (r.status !== 200) errors++;
          else if ((JSON.parse(r.body) as Json[])[0]?.containers?.[0]?.state?.terminated) done.add(p.pod.metadata.uid);
        },
        () => errors++,
      );
    }
    await Bun.sleep(500);
    const sched1 = schedStat(s.pid);
    const seconds = (Date.now() - t0) / 1000;
    const q = tools(home, "condor_q", from).length;
    const h = tools(home, "condor_history", from).length;
    const cpu = sched0 && sched1 ? { runMs: sched1.runMs - sched0.runMs, waitMs: sched1.waitMs - sched0.waitMs } : {};
    return { seconds, q, h, latencies: sorted(latencies), errors, ended: done.size, cpu };
  });
  // The refresh periods that began in the window (a refresh starts each one): the target is one
  // condor_q per period, allowing one more at the window's edge, and no more condor_history than condor_q.
  const periods = Math.ceil(f.seconds / REFRESH_SECONDS);
  const perPeriod = (f.q + f.h) / periods;
  const perMinute = ((f.q + f.h) / f.seconds) * 60;
  const p99 = pct(f.latencies, 99) ?? NaN;
  o.say(
    `  ${f.ended}/${finishing} ended in ${f.seconds.toFixed(0)} s; ${f.q} condor_q and ${f.h} condor_history (${
      perPeriod.toFixed(2)
    } per refresh period); status p99 ${fmt(p99)}, ${f.errors} errors; sidecar ${cpuWait(f.cpu)}`,
  );
  rows.push(
    {
      row: `status while ${finishing} jobs finish: condor processes`,
      value: `${perMinute.toFixed(1)} per minute = ${perPeriod.toFixed(2)} per ${REFRESH_SECONDS} s refresh period (${f.q} condor_q, ${f.h} condor_history in ${
        f.seconds.toFixed(0)
      } s; ${f.ended} of ${finishing} ended)`,
      target: "≤ 2 per refresh period (1 condor_q, ≤ 1 condor_history)",
      met: f.q <= periods + 1 && f.h <= f.q && f.ended === finishing,
    },
    {
      row: `status while ${finishing} jobs finish: p99`,
      value: `${fmt(p99)} (p50 ${fmt(pct(f.latencies, 50) ?? NaN)}, ${f.latencies.length} calls, ${f.errors} errors; sidecar ${cpuWait(f.cpu)})`,
      target: "< 5 ms",
      met: p99 < 5 && f.errors === 0,
    },
  );
  return rows;
}

/** The rows read off the sidecar's tables (sidecar-bench.ts), when it ran. */
function sidecarRows(sidecar: SidecarResult | undefined): BenchRow[] {
  const rows: BenchRow[] = [];
  const at1000 = sidecar?.status.find((r) => r.flavour === "binary" && r.level === 1000);
  if (at1000) {
    rows.push({
      row: "status at interLink's pace on 1000 live pods: p99",
      value: `${fmtMs(at1000.p99)} (${at1000.calls} calls; sidecar ${cpuWait(at1000)})`,
      target: "< 5 ms",
      met: at1000.p99 < 5,
    });
  }
  const lone = sidecar?.create.find((c) => c.kind === "compare" && c.flavour === "binary" && c.concurrency === 1);
  if (lone?.overheadP50 !== undefined) {
    rows.push({
      row: "a lone create: latency beyond its own condor_submit (p50)",
      value: `${fmtMs(lone.overheadP50)} (create p50 ${fmtMs(lone.p50)}, its condor_submit ${fmtMs(lone.submitP50)})`,
      target: "within a few ms",
      met: lone.overheadP50 < 10,
    });
  }
  return rows;
}

export const batchBench = rowsBench("batch", undefined, (b) => ({
  title: "Many pods per condor process: each row on a minicondor home and a sidecar of its own; status and lone-create rows from the tables above",
  run: async () => [
    ...(await batchRows({ root: b.root, flavour: "binary", binary: b.binary, quick: b.quick, say: b.say, emulatorNice: b.emulatorNice })),
    ...sidecarRows(b.results.sidecar as SidecarResult | undefined),
  ],
}));
