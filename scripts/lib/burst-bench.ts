/**
 * The benchmark's burst rows (docs/performance.md#bursts): many creates at once, and how
 * many condor_submit the sidecar runs side by side. minicondor serves one submit at a time, as a
 * schedd does (test/minicondor/README.md), so running more at once only shares the CPUs.
 * Each measurement runs on a minicondor home and a sidecar of its own.
 *
 * For the rows of the build before the adaptive limit (MaxConcurrentSubmits fixed at 8), run the
 * same rows on that build's binary: `bun scripts/bench.ts --only-burst --binary PATH`.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type BenchRow, rowsBench } from "./bench-kit.ts";
import { cleanupHome, cpuWait, createHome, emulatorBin, type Flavour, podUid, readCalls, type Reply, schedStat, shPod, startSidecar } from "./kit.ts";

export interface BurstOptions {
  root: string;
  flavour: Flavour;
  binary: string;
  /** Creates in the big burst (2,000 for the row). */
  big: number;
  /** Smaller counts, to check the script. */
  quick: boolean;
  /** minicondor's tools, schedd and jobs run at this niceness (kit.ts emulatorBin). */
  emulatorNice: number;
  say: (msg: string) => void;
}

interface Burst {
  n: number;
  wallMs: number;
  errors: number;
  submits: number;
  /** Their wall time summed, measured inside the tool. */
  submitMs: number;
  /** The most condor_submit running at once (calls.log: each ran from its end minus its duration). */
  most: number;
  /** The limits the sidecar logged as it changed them, in order (empty: it never changed, or the build has none). */
  limits: number[];
  /** htcondor_sidecar_submit_concurrency at the end, if the build has it. */
  finalLimit?: number;
  cpu: { runMs?: number; waitMs?: number };
}

const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 2 : 0)} ms`);

/** The most intervals [start, end) covering one instant. */
export function mostAtOnce(spans: readonly { start: number; end: number }[]): number {
  const edges = spans.flatMap((s) => [{ t: s.start, d: 1 }, { t: s.end, d: -1 }]).sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, now += e.d);
  return most;
}

/** `n` creates sent at once to a fresh sidecar with these config lines. */
async function burst(o: BurstOptions, n: number, config: string[], runId: number): Promise<Burst> {
  const home = createHome({ cpus: 4 }, o.root);
  const dir = mkdtempSync(join(o.root, "burst-"));
  const s = await startSidecar({ flavour: o.flavour, dir, home, binary: o.binary, config, condorBin: emulatorBin(o.root, o.emulatorNice) });
  try {
    const pods = Array.from({ length: n }, (_, i) => shPod(`burst-${i}`, podUid(runId), "sleep 86400"));
    const sched0 = schedStat(s.pid);
    const t0 = performance.now();
    const replies = await Promise.all(pods.map((p) => s.client.create(p).catch((): Reply => ({ status: 0, body: "", ms: 0, start: 0, end: 0 }))));
    const wallMs = performance.now() - t0;
    const sched1 = schedStat(s.pid);
    const submits = readCalls(home).calls.filter((c) => c.tool === "condor_submit");
    const metrics = await s.client.call("GET", "/metrics").then((r) => r.body, () => "");
    const final = /^htcondor_sidecar_submit_concurrency (\d+)$/m.exec(metrics);
    return {
      n,
      wallMs,
      errors: replies.filter((r) => r.status !== 200).length,
      submits: submits.length,
      submitMs: submits.reduce((sum, c) => sum + c.ms, 0),
      most: mostAtOnce(submits.map((c) => ({ start: c.end - c.ms, end: c.end }))),
      limits: [...readFileSync(s.logPath, "utf8").matchAll(/condor_submit concurrency (?:raised|lowered) to (\d+)/g)].map((m) => Number(m[1])),
      finalLimit: final ? Number(final[1]) : undefined,
      cpu: sched0 && sched1 ? { runMs: sched1.runMs - sched0.runMs, waitMs: sched1.waitMs - sched0.waitMs } : {},
    };
  } finally {
    await s.stop();
    cleanupHome(home, true);
  }
}

function summary(b: Burst): string {
  const path = b.limits.length ? `limit 1→${b.limits.join("→")}` : b.finalLimit === undefined ? "fixed limit" : `limit ${b.finalLimit} throughout`;
  return `${fmt(b.wallMs)} (${b.submits} condor_submit, at most ${b.most} at once, ${fmt(b.submitMs)} inside them in all; ${path}; sidecar ${
    cpuWait(b.cpu)
  }; ${b.errors} errors)`;
}

export async function burstRows(o: BurstOptions): Promise<BenchRow[]> {
  const small = o.quick ? 20 : 100;
  const runId = Math.floor(Math.random() * 0xffffffff);
  const rows: BenchRow[] = [];
  const measure = async (n: number, config: string[], label: string) => {
    o.say(`bursts: ${n} concurrent creates, ${label}`);
    const b = await burst(o, n, config, runId);
    o.say(`  ${summary(b)}`);
    return b;
  };
  const lone = await measure(small, [], "defaults");
  rows.push({
    row: `${small} concurrent creates: time until all answered (bursts)`,
    value: summary(lone),
    target: "no slower than the build before the adaptive limit",
    met: lone.errors === 0 ? undefined : false,
  });
  const adaptive = await measure(o.big, [], "defaults (MaxConcurrentSubmits 8, adaptive)");
  const serial = await measure(o.big, ["MaxConcurrentSubmits: 1"], "MaxConcurrentSubmits: 1");
  rows.push(
    {
      row: `${o.big} concurrent creates: time until all answered`,
      value: summary(adaptive),
      target: "reported (a real pool: 20.4 s with 8 at once, 6.7 s with 2)",
      met: adaptive.errors === 0 ? undefined : false,
    },
    {
      row: `${o.big} concurrent creates with MaxConcurrentSubmits: 1`,
      value: summary(serial),
      target: "reported: what one condor_submit at a time gives",
      met: serial.errors === 0 ? undefined : false,
    },
  );
  return rows;
}

export const burstBench = rowsBench("burst", { burst: { type: "string" } }, (b) => {
  const big = Math.max(1, Math.floor(b.number("burst", b.quick ? 200 : 2000)));
  return {
    title: "Bursts: many creates at once, and how many condor_submit ran side by side; each row on a minicondor home and a sidecar of its own",
    run: () => burstRows({ root: b.root, flavour: "binary", binary: b.binary, big, quick: b.quick, say: b.say, emulatorNice: b.emulatorNice }),
  };
});
