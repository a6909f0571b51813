// Helpers for tests that use minicondor. Import from "test/minicondor/src/testkit.ts".
import { createHmac } from "node:crypto";
import type { Security } from "./security.ts";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { BIN_DIR, killByEnv, killGroup, LIBEXEC_DIR, pidAlive, pidsWithEnv, pidsWithEnvEntry } from "./common.ts";

export { BIN_DIR, LIBEXEC_DIR };
export const TOOLS = [
  "condor_submit",
  "condor_q",
  "condor_history",
  "condor_rm",
  "condor_hold",
  "condor_release",
  "condor_vacate_job",
  "condor_status",
  "condor_tail",
  "condor_transfer_data",
  "condor_version",
] as const;

export type HomeOptions = {
  /** the AP's DEFAULT_USERLOG_FORMAT_OPTIONS */
  userlogFormatOptions?: string;
  cpus?: number;
  memory?: number;
  gpus?: number;
  disk?: number;
  spoolReleaseMs?: number;
  stageOutLingerMs?: number;
  pollMs?: number;
  periodicIntervalS?: number;
  sharedFileSystem?: boolean;
  enforceMemory?: boolean;
  scheddIdleExitMs?: number;
  delayedUpdateMs?: number;
  reaperDelayMs?: number;
  host?: string;
  apptainer?: string;
  /** the AP's IMMUTABLE_JOB_ATTRS / PROTECTED_JOB_ATTRS: "A, B C" or a list */
  immutableJobAttrs?: string | string[];
  protectedJobAttrs?: string | string[];
  /** the authentication the schedd asks of the tools (src/security.ts) */
  security?: Security;
  /** the pool's other schedds, by local name: `-name <local>@<host>` reaches each (README: Several schedds) */
  schedds?: string[];
};

/** An IDTOKEN as condor_token_create signs it (HS256 with the named key), for a home's `security.signingKeys`. */
export function mintIdToken(key: string, o: { kid?: string; iss: string; sub: string; exp?: number }): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const head = `${part({ alg: "HS256", typ: "JWT", kid: o.kid ?? "POOL" })}.${
    part({ iss: o.iss, sub: o.sub, iat: Math.floor(Date.now() / 1000), ...(o.exp === undefined ? {} : { exp: o.exp }) })
  }`;
  return `${head}.${createHmac("sha256", key).update(head).digest("base64url")}`;
}

/** Create a fresh MINICONDOR_HOME in a temp dir (with config.json). */
export function createHome(opts: HomeOptions = {}, parent = os.tmpdir()): string {
  const home = fs.mkdtempSync(path.join(parent, "minicondor-"));
  fs.writeFileSync(path.join(home, "config.json"), JSON.stringify(opts, null, 2) + "\n");
  return home;
}

/** Environment for spawning the tools against `home`. */
export function toolEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("MINICONDOR_")) env[k] = v;
  return { ...env, MINICONDOR_HOME: home, ...extra };
}

export function toolPath(tool: string): string {
  return tool === "condor_chirp" ? path.join(LIBEXEC_DIR, "condor_chirp") : path.join(BIN_DIR, tool);
}

