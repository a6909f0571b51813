/**
 * Starts the real sidecar (from the sources, as a separate process) against minicondor and
 * talks to it over real HTTP, as interLink does: GET requests with JSON bodies included.
 *
 * `launchSidecar` is the one launcher of the project: the tests' `startSidecar` and the
 * benchmarks' (scripts/lib/kit.ts) both start the sidecar through it.
 */
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { afterAll, setDefaultTimeout } from "bun:test";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pidsWithEnvEntry } from "../minicondor/src/common.ts";
import { sidecarEntry } from "./bundle.ts";
import { cleanup } from "../minicondor/src/testkit.ts";

export const ROOT = resolve(import.meta.dir, "../..");
export const CONDOR_BIN = join(ROOT, "test", "minicondor", "bin");
export const SHIM = join(ROOT, "test", "minicondor", "shims", "apptainer");
export const BINARY = join(ROOT, "dist", "htcondor-sidecar");
export const BUN = join(ROOT, "node_modules", ".bin", "bun");
export const DENO = join(ROOT, "node_modules", ".bin", "deno");

export interface HttpResult {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

export function http(
  port: number,
  method: string,
  path: string,
  body?: unknown,
  opts: { raw?: string; timeoutMs?: number; session?: string } = {},
): Promise<HttpResult> {
  const payload = opts.raw ?? (body === undefined ? undefined : JSON.stringify(body));
  return new Promise((res, rej) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        headers: {
          "content-type": "application/json",
          "InterLink-Http-Session": opts.session ?? `Test#${Math.floor(Math.random() * 1e6)}`,
          ...(payload !== undefined ? { "content-length": Buffer.byteLength(payload) } : {}),
        },
        timeout: opts.timeoutMs ?? 60_000,
      },
      (r) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => chunks.push(c));
        r.on("end", () => res({ status: r.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), headers: r.headers }));
      },
    );
    req.on("error", rej);
    req.on("timeout", () => req.destroy(new Error(`${method} ${path} timed out`)));
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export interface Sidecar {
  port: number;
  dir: string;
  home: string;
  dataRoot: string;
  log(): string;
  proc: ReturnType<typeof Bun.spawn>;
  call(method: string, path: string, body?: unknown, opts?: { raw?: string; timeoutMs?: number }): Promise<HttpResult>;
  stop(): Promise<number>;
  kill9(): Promise<void>;
  /** Stops the sidecar, kills every minicondor process of this home and removes the folder. */
  destroy(): Promise<void>;
  /** GET /status of one pod (the whole v1.Pod, as interLink sends it): its status, or undefined when the answer leaves it out. */
  // deno-lint-ignore no-explicit-any -- a v1.PodStatus as JSON, read field by field by the tests
  statusOf(pod: unknown): Promise<any>;
  /** Every tool call minicondor logged for this home (calls.log), in order; only `tool`'s when given. */
  calls(tool?: string): ToolCall[];
  /** GET /getLogs of one container of `pod` (a v1.Pod; default "main"), with `opts` as the Opts (default LOG_OPTS, interLink's). */
  logs(pod: unknown, container?: string, opts?: LogOpts, httpOpts?: { timeoutMs?: number }): Promise<HttpResult>;
  /** GET /getLogs read as it streams (followLogs), with LOG_OPTS and `opts` over them (`{ Follow: true }` for a follow). */
  followLogs(pod: unknown, container: string, opts?: LogOpts, on?: Parameters<typeof followLogs>[4]): Promise<StreamedLogs>;
}

/** One line of minicondor's calls.log: "<end ISO time> <tool> <argv as JSON> <ms> <exit code>". */
export interface ToolCall {
  tool: string;
  argv: string[];
  /** When it began and ended (Date.now() scale) and how long it took, milliseconds. */
  start: number;
  end: number;
  ms: number;
  code: number;
}

/** The calls minicondor logged in `home` (none when it has no calls.log yet). */
export function readCalls(home: string, tool?: string): ToolCall[] {
  const log = join(home, "calls.log");
  if (!existsSync(log)) return [];
  return readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => {
    const parts = line.split(" ");
    const end = Date.parse(parts[0]!);
    const ms = Number(parts.at(-2));
    return { tool: parts[1]!, argv: JSON.parse(parts.slice(2, -2).join(" ")) as string[], start: end - ms, end, ms, code: Number(parts.at(-1)) };
  }).filter((c) => tool === undefined || c.tool === tool);
}

export interface SidecarOptions {
  /** Extra SidecarConfig.yaml lines. */
  config?: string;
  args?: string[];
  env?: Record<string, string>;
  /** Reuse a folder (restart tests). */
  dir?: string;
}

