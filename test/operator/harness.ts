/**
 * What the operator's end-to-end tests share: a real kube-apiserver (test/helpers/kube.ts) with
 * the HTCJob CRD, minicondor for HTCondor (test/minicondor), and the operator started from the
 * sources as a separate process, as `htcondor-sidecar operator` runs in production.
 */
import { afterAll, beforeAll } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sidecarEntry } from "../helpers/bundle.ts";
import { type Kube, startKube } from "../helpers/kube.ts";
import { CONDOR_BIN, eventually, gatherStderr, ROOT, SHIM } from "../helpers/sidecar.ts";
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
  /**
   * Every job of the site once: the queue, then the history. A job that leaves the queue between
   * the two reads (a removed or finished job moves to the history when its shadow has gone, later
   * on a busy machine) is in both; it counts once, as the history has it.
   */
  jobs(): Promise<Record<string, unknown>[]>;
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
    async jobs() {
      const byId = new Map<string, Record<string, unknown>>();
      for (const a of [...(await ads("condor_q")), ...(await ads("condor_history"))]) byId.set(`${a.ClusterId}.${a.ProcId}`, a);
      return [...byId.values()];
    },
    destroy() {
      cleanup(home, true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Which runtime runs the operator: Bun unless OPERATOR_RUNTIME=deno says otherwise (docs/operator.md#running-it:
 * the operator works on Bun and on Deno), so any e2e file can be run once on Deno.
 */
export type OperatorRuntime = "bun" | "deno";

export function operatorRuntime(): OperatorRuntime {
  const v = process.env.OPERATOR_RUNTIME;
  if (v === undefined || v === "" || v === "bun") return "bun";
  if (v === "deno") return "deno";
  throw new Error(`Unknown OPERATOR_RUNTIME "${v}": expected "bun" or "deno"`);
}

/** The command that starts `htcondor-sidecar` from the sources on `runtime` (on Bun, bundled: test/helpers/bundle.ts). */
export function sidecarCommand(runtime: OperatorRuntime): string[] {
  return runtime === "deno"
    ? [join(ROOT, "node_modules", ".bin", "deno"), "run", "-A", "--no-check", join(ROOT, "src", "main.deno.ts")]
    : [process.execPath, sidecarEntry()];
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
  const { log, stop, kill9 } = gatherStderr(proc);
  const op: Operator = {
    proc,
    log,
    async waitLog(re, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!re.test(log())) {
        if (proc.exitCode !== null) throw new Error(`the operator exited (${proc.exitCode}) before ${re}:\n${log()}`);
        if (Date.now() > deadline) throw new Error(`the operator did not log ${re} within ${timeoutMs / 1000} s:\n${log()}`);
        await Bun.sleep(50);
      }
    },
    stop,
    kill9,
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
  const r = await kube.get(`/apis/htc.cern.ch/v1alpha1/namespaces/${encodeURIComponent(ns)}/htcjobs/${encodeURIComponent(name)}`);
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`GET htcjob ${ns}/${name} failed (${r.status}): ${r.body}`);
  return JSON.parse(r.body) as HTCJobView;
}

export async function events(kube: Kube, ns: string, name: string): Promise<{ reason: string; message: string; type: string }[]> {
  const selector = encodeURIComponent(`involvedObject.name=${name}`);
  const r = await kube.get(`/api/v1/namespaces/${encodeURIComponent(ns)}/events?fieldSelector=${selector}`);
  if (r.status !== 200) throw new Error(`GET events of ${ns}/${name} failed (${r.status}): ${r.body}`);
  return (JSON.parse(r.body) as { items: { reason: string; message: string; type: string }[] }).items;
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

/** The leader-election Lease of the default HTCJob.OperatorId (src/operator/main.ts leaseName), in the kubeconfig's namespace. */
export const OPERATOR_LEASE = "htcjob-operator";

/**
 * Deletes the Lease of an operator killed with kill -9, as its expiry would end it: the next
 * operator leads at once instead of waiting out the default 15 s (docs/operator.md#only-one-submits).
 * For tests whose subject is what a restart finds, not the takeover (lease.e2e.test.ts waits).
 */
export async function dropLease(kube: Kube, ns = "default"): Promise<void> {
  await ok(kube.kubectl(["delete", "lease", "-n", ns, OPERATOR_LEASE, "--ignore-not-found"]));
}

/** Polls until fn returns a value (not undefined), or throws after timeoutMs with the last value seen. */
export function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  return eventually(fn, timeoutMs, what);
}

/** The distinct clusters in queue and history that carry `uid`. */
export async function clustersOf(site: Site, uid: string): Promise<Set<number>> {
  return new Set((await site.jobs()).filter((a) => a.HTCJobUID === uid).map((a) => a.ClusterId as number));
}

/**
 * One e2e file's world, filled in by the beforeAll that operatorE2E registers: a kube-apiserver
 * with the CRD, a site, and (unless told otherwise) an operator leading on it.
 */
export interface OperatorE2E {
  kube: Kube;
  site: Site;
  /** The operator started before the file's tests; a test that restarts it puts the new one here. */
  op: Operator;
  /** Applies an HTCJob made by htcjobYaml. */
  create(name: string, spec: Parameters<typeof htcjobYaml>[1], ns?: string): Promise<string>;
  /** Polls until HTCJob `name` has a status that `want` accepts. */
  reach(name: string, want: (s: NonNullable<HTCJobView["status"]>) => boolean, timeoutMs?: number, ns?: string): Promise<HTCJobView>;
}

/**
 * Registers the beforeAll and afterAll of an operator e2e file: starts the API server (with
 * `kube`'s users), installs the CRD, runs `setup`, makes a site from `siteConfig`, and starts the
 * operator with `operator`'s options unless it is false; stops all of it afterwards.
 */
export function operatorE2E(
  o: {
    kube?: Parameters<typeof startKube>[0];
    setup?: (kube: Kube) => Promise<unknown>;
    siteConfig?: string;
    operator?: Parameters<typeof startOperator>[2] | false;
  } = {},
): OperatorE2E {
  const e: OperatorE2E = {
    create: (name, spec, ns = "default") => ok(e.kube.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: htcjobYaml(name, spec) })),
    reach: (name, want, timeoutMs = 120_000, ns = "default") =>
      until(`HTCJob ${name}'s status`, async () => {
        const j = await getHTCJob(e.kube, ns, name);
        return j?.status && want(j.status) ? j : undefined;
      }, timeoutMs),
  } as OperatorE2E;
  beforeAll(async () => {
    e.kube = await startKube(o.kube);
    await installCrd(e.kube);
    await o.setup?.(e.kube);
    e.site = makeSite(o.siteConfig);
    if (o.operator !== false) e.op = await startOperator(e.site, e.kube.kubeconfig("files"), o.operator);
  }, 240_000);
  afterAll(async () => {
    await e.op?.stop();
    e.site?.destroy();
    await e.kube?.stop();
  }, 60_000);
  return e;
}

