/**
 * The benchmark's rows for spooled jobs (docs/performance.md#spooled-jobs): what
 * the schedd pays to follow jobs that write no event log the sidecar can read, and how soon a hold
 * reaches /status, side by side with the same jobs followed through the event log.
 *
 * For each level (followed pods) and each way of following them, a minicondor home with 2 slots
 * and a sidecar of its own (`--spool always` for the spooled rows): every pod runs `sleep 86400`,
 * so two run and the rest stay idle. Then:
 * - a quiet window of `seconds` (one ReconcileMinutes by default, so that it holds one reconciler):
 *   the job ads the schedd sent, summed from minicondor's answers.log (every condor_q and
 *   condor_history of the sidecar, the reconciler's included; a -totals summary counts as one),
 *   per minute, and the condor_q/condor_history processes per minute from calls.log;
 * - `holds` holds of idle jobs, one at a time, each released before the next: from condor_hold's
 *   return to the first /status that reads JobHeld (polled every 20 ms).
 *
 *   bun scripts/lib/spool-bench.ts [--levels 100,1000] [--seconds 300] [--reconcile-minutes 5]
 *                                  [--holds 20] [--emulator-nice 10] [--binary PATH]
 *
 * On its own it runs the sources on Bun unless --binary names an executable. `spoolBench` is the
 * same rows as one of `npm run bench`'s benchmarks (scripts/bench.ts lists it in BENCHES), on the
 * built binary, at --spool-levels (default 100,10000).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  cleanupHome,
  CONDOR_BIN,
  createHome,
  emulatorBin,
  type Flavour,
  type Json,
  pct,
  podUid,
  pool,
  readCalls,
  shPod,
  sorted,
  startSidecar,
  table,
} from "./kit.ts";

/** A row of the table, against its target (the shape of every benchmark's rows). */
export interface SpoolRow {
  row: string;
  value: string;
  target: string;
  /** Whether the value meets the target (undefined: reported only). */
  met?: boolean;
}

export interface SpoolOptions {
  root: string;
  flavour: Flavour;
  binary?: string;
  /** Followed pods per level. */
  levels: number[];
  /** The quiet window, seconds. */
  seconds: number;
  reconcileMinutes: number;
  /** Holds timed per row. */
  holds: number;
  emulatorNice: number;
  say: (msg: string) => void;
}

type Mode = "spooled" | "event log";
type Sidecar = Awaited<ReturnType<typeof startSidecar>>;

