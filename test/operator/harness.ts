/**
 * What the operator's end-to-end tests share: a real kube-apiserver (test/helpers/kube.ts) with
 * the HTCJob CRD, minicondor for HTCondor (test/minicondor), and the operator started from the
 * sources as a separate process, as `htcondor-sidecar operator` runs in production.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Kube } from "../helpers/kube.ts";
import { CONDOR_BIN, ROOT, SHIM } from "../helpers/sidecar.ts";
import { cleanup, runTool } from "../minicondor/src/testkit.ts";

export const CRD = join(ROOT, "deploy", "htcjob-crd.yaml");
export const EXAMPLES = join(ROOT, "deploy", "examples");

export async function ok(r: Promise<{ code: number; stdout: string; stderr: string }>): Promise<string> {
  const out = await r;
  if (out.code !== 0) throw new Error(`kubectl failed (${out.code}): ${out.stderr}`);
  return out.stdout;
}

export async function installCrd(kube: Kube): Promise<void> {
  await ok(kube.kubectl(["apply", "-f", CRD]));
  await ok(kube.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd/htcjobs.htc.cern.ch"]));
}

/** A folder with a minicondor home and an operator config; shared by restarts of the operator. */
export interface Site {
  dir: string;
  home: string;
  dataRoot: string;
  configPath: string;
  /** condor_q -json of every job in the minicondor queue (all owners' attributes that tests read). */
  queue(): Promise<Record<string, unknown>[]>;
  history(): Promise<Record<string, unknown>[]>;
  destroy(): void;
}

