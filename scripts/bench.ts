/**
 * `npm run bench`: measures the compiled sidecar (dist/htcondor-sidecar, built if missing) on
 * minicondor, and the same sources on Deno for comparison. Prints numbers; never asserts.
 *
 *   bun scripts/bench.ts [--quick] [--json] [--skip-deno] [--levels 1,100,1000,5000]
 *                        [--interval 5] [--min-rate 50] [--status-seconds 8] [--slots 2]
 *                        [--startup-runs 5] [--binary PATH] [--build] [--keep]
 *
 * dist/htcondor-sidecar is built first when it is missing or older than src/ (--build: always).
 *
 * What it does, in order:
 *  1. start-up: spawn → first successful ping, `--startup-runs` times per runtime on an empty
 *     store, and the resident memory (VmRSS) once idle;
 *  2. a ramp of tracked pods (default 1 → 100 → 1000 → 5000). Each pod is one job running
 *     `sleep 86400` on a minicondor machine with `--slots` CPUs, so all but a few stay Idle and
 *     every pod stays tracked. The creates of each step measure /create with 1, 10 and 100
 *     concurrent clients (with fewer steps the last one is split);
 *  3. at every level, /status as interLink polls it: one pod per call, every pod once per
 *     `--interval` seconds (at least `--min-rate` calls/s so small levels get enough samples),
 *     open loop for `--status-seconds`; p50/p99, p99 of the calls served from the status cache
 *     (those that overlapped no condor_q/condor_history in calls.log), condor tool processes per
 *     1000 calls (calls.log lines, condor_chirp excluded: jobs run it), and VmRSS. Then the
 *     binary is stopped, the Deno sidecar is started on the same store and measured the same
 *     way (unless --skip-deno), and the binary is started again: both restarts are timed to the
 *     first ping, so the table also shows start-up with that many pods in the store.
 *
 * With `--json` the JSON goes to stdout and the table to stderr; progress is always on stderr.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { cpus, release, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  BINARY,
  BUN,
  DENO,
  type Flavour,
  type Reply,
  ROOT,
  type Running,
  SIDECAR_TOOLS,
  type ToolCall,
  callsLogLines,
  cleanupHome,
  createHome,
  fmtMiB,
  fmtMs,
  median,
  pct,
  podUid,
  pool,
  readCalls,
  rssKiB,
  shPod,
  sorted,
  startSidecar,
  table,
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
        binary: { type: "string", default: BINARY },
        build: { type: "boolean", default: false },
        keep: { type: "boolean", default: false },
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
const levels = (flags.levels ?? (quick ? "1,100,1000" : "1,100,1000,5000")).split(",").map((s) => num("levels", s.trim(), 0));
if (levels.length === 0 || levels.some((l, i) => l < 1 || !Number.isInteger(l) || (i > 0 && l <= levels[i - 1]!))) {
  console.error("bench: --levels: increasing positive integers, e.g. 1,100,1000");
  process.exit(2);
}
const opts = {
  interval: num("interval", flags.interval, 5),
  minRate: num("min-rate", flags["min-rate"], 50),
  statusSeconds: num("status-seconds", flags["status-seconds"], quick ? 5 : 8),
  slots: num("slots", flags.slots, 2),
  startupRuns: Math.max(1, num("startup-runs", flags["startup-runs"], quick ? 3 : 5)),
  deno: flags["skip-deno"] !== true,
  binary: flags.binary ?? BINARY,
  maxInFlight: 64,
};
const CREATE_CONCURRENCY = [1, 10, 100];
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
  const why = flags.build ? "--build" : !existsSync(BINARY) ? "missing" : statSync(BINARY).mtimeMs < newestMtime(join(ROOT, "src")) ? "older than src/" : undefined;
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
  p50: number;
  p99: number;
  cachedCalls: number;
  p99Cached?: number;
  condorCalls: number;
  condorPer1000: number;
  byTool: Record<string, number>;
  rssKiB?: number;
}

interface CreateResult {
  concurrency: number;
  count: number;
  fromPods: number;
  toPods: number;
  errors: number;
  wallMs: number;
  perSecond: number;
  p50: number;
  p99: number;
  submitP50?: number;
  /** Latency − the condor_submit duration of the same create (sequential batches only). */
  overheadP50?: number;
  overheadP99?: number;
  /** The same, minus the tool start-up that calls.log does not see. */
  overheadNetP50?: number;
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
  toolPadMs: number,
): Promise<CreateResult> {
  const fromPods = tracked.length;
  const before = callsLogLines(home);
  const start = performance.now();
  const replies = await pool(reqs, concurrency, (r) => sc.client.create(r).catch(replyFailed));
  const wallMs = performance.now() - start;
  const ok = replies.filter((r) => r.status === 200);
  tracked.push(...reqs.filter((_, i) => replies[i]!.status === 200));
  const submits = readCalls(home, before).calls.filter((c) => c.tool === "condor_submit" && c.code === 0);
  const lat = sorted(ok.map((r) => r.ms));
  const res: CreateResult = {
    concurrency,
    count: reqs.length,
    fromPods,
    toPods: fromPods + ok.length,
    errors: replies.length - ok.length,
    wallMs,
    perSecond: (ok.length / wallMs) * 1000,
    p50: pct(lat, 50) ?? Number.NaN,
    p99: pct(lat, 99) ?? Number.NaN,
    submitP50: pct(sorted(submits.map((s) => s.ms)), 50),
  };
  // One client: creates and submits happen one after the other, so the n-th submit is the n-th create's.
  if (concurrency === 1 && submits.length === replies.length && ok.length === replies.length) {
    const over = sorted(replies.map((r, i) => r.ms - submits[i]!.ms));
    res.overheadP50 = pct(over, 50);
    res.overheadP99 = pct(over, 99);
    res.overheadNetP50 = res.overheadP50 === undefined ? undefined : res.overheadP50 - toolPadMs;
  }
  return res;
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
    p50: pct(lat, 50) ?? Number.NaN,
    p99: pct(lat, 99) ?? Number.NaN,
    cachedCalls: cached.length,
    p99Cached: pct(sorted(cached.map((r) => r.ms)), 99),
    condorCalls: calls.length,
    condorPer1000: (calls.length / Math.max(1, replies.length)) * 1000,
    byTool,
    rssKiB: rssKiB(sc.pid),
  };
}

