/**
 * `npm run bench`: measures the compiled sidecar (dist/htcondor-sidecar, built if missing) on
 * minicondor, and the same sources on Deno for comparison. Prints numbers; never asserts.
 *
 *   bun scripts/bench.ts [--quick] [--json] [--skip-deno] [--levels 1,100,1000,5000]
 *                        [--interval 5] [--min-rate 50] [--status-seconds 8] [--slots 2]
 *                        [--startup-runs 5] [--creates 300] [--fill-clients 10]
 *                        [--emulator-nice 10] [--binary PATH] [--build] [--keep] [--out PATH]
 *                        [--followed 10000] [--big-followed 0] [--follow-seconds 300]
 *                        [--reconcile-minutes 5] [--only-eventlog]
 *                        [--operator-scale 1] [--skip-operator]
 *
 * dist/htcondor-sidecar is built first when it is missing or older than src/ (--build: always).
 * --quick (levels 1,100, 3 s of status per row, 2 start-up runs, 20 creates per /create row) only
 * checks that the script works: its numbers are not the benchmark's.
 *
 * What it does, in order:
 *  1. start-up: spawn → first successful ping, `--startup-runs` times per runtime on an empty
 *     store, and the resident memory (VmRSS) once idle;
 *  2. a ramp of tracked pods (default 1 → 100 → 1000 → 5000). Each pod is one job running
 *     `sleep 86400` on a minicondor machine with `--slots` CPUs, so all but a few stay Idle and
 *     every pod stays tracked. The ramp's creates (`--fill-clients` at a time) are reported as
 *     such, with the store sizes they went through;
 *  3. at every level, /status as interLink polls it: one pod per call, every pod once per
 *     `--interval` seconds (at least `--min-rate` calls/s so small levels get enough samples),
 *     open loop for `--status-seconds`; p50/p99, p99 of the calls served from the status cache
 *     (those that overlapped no condor_q/condor_history in calls.log), condor tool processes per
 *     1000 calls (calls.log lines, condor_chirp excluded: jobs run it), and VmRSS. Then the
 *     binary is stopped, the Deno sidecar is started on the same store and measured the same
 *     way (unless --skip-deno), and the binary is started again: both restarts are timed to the
 *     first ping, so the table also shows start-up with that many pods in the store;
 *  4. /create on the full store, on the binary and then on Deno: for 1, 10 and 100 concurrent
 *     clients, `--creates` creates, each row from the same store (the last level: the pods of a
 *     row are deleted before the next), after 5 unreported warm-up creates per runtime. Every
 *     create is matched to its own condor_submit by the pod folder the tool ran in (a timing
 *     launcher, kit.ts timedSubmitBin): overhead = create latency − that condor_submit's wall time.
 *  5. the HTCJob operator's rows (scripts/lib/operator-bench.ts) on a kube-apiserver of their own:
 *     `--operator-scale` multiplies their sizes (--quick: 0.05); `--skip-operator` leaves them out.
 *
 * minicondor's tools, and the schedd and jobs they start, run at `--emulator-nice` (default 10, 0:
 * not niced): on a site the jobs run on worker nodes, while here every tool call, job and
 * condor_chirp is a Bun process on the sidecar's own cores (docs/performance.md#the-emulator-runs-niced).
 * Each /status row also reports how long the sidecar's main thread waited for a CPU.
 *
 * With `--json` the JSON goes to stdout and the table to stderr; progress is always on stderr.
 * The table is also written, with when and how it was measured, to docs/benchmark-results.md
 * (docs/performance.md explains it), or to `--out PATH`. A `--quick` run writes no file unless
 * `--out` names one, so that its numbers never replace a real run's; `--out -` writes none.
 */
import { type BatchRow, batchRows } from "./lib/batch-bench.ts";
import { eventLogRows } from "./lib/eventlog-bench.ts";
import { operatorRows } from "./lib/operator-bench.ts";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, release, tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  BINARY,
  BUN,
  callsLogLines,
  cleanupHome,
  cpuWait,
  createHome,
  DENO,
  type Flavour,
  fmtMiB,
  fmtMs,
  median,
  pct,
  podUid,
  pool,
  readCalls,
  readSubmitTimes,
  type Reply,
  ROOT,
  rssKiB,
  type Running,
  schedStat,
  shPod,
  SIDECAR_TOOLS,
  sorted,
  startSidecar,
  type SubmitTime,
  submitUid,
  table,
  timedSubmitBin,
  timedSubmitPadMs,
  type ToolCall,
  toolStartupMs,
} from "./lib/kit.ts";

// ------------------------------------------------------------------------------------- options

