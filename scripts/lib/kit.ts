/**
 * Shared by the benchmarks (scripts/bench.ts and scripts/lib/*-bench.ts): start a sidecar (the compiled binary, the
 * sources on Bun, or the sources on Deno) against a minicondor home, talk to it over keep-alive
 * HTTP as interLink does (GET with JSON bodies), read minicondor's calls.log, and small stats.
 * Everything a run creates lives in one temporary folder; `stop()` and `cleanupHome()` undo it.
 */
import { CONDOR_TOOLS } from "../../src/condor/tools.ts";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { createServer } from "node:net";
import { basename, join } from "node:path";
import { makeCreateRequest } from "../../test/fixtures/pods.ts";
import { BINARY, BUN, CONDOR_BIN, DENO, type Flavour, launchSidecar, ROOT, SHIM, sidecarArgv } from "../../test/helpers/sidecar.ts";
import { cleanup, createHome, type HomeOptions, toolPath } from "../../test/minicondor/src/testkit.ts";

// The tests' launcher and its paths (test/helpers/sidecar.ts): one way to start a sidecar for both.
export { BINARY, BUN, CONDOR_BIN, DENO, type Flavour, ROOT, SHIM, sidecarArgv };

export type Json = ReturnType<typeof makeCreateRequest>;

// ------------------------------------------------------------------------------------------ HTTP

export interface Reply {
  status: number;
  body: string;
  /** Wall time of the request, milliseconds. */
  ms: number;
  /** Date.now() when the request was sent and when the answer was complete. */
  start: number;
  end: number;
}

/** A request that failed before any answer, as a reply with status 0. */
export function replyFailed(err: unknown): Reply {
  return { status: 0, body: err instanceof Error ? err.message : String(err), ms: Number.NaN, start: Date.now(), end: Date.now() };
}

/** Up to 3 distinct failures among the replies (HTTP status and the start of the body). */
export function errorSamples(replies: readonly Reply[]): string[] {
  const seen = new Set<string>();
  for (const r of replies) if (r.status !== 200 && seen.size < 3) seen.add(`${r.status}: ${r.body.slice(0, 160)}`);
  return [...seen];
}

/** A keep-alive client for one sidecar (interLink keeps a connection pool too). */
export class Client {
  readonly agent: Agent;
  constructor(
    readonly port: number,
    maxSockets = 64,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets });
  }

  call(method: string, path: string, body?: unknown, timeoutMs = 60_000): Promise<Reply> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const start = Date.now();
    const t0 = performance.now();
    return new Promise((res, rej) => {
      const req = request(
        {
          host: "127.0.0.1",
          port: this.port,
          method,
          path,
          agent: this.agent,
          headers: {
            "content-type": "application/json",
            "InterLink-Http-Session": `Bench#${Math.floor(Math.random() * 1e6)}`,
            ...(payload !== undefined ? { "content-length": Buffer.byteLength(payload) } : {}),
          },
          timeout: timeoutMs,
        },
        (r) => {
          const chunks: Buffer[] = [];
          r.on("data", (c: Buffer) => chunks.push(c));
          r.on(
            "end",
            () => res({ status: r.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), ms: performance.now() - t0, start, end: Date.now() }),
          );
          r.on("error", rej);
        },
      );
      req.on("error", rej);
      req.on("timeout", () => req.destroy(new Error(`${method} ${path} timed out after ${timeoutMs} ms`)));
      req.end(payload);
    });
  }

  /** GET /status with one pod (the whole v1.Pod, as interLink sends it). */
  status(pod: unknown): Promise<Reply> {
    return this.call("GET", "/status", [pod]);
  }
  ping(): Promise<Reply> {
    return this.call("GET", "/status", []);
  }
  create(req: Json): Promise<Reply> {
    return this.call("POST", "/create", req);
  }
  remove(pod: Json): Promise<Reply> {
    return this.call("POST", "/delete", pod);
  }
  close(): void {
    this.agent.destroy();
  }
}

/** A TCP port free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => res(port));
    });
  });
}

// ------------------------------------------------------------------------------------- sidecar

export interface SidecarSpec {
  flavour: Flavour;
  /** Folder of SidecarConfig.yaml, data/ and sidecar.log (may be reused across restarts). */
  dir: string;
  home: string;
  /** Extra SidecarConfig.yaml lines. */
  config?: string[];
  args?: string[];
  binary?: string;
  /** Folder of the condor tools (default: minicondor's bin/; see timedSubmitBin). */
  condorBin?: string;
  /** Give up waiting for the first successful ping after this long. */
  startTimeoutMs?: number;
  /** More environment for the sidecar (e.g. the OTEL_* variables of docs/tracing.md). */
  env?: Record<string, string>;
}