const fmt = (ms: number | undefined) => (ms === undefined ? "–" : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

/** Ads each answer of condor_q/condor_history sent, from minicondor's answers.log (`time tool ads argv`), from line `from` on. */
export function answered(home: string, from = 0): { ads: number; lines: number } {
  const path = join(home, "answers.log");
  if (!existsSync(path)) return { ads: 0, lines: 0 };
  const lines = readFileSync(path, "utf8").split("\n").filter(Boolean);
  let ads = 0;
  for (const l of lines.slice(from)) ads += Number(l.split(" ")[2] ?? 0);
  return { ads, lines: lines.length };
}

function tool(home: string, name: string, args: string[]): number {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", MINICONDOR_HOME: home, MINICONDOR_ALLOW_ROOT: "1" };
  return Bun.spawnSync([join(CONDOR_BIN, name), ...args], { env, stdout: "pipe", stderr: "pipe" }).exitCode ?? 1;
}

async function reason(s: Sidecar, pod: Json): Promise<string | undefined> {
  const r = await s.client.status(pod.pod);
  return (JSON.parse(r.body) as Json[])[0]?.containers?.[0]?.state?.waiting?.reason;
}

/** Creates `n` pods that stay idle (all but two); their job ids, by pod. */
async function fill(s: Sidecar, n: number, runId: number): Promise<{ pods: { pod: Json; jid: string }[]; errors: number; ms: number }> {
  const reqs = Array.from({ length: n }, (_, i) => shPod(`spool-${i}`, podUid(runId), "sleep 86400"));
  const t0 = performance.now();
  const replies = await pool(reqs, 50, (p) => s.client.create(p).then((r) => r, () => undefined));
  const pods: { pod: Json; jid: string }[] = [];
  replies.forEach((r, i) => {
    if (r?.status === 200) pods.push({ pod: reqs[i]!, jid: String(JSON.parse(r.body).PodJID) });
  });
  return { pods, errors: n - pods.length, ms: performance.now() - t0 };
}

/** Holds idle jobs one at a time; how long each took to read JobHeld after condor_hold returned. */
async function holds(s: Sidecar, home: string, pods: { pod: Json; jid: string }[], count: number): Promise<{ lags: number[]; missed: number }> {
  const lags: number[] = [];
  let missed = 0;
  // The last pods: the first two run, the rest are idle.
  const targets = pods.slice(-count);
  for (const t of targets) {
    // Out of step with the sidecar's own clock.
    await Bun.sleep(Math.floor(Math.random() * 1000));
    if (tool(home, "condor_hold", [t.jid]) !== 0) {
      missed++;
      continue;
    }
    const held = Date.now();
    let seen = false;
    while (Date.now() - held < 30_000) {
      if ((await reason(s, t.pod)) === "JobHeld") {
        lags.push(Date.now() - held);
        seen = true;
        break;
      }
      await Bun.sleep(20);
    }
    if (!seen) missed++;
    tool(home, "condor_release", [t.jid]);
    for (let i = 0; i < 1500 && (await reason(s, t.pod)) === "JobHeld"; i++) await Bun.sleep(20);
  }
  return { lags: sorted(lags), missed };
}

async function level(o: SpoolOptions, n: number, mode: Mode, runId: number): Promise<SpoolRow[]> {
  const home = createHome({ cpus: 2 }, o.root);
  const dir = mkdtempSync(join(o.root, "spool-"));
  const s = await startSidecar({
    flavour: o.flavour,
    dir,
    home,
    binary: o.binary,
    config: [`ReconcileMinutes: ${o.reconcileMinutes}`],
    args: mode === "spooled" ? ["--spool", "always"] : [],
    condorBin: emulatorBin(o.root, o.emulatorNice),
  });
  const label = (what: string) => `${n} followed jobs${what}, ${mode}`;
  try {
    o.say(`spooled jobs: creating ${n} pods (${mode})`);
    const f = await fill(s, n, runId);
    o.say(`  ${f.pods.length} created in ${fmt(f.ms)}, ${f.errors} errors; settling`);
    // Spooled jobs are held while their input spools, then released: let that pass.
    await Bun.sleep(Math.min(60_000, 5_000 + n * 2));

    o.say(`spooled jobs: ${o.seconds} s with nothing changing (${mode})`);
    const ads0 = answered(home).lines;
    const calls0 = readCalls(home).lines;
    const t0 = Date.now();
    await Bun.sleep(o.seconds * 1000);
    const minutes = (Date.now() - t0) / 60_000;
    const ads = answered(home, ads0).ads;
    const queries = readCalls(home, calls0).calls.filter((c) => c.tool === "condor_q" || c.tool === "condor_history");
    const full = queries.filter((c) => c.argv.some((a) => /^ClusterId >= \d+$/.test(a))).length;

    o.say(`spooled jobs: ${o.holds} holds (${mode})`);
    const calls1 = readCalls(home).lines;
    const h = await holds(s, home, f.pods, Math.min(o.holds, Math.max(0, f.pods.length - 2)));
    // How long the emulator took to answer the questions meanwhile: its part of the latency.
    const asked = sorted(
      readCalls(home, calls1).calls.filter((c) =>
        c.tool === "condor_q" && c.argv.some((a) => a.includes("EnteredCurrentStatus >=") || a.startsWith("(ClusterId =="))
      ).map((c) => c.ms),
    );
    const perMinute = ads / minutes;
    return [
      {
        row: `ads read per minute, ${label(" that do not change")} (${o.seconds} s, ReconcileMinutes ${o.reconcileMinutes})`,
        value: `${perMinute.toFixed(0)} (${(queries.length / minutes).toFixed(0)} condor_q/condor_history a minute, ${full} full)`,
        target: n >= 10_000 ? "≤ 10,000" : "reported",
        met: n >= 10_000 ? perMinute <= 10_000 : undefined,
      },
      {
        row: `a hold visible in /status, ${label("")} (condor_hold returned → JobHeld)`,
        value: `p99 ${fmt(pct(h.lags, 99))}, p50 ${fmt(pct(h.lags, 50))} (${h.lags.length} of ${h.lags.length + h.missed} seen; ${
          mode === "spooled" ? "what-changed" : "targeted"
        } condor_q inside the emulator p50 ${fmt(pct(asked, 50))}, p99 ${fmt(pct(asked, 99))})`,
        target: mode === "spooled" ? "p99 < 2 s" : "reported",
        met: mode === "spooled" ? (pct(h.lags, 99) ?? Infinity) < 2000 && h.missed === 0 : undefined,
      },
    ];
  } finally {
    await s.stop();
    cleanupHome(home, true);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The rows, for each level the spooled one beside the event log's. */
export async function spoolRows(o: SpoolOptions): Promise<SpoolRow[]> {
  const rows: SpoolRow[] = [];
  const runId = Math.floor(Math.random() * 0xffffffff);
  for (const n of o.levels) {
    for (const mode of ["spooled", "event log"] as const) rows.push(...(await level(o, n, mode, runId)));
  }
  return rows;
}

const rowsText = (rows: readonly SpoolRow[]) =>
  table(["row", "value", "target", "met"], rows.map((b) => [b.row, b.value, b.target, b.met === undefined ? "–" : b.met ? "yes" : "NO"]));

/**
 * The rows as one of scripts/bench.ts's benchmarks (its `Bench`, scripts/lib/bench-kit.ts, by
 * shape): `--spool-levels` (default 100,10000; --quick 20, an empty list none), windows of
 * `--spool-seconds` (default one ReconcileMinutes), `--reconcile-minutes` (5), `--spool-holds` (20).
 */
export const spoolBench = {
  name: "spool",
  flags: {
    "spool-levels": { type: "string" as const },
    "spool-seconds": { type: "string" as const },
    "reconcile-minutes": { type: "string" as const },
    "spool-holds": { type: "string" as const },
  },
  setup(b: {
    root: string;
    binary: string;
    quick: boolean;
    emulatorNice: number;
    say(msg: string): void;
    flag(name: string): string | boolean | undefined;
    number(name: string, dflt: number): number;
  }) {
    const given = b.flag("spool-levels");
    const levels = (typeof given === "string" ? given : b.quick ? "20" : "100,10000").split(",").filter((l) => l.trim() !== "").map(Number);
    if (levels.some((l) => !Number.isInteger(l) || l < 3)) throw new Error(`--spool-levels: "${given}" is not a list of whole numbers of at least 3`);
    const reconcileMinutes = b.number("reconcile-minutes", b.quick ? 0.25 : 5);
    const o: SpoolOptions = {
      root: b.root,
      flavour: "binary",
      binary: b.binary,
      levels,
      seconds: Math.max(5, b.number("spool-seconds", reconcileMinutes * 60)),
      reconcileMinutes,
      holds: Math.floor(b.number("spool-holds", b.quick ? 5 : 20)),
      emulatorNice: b.emulatorNice,
      say: b.say,
    };
    let rows: SpoolRow[] = [];
    return {
      run: async () => (rows = await spoolRows(o)),
      lines:
        () => (rows.length === 0 ? [] : ["", `Spooled jobs beside the event log's: ${o.levels.join(" and ")} followed jobs that stay idle`, rowsText(rows)]),
    };
  },
};

if (import.meta.main) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      levels: { type: "string", default: "100,1000" },
      seconds: { type: "string", default: "300" },
      "reconcile-minutes": { type: "string", default: "5" },
      holds: { type: "string", default: "20" },
      "emulator-nice": { type: "string", default: "10" },
      binary: { type: "string" },
    },
    strict: true,
  });
  const levels = values.levels.split(",").map(Number);
  const nums = [Number(values.seconds), Number(values["reconcile-minutes"]), Number(values.holds), Number(values["emulator-nice"])];
  if (levels.some((l) => !Number.isInteger(l) || l < 3) || nums.some((x) => !(x >= 0))) {
    console.error("spool-bench: --levels takes whole numbers of at least 3; --seconds, --reconcile-minutes, --holds, --emulator-nice non-negative numbers");
    process.exit(2);
  }
  const root = mkdtempSync(join(tmpdir(), "spool-bench-"));
  const t0 = performance.now();
  try {
    const rows = await spoolRows({
      root,
      flavour: values.binary ? "binary" : "bun",
      binary: values.binary,
      levels,
      seconds: nums[0]!,
      reconcileMinutes: nums[1]!,
      holds: nums[2]!,
      emulatorNice: nums[3]!,
      say: (msg) => process.stderr.write(`[spool-bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}\n`),
    });
    process.stdout.write(`${rowsText(rows)}\n`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
