/**
 * `npm run bench`: measures the compiled sidecar (dist/htcondor-sidecar, built if missing) on
 * minicondor, and the same sources on Deno for comparison. Prints numbers; never asserts.
 *
 *   bun scripts/bench.ts [--quick] [--json] [--skip-deno] [--emulator-nice 10] [--binary PATH]
 *                        [--build] [--keep] [--out PATH] [--only NAME,…] [--skip NAME,…]
 *     sidecar:   [--levels 1,100,1000,5000] [--interval 5] [--min-rate 50] [--status-seconds 8]
 *                [--slots 2] [--startup-runs 5] [--creates 300] [--fill-clients 10]
 *     eventlog:  [--followed 10000] [--big-followed 0] [--big-rate 2000] [--follow-seconds 300] [--reconcile-minutes 5]
 *     burst:     [--burst 2000]
 *     operator:  [--operator-scale 1]
 *     operator-spool: [--operator-spool-scale 1]
 *     schedds:   [--schedds-creates 2000] [--schedds-pods 10000]
 *     load:      [--load-pods 200] [--load-interval 5] [--load-duration 120] [--load-ping-interval 30]
 *                [--load-max-sleep 20] [--load-delete-running 10] [--load-concurrency N] [--load-slots N]
 *
 * dist/htcondor-sidecar is built first when it is missing or older than src/ (--build: always).
 * --quick (smaller sizes and shorter runs everywhere) only checks that the script works: its
 * numbers are not the benchmark's.
 *
 * The benchmarks, in the order they run (BENCHES below; each a scripts/lib/*-bench.ts module
 * whose header says what it measures and how):
 *   sidecar    start-up and memory, /status as interLink polls it at a ramp of tracked pods, and
 *              /create with 1, 10 and 100 clients, on the binary and on Deno (sidecar-bench.ts,
 *              with startup-bench.ts, status-bench.ts and create-bench.ts);
 *   batch      many pods per condor process (batch-bench.ts);
 *   eventlog   status from the job event log with many followed jobs (eventlog-bench.ts);
 *   burst      100 and `--burst` creates at once: condor_submit counted, and how many ran side by
 *              side (burst-bench.ts);
 *   operator   the HTCJob operator on a kube-apiserver of its own (operator-bench.ts);
 *   operator-spool  the same on a spooled schedd: ads read in a quiet minute, a proc's end to
 *              status.succeeded (operator-bench.ts);
 *   schedds    several schedds: `--schedds-creates` creates at once over 1, 2 and 3 schedds, /status
 *              of `--schedds-pods` pods over 3, and creates while a schedd stops (schedds-bench.ts);
 *   load       interLink's load on one sidecar, from `--load-pods` creates at once to their
 *              deletes, with the checks of every answer as rows that must hold (load-bench.ts).
 * `--only eventlog` runs only the named ones, `--skip operator` all but those (`--only-eventlog`,
 * `--only-burst` and `--skip-operator` say the same).
 *
 * minicondor's tools, and the schedd and jobs they start, run at `--emulator-nice` (default 10, 0:
 * not niced): on a site the jobs run on worker nodes, while here every tool call, job and
 * condor_chirp is a Bun process on the sidecar's own cores (docs/performance.md#the-emulator-runs-niced).
 *
 * With `--json` the JSON goes to stdout and the table to stderr; progress is always on stderr.
 * The table is also written, with when and how it was measured, to docs/benchmark-results.md
 * (docs/performance.md explains it), or to `--out PATH`. A `--quick` run, or one with `--only`,
 * writes no file unless `--out` names one, so that its numbers never replace a full run's;
 * `--out -` writes none.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { batchBench } from "./lib/batch-bench.ts";
import { burstBench } from "./lib/burst-bench.ts";
import {
  type Bench,
  type BenchJob,
  type BenchRun,
  BenchUsageError,
  ensureBinary,
  type FlagSpec,
  headerLines,
  machine,
  parseNumber,
  resultsMarkdown,
  usageError,
  versions,
} from "./lib/bench-kit.ts";
import { eventLogBench } from "./lib/eventlog-bench.ts";
import { BINARY, ROOT } from "./lib/kit.ts";
import { loadBench } from "./lib/load-bench.ts";
import { operatorBench, operatorSpoolBench } from "./lib/operator-bench.ts";
import { scheddsBench } from "./lib/schedds-bench.ts";
import { sidecarBench } from "./lib/sidecar-bench.ts";
import { spoolBench } from "./lib/spool-bench.ts";

/** The benchmarks, in the order they run. A new one is a scripts/lib/*-bench.ts module exporting a Bench (bench-kit.ts), and a line here. */
const BENCHES: readonly Bench[] = [sidecarBench, batchBench, eventLogBench, spoolBench, burstBench, operatorBench, operatorSpoolBench, scheddsBench, loadBench];

const DRIVER_FLAGS: Record<string, FlagSpec> = {
  quick: { type: "boolean", default: false },
  json: { type: "boolean", default: false },
  "skip-deno": { type: "boolean", default: false },
  "emulator-nice": { type: "string", default: "10" },
  binary: { type: "string", default: BINARY },
  build: { type: "boolean", default: false },
  keep: { type: "boolean", default: false },
  out: { type: "string" },
  only: { type: "string" },
  skip: { type: "string" },
  "only-eventlog": { type: "boolean", default: false },
  "only-burst": { type: "boolean", default: false },
  "skip-operator": { type: "boolean", default: false },
};