/**
 * docs/operator.md#deleting, the steps the Bun and the Deno files both take: an HTCJob of two
 * procs that sleep, deleted (kubectl waits for the object to go) once both run. Returns what the
 * tests check: how many of its procs ran in the queue before, the object after, and its procs'
 * ads in queue and history after.
 */
export async function deleteRunning(
  e2e: OperatorE2E,
  name: string,
): Promise<{ runningBefore: number; after: HTCJobView | undefined; ads: Record<string, unknown>[] }> {
  await e2e.create(name, { queue: 2, source: "sleep 300\n" });
  const j = await e2e.reach(name, (s) => (s.running ?? 0) === 2);
  const uid = j.metadata.uid;
  const runningBefore = (await e2e.site.queue()).filter((a) => a.HTCJobUID === uid && a.JobStatus === 2).length;
  await ok(e2e.kube.kubectl(["delete", "htcjob", "-n", "default", name, "--wait=true", "--timeout=90s"]));
  const after = await getHTCJob(e2e.kube, "default", name);
  const ads = (await e2e.site.jobs()).filter((a) => a.HTCJobUID === uid);
  return { runningBefore, after, ads };
}

/** docs/operator.md#status, on both runtimes: an HTCJob whose script exits 3, once it counts as failed, and its Failed condition. */
export async function exitThree(
  e2e: OperatorE2E,
  name: string,
): Promise<{ status: NonNullable<HTCJobView["status"]>; failed: { type: string; status: string; reason: string; message: string } }> {
  await e2e.create(name, { source: "exit 3\n" });
  const j = await e2e.reach(name, (s) => s.failed === 1);
  return { status: j.status!, failed: j.status!.conditions!.find((c) => c.type === "Failed")! };
}
