/**
 * The plumbing of `npm run bench` (scripts/bench.ts): what a benchmark is, what it is given when
 * it runs, the report's header and its results file.
 *
 * A benchmark is a scripts/lib/*-bench.ts module exporting a `Bench`, listed once in
 * scripts/bench.ts's BENCHES. Most are a table of rows against targets, and `rowsBench` makes
 * one of those from a title and a function that measures:
 *
 *   export const fooBench = rowsBench("foo", { "foo-count": { type: "string" } }, (b) => {
 *     const count = b.number("foo-count", b.quick ? 10 : 1000);   // read and checked before anything runs
 *     return { title: `Foo (issue N): ${count} foos`, run: () => fooRows(b, count) };
 *   });
 *
 * It runs on a minicondor home and a sidecar of its own (kit.ts startSidecar, emulatorBin), under
 * `b.root`, and stops what it started before it returns.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { cpus, release } from "node:os";
import { join } from "node:path";
import { BINARY, BUN, DENO, fmtMiB, ROOT, table } from "./kit.ts";

/** A row of a benchmark's table, against its target. */
export interface BenchRow {
  row: string;
  value: string;
  target: string;
  /** Whether the value meets the target (undefined: reported only). */
  met?: boolean;
}

/** A flag of the driver's or of one benchmark (node:util parseArgs's option spec). */
export type FlagSpec = { type: "string"; default?: string } | { type: "boolean"; default?: boolean };

/** What a benchmark is given. */
export interface BenchRun {
  /** A scratch folder, removed at the end (--keep keeps it). */
  root: string;
  /** The executable under test (dist/htcondor-sidecar, or --binary). */
  binary: string;
  /** --quick: small sizes, to check the script; the numbers are not the benchmark's. */
  quick: boolean;
  /** minicondor's tools, schedd and jobs run at this niceness (kit.ts emulatorBin). */
  emulatorNice: number;
  /** Whether the sources are measured on Deno too (not --skip-deno). */
  deno: boolean;
  /** A progress line on stderr. */
  say(msg: string): void;
  /** A flag's value (the driver's, or a benchmark's own), as given or its default. */
  flag(name: string): string | boolean | undefined;
  /** A numeric flag's value, else `dflt`; a value that is not a non-negative number is a usage error. */
  number(name: string, dflt: number): number;
  /** The results of the benchmarks that ran before this one, by name. */
  results: Readonly<Record<string, unknown>>;
  /** Lines printed at the end of the report. */
  notes: string[];
  /** Runs at the end, and on SIGINT or SIGTERM: stop what is still running. */
  defer(fn: () => Promise<void> | void): void;
}

/** A benchmark, set up: its flags were read and checked. */
export interface BenchJob {
  /** Measures; what it resolves to is this benchmark's part of the JSON report. */
  run(): Promise<unknown>;
  /** Its part of the text report, once it has run. */
  lines(): string[];
}

export interface Bench {
  /** Its key in the JSON report, and what --only and --skip name it by. */
  name: string;
  /** Flags of its own, beside the driver's. */
  flags?: Record<string, FlagSpec>;
  /** Reads its flags (a bad value: exit 2). Called for every benchmark that will run, before the first runs. */
  setup(b: BenchRun): BenchJob;
}

/** A benchmark whose results are one table of rows under a title. */
export function rowsBench(
  name: string,
  flags: Record<string, FlagSpec> | undefined,
  setup: (b: BenchRun) => { title: string; run: () => Promise<BenchRow[]> },
): Bench {
  return {
    name,
    flags,
    setup(b) {
      const s = setup(b);
      let rows: BenchRow[] = [];
      return {
        run: async () => (rows = await s.run()),
        lines: () => (rows.length === 0 ? [] : ["", s.title, rowsTable(rows)]),
      };
    },
  };
}

export function rowsTable(rows: readonly BenchRow[]): string {
  return table(["row", "value", "target", "met"], rows.map((b) => [b.row, b.value, b.target, b.met === undefined ? "–" : b.met ? "yes" : "NO"]));
}

/** A flag the benchmark cannot use: scripts/bench.ts prints it on one line and exits 2. */
export class BenchUsageError extends Error {}

export function usageError(message: string): never {
  throw new BenchUsageError(message);
}

/** A non-negative number from a flag's text, else `dflt` when it was not given. */
export function parseNumber(name: string, v: string | undefined, dflt: number): number {
  const n = v === undefined ? dflt : Number(v);
  if (!Number.isFinite(n) || n < 0) usageError(`--${name}: "${v}" is not a non-negative number`);
  return n;
}

// ----------------------------------------------------------------------------------- the header

export interface Machine {
  cpu: string;
  cores: number;
  memTotalKiB?: number;
  kernel: string;
  loadAverage: string;
}

export function machine(): Machine {
  const memTotal = /^MemTotal:\s+(\d+)/m.exec(readFileSync("/proc/meminfo", "utf8"))?.[1];
  return {
    cpu: cpuModel(),
    cores: cpus().length,
    memTotalKiB: memTotal ? Number(memTotal) : undefined,
    kernel: release(),
    loadAverage: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
  };
}

function cpuModel(): string {
  try {
    return /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? "unknown";
  } catch {
    return cpus()[0]?.model ?? "unknown";
  }
}

export interface Versions {
  binary: string;
  deno?: string;
  benchDriver: string;
}

export function versions(binary: string, deno: boolean): Versions {
  return { binary: commandLine([binary, "--version"]), deno: deno ? commandLine([DENO, "--version"]) : undefined, benchDriver: Bun.version };
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

/** Builds dist/htcondor-sidecar when it is missing, older than the sources, or `build` says so; another --binary must exist. */
export function ensureBinary(binary: string, build: boolean, say: (msg: string) => void): void {
  if (binary !== BINARY) {
    if (!existsSync(binary)) usageError(`--binary ${binary}: no such file`);
    return;
  }
  const why = build ? "--build" : !existsSync(BINARY) ? "missing" : statSync(BINARY).mtimeMs < newestMtime(join(ROOT, "src")) ? "older than src/" : undefined;
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

/** The report's first lines: when, on what, with which runtimes. */
export function headerLines(date: string, m: Machine, v: Versions): string[] {
  return [
    `htcondor-sidecar benchmark, ${date}`,
    `machine: ${m.cpu}, ${m.cores} cores, ${fmtMiB(m.memTotalKiB)} RAM, Linux ${m.kernel}, load average at start ${m.loadAverage}`,
    `runtimes: ${v.binary}${v.deno ? `; ${v.deno}` : ""}; driver bun ${v.benchDriver}`,
  ];
}

/** The results file: the report as printed, and when, where and how it was measured. */
export function resultsMarkdown(o: { date: string; durationSeconds: number; machine: Machine; quick: boolean; args: string[] }, text: string): string {
  return [
    "# Benchmark results",
    "",
    "Written by `npm run bench` (`scripts/bench.ts`) at the end of a run: do not edit it by hand, run the",
    "benchmark again. What is measured, the targets and how to read the numbers:",
    "[performance.md](performance.md).",
    "",
    `- measured: ${o.date}, in ${Math.round(o.durationSeconds)} s`,
    `- command: \`bun scripts/bench.ts${o.args.length ? ` ${o.args.join(" ")}` : ""}\`${
      o.quick ? " (a quick run: it only checks that the script works; its numbers are not the benchmark's)" : ""
    }`,
    `- machine: ${o.machine.cpu}, ${o.machine.cores} cores, load average at start ${o.machine.loadAverage}`,
    "",
    "```text",
    text,
    "```",
    "",
  ].join("\n");
}