type Flags = Record<string, string | boolean | undefined>;

function parseFlags(): Flags {
  const options = Object.assign({}, DRIVER_FLAGS, ...BENCHES.map((b) => b.flags ?? {}));
  return parseArgs({ args: process.argv.slice(2), options: { ...options, help: { type: "boolean", short: "h", default: false } }, strict: true })
    .values as Flags;
}

/** The benchmarks --only and --skip leave. */
function selected(flags: Flags): Bench[] {
  const names = (v: unknown, aliases: Record<string, string>) => [
    ...(typeof v === "string" ? v.split(",").map((s) => s.trim()) : []),
    ...Object.entries(aliases).filter(([flag]) => flags[flag] === true).map(([, name]) => name),
  ];
  const only = names(flags.only, { "only-eventlog": "eventlog", "only-burst": "burst" });
  const skip = names(flags.skip, { "skip-operator": "operator" });
  for (const n of [...only, ...skip]) {
    if (!BENCHES.some((b) => b.name === n)) usageError(`no benchmark "${n}" (known: ${BENCHES.map((b) => b.name).join(", ")})`);
  }
  return BENCHES.filter((b) => (only.length === 0 || only.includes(b.name)) && !skip.includes(b.name));
}

const t0 = performance.now();
const say = (msg: string) => process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}\n`);
let root: string | undefined;
const deferred: (() => Promise<void> | void)[] = [];
let keep = false;
let cleaned = false;

async function cleanupAll(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  for (const fn of deferred.reverse()) await fn();
  if (root === undefined) return;
  if (keep) say(`kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    say(`${sig}: cleaning up`);
    void cleanupAll().finally(() => process.exit(130));
  });
}

async function main(): Promise<void> {
  const flags = parseFlags();
  if (flags.help) {
    console.log(readFileSync(import.meta.path, "utf8").split("*/")[0]!.replace(/^\/\*\*\n?/, "").replace(/^ \* ?/gm, ""));
    return;
  }
  keep = flags.keep === true;
  const quick = flags.quick === true;
  const benches = selected(flags);
  root = mkdtempSync(join(tmpdir(), "sidecar-bench-"));
  const results: Record<string, unknown> = {};
  const run: BenchRun = {
    root,
    binary: String(flags.binary ?? BINARY),
    quick,
    emulatorNice: Math.min(19, Math.floor(parseNumber("emulator-nice", flags["emulator-nice"] as string | undefined, 10))),
    deno: flags["skip-deno"] !== true,
    say,
    flag: (name) => flags[name],
    number: (name, dflt) => parseNumber(name, typeof flags[name] === "string" ? (flags[name] as string) : undefined, dflt),
    results,
    notes: [],
    defer: (fn) => void deferred.push(fn),
  };
  // Where the report is written (undefined: nowhere); a quick or partial run never replaces a full one's.
  const full = !quick && benches.length === BENCHES.length;
  const outFile = flags.out === "-"
    ? undefined
    : typeof flags.out === "string"
    ? resolve(flags.out)
    : full
    ? join(ROOT, "docs", "benchmark-results.md")
    : undefined;

  // Every benchmark reads its flags before the first runs: a bad value stops the run at once.
  const jobs: [string, BenchJob][] = benches.map((b) => [b.name, b.setup(run)]);
  ensureBinary(run.binary, flags.build === true, say);
  const date = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const m = machine();
  const v = versions(run.binary, run.deno);
  for (const [name, job] of jobs) results[name] = await job.run();
  const durationSeconds = (performance.now() - t0) / 1000;
  const text = [
    ...headerLines(date, m, v),
    ...jobs.flatMap(([, job]) => job.lines()),
    ...run.notes.map((n) => `note: ${n}`),
    `bench took ${durationSeconds.toFixed(0)} s`,
  ].join("\n");
  if (outFile) {
    const args = process.argv.slice(2).filter((a, i, all) => a !== "--out" && all[i - 1] !== "--out" && !a.startsWith("--out="));
    writeFileSync(outFile, resultsMarkdown({ date, durationSeconds, machine: m, quick, args }, text));
    say(`report written to ${relative(process.cwd(), outFile).startsWith("..") ? outFile : relative(process.cwd(), outFile)}`);
  }
  if (flags.json) {
    process.stderr.write(`${text}\n`);
    const report = { date, machine: m, versions: v, settings: flags, ...results, durationSeconds, notes: run.notes };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    process.stdout.write(`${text}\n`);
  }
}

let exitCode = 0;
try {
  await main();
} catch (err) {
  // parseArgs's own errors (an unknown flag, a missing value) are usage errors too.
  const usage = err instanceof BenchUsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
  console.error(
    usage ? `bench: ${(err as Error).message} (--help lists the flags)` : `bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
  );
  exitCode = usage ? 2 : 1;
} finally {
  await cleanupAll();
}
process.exit(exitCode);
