/**
 * The sidecar's own rows (docs/performance.md#what-is-measured-and-the-targets), on the binary and,
 * unless --skip-deno, the same sources on Deno:
 *
 *  1. start-up: spawn → first successful ping, `--startup-runs` times per runtime on an empty
 *     store, and the resident memory once idle (startup-bench.ts);
 *  2. a ramp of tracked pods (`--levels`, default 1 → 100 → 1000 → 5000). Each pod is one job
 *     running `sleep 86400` on a minicondor machine with `--slots` CPUs, so all but a few stay
 *     Idle and every pod stays tracked. The ramp's creates (`--fill-clients` at a time) are
 *     reported as such, with the store sizes they went through (create-bench.ts);
 *  3. at every level, /status as interLink polls it (status-bench.ts). Then the binary is
 *     stopped, the Deno sidecar is started on the same store and measured the same way, and the
 *     binary is started again: both restarts are timed to the first ping, so the table also shows
 *     start-up with that many pods in the store;
 *     With `--tracing-down`, the binary is then restarted with tracing on and an OTLP endpoint
 *     where nothing listens (docs/tracing.md#when-the-collector-is-down), measured the same way,
 *     and restarted without it;
 *  4. /create on the full store, on the binary and then on Deno: for 1, 10 and 100 concurrent
 *     clients, `--creates` creates, each row from the same store (create-bench.ts).
 */
import { join } from "node:path";
import { type Bench, type BenchRun, type FlagSpec, usageError } from "./bench-kit.ts";
import { compareCreates, createBatch, createLines, type CreateResult, MAX_CONCURRENT_SUBMITS } from "./create-bench.ts";
import {
  cleanupHome,
  createHome,
  type Flavour,
  fmtMiB,
  fmtMs,
  freePort,
  type Json,
  podUid,
  type Running,
  shPod,
  startSidecar,
  timedSubmitBin,
  timedSubmitPadMs,
  toolStartupMs,
} from "./kit.ts";
import { measureStartup, type MemoryResult, startupLines, type StartupResult } from "./startup-bench.ts";
import { statusLines, type StatusPace, type StatusResult, statusRun, statusSummary } from "./status-bench.ts";

/** The default; the bench writes no StatusCacheSeconds. */
const STATUS_CACHE_SECONDS = 2;

const FLAGS: Record<string, FlagSpec> = {
  levels: { type: "string" },
  interval: { type: "string", default: "5" },
  "min-rate": { type: "string", default: "50" },
  "status-seconds": { type: "string" },
  slots: { type: "string", default: "2" },
  "startup-runs": { type: "string" },
  creates: { type: "string" },
  "fill-clients": { type: "string", default: "10" },
  "tracing-down": { type: "boolean", default: false },
};

interface SidecarOptions {
  levels: number[];
  pace: StatusPace;
  slots: number;
  startupRuns: number;
  createsPerRow: number;
  fillClients: number;
  flavours: Flavour[];
  tracingDown: boolean;
}

export interface SidecarResult {
  settings: SidecarOptions & { statusCacheSeconds: number; maxConcurrentSubmits: number; toolStartupMs: number; submitLauncherMs: number };
  startup: StartupResult[];
  /** Every create batch: the ramp ("fill"), the warm-ups and the /create table ("compare"). */
  create: CreateResult[];
  status: StatusResult[];
  memory: MemoryResult[];
}

function options(b: BenchRun): SidecarOptions {
  const text = b.flag("levels");
  const levels = (typeof text === "string" ? text : b.quick ? "1,100" : "1,100,1000,5000").split(",").map((s) => Number(s.trim()));
  if (levels.length === 0 || levels.some((l, i) => !(l >= 1) || !Number.isInteger(l) || (i > 0 && l <= levels[i - 1]!))) {
    usageError("--levels: increasing positive integers, e.g. 1,100,1000");
  }
  return {
    levels,
    pace: { interval: b.number("interval", 5), minRate: b.number("min-rate", 50), seconds: b.number("status-seconds", b.quick ? 3 : 8), maxInFlight: 64 },
    slots: b.number("slots", 2),
    startupRuns: Math.max(1, b.number("startup-runs", b.quick ? 2 : 5)),
    createsPerRow: Math.max(1, Math.floor(b.number("creates", b.quick ? 20 : 300))),
    fillClients: Math.max(1, Math.floor(b.number("fill-clients", 10))),
    flavours: b.deno ? ["binary", "deno"] : ["binary"],
    tracingDown: b.flag("tracing-down") === true,
  };
}