function parseFlags() {
  try {
    return parseArgs({
      args: process.argv.slice(2),
      options: {
        quick: { type: "boolean", default: false },
        json: { type: "boolean", default: false },
        "skip-deno": { type: "boolean", default: false },
        levels: { type: "string" },
        interval: { type: "string", default: "5" },
        "min-rate": { type: "string", default: "50" },
        "status-seconds": { type: "string" },
        slots: { type: "string", default: "2" },
        "startup-runs": { type: "string" },
        creates: { type: "string" },
        "fill-clients": { type: "string", default: "10" },
        "emulator-nice": { type: "string", default: "10" },
        binary: { type: "string", default: BINARY },
        build: { type: "boolean", default: false },
        keep: { type: "boolean", default: false },
        out: { type: "string" },
        followed: { type: "string" },
        "big-followed": { type: "string", default: "0" },
        "follow-seconds": { type: "string" },
        "reconcile-minutes": { type: "string" },
        "only-eventlog": { type: "boolean", default: false },
        "operator-scale": { type: "string" },
        "skip-operator": { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
    }).values;
  } catch (err) {
    console.error(`bench: ${err instanceof Error ? err.message : String(err)} (--help lists the flags)`);
    process.exit(2);
  }
}
const flags = parseFlags();

if (flags.help) {
  console.log(readFileSync(import.meta.path, "utf8").split("*/")[0]!.replace(/^\/\*\*\n?/, "").replace(/^ \* ?/gm, ""));
  process.exit(0);
}

function num(name: string, v: string | undefined, dflt: number): number {
  const n = v === undefined ? dflt : Number(v);
  if (!Number.isFinite(n) || n < 0) {
    console.error(`bench: --${name}: "${v}" is not a non-negative number`);
    process.exit(2);
  }
  return n;
}

const quick = flags.quick === true;
const levels = (flags.levels ?? (quick ? "1,100" : "1,100,1000,5000")).split(",").map((s) => num("levels", s.trim(), 0));
if (levels.length === 0 || levels.some((l, i) => l < 1 || !Number.isInteger(l) || (i > 0 && l <= levels[i - 1]!))) {
  console.error("bench: --levels: increasing positive integers, e.g. 1,100,1000");
  process.exit(2);
}
const opts = {
  interval: num("interval", flags.interval, 5),
  minRate: num("min-rate", flags["min-rate"], 50),
  statusSeconds: num("status-seconds", flags["status-seconds"], quick ? 3 : 8),
  slots: num("slots", flags.slots, 2),
  startupRuns: Math.max(1, num("startup-runs", flags["startup-runs"], quick ? 2 : 5)),
  createsPerRow: Math.max(1, Math.floor(num("creates", flags.creates, quick ? 20 : 300))),
  fillClients: Math.max(1, Math.floor(num("fill-clients", flags["fill-clients"], 10))),
  emulatorNice: Math.min(19, Math.floor(num("emulator-nice", flags["emulator-nice"], 10))),
  deno: flags["skip-deno"] !== true,
  binary: flags.binary ?? BINARY,
  maxInFlight: 64,
  // Status from the job event log (scripts/lib/eventlog-bench.ts): the size knobs, so that the
  // rows can be checked with a few hundred pods; --big-followed 50000 is the row that is not CI.
  followed: Math.max(1, Math.floor(num("followed", flags.followed, quick ? 200 : 10_000))),
  bigFollowed: Math.floor(num("big-followed", flags["big-followed"], 0)),
  followSeconds: Math.max(5, num("follow-seconds", flags["follow-seconds"], quick ? 20 : 300)),
  reconcileMinutes: num("reconcile-minutes", flags["reconcile-minutes"], quick ? 0.25 : 5),
};
/** Where the report is written (undefined: nowhere), relative paths from the current folder. */
const RESULTS_FILE = join(ROOT, "docs", "benchmark-results.md");
const outFile = flags.out === "-" ? undefined : flags.out !== undefined ? resolve(flags.out) : quick ? undefined : RESULTS_FILE;
const CREATE_CONCURRENCY = [1, 10, 100];
const CREATE_WARMUP = 5;
const DELETE_CLIENTS = 10;
const MAX_CONCURRENT_SUBMITS = 8; // the default; the bench writes no MaxConcurrentSubmits
const STATUS_CACHE_SECONDS = 2; // the default; the bench writes no StatusCacheSeconds

const t0 = performance.now();
const say = (msg: string) => process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}\n`);

// ----------------------------------------------------------------------------------- the header

function cpuModel(): string {
  try {
    return /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? "unknown";
  } catch {
    return cpus()[0]?.model ?? "unknown";
  }
}

function commandLine(argv: string[]): string {
  const p = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return p.exitCode === 0 ? p.stdout.toString().split("\n")[0]!.trim() : `(${argv[0]} failed: ${p.stderr.toString().trim().split("\n")[0]})`;
}

/** Newest modification time of the files under `dir`, milliseconds. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) newest = Math.max(newest, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return newest;
}

/** Builds dist/htcondor-sidecar when it is missing, older than the sources, or --build says so. */
function ensureBinary(): void {
  if (opts.binary !== BINARY) {
    if (!existsSync(opts.binary)) {
      console.error(`bench: --binary ${opts.binary}: no such file`);
      process.exit(2);
    }
    return;
  }
  const why = flags.build
    ? "--build"
    : !existsSync(BINARY)
    ? "missing"
    : statSync(BINARY).mtimeMs < newestMtime(join(ROOT, "src"))
    ? "older than src/"
    : undefined;
  if (!why) return;
  say(`building dist/htcondor-sidecar (${why})`);
  const p = Bun.spawnSync([BUN, join(ROOT, "scripts", "build.ts")], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  process.stderr.write(p.stdout);
  process.stderr.write(p.stderr);
  if (p.exitCode !== 0) {
    console.error("bench: the build failed");
    process.exit(1);
  }
}

// ---------------------------------------------------------------------------------- measurements

interface StartupResult {
  flavour: Flavour;
  runs: number[];
  medianMs: number;
  rssIdleKiB?: number;
}

interface StatusResult {
  level: number;
  flavour: Flavour;
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

interface CreateResult {
  flavour: Flavour;
  /** "compare": a row of the /create table, from the same store as its siblings; "fill": the ramp. */
  kind: "compare" | "fill" | "warmup";
  concurrency: number;
  count: number;
  fromPods: number;
  toPods: number;
  /** Deleted pods of earlier rows still in the store as tombstones. */
  tombstones: number;
  errors: number;
  errorSamples: string[];
  wallMs: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Creates matched to their own condor_submit (by pod folder). */
  matched: number;
  /** Wall time of condor_submit, start-up included. */
  submitP50?: number;
  submitP99?: number;
  /** Create latency − the wall time of that create's condor_submit. */
  overheadP50?: number;
  overheadP99?: number;
  /** The same, minus what the bench's bash launcher adds outside the condor_submit clock. */
  overheadNetP50?: number;
  overheadNetP99?: number;
  /** The deletes that brought the store back to its size before the next row. */
  deletes?: { count: number; errors: number; p50: number; p99: number; wallMs: number };
}

function errorSamples(replies: readonly Reply[]): string[] {
  const seen = new Set<string>();
  for (const r of replies) if (r.status !== 200 && seen.size < 3) seen.add(`${r.status}: ${r.body.slice(0, 160)}`);
  return [...seen];
}

function replyFailed(err: unknown): Reply {
  return { status: 0, body: err instanceof Error ? err.message : String(err), ms: Number.NaN, start: Date.now(), end: Date.now() };
}

async function measureStartup(flavour: Flavour, root: string, home: string, runs: number): Promise<StartupResult> {
  const times: number[] = [];
  let rssIdle: number | undefined;
  if (flavour === "deno") {
    // The first Deno run fills its module cache (transpiling the sources): not timed.
    const warm = await startSidecar({ flavour, dir: join(root, "startup-deno-warm"), home, binary: opts.binary });
    await warm.stop();
  }
  for (let i = 0; i < runs; i++) {
    const sc = await startSidecar({ flavour, dir: join(root, `startup-${flavour}-${i}`), home, binary: opts.binary });
    times.push(sc.startupMs);
    if (i === runs - 1) {
      await Bun.sleep(1000);
      rssIdle = rssKiB(sc.pid);
    }
    await sc.stop();
  }
  return { flavour, runs: times, medianMs: median(times)!, rssIdleKiB: rssIdle };
}

/** Creates `reqs` with `concurrency` clients; the pods that were created are appended to `tracked`. */
async function createBatch(
  sc: Running,
  home: string,
  reqs: ReturnType<typeof shPod>[],
  concurrency: number,
  tracked: ReturnType<typeof shPod>[],
  kind: CreateResult["kind"],
  padMs: number,
  tombstones = 0,
): Promise<CreateResult> {
  const fromPods = tracked.length;
  const before = readSubmitTimes(home).lines;
  const start = performance.now();
  const replies = await pool(reqs, concurrency, (r) => sc.client.create(r).catch(replyFailed));
  const wallMs = performance.now() - start;
  const ok = replies.filter((r) => r.status === 200);
  tracked.push(...reqs.filter((_, i) => replies[i]!.status === 200));
  // Each create is matched to the condor_submit that ran in its pod's folder.
  const submitOf = new Map<string, SubmitTime>();
  for (const t of readSubmitTimes(home, before).times) if (t.code === 0) submitOf.set(submitUid(t), t);
  const pairs = reqs.flatMap((req, i) => {
    const t = submitOf.get(req.pod.metadata.uid);
    return replies[i]!.status === 200 && t ? [{ latency: replies[i]!.ms, submit: t.ms }] : [];
  });
  const lat = sorted(ok.map((r) => r.ms));
  const over = sorted(pairs.map((p) => p.latency - p.submit));
  const subs = sorted(pairs.map((p) => p.submit));
  return {
    flavour: sc.flavour,
    kind,
    concurrency,
    count: reqs.length,
    fromPods,
    toPods: fromPods + ok.length,
    tombstones,
    errors: replies.length - ok.length,
    errorSamples: errorSamples(replies),
    wallMs,
    perSecond: (ok.length / wallMs) * 1000,
    p50: pct(lat, 50) ?? Number.NaN,
    p99: pct(lat, 99) ?? Number.NaN,
    matched: pairs.length,
    submitP50: pct(subs, 50),
    submitP99: pct(subs, 99),
    overheadP50: pct(over, 50),
    overheadP99: pct(over, 99),
    overheadNetP50: pct(over, 50) === undefined ? undefined : pct(over, 50)! - padMs,
    overheadNetP99: pct(over, 99) === undefined ? undefined : pct(over, 99)! - padMs,
  };
}

/** Deletes the pods a row created (each delete runs condor_rm), so the next row starts from the same store. */
async function deleteAll(sc: Running, pods: ReturnType<typeof shPod>[]): Promise<NonNullable<CreateResult["deletes"]>> {
  const start = performance.now();
  const replies = await pool(pods, DELETE_CLIENTS, (p) => sc.client.remove(p.pod).catch(replyFailed));
  const lat = sorted(replies.filter((r) => r.status === 200).map((r) => r.ms));
  return {
    count: pods.length,
    errors: replies.filter((r) => r.status !== 200).length,
    p50: pct(lat, 50) ?? Number.NaN,
    p99: pct(lat, 99) ?? Number.NaN,
    wallMs: performance.now() - start,
  };
}

/**
 * The /create table's rows for one runtime: warm-up creates (deleted, reported only in the JSON),
 * then `createsPerRow` creates with each client count, each row deleted before the next so that
 * every row starts from the same tracked pods.
 */
async function compareCreates(
  sc: Running,
  home: string,
  tracked: ReturnType<typeof shPod>[],
  newPods: (n: number) => ReturnType<typeof shPod>[],
  padMs: number,
  deleted: { pods: number },
): Promise<CreateResult[]> {
  const rows: CreateResult[] = [];
  for (
    const [kind, concurrency, count] of [
      ["warmup", 1, CREATE_WARMUP] as const,
      ...CREATE_CONCURRENCY.map((c) => ["compare", c, opts.createsPerRow] as const),
    ]
  ) {
    say(`${sc.flavour}: ${count} creates with ${concurrency} client(s) on ${tracked.length} tracked pods${kind === "warmup" ? " (warm-up)" : ""}`);
    const created: ReturnType<typeof shPod>[] = [...tracked];
    const res = await createBatch(sc, home, newPods(count), concurrency, created, kind, padMs, deleted.pods);
    const mine = created.slice(tracked.length);
    res.deletes = await deleteAll(sc, mine);
    deleted.pods += mine.length;
    rows.push(res);
    say(
      `  ${res.perSecond.toFixed(1)} creates/s, p50 ${fmtMs(res.p50)}, overhead p50 ${fmtMs(res.overheadP50)} p99 ${
        fmtMs(res.overheadP99)
      }, ${res.errors} errors; ` +
        `${res.deletes.count} deletes, ${res.deletes.errors} errors`,
    );
  }
  return rows;
}

/** Did this status call overlap a condor_q/condor_history run (so it may have waited for one)? */
function overlapsQuery(r: Reply, queries: ToolCall[], padMs: number): boolean {
  return queries.some((q) => r.start <= q.end + 2 && r.end >= q.end - q.ms - padMs);
}

async function statusRun(sc: Running, home: string, pods: ReturnType<typeof shPod>[], level: number, toolPadMs: number): Promise<StatusResult> {
  const n = pods.length;
  const targetRate = Math.max(n / opts.interval, opts.minRate);
  const total = Math.max(1, Math.round(targetRate * opts.statusSeconds));
  const before = callsLogLines(home);
  const replies: Reply[] = [];
  const pending = new Set<Promise<void>>();
  const sched0 = schedStat(sc.pid);
  const start = performance.now();
  for (let k = 0; k < total; k++) {
    const wait = start + (k / targetRate) * 1000 - performance.now();
    if (wait >= 1) await Bun.sleep(wait);
    while (pending.size >= opts.maxInFlight) await Promise.race(pending);
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

// --------------------------------------------------------------------------------------- report

interface Report {
  date: string;
  machine: { cpu: string; cores: number; memTotalKiB?: number; kernel: string; loadAverage: string };
  versions: { binary: string; deno?: string; benchDriver: string };
  settings: typeof opts & { levels: number[]; statusCacheSeconds: number; maxConcurrentSubmits: number; toolStartupMs: number; submitLauncherMs: number };
  startup: StartupResult[];
  /** Every create batch: the ramp ("fill"), the warm-ups and the /create table ("compare"). */
  create: CreateResult[];
  status: StatusResult[];
  memory: { flavour: Flavour; idleKiB?: number; maxPods: number; withMaxPodsKiB?: number }[];
  /** Many pods per condor process (issue 14): scripts/lib/batch-bench.ts, plus rows read off the tables above. */
  batch: BatchRow[];
  /** The HTCJob operator (issue 21): scripts/lib/operator-bench.ts. */
  operator: BatchRow[];
  durationSeconds?: number;
  notes: string[];
}

function render(rep: Report): string {
  const out: string[] = [];
  const maxLevel = levels.at(-1)!;
  out.push(`htcondor-sidecar benchmark, ${rep.date}`);
  out.push(
    `machine: ${rep.machine.cpu}, ${rep.machine.cores} cores, ${
      fmtMiB(rep.machine.memTotalKiB)
    } RAM, Linux ${rep.machine.kernel}, load average at start ${rep.machine.loadAverage}`,
  );
  out.push(`runtimes: ${rep.versions.binary}${rep.versions.deno ? `; ${rep.versions.deno}` : ""}; driver bun ${rep.versions.benchDriver}`);
  out.push(
    `setup: minicondor with ${opts.slots} CPU slots (pods run \`sleep 86400\`, the rest stay Idle); default SidecarConfig (StatusCacheSeconds ${STATUS_CACHE_SECONDS}, MaxConcurrentSubmits 8, log level info to a file); condor tool start-up outside calls.log ≈ ${
      fmtMs(rep.settings.toolStartupMs)
    }; minicondor's tools, schedd and jobs ${opts.emulatorNice > 0 ? `at nice ${opts.emulatorNice}` : "not niced"}`,
  );
  out.push("");

  const s = (f: Flavour) => rep.startup.find((x) => x.flavour === f);
  const m = (f: Flavour) => rep.memory.find((x) => x.flavour === f);
  const flavours: Flavour[] = opts.deno ? ["binary", "deno"] : ["binary"];
  out.push("Start-up and memory");
  out.push(
    table(
      ["", ...flavours, "target"],
      [
        [`start → first ping 200 (median of ${opts.startupRuns}, empty store)`, ...flavours.map((f) => fmtMs(s(f)?.medianMs)), "< 150 ms"],
        [`  min … max`, ...flavours.map((f) => (s(f) ? `${fmtMs(Math.min(...s(f)!.runs))} … ${fmtMs(Math.max(...s(f)!.runs))}` : "–")), ""],
        ["resident memory idle (VmRSS)", ...flavours.map((f) => fmtMiB(m(f)?.idleKiB)), ""],
        [
          `resident memory with ${maxLevel} pods tracked`,
          ...flavours.map((f) => fmtMiB(m(f)?.withMaxPodsKiB)),
          maxLevel >= 5000 ? "< 80 MiB (5000 pods)" : "< 80 MiB at 5000 pods",
        ],
      ],
    ),
  );
  out.push("");

  out.push(
    `/status as interLink polls it: one pod per call, every pod every ${opts.interval} s (at least ${opts.minRate} calls/s), open loop for ${opts.statusSeconds} s per row`,
  );
  out.push(
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
      rep.status.map((r) => [
        String(r.level),
        r.flavour,
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
  );
  out.push("targets: with 1000 pods ≤ 5 condor processes per 1000 calls and p99 < 5 ms for calls served from the cache");
  out.push(
    "(p99 cached: calls that overlapped no condor_q/condor_history run, their count in brackets; main thread: the sidecar's CPU time during the row, and its time runnable but waiting for a CPU)",
  );
  for (const r of rep.status) if (r.errors) out.push(`errors at ${r.level} pods on ${r.flavour}: ${r.errorSamples.join(" | ")}`);
  out.push("");

  const compare = rep.create.filter((c) => c.kind === "compare");
  const createRow = (c: CreateResult) => [
    c.flavour,
    String(c.concurrency),
    String(c.count),
    c.perSecond.toFixed(1),
    fmtMs(c.p50),
    fmtMs(c.p99),
    fmtMs(c.submitP50),
    fmtMs(c.overheadP50),
    fmtMs(c.overheadP99),
    `${fmtMs(c.overheadNetP50)} / ${fmtMs(c.overheadNetP99)}`,
    String(c.errors),
  ];
  const createHead = [
    "runtime",
    "clients",
    "creates",
    "creates/s",
    "p50",
    "p99",
    "condor_submit p50",
    "overhead p50",
    "overhead p99",
    "net p50 / p99",
    "errors",
  ];
  const storePods = compare[0]?.fromPods;
  out.push(
    `/create: ${opts.createsPerRow} creates per row, every row from the same store (${
      storePods ?? "–"
    } pods tracked; a row's pods are deleted before the next and stay as tombstones), after ${CREATE_WARMUP} warm-up creates per runtime`,
  );
  out.push(table(createHead, compare.map(createRow)));
  out.push(
    `target: overhead < 10 ms beyond condor_submit (overhead = create latency − the wall time of that create's own condor_submit, matched by the pod folder it ran in; net = minus the ${
      fmtMs(rep.settings.submitLauncherMs)
    } the bench's bash launcher adds outside that clock). With more clients than MaxConcurrentSubmits (${MAX_CONCURRENT_SUBMITS}), overhead includes the wait for a submit slot.`,
  );
  const unmatched = rep.create.filter((c) => c.kind !== "warmup" && c.matched < c.count - c.errors);
  if (unmatched.length) {
    out.push(
      `(${
        unmatched.map((c) => `${c.flavour}/${c.concurrency}: ${c.matched} of ${c.count - c.errors}`).join(", ")
      } creates matched to their condor_submit; overhead is over those)`,
    );
  }
  out.push("");
  const fill = rep.create.filter((c) => c.kind === "fill");
  out.push(`/create while filling the store (the ramp, ${opts.fillClients} clients, binary)`);
  out.push(
    table(
      ["pods", ...createHead.slice(1)],
      fill.map((c) => [`${c.fromPods}→${c.toPods}`, ...createRow(c).slice(1)]),
    ),
  );
  const deletes = compare.flatMap((c) => (c.deletes ? [{ flavour: c.flavour, ...c.deletes }] : []));
  if (deletes.length) {
    out.push(
      `deletes between rows (${DELETE_CLIENTS} clients): ${
        deletes.map((d) => `${d.flavour} ${d.count} p50 ${fmtMs(d.p50)} p99 ${fmtMs(d.p99)}${d.errors ? ` ${d.errors} errors` : ""}`).join("; ")
      }`,
    );
  }
  if (rep.batch.length > 0) {
    out.push("");
    out.push(
      "Many pods per condor process (issue 14): each row on a minicondor home and a sidecar of its own; status and lone-create rows from the tables above",
    );
    out.push(table(["row", "value", "target", "met"], rep.batch.map((b) => [b.row, b.value, b.target, b.met === undefined ? "–" : b.met ? "yes" : "NO"])));
  }
  if (rep.operator.length > 0) {
    out.push("");
    out.push("The HTCJob operator (issue 21): a kube-apiserver of its own, minicondor with 2 slots, every proc `sleep 86400`");
    out.push(table(["row", "value", "target", "met"], rep.operator.map((b) => [b.row, b.value, b.target, b.met === undefined ? "–" : b.met ? "yes" : "NO"])));
  }
  for (const c of rep.create) if (c.errors) out.push(`create errors (${c.flavour}, ${c.kind}, ${c.concurrency} clients): ${c.errorSamples.join(" | ")}`);
  for (const n of rep.notes) out.push(`note: ${n}`);
  if (rep.durationSeconds !== undefined) out.push(`bench took ${rep.durationSeconds.toFixed(0)} s`);
  return out.join("\n");
}

// ------------------------------------------------------------------------------------------ main

const root = mkdtempSync(join(tmpdir(), "sidecar-bench-"));
const homes: string[] = [];
let current: Running | undefined;
let cleaned = false;

async function cleanupAll(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await current?.stop(5000).catch(() => undefined);
  for (const h of homes) cleanupHome(h);
  if (flags.keep) say(`kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    say(`${sig}: cleaning up`);
    void cleanupAll().finally(() => process.exit(130));
  });
}

async function run(): Promise<Report> {
  ensureBinary();
  const memTotal = /^MemTotal:\s+(\d+)/m.exec(readFileSync("/proc/meminfo", "utf8"))?.[1];
  const rep: Report = {
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    machine: {
      cpu: cpuModel(),
      cores: cpus().length,
      memTotalKiB: memTotal ? Number(memTotal) : undefined,
      kernel: release(),
      loadAverage: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
    },
    versions: {
      binary: commandLine([opts.binary, "--version"]),
      deno: opts.deno ? commandLine([DENO, "--version"]) : undefined,
      benchDriver: Bun.version,
    },
    settings: {
      ...opts,
      levels,
      statusCacheSeconds: STATUS_CACHE_SECONDS,
      maxConcurrentSubmits: MAX_CONCURRENT_SUBMITS,
      toolStartupMs: 0,
      submitLauncherMs: 0,
    },
    startup: [],
    create: [],
    status: [],
    memory: [],
    batch: [],
    operator: [],
    notes: [],
  };

  // 1. start-up and idle memory, on an empty store and an empty minicondor.
  const startupHome = createHome({ cpus: opts.slots }, root);
  homes.push(startupHome);
  rep.settings.toolStartupMs = await toolStartupMs(startupHome);
  for (const f of opts.deno ? (["binary", "deno"] as const) : (["binary"] as const)) {
    say(`start-up of the ${f} sidecar, ${opts.startupRuns} runs`);
    const r = await measureStartup(f, root, startupHome, opts.startupRuns);
    rep.startup.push(r);
    rep.memory.push({ flavour: f, idleKiB: r.rssIdleKiB, maxPods: levels.at(-1)! });
    say(`  median ${fmtMs(r.medianMs)}, idle RSS ${fmtMiB(r.rssIdleKiB)}`);
  }

  // 2./3. the ramp: creates on the binary, status at every level on the binary and on Deno.
  const home = createHome({ cpus: opts.slots }, root);
  homes.push(home);
  const condorBin = timedSubmitBin(root, opts.emulatorNice);
  rep.settings.submitLauncherMs = await timedSubmitPadMs(condorBin, home);
  const dir = join(root, "main");
  const runId = Math.floor(Math.random() * 0xffffffff);
  let seq = 0;
  const newPods = (count: number) => Array.from({ length: count }, () => shPod(`bench-${++seq}`, podUid(runId), "sleep 86400"));
  const tracked: ReturnType<typeof shPod>[] = [];
  const start = (flavour: Flavour) => startSidecar({ flavour, dir, home, binary: opts.binary, condorBin });

  current = await start("binary");
  say(`binary sidecar up (pid ${current.pid}, port ${current.port})`);
  const first = await createBatch(current, home, newPods(levels[0]!), 1, tracked, "warmup", rep.settings.submitLauncherMs);
  rep.create.push(first);
  if (first.errors) rep.notes.push(`${first.errors} of the first ${first.count} creates failed`);

  for (let li = 0; li < levels.length; li++) {
    const level = levels[li]!;
    const missing = level - tracked.length;
    if (li > 0 && missing > 0) {
      say(`creating ${missing} pods with ${opts.fillClients} concurrent clients (${tracked.length} tracked)`);
      const res = await createBatch(current, home, newPods(missing), opts.fillClients, tracked, "fill", rep.settings.submitLauncherMs);
      rep.create.push(res);
      say(`  ${res.perSecond.toFixed(1)} creates/s, p50 ${fmtMs(res.p50)}, overhead p50 ${fmtMs(res.overheadP50)}, ${res.errors} errors`);
      if (res.errors) rep.notes.push(`${res.errors} creates failed while filling to ${level} pods (those pods are not polled)`);
    }
    say(`status at ${level} pods on the binary`);
    const sb = await statusRun(current, home, tracked, tracked.length, rep.settings.toolStartupMs);
    rep.status.push(sb);
    say(
      `  ${sb.calls} calls at ${sb.rate.toFixed(0)}/s, p50 ${fmtMs(sb.p50)}, p99 ${fmtMs(sb.p99)}, ${sb.condorPer1000.toFixed(1)} condor procs/1000, RSS ${
        fmtMiB(sb.rssKiB)
      }`,
    );
    if (li === levels.length - 1) rep.memory.find((x) => x.flavour === "binary")!.withMaxPodsKiB = sb.rssKiB;

    // Restarts on the store with `level` pods: Deno (measured the same way), then the binary again.
    await current.stop();
    current = undefined;
    if (opts.deno) {
      const d = await start("deno");
      current = d;
      say(`status at ${level} pods on Deno (restart → ping ${fmtMs(d.startupMs)})`);
      const sd = await statusRun(d, home, tracked, tracked.length, rep.settings.toolStartupMs);
      sd.restartMs = d.startupMs;
      rep.status.push(sd);
      say(
        `  ${sd.calls} calls at ${sd.rate.toFixed(0)}/s, p50 ${fmtMs(sd.p50)}, p99 ${fmtMs(sd.p99)}, ${sd.condorPer1000.toFixed(1)} condor procs/1000, RSS ${
          fmtMiB(sd.rssKiB)
        }`,
      );
      if (li === levels.length - 1) rep.memory.find((x) => x.flavour === "deno")!.withMaxPodsKiB = sd.rssKiB;
      await d.stop();
      current = undefined;
    }
    current = await start("binary");
    sb.restartMs = current.startupMs;
    say(`  binary restarted on ${level} pods: first ping after ${fmtMs(sb.restartMs)}`);
  }

  // 4. /create with 1, 10 and 100 clients on the full store: the binary, then Deno.
  const deleted = { pods: 0 };
  rep.create.push(...(await compareCreates(current, home, tracked, newPods, rep.settings.submitLauncherMs, deleted)));
  await current.stop();
  current = undefined;
  if (opts.deno) {
    current = await start("deno");
    rep.create.push(...(await compareCreates(current, home, tracked, newPods, rep.settings.submitLauncherMs, deleted)));
    await current.stop();
    current = undefined;
  }
  for (const c of rep.create) {
    if (c.kind !== "warmup" && c.deletes?.errors) {
      rep.notes.push(`${c.deletes.errors} of ${c.deletes.count} deletes failed after the ${c.flavour} row with ${c.concurrency} clients`);
    }
    if (c.kind === "compare" && c.errors) rep.notes.push(`${c.errors} creates failed in the ${c.flavour} row with ${c.concurrency} clients`);
  }
  // 5. many pods per condor process, each row on a minicondor home and a sidecar of its own.
  rep.batch = await batchRows({ root, flavour: "binary", binary: opts.binary, quick, say, emulatorNice: opts.emulatorNice });
  // 6. status from the job event log (issue 22), on a minicondor home and a sidecar of its own.
  rep.batch.push(
    ...(await eventLogRows(eventLogOptions())),
  );
  const at1000 = rep.status.find((r) => r.flavour === "binary" && r.level === 1000);
  if (at1000) {
    rep.batch.push({
      row: "status at interLink's pace on 1000 live pods: p99",
      value: `${fmtMs(at1000.p99)} (${at1000.calls} calls; sidecar ${cpuWait(at1000)})`,
      target: "< 5 ms",
      met: at1000.p99 < 5,
    });
  }
  const lone = rep.create.find((c) => c.kind === "compare" && c.flavour === "binary" && c.concurrency === 1);
  if (lone?.overheadP50 !== undefined) {
    rep.batch.push({
      row: "a lone create: latency beyond its own condor_submit (p50)",
      value: `${fmtMs(lone.overheadP50)} (create p50 ${fmtMs(lone.p50)}, its condor_submit ${fmtMs(lone.submitP50)})`,
      target: "within a few ms",
      met: lone.overheadP50 < 10,
    });
  }
  if (flags["skip-operator"] !== true) {
    const scale = num("operator-scale", flags["operator-scale"], quick ? 0.05 : 1);
    rep.operator = await operatorRows({ root, argv: [opts.binary], scale, steadySeconds: quick ? 10 : 60, emulatorNice: opts.emulatorNice, say });
  }
  rep.durationSeconds = (performance.now() - t0) / 1000;
  if (opts.deno) {
    rep.notes.push(
      "Deno rows: a fresh `deno run -A --no-check src/main.deno.ts` on the binary's store; the binary's status rows come from the long-lived process that created the pods, its /create rows from a process restarted on the full store",
    );
  }
  return rep;
}

/** The results file: the report as printed, and when, where and how it was measured. */
function resultsMarkdown(rep: Report, text: string): string {
  const args = process.argv.slice(2).filter((a, i, all) => a !== "--out" && all[i - 1] !== "--out" && !a.startsWith("--out="));
  return [
    "# Benchmark results",
    "",
    "Written by `npm run bench` (`scripts/bench.ts`) at the end of a run: do not edit it by hand, run the",
    "benchmark again. What is measured, the targets and how to read the numbers:",
    "[performance.md](performance.md).",
    "",
    `- measured: ${rep.date}, in ${Math.round(rep.durationSeconds ?? 0)} s`,
    `- command: \`bun scripts/bench.ts${args.length ? ` ${args.join(" ")}` : ""}\`${
      quick ? " (a quick run: it only checks that the script works; its numbers are not the benchmark's)" : ""
    }`,
    `- machine: ${rep.machine.cpu}, ${rep.machine.cores} cores, load average at start ${rep.machine.loadAverage}`,
    "",
    "```text",
    text,
    "```",
    "",
  ].join("\n");
}

/** What the event log rows take, in a full run and alone. */
function eventLogOptions(): Parameters<typeof eventLogRows>[0] {
  return {
    root,
    flavour: "binary",
    binary: opts.binary,
    quick,
    say,
    emulatorNice: opts.emulatorNice,
    pods: opts.followed,
    bigPods: opts.bigFollowed,
    windowSeconds: opts.followSeconds,
    reconcileMinutes: opts.reconcileMinutes,
  };
}

/** The event log rows alone (--only-eventlog): printed, never written to the results file. */
async function runEventLogOnly(): Promise<void> {
  ensureBinary();
  const rows = await eventLogRows(eventLogOptions());
  process.stdout.write(
    `${table(["row", "value", "target", "met"], rows.map((b) => [b.row, b.value, b.target, b.met === undefined ? "–" : b.met ? "yes" : "NO"]))}\n`,
  );
}

let exitCode = 0;
try {
  if (flags["only-eventlog"]) {
    await runEventLogOnly();
    await cleanupAll();
    process.exit(0);
  }
  const rep = await run();
  const text = render(rep);
  if (outFile) {
    writeFileSync(outFile, resultsMarkdown(rep, text));
    say(`report written to ${relative(process.cwd(), outFile).startsWith("..") ? outFile : relative(process.cwd(), outFile)}`);
  }
  if (flags.json) {
    process.stderr.write(`${text}\n`);
    process.stdout.write(`${JSON.stringify(rep, null, 2)}\n`);
  } else {
    process.stdout.write(`${text}\n`);
  }
} catch (err) {
  console.error(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  exitCode = 1;
} finally {
  await cleanupAll();
}
process.exit(exitCode);