export type RunResult = { stdout: string; stderr: string; code: number };
/** Run one tool (by absolute path, no shell). */
export async function runTool(
  home: string,
  tool: string,
  args: string[],
  o: { cwd?: string; env?: Record<string, string>; stdin?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  const p = Bun.spawn([toolPath(tool), ...args], {
    cwd: o.cwd ?? home,
    env: toolEnv(home, o.env),
    stdin: o.stdin !== undefined ? new TextEncoder().encode(o.stdin) : "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (o.timeoutMs) timer = setTimeout(() => p.kill("SIGTERM"), o.timeoutMs);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (timer) clearTimeout(timer);
  return { stdout, stderr, code };
}

/** Write faults.json (read by every tool call and by the schedd). */
export function setFaults(home: string, faults: Record<string, unknown>): void {
  fs.writeFileSync(path.join(home, "faults.json"), JSON.stringify(faults));
}
/** The home of one of the pool's other schedds (`local`), or the pool's own for its first schedd (`undefined`). */
export function scheddHomeOf(home: string, local?: string): string {
  const h = local === undefined ? home : path.join(home, "schedds", local);
  fs.mkdirSync(h, { recursive: true });
  return h;
}

/** Stops one schedd as its master's condor_off does (`local` of a second one, none for the first); the others keep answering. */
export function stopSchedd(home: string, local?: string): void {
  fs.writeFileSync(path.join(scheddHomeOf(home, local), "faults.json"), JSON.stringify({ stopped: true }));
}

/** Brings a stopped schedd back (condor_on), with its queue. */
export function startSchedd(home: string, local?: string): void {
  fs.rmSync(path.join(scheddHomeOf(home, local), "faults.json"), { force: true });
}

/**
 * Reinstalls one schedd (`local` of another one, none for the pool's first): it stops, its running
 * jobs die, its queue, history and spool go, and it starts again with an empty queue whose cluster
 * ids start at 1, as a schedd given a new SPOOL does (docs/htcondor.md#which-job-an-id-names).
 * The job event logs are the submitters' files and stay. The other schedds are not touched.
 */
export function resetQueue(home: string, local?: string): void {
  const h = scheddHomeOf(home, local);
  // its schedd daemon: `main.ts __schedd <h>`, exactly this home
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const args = fs.readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0");
      const i = args.indexOf("__schedd");
      if (i >= 0 && args[i + 1] === h) killGroup(Number(e), "SIGKILL");
    } catch { /* gone */ }
  }
  killByEnv(`_CONDOR_SCRATCH_DIR=${path.join(h, "execute")}`);
  for (const f of ["state.db", "state.db-wal", "state.db-shm"]) fs.rmSync(path.join(h, f), { force: true });
  for (const d of ["spool", "execute"]) fs.rmSync(path.join(h, d), { recursive: true, force: true });
}

export function setConfig(home: string, cfg: HomeOptions): void {
  fs.writeFileSync(path.join(home, "config.json"), JSON.stringify(cfg));
}

/**
 * Pids of every process belonging to this home: the schedd, the job trees, and any tool still running
 * with MINICONDOR_HOME=<home> (a hung tool orphaned by a killed caller). Never this process or its ancestors.
 */
function scheddHomes(home: string): string[] {
  let others: string[] = [];
  try {
    others = fs.readdirSync(path.join(home, "schedds")).map((l) => path.join(home, "schedds", l));
  } catch { /* none */ }
  return [home, ...others];
}

export function homePids(home: string): number[] {
  const byEnv = scheddHomes(home).flatMap((h) => pidsWithEnv(`_CONDOR_SCRATCH_DIR=${path.join(h, "execute")}`)).filter(pidAlive);
  const tools = pidsWithEnvEntry(`MINICONDOR_HOME=${home}`).filter(pidAlive);
  const sched: number[] = [];
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${e}/cmdline`, "utf8");
      if (cmd.includes("__schedd") && cmd.includes(home) && pidAlive(Number(e))) sched.push(Number(e));
    } catch { /* gone */ }
  }
  return [...new Set([...byEnv, ...tools, ...sched])];
}

/** Kill the schedd, every job process and every tool process of `home`; optionally delete the directory. */
export function cleanup(home: string, removeDir = false): void {
  // a tool is not the leader of its group (its caller's group): kill it alone, never the group
  for (const pid of pidsWithEnvEntry(`MINICONDOR_HOME=${home}`)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch { /* gone */ }
  }
  for (const pid of homePids(home)) killGroup(pid, "SIGKILL");
  for (const h of scheddHomes(home)) killByEnv(`_CONDOR_SCRATCH_DIR=${path.join(h, "execute")}`);
  for (let i = 0; i < 50 && homePids(home).length; i++) Bun.sleepSync(20);
  if (removeDir) fs.rmSync(home, { recursive: true, force: true });
}

/** Poll until fn() is truthy (or throw after timeoutMs). */
export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs = 10_000, stepMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error("waitFor: timed out");
    await Bun.sleep(stepMs);
  }
}