/**
 * How long a start may take before the helper gives up on it: START_FACTOR times the median start
 * this test process has measured, and never under START_FLOOR_MS. A start takes many times longer
 * on a busy machine, and longer again right after a kill -9 mid-burst, when the burst's jobs start
 * beside it and it reconciles the interrupted creates: 15 times a plain start on an idle machine,
 * 5 times under `npm run test:loaded`. A constant is too short there, or too long to catch a hang
 * on a quick machine; the median keeps one slow start from stretching every later deadline.
 * Before the first start nothing is measured: the time the same entry takes to print its version
 * (its modules loaded under the load of the moment) stands in.
 */
const START_FLOOR_MS = 20_000;
const START_FACTOR = 50;
const startsMs: number[] = [];
let versionMs: number | undefined;

async function startDeadlineMs(): Promise<number> {
  await measureLoad();
  return Math.max(START_FLOOR_MS, START_FACTOR * unitMs());
}

/** The median start measured here, or before the first start the stand-in (`--version`). */
function unitMs(): number {
  if (startsMs.length === 0) return versionMs ?? 0;
  const sorted = [...startsMs].sort((a, b) => a - b);
  return sorted[(sorted.length - 1) >> 1]!;
}

/**
 * Measures the stand-in for a start when nothing is measured yet: the time the sidecar's entry
 * takes to print its version (its modules loaded under the load of the moment). A file whose test
 * timeouts are scaled awaits it when it loads, before it declares them.
 */
export async function measureLoad(): Promise<void> {
  if (startsMs.length > 0 || versionMs !== undefined) return;
  const t0 = performance.now();
  await Bun.spawn([process.execPath, sidecarEntry(), "--version"], { stdout: "ignore", stderr: "ignore" }).exited;
  versionMs = performance.now() - t0;
}

/**
 * For a file whose tests spawn processes: measures the load (measureLoad) and makes `ms`, scaled by
 * it, the file's default test timeout in place of bun's 5 s. Awaited when the file loads: bun applies
 * a default timeout to the tests declared after it.
 */
export async function scaleDefaultTimeout(ms: number): Promise<void> {
  await measureLoad();
  setDefaultTimeout(scaled(ms));
}

/**
 * `ms` scaled by how much slower than a quick machine this test process finds the sidecar's
 * start: the factor by which the start deadline exceeds its floor, never under 1. A deadline that
 * guards against a hang in work that spawns processes (a job's start, a probe's exec through the
 * runtime, a tool call, a test's own timeout) grows with the load as the start deadline does; on a
 * quick machine it stays `ms`. With nothing measured yet (no start, no measureLoad) it is `ms`.
 */
export function scaled(ms: number): number {
  return Math.round(ms * Math.max(1, (START_FACTOR * unitMs()) / START_FLOOR_MS));
}

/** What runs the sidecar: the compiled executable, or the sources on Bun (bundled: test/helpers/bundle.ts) or on Deno. */
export type Flavour = "binary" | "bun" | "deno";

/** The command that runs the sidecar of `flavour` (`binary`: the executable at that path). */
export function sidecarArgv(flavour: Flavour, binary = BINARY): string[] {
  switch (flavour) {
    case "binary":
      return [binary];
    case "bun":
      return [BUN, sidecarEntry()];
    case "deno":
      return [DENO, "run", "-A", "--no-check", join(ROOT, "src", "main.deno.ts")];
  }
}

/** How to start one sidecar (launchSidecar). */
export interface LaunchSpec {
  /** What runs it (default: the sources on Bun). */
  flavour?: Flavour;
  /** The executable for the flavour "binary" (default dist/htcondor-sidecar). */
  binary?: string;
  /** Path of its SidecarConfig.yaml, already written. */
  config: string;
  /** The minicondor home its tools use (MINICONDOR_HOME). */
  home: string;
  /** Folder of the condor tools (default: minicondor's bin/). */
  condorBin?: string;
  /** More flags, after --config, --condor-bin and --port. */
  args?: string[];
  /** More environment, beside PATH, HOME, MINICONDOR_HOME and MINICONDOR_ALLOW_ROOT. */
  env?: Record<string, string>;
  cwd?: string;
  /**
   * The port to listen on, chosen by the caller: the launcher then pings it (GET /status with no
   * pod) until it answers 200, and the start is timed to that answer (the benchmarks' start-up).
   * Without it the sidecar listens on port 0 and the launcher reads the port from its "listening"
   * log line (the tests).
   */
  port?: number;
  /** A file its stdout and stderr are appended to (the benchmarks); without it its stderr is gathered in memory. */
  logPath?: string;
  /** Give up after this long (default: START_FACTOR times the median start measured in this process, see startDeadlineMs). */
  startTimeoutMs?: number;
}