export const sidecarBench: Bench = {
  name: "sidecar",
  flags: FLAGS,
  setup(b) {
    const o = options(b);
    const r: SidecarResult = {
      settings: { ...o, statusCacheSeconds: STATUS_CACHE_SECONDS, maxConcurrentSubmits: MAX_CONCURRENT_SUBMITS, toolStartupMs: 0, submitLauncherMs: 0 },
      startup: [],
      create: [],
      status: [],
      memory: [],
    };
    return {
      async run() {
        await startupRows(b, o, r);
        await rampAndCreates(b, o, r);
        if (b.deno) {
          b.notes.push(
            "Deno rows: a fresh `deno run -A --no-check src/main.deno.ts` on the binary's store; the binary's status rows come from the long-lived process that created the pods, its /create rows from a process restarted on the full store",
          );
        }
        return r;
      },
      lines: () => lines(b, o, r),
    };
  },
};

/** 1. start-up and idle memory, on an empty store and an empty minicondor. */
async function startupRows(b: BenchRun, o: SidecarOptions, r: SidecarResult): Promise<void> {
  const home = createHome({ cpus: o.slots }, b.root);
  b.defer(() => cleanupHome(home));
  r.settings.toolStartupMs = await toolStartupMs(home);
  for (const f of o.flavours) {
    b.say(`start-up of the ${f} sidecar, ${o.startupRuns} runs`);
    const s = await measureStartup(f, b.root, home, o.startupRuns, b.binary);
    r.startup.push(s);
    r.memory.push({ flavour: f, idleKiB: s.rssIdleKiB, maxPods: o.levels.at(-1)! });
    b.say(`  median ${fmtMs(s.medianMs)}, idle RSS ${fmtMiB(s.rssIdleKiB)}`);
  }
}

/** The binary with tracing on and a collector that is down: an OTLP endpoint on a port where nothing listens. */
async function tracingDownRow(
  b: BenchRun,
  o: SidecarOptions,
  r: SidecarResult,
  level: number,
  home: string,
  tracked: Json[],
  start: (f: Flavour, env?: Record<string, string>) => Promise<Running>,
  stop: () => Promise<void>,
): Promise<void> {
  const port = await freePort();
  const sc = await start("binary", { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_SERVICE_NAME: "htcondor-sidecar-bench" });
  b.say(`status at ${level} pods on the binary, tracing on, collector down (port ${port})`);
  const st = await statusRun(sc, home, tracked, tracked.length, r.settings.toolStartupMs, o.pace);
  r.status.push({ ...st, tracingDown: true, restartMs: sc.startupMs });
  b.say(statusSummary(st));
  await stop();
}