/** How many creates of each concurrency take the store from one level to the next. */
function createPlan(): { to: number; batches: { concurrency: number; count: number }[] }[] {
  const steps = levels.slice(1).map((to, i) => ({ from: levels[i]!, to }));
  return steps.map(({ from, to }, i) => {
    const total = to - from;
    const last = i === steps.length - 1;
    const conc = last ? CREATE_CONCURRENCY.slice(Math.min(i, CREATE_CONCURRENCY.length - 1)) : [CREATE_CONCURRENCY[Math.min(i, CREATE_CONCURRENCY.length - 1)]!];
    const share = Math.floor(total / conc.length);
    return { to, batches: conc.map((c, j) => ({ concurrency: c, count: j === conc.length - 1 ? total - share * (conc.length - 1) : share })) };
  });
}

// --------------------------------------------------------------------------------------- report

interface Report {
  date: string;
  machine: { cpu: string; cores: number; memTotalKiB?: number; kernel: string; loadAverage: string };
  versions: { binary: string; deno?: string; benchDriver: string };
  settings: typeof opts & { levels: number[]; statusCacheSeconds: number; toolStartupMs: number };
  startup: StartupResult[];
  create: CreateResult[];
  status: StatusResult[];
  memory: { flavour: Flavour; idleKiB?: number; maxPods: number; withMaxPodsKiB?: number }[];
  durationSeconds?: number;
  notes: string[];
}