export interface Running {
  pid: number;
  port: number;
  flavour: Flavour;
  client: Client;
  logPath: string;
  /** Spawn → first ping answered 200, milliseconds. */
  startupMs: number;
  exited: Promise<number | null>;
  alive(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

/** Writes SidecarConfig.yaml in `dir` (DataRootFolder ./data, the apptainer shim, extra lines). */
export function writeSidecarConfig(dir: string, extra: string[] = []): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "SidecarConfig.yaml");
  writeFileSync(path, ["DataRootFolder: ./data", `ContainerRuntime: ${SHIM}`, ...extra, ""].join("\n"));
  return path;
}

/**
 * Starts a sidecar on a free port and times it to the first ping answered 200 (launchSidecar of
 * test/helpers/sidecar.ts, with the port chosen here), its output appended to `dir`/sidecar.log.
 */
export async function startSidecar(spec: SidecarSpec): Promise<Running> {
  const port = await freePort();
  const logPath = join(spec.dir, "sidecar.log");
  const env: Record<string, string> = {};
  if (process.env.DENO_DIR) env.DENO_DIR = process.env.DENO_DIR;
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  const sc = await launchSidecar({
    flavour: spec.flavour,
    binary: spec.binary,
    config: writeSidecarConfig(spec.dir, spec.config),
    home: spec.home,
    condorBin: spec.condorBin,
    args: spec.args,
    env: { ...env, ...spec.env },
    cwd: ROOT,
    port,
    logPath,
    startTimeoutMs: spec.startTimeoutMs ?? 60_000,
  });
  const { proc } = sc;
  const client = new Client(port);
  return {
    pid: proc.pid,
    port,
    flavour: spec.flavour,
    client,
    logPath,
    startupMs: sc.startupMs,
    exited: proc.exited.then(() => proc.exitCode),
    alive: () => proc.exitCode === null && proc.signalCode === null,
    async stop(graceMs = 15_000) {
      client.close();
      await sc.stop(graceMs);
      return proc.exitCode;
    },
  };
}

/**
 * CPU time of a process's main thread and its time waiting for a CPU while runnable, ms
 * (/proc/<pid>/task/<pid>/schedstat): a slow answer with a long wait was not the sidecar's doing.
 */
export function schedStat(pid: number): { runMs: number; waitMs: number } | undefined {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ").map(Number);
    return run === undefined || wait === undefined ? undefined : { runMs: run / 1e6, waitMs: wait / 1e6 };
  } catch {
    return undefined;
  }
}

/** `ran 1.2 s, waited 0.3 s for a CPU` (schedStat differences). */
export function cpuWait(r: { runMs?: number; waitMs?: number }): string {
  return r.runMs === undefined || r.waitMs === undefined ? "CPU time unknown" : `ran ${fmtMs(r.runMs)}, waited ${fmtMs(r.waitMs)} for a CPU`;
}