/** A sidecar process that launchSidecar started. */
export interface Launched {
  proc: Bun.Subprocess;
  port: number;
  /** Spawn → its "listening" line, or → the first ping answered 200 when the port was given; milliseconds. */
  startupMs: number;
  /** What it logged since this start. */
  log(): string;
  /** SIGTERM, and SIGKILL after `graceMs` when given; resolves with what `proc.exited` resolves to. */
  stop(graceMs?: number): Promise<number>;
  kill9(): Promise<void>;
}

/** A sidecar's output written to a file from `from` on: its log, and the two ways to end it. */
function fileLog(proc: Bun.Subprocess, path: string, from: number): ReturnType<typeof gatherStderr> {
  return {
    log: () => (existsSync(path) ? readFileSync(path).subarray(from).toString("utf8") : ""),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      return await proc.exited;
    },
    async kill9() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

/**
 * The one way the tests and the benchmarks (scripts/lib/kit.ts) start a sidecar: spawns it with
 * --config, --condor-bin and --port, waits until it listens (or answers a ping, when the port was
 * chosen), and records the start for startDeadlineMs and scaled(). A start that fails or takes
 * longer than its deadline is killed, and the error carries the end of its log.
 */
export async function launchSidecar(spec: LaunchSpec): Promise<Launched> {
  const flavour = spec.flavour ?? "bun";
  const allowMs = spec.startTimeoutMs ?? await startDeadlineMs();
  const argv = [
    ...sidecarArgv(flavour, spec.binary),
    "--config",
    spec.config,
    "--condor-bin",
    spec.condorBin ?? CONDOR_BIN,
    "--port",
    String(spec.port ?? 0),
    ...(spec.args ?? []),
  ];
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/root",
    MINICONDOR_HOME: spec.home,
    MINICONDOR_ALLOW_ROOT: "1",
    ...spec.env,
  };
  const t0 = performance.now();
  let proc: Bun.Subprocess;
  let out: ReturnType<typeof gatherStderr>;
  if (spec.logPath !== undefined) {
    const fd = openSync(spec.logPath, "a");
    const from = statSync(spec.logPath).size;
    proc = Bun.spawn(argv, { cwd: spec.cwd, env, stdin: "ignore", stdout: fd, stderr: fd });
    closeSync(fd);
    out = fileLog(proc, spec.logPath, from);
  } else {
    const piped = Bun.spawn(argv, { cwd: spec.cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    proc = piped;
    out = gatherStderr(piped);
  }
  const ended = () => proc.exitCode !== null || proc.signalCode !== null;
  let port: number | undefined;
  let last = "";
  while (port === undefined && !ended() && performance.now() - t0 < allowMs) {
    if (spec.port === undefined) {
      const m = /"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(out.log());
      if (m) port = Number(m[1]);
      else await Bun.sleep(25);
      continue;
    }
    try {
      const r = await http(spec.port, "GET", "/status", [], { timeoutMs: 10_000 });
      if (r.status === 200) port = spec.port;
      else {
        last = `: the ping answered ${r.status} ${r.body.slice(0, 200)}`;
        await Bun.sleep(5);
      }
    } catch (err) {
      last = `: ${err instanceof Error ? err.message : String(err)}`;
      await Bun.sleep(2);
    }
  }
  if (port === undefined) {
    const why = ended() ? `it exited with ${proc.exitCode ?? proc.signalCode}` : `not ready after ${Math.round(allowMs)} ms${last}`;
    await out.kill9();
    throw new Error(
      `Starting the ${flavour} sidecar failed: ${why} (${START_FACTOR} times the median of ${startsMs.length} starts measured here, or as given); its log ends with:\n${
        out.log().slice(-4000)
      }`,
    );
  }
  const startupMs = performance.now() - t0;
  startsMs.push(startupMs);
  return {
    proc,
    port,
    startupMs,
    log: out.log,
    async stop(graceMs) {
      const timer = graceMs === undefined ? undefined : setTimeout(() => proc.kill("SIGKILL"), graceMs);
      try {
        return await out.stop();
      } finally {
        clearTimeout(timer);
      }
    },
    kill9: out.kill9,
  };
}

/** The options of getLogs that interLink sends when the user asked for none (docs/interlink.md#get-getlogs). */
export const LOG_OPTS = { Tail: 0, Bytes: 0, Timestamps: false, Follow: false, Previous: false, SinceSeconds: 0, SinceTime: "0001-01-01T00:00:00Z" };
export type LogOpts = Partial<typeof LOG_OPTS>;

/** The body of GET /getLogs for one container of `pod` (a v1.Pod). */
// deno-lint-ignore no-explicit-any -- a v1.Pod as JSON
export function logsRequest(pod: any, container: string, opts: LogOpts): unknown {
  return { Namespace: pod.metadata.namespace, PodUID: pod.metadata.uid, PodName: pod.metadata.name, ContainerName: container, Opts: opts };
}

/** A getLogs answer read chunk by chunk (followLogs). */
export interface StreamedLogs {
  status: number;
  bytes: Buffer;
  body: string;
  /** When each chunk arrived (ms after the request) and its size. */
  arrivals: { at: number; n: number }[];
  /** The request's duration, ms. */
  ms: number;
}

/**
 * GET /getLogs read as it streams (a follow, or a long log): every chunk's arrival is noted and
 * handed to `on.data`; `on.req` gets the request (to end it early); with `on.discard` the body is
 * not kept (a long log: count it by `arrivals`). Resolves when the answer ends or is cut.
 */
export function followLogs(
  port: number,
  // deno-lint-ignore no-explicit-any -- a v1.Pod as JSON
  pod: any,
  container: string,
  opts: LogOpts,
  on: { data?: (text: string) => void; req?: (r: ReturnType<typeof request>) => void; discard?: boolean } = {},
): Promise<StreamedLogs> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(logsRequest(pod, container, opts));
    const t0 = Date.now();
    const chunks: Buffer[] = [];
    const arrivals: { at: number; n: number }[] = [];
    const req = request({
      host: "127.0.0.1",
      port,
      method: "GET",
      path: "/getLogs",
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
    }, (res) => {
      res.on("data", (c: Buffer) => {
        if (!on.discard) chunks.push(c);
        arrivals.push({ at: Date.now() - t0, n: c.length });
        on.data?.(c.toString());
      });
      const done = () => {
        const bytes = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, bytes, body: bytes.toString("utf8"), arrivals, ms: Date.now() - t0 });
      };
      res.on("end", done);
      res.on("aborted", done);
    });
    req.on("error", reject);
    on.req?.(req);
    req.end(body);
  });
}