function render(rep: Report): string {
  const out: string[] = [];
  const maxLevel = levels.at(-1)!;
  out.push(`htcondor-sidecar benchmark, ${rep.date}`);
  out.push(`machine: ${rep.machine.cpu}, ${rep.machine.cores} cores, ${fmtMiB(rep.machine.memTotalKiB)} RAM, Linux ${rep.machine.kernel}, load average at start ${rep.machine.loadAverage}`);
  out.push(`runtimes: ${rep.versions.binary}${rep.versions.deno ? `; ${rep.versions.deno}` : ""}; driver bun ${rep.versions.benchDriver}`);
  out.push(
    `setup: minicondor with ${opts.slots} CPU slots (pods run \`sleep 86400\`, the rest stay Idle); default SidecarConfig (StatusCacheSeconds ${STATUS_CACHE_SECONDS}, MaxConcurrentSubmits 8, log level info to a file); condor tool start-up outside calls.log ≈ ${fmtMs(rep.settings.toolStartupMs)}`,
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
        [`resident memory with ${maxLevel} pods tracked`, ...flavours.map((f) => fmtMiB(m(f)?.withMaxPodsKiB)), maxLevel >= 5000 ? "< 80 MiB (5000 pods)" : "< 80 MiB at 5000 pods"],
      ],
    ),
  );
  out.push("");

  out.push(
    `/status as interLink polls it: one pod per call, every pod every ${opts.interval} s (at least ${opts.minRate} calls/s), open loop for ${opts.statusSeconds} s per row`,
  );
  out.push(
    table(
      ["pods", "runtime", "restart→ping", "calls/s", "calls", "p50", "p99", "p99 cached", "condor procs/1000 calls", "errors", "RSS"],
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
      ]),
    ),
  );
  out.push("targets: with 1000 pods ≤ 5 condor processes per 1000 calls and p99 < 5 ms for calls served from the cache");
  out.push("(p99 cached: calls that overlapped no condor_q/condor_history run, their count in brackets)");
  out.push("");

  out.push("/create (one condor_submit each; creates of each row take the store from the first to the second pod count)");
  out.push(
    table(
      ["clients", "creates", "pods", "creates/s", "p50", "p99", "condor_submit p50", "overhead p50", "overhead p99", "net of tool start-up", "errors"],
      rep.create.map((c) => [
        String(c.concurrency),
        String(c.count),
        `${c.fromPods}→${c.toPods}`,
        c.perSecond.toFixed(1),
        fmtMs(c.p50),
        fmtMs(c.p99),
        fmtMs(c.submitP50),
        fmtMs(c.overheadP50),
        fmtMs(c.overheadP99),
        fmtMs(c.overheadNetP50),
        String(c.errors),
      ]),
    ),
  );
  out.push(
    "target: overhead < 10 ms beyond condor_submit (overhead = create latency − that create's condor_submit duration from calls.log, one client only; net = minus the tool start-up calls.log does not see)",
  );
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
    settings: { ...opts, levels, statusCacheSeconds: STATUS_CACHE_SECONDS, toolStartupMs: 0 },
    startup: [],
    create: [],
    status: [],
    memory: [],
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
  const dir = join(root, "main");
  const runId = Math.floor(Math.random() * 0xffffffff);
  let seq = 0;
  const newPods = (count: number) => Array.from({ length: count }, () => shPod(`bench-${++seq}`, podUid(runId), "sleep 86400"));
  const tracked: ReturnType<typeof shPod>[] = [];

  current = await startSidecar({ flavour: "binary", dir, home, binary: opts.binary });
  say(`binary sidecar up (pid ${current.pid}, port ${current.port})`);
  const first = newPods(levels[0]!);
  const firstBatch = await createBatch(current, home, first, 1, tracked, rep.settings.toolStartupMs);
  if (firstBatch.errors) rep.notes.push(`${firstBatch.errors} of the first ${first.length} creates failed`);
  const plan = createPlan();

  for (let li = 0; li < levels.length; li++) {
    const level = levels[li]!;
    if (li > 0) {
      for (const b of plan[li - 1]!.batches) {
        if (b.count === 0) continue;
        say(`creating ${b.count} pods with ${b.concurrency} concurrent client(s) (${tracked.length} tracked)`);
        const reqs = newPods(b.count);
        const res = await createBatch(current, home, reqs, b.concurrency, tracked, rep.settings.toolStartupMs);
        rep.create.push(res);
        say(`  ${res.perSecond.toFixed(1)} creates/s, p50 ${fmtMs(res.p50)}, ${res.errors} errors`);
        if (res.errors) rep.notes.push(`${res.errors} creates failed with ${b.concurrency} clients (those pods are not polled)`);
      }
    }
    say(`status at ${level} pods on the binary`);
    const sb = await statusRun(current, home, tracked, tracked.length, rep.settings.toolStartupMs);
    rep.status.push(sb);
    say(`  ${sb.calls} calls at ${sb.rate.toFixed(0)}/s, p50 ${fmtMs(sb.p50)}, p99 ${fmtMs(sb.p99)}, ${sb.condorPer1000.toFixed(1)} condor procs/1000, RSS ${fmtMiB(sb.rssKiB)}`);
    if (li === levels.length - 1) rep.memory.find((x) => x.flavour === "binary")!.withMaxPodsKiB = sb.rssKiB;

    // Restarts on the store with `level` pods: Deno (measured the same way), then the binary again.
    await current.stop();
    current = undefined;
    if (opts.deno) {
      const d = await startSidecar({ flavour: "deno", dir, home });
      current = d;
      say(`status at ${level} pods on Deno (restart → ping ${fmtMs(d.startupMs)})`);
      const sd = await statusRun(d, home, tracked, tracked.length, rep.settings.toolStartupMs);
      sd.restartMs = d.startupMs;
      rep.status.push(sd);
      say(`  ${sd.calls} calls at ${sd.rate.toFixed(0)}/s, p50 ${fmtMs(sd.p50)}, p99 ${fmtMs(sd.p99)}, ${sd.condorPer1000.toFixed(1)} condor procs/1000, RSS ${fmtMiB(sd.rssKiB)}`);
      if (li === levels.length - 1) rep.memory.find((x) => x.flavour === "deno")!.withMaxPodsKiB = sd.rssKiB;
      await d.stop();
      current = undefined;
    }
    current = await startSidecar({ flavour: "binary", dir, home, binary: opts.binary });
    sb.restartMs = current.startupMs;
    say(`  binary restarted on ${level} pods: first ping after ${fmtMs(sb.restartMs)}`);
  }
  await current.stop();
  current = undefined;
  rep.durationSeconds = (performance.now() - t0) / 1000;
  if (opts.deno) rep.notes.push("Deno rows: a fresh `deno run -A src/main.deno.ts` on the binary's store; the binary rows come from the long-lived process that created the pods");
  return rep;
}

let exitCode = 0;
try {
  const rep = await run();
  const text = render(rep);
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
