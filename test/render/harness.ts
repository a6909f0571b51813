/**
 * Runs a rendered wrapper with real bash, the way an HTCondor execution point would:
 * plan.files and job.sh in a scratch directory, a minimal environment (`env -i`, no PATH),
 * `_CONDOR_SCRATCH_DIR` set, `_CONDOR_BIN` pointing at minicondor's tools when they exist.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { JobPlan } from "../../src/core/types.ts";
import { containerKey } from "../../src/core/types.ts";
import { parseStateLine, type StateLine } from "../../src/core/state-line.ts";
import { renderWrapper, type WrapperOptions } from "../../src/render/wrapper.ts";

export const REPO = resolve(import.meta.dir, "../..");
export const MINICONDOR = join(REPO, "test/minicondor");
/** minicondor's apptainer shim: the runtime every wrapper test pins. */
export const SHIM = join(MINICONDOR, "shims/apptainer");
export const BASH = "/bin/bash";
const SETSID = ["/usr/bin/setsid", "/bin/setsid"].find((p) => existsSync(p));

const created: string[] = [];

export function tempDir(prefix = "wrapper-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

/**
 * Stops instances a killed wrapper may have left in its sandboxes and removes the sandboxes
 * (kept with KEEP_SANDBOXES=1, for debugging).
 */
export function cleanup(): void {
  for (const dir of created.splice(0)) {
    const home = join(dir, ".minicondor");
    if (existsSync(home)) {
      Bun.spawnSync([SHIM, "-s", "instance", "stop", "-a", "-F"], { env: { MINICONDOR_HOME: home }, timeout: 30_000 });
    }
    if (process.env.KEEP_SANDBOXES !== "1") rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes plan.files and job.sh into a fresh sandbox and returns its path. */
export function materialize(plan: JobPlan, opts: WrapperOptions = {}, dir = tempDir()): string {
  for (const f of plan.files) {
    const p = join(dir, f.path);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, f.content);
    // As HTCondor may deliver them: modes not kept (the wrapper restores them).
    chmodSync(p, 0o644);
  }
  writeFileSync(join(dir, "job.sh"), renderWrapper(plan, opts), { mode: 0o755 });
  return dir;
}

export interface RunResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  ms: number;
  /** When SIGTERM was sent, in ms after the start. */
  termAt?: number;
}

export interface RunOptions {
  /** The wrapper's arguments (an HTCJob's proc gets its ProcId). */
  args?: string[];
  /** Extra environment (the job's environment is otherwise only the HTCondor variables). */
  env?: Record<string, string>;
  /** Send SIGTERM to the wrapper after this many ms. */
  termAfterMs?: number;
  /** Send SIGTERM to the wrapper once this returns true (checked every 50 ms). */
  termWhen?: (sandbox: string) => boolean;
  /** Kill the wrapper (and fail) after this many ms. */
  timeoutMs?: number;
  /** Called every 50 ms while the wrapper runs (e.g. to take a snapshot of state files). */
  onTick?: () => void;
}

/** The environment HTCondor gives a vanilla job (docs/htcondor.md#the-jobs-environment), minus PATH. */
export function jobEnv(sandbox: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    _CONDOR_SCRATCH_DIR: sandbox,
    _CONDOR_SLOT: "slot1_1",
    TMPDIR: sandbox,
    TMP: sandbox,
    TEMP: sandbox,
    BATCH_SYSTEM: "HTCondor",
    OMP_NUM_THREADS: "1",
    GOMAXPROCS: "1",
    CUDA_VISIBLE_DEVICES: "10000",
    HOME: process.env.HOME ?? "/root",
    // The shim keeps its instance table here; one per sandbox keeps parallel tests apart.
    MINICONDOR_HOME: join(sandbox, ".minicondor"),
  };
  if (existsSync(join(MINICONDOR, "bin"))) env._CONDOR_BIN = join(MINICONDOR, "bin");
  return { ...env, ...extra };
}

export async function runWrapper(sandbox: string, opts: RunOptions = {}): Promise<RunResult> {
  const t0 = Date.now();
  // Its own process group (setsid execs bash in place: same pid), so a timeout can end every
  // process of the job, as HTCondor does; SIGTERM still goes to the wrapper alone.
  const proc = Bun.spawn([...(SETSID ? [SETSID] : []), BASH, join(sandbox, "job.sh"), ...(opts.args ?? [])], {
    cwd: sandbox,
    env: jobEnv(sandbox, opts.env),
    stdout: "pipe",
    stderr: "pipe",
  });
  const timers: ReturnType<typeof setTimeout>[] = [];
  let termAt: number | undefined;
  const term = () => {
    if (termAt !== undefined) return;
    termAt = Date.now() - t0;
    proc.kill("SIGTERM");
  };
  if (opts.termAfterMs !== undefined) timers.push(setTimeout(term, opts.termAfterMs));
  timers.push(
    setTimeout(() => {
      try {
        if (SETSID) process.kill(-proc.pid, "SIGKILL");
      } catch {
        // already gone
      }
      proc.kill("SIGKILL");
    }, opts.timeoutMs ?? 120_000),
  );
  const tick = setInterval(() => {
    opts.onTick?.();
    if (opts.termWhen?.(sandbox)) term();
  }, 50);
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  for (const t of timers) clearTimeout(t);
  clearInterval(tick);
  return { code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode), stdout, stderr, ms: Date.now() - t0, termAt };
}