export async function startSidecar(o: SidecarOptions = {}): Promise<Sidecar> {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), "sidecar-e2e-"));
  const home = join(dir, "minicondor");
  mkdirSync(home, { recursive: true });
  const configPath = join(dir, "SidecarConfig.yaml");
  // Test defaults; a key given in o.config replaces the default line.
  const extra = o.config ?? "";
  const defaults = [
    "DataRootFolder: ./data",
    `ContainerRuntime: ${SHIM}`,
    "StatusCacheSeconds: 1",
    "ShutdownGraceSeconds: 2",
    "ReaperIntervalSeconds: 1",
    "Restart:\n  BackoffInitialSeconds: 1\n  BackoffMaxSeconds: 2",
  ].filter((line) => !new RegExp(`^${line.split(":")[0]}:`, "m").test(extra));
  writeFileSync(configPath, [...defaults, extra].join("\n"));
  const sc = await launchSidecar({ config: configPath, home, args: o.args, env: o.env });
  const { proc, port: p } = sc;
  return {
    port: p,
    dir,
    home,
    dataRoot: /^DataRootFolder: (.+)$/m.exec(o.config ?? "")?.[1] ?? join(dir, "data"),
    log: sc.log,
    proc,
    call: (method, path, body, opts) => http(p, method, path, body, opts),
    stop: () => sc.stop(),
    kill9: sc.kill9,
    async statusOf(pod) {
      const r = await http(p, "GET", "/status", [pod]);
      if (r.status !== 200) throw new Error(`GET /status answered ${r.status}: ${r.body}`);
      return (JSON.parse(r.body) as unknown[])[0];
    },
    calls: (tool) => readCalls(home, tool),
    logs: (pod, container = "main", opts = LOG_OPTS, httpOpts) => http(p, "GET", "/getLogs", logsRequest(pod, container, opts), httpOpts),
    followLogs: (pod, container, opts, on) => followLogs(p, pod, container, { ...LOG_OPTS, ...opts }, on),
    async destroy() {
      if (proc.exitCode === null) {
        proc.kill("SIGTERM");
        await proc.exited;
      }
      await cleanup(home, true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The sidecars one test file starts, all destroyed after its last test: `start` is startSidecar
 * with the file's own defaults (`defaults` adds to each start's options), and registers the
 * afterAll (TEARDOWN_TIMEOUT_MS) that each file used to write out for itself.
 */
export function sidecars(defaults: (o: SidecarOptions) => SidecarOptions = (o) => o): {
  start(o?: SidecarOptions): Promise<Sidecar>;
  started: Sidecar[];
} {
  const started: Sidecar[] = [];
  afterAll(async () => {
    for (const s of started) await s.destroy();
  }, TEARDOWN_TIMEOUT_MS);
  return {
    started,
    async start(o = {}) {
      const s = await startSidecar(defaults(o));
      // Started again on the folder of one that has ended (a restart): the new one's teardown
      // removes the folder, and the ended one's would kill the new one with the home's processes.
      for (let i = started.length - 1; i >= 0; i--) {
        if (started[i]!.dir === s.dir && (started[i]!.proc.exitCode !== null || started[i]!.proc.signalCode !== null)) started.splice(i, 1);
      }
      started.push(s);
      return s;
    },
  };
}

/**
 * A spawned process's stderr, gathered as it comes (the sidecar and the operator log there), and
 * the two ways a test ends the process: SIGTERM for the graceful path, SIGKILL for a crash.
 */
export function gatherStderr(proc: Bun.Subprocess<"ignore", "pipe", "pipe">): {
  log(): string;
  stop(): Promise<number>;
  kill9(): Promise<void>;
} {
  let log = "";
  const pump = (async () => {
    const reader = proc.stderr.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      log += new TextDecoder().decode(value);
    }
  })();
  return {
    log: () => log,
    async stop() {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      const code = await proc.exited;
      await pump.catch(() => {});
      return code;
    },
    async kill9() {
      proc.kill("SIGKILL");
      await proc.exited;
      await pump.catch(() => {});
    },
  };
}

/**
 * The timeout of an afterAll that destroys a file's sidecars. One destroy takes milliseconds on an
 * idle machine and seconds on a busy one (SIGTERM, then every process of its minicondor home
 * killed and waited for): bun's 5 s default for a hook is too short for several. Nothing is
 * asserted on the time; the bound only ends a teardown that hangs.
 */
export const TEARDOWN_TIMEOUT_MS = 120_000;

/**
 * The timeout of a beforeAll that starts a file's sidecars, before scaling: give it as
 * scaled(SETUP_TIMEOUT_MS), once the file has awaited measureLoad(). A start's own deadline scales
 * the same way, so the hook's outlasts it; nothing is asserted on the time.
 */
export const SETUP_TIMEOUT_MS = 120_000;

/** How many processes of minicondor's `tool` (whose arguments `match` accepts) run for the home `home`. */
export function runningTools(home: string, tool: string, match: (argv: string[]) => boolean = () => true): number {
  return pidsWithEnvEntry(`MINICONDOR_HOME=${home}`).filter((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return argv.includes(tool) && match(argv);
    } catch {
      return false;
    }
  }).length;
}