/** Resident memory of a process, KiB (`VmRSS` of /proc/<pid>/status). */
export function rssKiB(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------- minicondor

export { cleanup as cleanupHome, createHome, type HomeOptions };

export interface ToolCall {
  /** Date.now() at the end of the call (calls.log writes the line when the tool exits). */
  end: number;
  tool: string;
  argv: string[];
  /** Duration measured inside the tool (excludes bash and Bun start-up). */
  ms: number;
  code: number;
}

/** The tools the sidecar runs (condor_chirp lines come from jobs, not from the sidecar). */
export const SIDECAR_TOOLS: ReadonlySet<string> = new Set(CONDOR_TOOLS);

/** Parses calls.log from line `from` on. Returns the records and the number of lines read. */
export function readCalls(home: string, from = 0): { calls: ToolCall[]; lines: number } {
  const path = join(home, "calls.log");
  if (!existsSync(path)) return { calls: [], lines: 0 };
  const all = readFileSync(path, "utf8").split("\n");
  if (all.at(-1) === "") all.pop();
  const calls: ToolCall[] = [];
  for (const line of all.slice(from)) {
    // `ISO-time tool JSON-argv duration-ms exit-code`; the argv may contain spaces.
    const m = /^(\S+) (\S+) (.*) (\d+) (-?\d+)$/.exec(line);
    if (!m) continue;
    let argv: string[] = [];
    try {
      argv = JSON.parse(m[3]!) as string[];
    } catch {
      /* keep it empty */
    }
    calls.push({ end: Date.parse(m[1]!), tool: m[2]!, argv, ms: Number(m[4]), code: Number(m[5]) });
  }
  return { calls, lines: all.length };
}

export function callsLogLines(home: string): number {
  return readCalls(home).lines;
}

/** One job of a sidecar, as condor_q -allusers or condor_history reports it. */
export interface CondorJob {
  id: string;
  uid: string;
  /** JobStatus: 1 idle, 2 running, 3 removed, 4 completed, 5 held, 6 transferring, 7 suspended. */
  status: number;
  inQueue: boolean;
}

/**
 * Every job with an InterLinkPodUID in the queue (`condor_q -allusers`) and then in the history
 * (`condor_history`). A job that leaves the queue between the two calls is in both answers: jobs
 * are told apart by their id, and its history entry (the later one) is kept.
 */
export async function condorJobs(home: string): Promise<CondorJob[]> {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", MINICONDOR_HOME: home, MINICONDOR_ALLOW_ROOT: "1" };
  const run = async (tool: string, args: string[]) => {
    const p = Bun.spawn([toolPath(tool), ...args], { env, stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    if (code !== 0) throw new Error(`${tool} ${args.join(" ")} exited ${code}: ${err.trim().split("\n")[0]}`);
    return out;
  };
  const af = ["-af", "ClusterId", "ProcId", "InterLinkPodUID", "JobStatus"];
  const q = await run("condor_q", ["-allusers", ...af]);
  const h = await run("condor_history", af);
  const jobs = new Map<string, CondorJob>();
  for (const [text, inQueue] of [[q, true], [h, false]] as const) {
    for (const line of text.split("\n")) {
      const [cluster, proc, uid, status] = line.trim().split(/\s+/);
      if (cluster && proc && uid && uid !== "undefined") jobs.set(`${cluster}.${proc}`, { id: `${cluster}.${proc}`, uid, status: Number(status), inQueue });
    }
  }
  return [...jobs.values()];
}

/**
 * Wall time of a condor tool call beyond what calls.log records (bash + Bun start-up before
 * minicondor starts its clock, and exit after): the median over `runs` condor_version calls.
 */
export async function toolStartupMs(home: string, runs = 7): Promise<number> {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", MINICONDOR_HOME: home, MINICONDOR_ALLOW_ROOT: "1" };
  const extra: number[] = [];
  for (let i = 0; i < runs; i++) {
    const before = callsLogLines(home);
    const t0 = performance.now();
    const p = Bun.spawn([toolPath("condor_version")], { env, stdout: "ignore", stderr: "ignore" });
    await p.exited;
    const wall = performance.now() - t0;
    const rec = readCalls(home, before).calls.find((c) => c.tool === "condor_version");
    if (rec) extra.push(wall - rec.ms);
  }
  return median(extra) ?? 0;
}

/** A condor_submit run as the timing wrapper saw it (see timedSubmitBin). */
export interface SubmitTime {
  /** The folder it ran in: the sidecar runs condor_submit in the pod's folder, `<DataRootFolder>/pods/<uid>`. */
  cwd: string;
  /** Wall time of the tool, start-up included (minicondor's Bun start-up stands for condor_submit's own). */
  ms: number;
  code: number;
}

const shQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** /usr/bin/nice or wherever PATH has it (undefined: not installed). */
export const NICE = Bun.which("nice") ?? undefined;

/**
 * The command that starts a minicondor tool at `niceness`: the schedd a tool starts and the jobs
 * that schedd runs inherit it. On a site the jobs run on worker nodes and the schedd is one C++
 * daemon; on the emulator every tool call, every job and every condor_chirp of a job is a Bun
 * process on the sidecar's own cores, and at the same priority they starve it (docs/performance.md#the-emulator-runs-niced).
 */
function niced(niceness: number): string {
  return niceness > 0 && NICE ? `${shQuote(NICE)} -n ${niceness} ` : "";
}

/** A folder of minicondor's tools, each started at `niceness` (0: minicondor's own bin/). */
export function emulatorBin(parent: string, niceness: number): string {
  if (niceness <= 0 || !NICE) return CONDOR_BIN;
  const bin = join(parent, `condor-bin-nice${niceness}`);
  if (existsSync(bin)) return bin;
  mkdirSync(bin, { recursive: true });
  for (const tool of readdirSync(CONDOR_BIN)) {
    writeFileSync(join(bin, tool), `#!/bin/bash\nexec ${niced(niceness)}${shQuote(join(CONDOR_BIN, tool))} "$@"\n`, { mode: 0o755 });
  }
  return bin;
}

/**
 * A folder of condor tools that are minicondor's, except condor_submit: it runs the same Bun
 * command as minicondor's launcher (one bash and one Bun process, as before), timed with bash's
 * $EPOCHREALTIME, and appends `start end code cwd` to $MINICONDOR_HOME/submits.log. calls.log
 * cannot tell which pod a submit was for (its argv is `-terse job.sub`); the folder can, so each
 * create is matched to its own condor_submit even with 100 creates in flight.
 */
export function timedSubmitBin(parent: string, niceness = 0): string {
  const bin = join(parent, "timed-condor-bin");
  mkdirSync(bin, { recursive: true });
  const others = emulatorBin(parent, niceness);
  for (const tool of readdirSync(CONDOR_BIN)) {
    if (tool !== "condor_submit") symlinkSync(join(others, tool), join(bin, tool));
  }
  const bun = join(ROOT, "node_modules", ".bin", "bun");
  const main = join(ROOT, "test", "minicondor", "src", "main.ts");
  writeFileSync(
    join(bin, "condor_submit"),
    [
      "#!/bin/bash",
      "# bench: minicondor's condor_submit, timed, with the folder it ran in (scripts/lib/kit.ts timedSubmitBin).",
      "t0=$EPOCHREALTIME",
      `bun=${shQuote(bun)}`,
      `${niced(niceness)}"\${MINICONDOR_BUN:-$bun}" ${shQuote(main)} condor_submit "$@"`,
      "rc=$?",
      'printf \'%s %s %s %s\\n\' "$t0" "$EPOCHREALTIME" "$rc" "$PWD" >>"$MINICONDOR_HOME/submits.log"',
      "exit $rc",
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  return bin;
}

/** Parses submits.log from line `from` on. */
export function readSubmitTimes(home: string, from = 0): { times: SubmitTime[]; lines: number } {
  const path = join(home, "submits.log");
  if (!existsSync(path)) return { times: [], lines: 0 };
  const all = readFileSync(path, "utf8").split("\n");
  if (all.at(-1) === "") all.pop();
  const times: SubmitTime[] = [];
  // $EPOCHREALTIME uses the locale's decimal separator.
  const secs = (s: string) => Number(s.replace(",", "."));
  for (const line of all.slice(from)) {
    const m = /^(\S+) (\S+) (-?\d+) (.*)$/.exec(line);
    if (m) times.push({ ms: (secs(m[2]!) - secs(m[1]!)) * 1000, code: Number(m[3]), cwd: m[4]! });
  }
  return { times, lines: all.length };
}

/** The pod UID a condor_submit ran for (the last component of its folder). */
export function submitUid(t: SubmitTime): string {
  return basename(t.cwd);
}

/**
 * Wall time of the timed condor_submit beyond what its own clock saw (bash start-up and exit,
 * the fork and exec): the median over `runs` calls that fail at once (no submit file).
 */
export async function timedSubmitPadMs(bin: string, home: string, runs = 7): Promise<number> {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", MINICONDOR_HOME: home, MINICONDOR_ALLOW_ROOT: "1" };
  const pads: number[] = [];
  for (let i = 0; i < runs; i++) {
    const before = readSubmitTimes(home).lines;
    const t0 = performance.now();
    const p = Bun.spawn([join(bin, "condor_submit")], { cwd: home, env, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    await p.exited;
    const wall = performance.now() - t0;
    const rec = readSubmitTimes(home, before).times[0];
    if (rec) pads.push(wall - rec.ms);
  }
  return median(pads) ?? 0;
}

// --------------------------------------------------------------------------------------- pods

let counter = 0;
/** A fresh RFC 4122-shaped UID, unique within this process (the prefix tells runs apart). */
export function podUid(prefix: number): string {
  counter++;
  const p = (prefix >>> 0).toString(16).padStart(8, "0").slice(-8);
  return `${p}-0000-4000-8000-${counter.toString(16).padStart(12, "0")}`;
}

/** A one-container create request that runs `sh -c script`. */
export function shPod(name: string, uid: string, script: string, namespace = "bench"): Json {
  return makeCreateRequest({
    metadata: { name, namespace, uid },
    spec: { containers: [{ name: "main", image: "busybox:1.36", command: ["sh", "-c", script], resources: {} }] },
  });
}

// -------------------------------------------------------------------------------------- stats

export function sorted(xs: readonly number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

/** Nearest-rank percentile of an ascending array (undefined when empty). */
export function pct(asc: readonly number[], p: number): number | undefined {
  if (asc.length === 0) return undefined;
  const i = Math.min(asc.length - 1, Math.max(0, Math.ceil((p / 100) * asc.length) - 1));
  return asc[i];
}

export function median(xs: readonly number[]): number | undefined {
  return pct(sorted(xs), 50);
}

export function mean(xs: readonly number[]): number | undefined {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : undefined;
}

/** Runs `fn` over `items` with at most `concurrency` in flight; results in input order. */
export async function pool<T, R>(items: readonly T[], concurrency: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}

/** `1.23 ms`, `456 ms`, `2.1 s`; `–` when undefined. */
export function fmtMs(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(0)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

export function fmtMiB(kib: number | undefined): string {
  return kib === undefined ? "–" : `${(kib / 1024).toFixed(1)} MiB`;
}

/** A plain-text table with left-aligned first column and right-aligned numbers. */
export function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}