export function readState(sandbox: string, name: string, init = false): StateLine | undefined {
  const p = join(sandbox, "podstate", containerKey(name, init));
  if (!existsSync(p)) return undefined;
  return parseStateLine(readFileSync(p, "utf8"));
}

export function readLog(sandbox: string, name: string, init = false, previous = false): string {
  const p = join(sandbox, `${containerKey(name, init)}${previous ? ".prev" : ""}.log`);
  return existsSync(p) ? readFileSync(p, "utf8") : "";
}

/** Log lines without their timestamps. */
export function logText(sandbox: string, name: string, init = false, previous = false): string[] {
  return readLog(sandbox, name, init, previous)
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => l.replace(/^\S+ /, ""));
}

export function wrapperLog(sandbox: string): string {
  const p = join(sandbox, "podstate/wrapper.log");
  return existsSync(p) ? readFileSync(p, "utf8") : "";
}

export function listSandbox(sandbox: string): string[] {
  return readdirSync(sandbox).sort();
}

/** One call of the runtime shim, as recorded with MINICONDOR_SHIM_LOG (shims/README.md, "Debug"). */
export interface ShimCall {
  /** $0, then the arguments. */
  argv: string[];
  /** The environment the runtime was started with. */
  env: Map<string, string>;
}

/** The calls recorded in `dir` (the value of MINICONDOR_SHIM_LOG), in call order. */
export function shimCalls(dir: string): ShimCall[] {
  if (!existsSync(dir)) return [];
  const list = (p: string) => {
    const text = readFileSync(p, "utf8");
    return text === "" ? [] : text.slice(0, -1).split("\0");
  };
  return readdirSync(dir)
    .filter((f) => f.endsWith(".argv"))
    .sort()
    .map((f) => {
      const base = join(dir, f.slice(0, -".argv".length));
      const env = new Map<string, string>();
      for (const rec of list(`${base}.env`)) {
        const i = rec.indexOf("=");
        if (i > 0) env.set(rec.slice(0, i), rec.slice(i + 1));
      }
      return { argv: list(`${base}.argv`), env };
    });
}

// ---------------------------------------------------------------------------------------------
// Recording every execve (docs/threat-model.md#3-secret-values-on-command-lines: no secret value on a command line). Polling
// /proc/*/cmdline misses short-lived processes; strace -f sees each execve of the traced tree.

/** The strace binary, when `strace -f -e trace=execve` works here; else why it cannot be used. */
export function straceCheck(): { strace: string } | { problem: string } {
  const strace = Bun.which("strace");
  if (!strace) return { problem: "strace is not installed (Debian package: strace; .ci/run installs it)" };
  const r = Bun.spawnSync([strace, "-f", "-e", "trace=execve", "-o", "/dev/null", "/bin/true"], { stderr: "pipe" });
  if (r.exitCode !== 0) return { problem: `strace cannot trace here: ${r.stderr.toString().trim().split("\n")[0]}` };
  return { strace };
}

/** The strace options: every execve of the tree, strings whole; envp is printed as a count only. */
export const STRACE_EXECVE = ["-f", "-e", "trace=execve", "-e", "signal=none", "-s", "65536"];

/**
 * Attaches strace to a running process and everything it starts from now on (-f follows forks,
 * however detached). Resolves once attached; `stop()` detaches and returns the log, one line per
 * execve: `<pid> execve("<path>", [<argv>], <envp pointer> /* <n> vars *\/) = <result>`.
 */
export async function attachTrace(strace: string, pid: number, logPath: string): Promise<{ stop(): Promise<string> }> {
  const proc = Bun.spawn([strace, ...STRACE_EXECVE, "-o", logPath, "-p", String(pid)], { stdout: "ignore", stderr: "pipe" });
  const reader = proc.stderr.getReader();
  let err = "";
  const deadline = Date.now() + 20_000;
  while (!/attached/.test(err) && Date.now() < deadline && proc.exitCode === null) {
    const { done, value } = await Promise.race([reader.read(), Bun.sleep(500).then(() => ({ done: false, value: undefined }))]);
    if (done) break;
    if (value) err += new TextDecoder().decode(value);
  }
  if (!/attached/.test(err)) {
    proc.kill("SIGKILL");
    throw new Error(`strace did not attach to ${pid}: ${err.trim()}`);
  }
  void (async () => {
    for (;;) if ((await reader.read()).done) break;
  })();
  return {
    async stop() {
      proc.kill("SIGINT");
      await proc.exited;
      return readFileSync(logPath, "utf8");
    },
  };
}

/** The execve lines of a trace that contain `needle` (in the path or an argument). */
export function execsWith(trace: string, needle: string): string[] {
  return trace.split("\n").filter((l) => l.includes("execve(") && l.includes(needle));
}