/**
 * Waits until `n` processes of `tool` run for `home` (runningTools): a sidecar's calls in flight,
 * the moment a test kills the sidecar in, or sends what must find them running. A fixed sleep
 * guessed it, too early on a busy machine.
 */
export function toolsRunning(home: string, tool: string, n = 1, match?: (argv: string[]) => boolean): Promise<true> {
  return eventually(() => (runningTools(home, tool, match) >= n ? true : undefined), 30_000, `${n} ${tool} running`);
}

/**
 * Polls until fn returns a value (not undefined), or throws after timeoutMs. The first poll comes
 * 10 ms after the first check, each wait then doubles up to 200 ms: what is ready at once costs
 * milliseconds, and what takes long is not polled more often than every 200 ms.
 */
export async function eventually<T>(fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let pause = 10;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await Bun.sleep(pause);
    pause = Math.min(2 * pause, 200);
  }
}

/** Every job id the schedd has (queue and history) for each pod UID (a job moving between the two is counted once). */
export function jobsByUid(sc: Sidecar): Map<string, string[]> {
  const env = { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" };
  const out = new Map<string, Set<string>>();
  for (const [tool, args] of [["condor_q", ["-allusers"]], ["condor_history", []]] as const) {
    const r = Bun.spawnSync([join(CONDOR_BIN, tool), ...args, "-af", "ClusterId", "ProcId", "InterLinkPodUID"], { env });
    for (const line of r.stdout.toString().split("\n")) {
      const [c, p, u] = line.trim().split(" ");
      if (u && u !== "undefined") out.set(u, (out.get(u) ?? new Set()).add(`${c}.${p}`));
    }
  }
  return new Map([...out].map(([u, ids]) => [u, [...ids]]));
}