/** 2.–4. the ramp (creates on the binary, status at every level on each runtime), then /create on the full store. */
async function rampAndCreates(b: BenchRun, o: SidecarOptions, r: SidecarResult): Promise<void> {
  const home = createHome({ cpus: o.slots }, b.root);
  b.defer(() => cleanupHome(home));
  const condorBin = timedSubmitBin(b.root, b.emulatorNice);
  const padMs = (r.settings.submitLauncherMs = await timedSubmitPadMs(condorBin, home));
  const dir = join(b.root, "main");
  const runId = Math.floor(Math.random() * 0xffffffff);
  let seq = 0;
  const newPods = (count: number) => Array.from({ length: count }, () => shPod(`bench-${++seq}`, podUid(runId), "sleep 86400"));
  const tracked: Json[] = [];
  let current: Running | undefined;
  b.defer(async () => void (await current?.stop(5000).catch(() => undefined)));
  const start = async (
    flavour: Flavour,
    env?: Record<string, string>,
  ) => (current = await startSidecar({ flavour, dir, home, binary: b.binary, condorBin, env }));
  const stop = async () => {
    await current?.stop();
    current = undefined;
  };

  const first = await start("binary");
  b.say(`binary sidecar up (pid ${first.pid}, port ${first.port})`);
  const warm = await createBatch(first, home, newPods(o.levels[0]!), 1, tracked, "warmup", padMs);
  r.create.push(warm);
  if (warm.errors) b.notes.push(`${warm.errors} of the first ${warm.count} creates failed`);

  for (let li = 0; li < o.levels.length; li++) {
    const level = o.levels[li]!;
    const last = li === o.levels.length - 1;
    const missing = level - tracked.length;
    if (li > 0 && missing > 0) {
      b.say(`creating ${missing} pods with ${o.fillClients} concurrent clients (${tracked.length} tracked)`);
      const res = await createBatch(current!, home, newPods(missing), o.fillClients, tracked, "fill", padMs);
      r.create.push(res);
      b.say(`  ${res.perSecond.toFixed(1)} creates/s, p50 ${fmtMs(res.p50)}, overhead p50 ${fmtMs(res.overheadP50)}, ${res.errors} errors`);
      if (res.errors) b.notes.push(`${res.errors} creates failed while filling to ${level} pods (those pods are not polled)`);
    }
    b.say(`status at ${level} pods on the binary`);
    const sb = await statusRun(current!, home, tracked, tracked.length, r.settings.toolStartupMs, o.pace);
    r.status.push(sb);
    b.say(statusSummary(sb));
    if (last) r.memory.find((x) => x.flavour === "binary")!.withMaxPodsKiB = sb.rssKiB;

    // Restarts on the store with `level` pods: Deno (measured the same way), then the binary again.
    await stop();
    if (b.deno) {
      const d = await start("deno");
      b.say(`status at ${level} pods on Deno (restart → ping ${fmtMs(d.startupMs)})`);
      const sd = await statusRun(d, home, tracked, tracked.length, r.settings.toolStartupMs, o.pace);
      sd.restartMs = d.startupMs;
      r.status.push(sd);
      b.say(statusSummary(sd));
      if (last) r.memory.find((x) => x.flavour === "deno")!.withMaxPodsKiB = sd.rssKiB;
      await stop();
    }
    if (o.tracingDown) await tracingDownRow(b, o, r, level, home, tracked, start, stop);
    sb.restartMs = (await start("binary")).startupMs;
    b.say(`  binary restarted on ${level} pods: first ping after ${fmtMs(sb.restartMs)}`);
  }

  // 4. /create with 1, 10 and 100 clients on the full store: the binary, then Deno.
  const deleted = { pods: 0 };
  const compare = { perRow: o.createsPerRow, padMs, say: b.say };
  r.create.push(...(await compareCreates(current!, home, tracked, newPods, compare, deleted)));
  await stop();
  if (b.deno) {
    r.create.push(...(await compareCreates(await start("deno"), home, tracked, newPods, compare, deleted)));
    await stop();
  }
  for (const c of r.create) {
    if (c.kind !== "warmup" && c.deletes?.errors) {
      b.notes.push(`${c.deletes.errors} of ${c.deletes.count} deletes failed after the ${c.flavour} row with ${c.concurrency} clients`);
    }
    if (c.kind === "compare" && c.errors) b.notes.push(`${c.errors} creates failed in the ${c.flavour} row with ${c.concurrency} clients`);
  }
}

function lines(b: BenchRun, o: SidecarOptions, r: SidecarResult): string[] {
  return [
    `setup: minicondor with ${o.slots} CPU slots (pods run \`sleep 86400\`, the rest stay Idle); default SidecarConfig (StatusCacheSeconds ${STATUS_CACHE_SECONDS}, MaxConcurrentSubmits ${MAX_CONCURRENT_SUBMITS}, log level info to a file); condor tool start-up outside calls.log ≈ ${
      fmtMs(r.settings.toolStartupMs)
    }; minicondor's tools, schedd and jobs ${b.emulatorNice > 0 ? `at nice ${b.emulatorNice}` : "not niced"}`,
    "",
    ...startupLines(r.startup, r.memory, o.flavours, o.startupRuns, o.levels.at(-1)!),
    "",
    ...statusLines(r.status, o.pace),
    "",
    ...createLines(r.create, { perRow: o.createsPerRow, fillClients: o.fillClients, submitLauncherMs: r.settings.submitLauncherMs }),
  ];
}