export function makeSite(extraConfig = ""): Site {
  const dir = mkdtempSync(join(tmpdir(), "operator-e2e-"));
  const home = join(dir, "minicondor");
  mkdirSync(home, { recursive: true });
  const configPath = join(dir, "SidecarConfig.yaml");
  writeFileSync(
    configPath,
    [
      `DataRootFolder: ./data`,
      `ContainerRuntime: ${SHIM}`,
      "StatusCacheSeconds: 1",
      // Long enough that only the job event log can bring a change within a test (docs/operator.md#following-the-procs).
      "ReconcileMinutes: 60",
      extraConfig,
    ].join("\n") + "\n",
  );
  const ads = async (tool: "condor_q" | "condor_history") => {
    const r = await runTool(home, tool, ["-json", "-attributes", "ClusterId,ProcId,JobStatus,ExitCode,HTCJobUID,HTCJobName,InterLinkPodUID"]);
    if (r.code !== 0) throw new Error(`${tool} failed: ${r.stderr}`);
    return r.stdout.trim() === "" ? [] : (JSON.parse(r.stdout) as Record<string, unknown>[]);
  };
  return {
    dir,
    home,
    dataRoot: join(dir, "data"),
    configPath,
    queue: () => ads("condor_q"),
    history: () => ads("condor_history"),
    destroy() {
      cleanup(home, true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Which runtime runs the operator: Bun unless OPERATOR_RUNTIME=deno says otherwise (issue 21:
 * the operator works on Bun and on Deno), so any e2e file can be run once on Deno.
 */
export type OperatorRuntime = "bun" | "deno";

export function operatorRuntime(): OperatorRuntime {
  const v = process.env.OPERATOR_RUNTIME;
  if (v === undefined || v === "" || v === "bun") return "bun";
  if (v === "deno") return "deno";
  throw new Error(`Unknown OPERATOR_RUNTIME "${v}": expected "bun" or "deno"`);
}

/** The command that starts `htcondor-sidecar` from the sources on `runtime`. */
export function sidecarCommand(runtime: OperatorRuntime): string[] {
  return runtime === "deno"
    ? [join(ROOT, "node_modules", ".bin", "deno"), "run", "-A", "--no-check", join(ROOT, "src", "main.deno.ts")]
    : [process.execPath, join(ROOT, "src", "main.bun.ts")];
}

export interface Operator {
  proc: ReturnType<typeof Bun.spawn>;
  log(): string;
  /** Resolves once the log has a line matching `re`. */
  waitLog(re: RegExp, timeoutMs?: number): Promise<void>;
  stop(): Promise<number>;
  kill9(): Promise<void>;
}

export async function startOperator(
  site: Site,
  kubeconfig: string,
  o: { env?: Record<string, string>; args?: string[]; waitFor?: RegExp | null; runtime?: OperatorRuntime } = {},
): Promise<Operator> {
  const runtime = o.runtime ?? operatorRuntime();
  // Deno keeps its module cache under DENO_DIR (or HOME), and its temp files under TMPDIR.
  const denoEnv: Record<string, string> = {};
  for (const k of ["DENO_DIR", "TMPDIR"]) if (runtime === "deno" && process.env[k]) denoEnv[k] = process.env[k]!;
  const proc = Bun.spawn(
    [
      ...sidecarCommand(runtime),
      "operator",
      "--kubeconfig",
      kubeconfig,
      "--config",
      site.configPath,
      "--condor-bin",
      CONDOR_BIN,
      "--log-format",
      "text",
      ...(o.args ?? []),
    ],
    {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/root",
        MINICONDOR_HOME: site.home,
        MINICONDOR_ALLOW_ROOT: "1",
        ...denoEnv,
        ...o.env,
      },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  let log = "";
  const pump = (async () => {
    const reader = proc.stderr.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      log += new TextDecoder().decode(value);
    }
  })();
  const op: Operator = {
    proc,
    log: () => log,
    async waitLog(re, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!re.test(log)) {
        if (proc.exitCode !== null) throw new Error(`the operator exited (${proc.exitCode}) before ${re}:\n${log}`);
        if (Date.now() > deadline) throw new Error(`the operator did not log ${re} within ${timeoutMs / 1000} s:\n${log}`);
        await Bun.sleep(50);
      }
    },
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
  // Deno's first start transpiles the sources into its cache, which takes longer on a busy machine.
  if (o.waitFor !== null) await op.waitLog(o.waitFor ?? /leading: watching HTCJobs/, runtime === "deno" ? 90_000 : 30_000);
  return op;
}

export interface HTCJobView {
  metadata: { name: string; uid: string; finalizers?: string[]; generation?: number };
  status?: {
    jobid?: string[];
    clusterId?: number;
    idle?: number;
    running?: number;
    held?: number;
    active?: number;
    succeeded?: number;
    failed?: number;
    observedGeneration?: number;
    output?: string;
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

export async function getHTCJob(kube: Kube, ns: string, name: string): Promise<HTCJobView | undefined> {
  const r = await kube.kubectl(["get", "htcjob", "-n", ns, name, "-o", "json"]);
  if (r.code !== 0) {
    if (/NotFound|not found/.test(r.stderr)) return undefined;
    throw new Error(`kubectl get failed: ${r.stderr}`);
  }
  return JSON.parse(r.stdout) as HTCJobView;
}

export async function events(kube: Kube, ns: string, name: string): Promise<{ reason: string; message: string; type: string }[]> {
  const out = await ok(kube.kubectl(["get", "events", "-n", ns, "--field-selector", `involvedObject.name=${name}`, "-o", "json"]));
  return (JSON.parse(out) as { items: { reason: string; message: string; type: string }[] }).items;
}

export function htcjobYaml(name: string, spec: { queue?: number; image?: string; command?: string; source: string; htcopts?: string }): string {
  return JSON.stringify({
    apiVersion: "htc.cern.ch/v1alpha1",
    kind: "HTCJob",
    metadata: { name },
    spec: {
      ...(spec.queue !== undefined ? { queue: spec.queue } : {}),
      script: { image: spec.image ?? "centos", command: spec.command ?? "bash", source: spec.source },
      ...(spec.htcopts !== undefined ? { htcopts: spec.htcopts } : {}),
    },
  });
}

/** Polls until fn returns a value (not undefined), or throws after timeoutMs with the last value seen. */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await Bun.sleep(250);
  }
}

/** The distinct clusters in queue and history that carry `uid`. */
export async function clustersOf(site: Site, uid: string): Promise<Set<number>> {
  const ads = [...(await site.queue()), ...(await site.history())];
  return new Set(ads.filter((a) => a.HTCJobUID === uid).map((a) => a.ClusterId as number));
}
