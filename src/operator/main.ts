/**
 * The operator's modes of the executable (docs/operator.md#running-it):
 *
 *   htcondor-sidecar operator --kubeconfig FILE [--namespace NS] [--config FILE] [--condor-bin DIR] [HTCondor flags]
 *   htcondor-sidecar htcjob logs NAMESPACE/NAME [--proc N] [--timestamps | --files | --file PATH] [--config FILE]
 *
 * The operator opens no port but --metrics-listen's. It reads the sidecar's SidecarConfig.yaml
 * keys where they apply, and keeps a store and an identity of its own.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Condor } from "../condor/tools.ts";
import { type FileConfig, htcjobConfig, planConfig } from "../config.ts";
import { type Counter, createRegistry } from "../core/metrics.ts";
import type { HTCJobConfig, PlanConfig } from "../core/types.ts";
import { type CliOptions, parseCli, UsageError, VERSION } from "../flags.ts";
import type { KubeClient } from "../kube/client.ts";
import { openKubeClient } from "../kube/connect.ts";
import { loadConnection } from "../kube/connect.ts";
import { createEventRecorder, type EventRecorder } from "../kube/events.ts";
import { createInformer } from "../kube/informer.ts";
import { createLeaseLock, runLeaderElection } from "../kube/lease.ts";
import { HTCJOBS } from "../kube/resources.ts";
import type { Logger } from "../logger.ts";
import type { HttpServer } from "../runtime/http.ts";
import { sleep } from "../runtime/sleep.ts";
import type { Runtime } from "../runtime/types.ts";
import { dataRootOf, type Io, loadConfig, openCondor, type Outcome, prepare, serveMetrics } from "../mode-setup.ts";
import { ensureDir } from "../store/files.ts";
import { createController, type HTCJob, keyOf } from "./controller.ts";
import { createEventDriver } from "./events.ts";
import { htcjobLogs } from "./logs.ts";
import { reapDeleted } from "./retention.ts";
import { type HTCJobStore, openHTCJobStore } from "./store.ts";
import { createWorkQueue } from "./workqueue.ts";
import { errorText } from "../core/errors.ts";

export const OPERATOR_USAGE = `Usage: htcondor-sidecar operator [--kubeconfig FILE] [--context NAME] [--namespace NS] [--lease-namespace NS]
                                 [--lease-duration S] [--config FILE] [--condor-bin DIR] [HTCondor flags] [--metrics-listen ADDR:PORT]
       htcondor-sidecar htcjob logs NAMESPACE/NAME [--proc N] [--timestamps | --files | --file PATH] [--config FILE]

operator: runs every HTCJob (htc.cern.ch/v1alpha1) as one HTCondor cluster (docs/operator.md).
  --kubeconfig FILE       the API server and credentials (default: the pod's service account)
  --context NAME          the kubeconfig context (default: current-context)
  --namespace NS          watch only this namespace (default: all)
  --lease-namespace NS    where the leader-election Lease is (default: the context's or the service account's)
  --lease-duration S      seconds a leader killed keeps the others waiting (default 15, at least 3); it renews
                          every 2/15 of them and stops leading after 2/3 of them without a renewal
  The HTCondor flags are the sidecar's (htcondor-sidecar --help); --listen, --port and --socket do not apply.

htcjob logs: prints what a proc's script wrote (its stdout and stderr), from the operator's data folder.
  --proc N                the ProcId (default 0)
  --timestamps            keep each line's time
  --files                 list the files the script left in its working directory instead
  --file PATH             print one of them (PATH relative to the working directory)
`;

/** Flags only the operator has; everything else is the sidecar's. */
const OPERATOR_FLAGS = { kubeconfig: "string", context: "string", namespace: "string", "lease-namespace": "string", "lease-duration": "string" } as const;
/** The sidecar's flags that would open a port or serve interLink: refused in operator mode. */
const NOT_HERE = ["listen", "port", "socket"];

/** How often deleted HTCJobs' output is checked against HTCJob.OutputRetentionSeconds. */
const REAP_INTERVAL_MS = 60_000;

/** `htcondor-sidecar operator …`: --help answers and exits; otherwise the operator starts. */
export async function operatorMode(runtime: Runtime, args: readonly string[], io: Io): Promise<Outcome> {
  const parsed = parseOperatorArgs(args);
  if (parsed === "help") {
    io.out(OPERATOR_USAGE);
    return 0;
  }
  return { stop: await startOperator(runtime, parsed.cli, parsed.op, io) };
}

/** `htcondor-sidecar htcjob COMMAND …`: a command that runs and exits. */
export async function htcjobMode(runtime: Runtime, args: readonly string[], io: Io): Promise<Outcome> {
  if (args[0] !== "logs") throw new UsageError(`htcjob: unknown command "${args[0] ?? ""}" (known: logs). Run 'htcondor-sidecar operator --help'.`);
  return htcjobLogsCommand(runtime, args.slice(1), io);
}

interface OperatorFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  leaseNamespace?: string;
  /** The Lease's duration; the renewal period and the renew deadline follow it as client-go's defaults do (2 and 10 of 15). */
  leaseDurationSeconds?: number;
}

/** `--lease-duration`: whole seconds from 3 (a renewal every 0.4 s; shorter would be a busy loop against the API server) to a day. */
function leaseDuration(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!(n >= 3 && n <= 86_400)) {
    throw new UsageError(`--lease-duration: whole seconds from 3 to 86400, not ${JSON.stringify(value)}. Run 'htcondor-sidecar operator --help' for usage.`);
  }
  return n;
}

/** Splits the operator's own flags from the sidecar's, which parseCli reads as usual. */
export function parseOperatorArgs(args: readonly string[]): { cli: CliOptions; op: OperatorFlags } | "help" {
  const rest: string[] = [];
  const op: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "-h" || a === "--help") return "help";
    const m = /^--([a-z-]+)(?:=(.*))?$/s.exec(a);
    if (m && m[1]! in OPERATOR_FLAGS) {
      const value = m[2] ?? args[++i];
      if (value === undefined || value.trim() === "") throw new UsageError(`flag --${m[1]} needs a value. Run 'htcondor-sidecar operator --help' for usage.`);
      op[m[1]!] = value;
      continue;
    }
    if (m && NOT_HERE.includes(m[1]!)) {
      throw new UsageError(`--${m[1]}: the operator serves no API and opens no port but --metrics-listen's. Run 'htcondor-sidecar operator --help' for usage.`);
    }
    rest.push(a);
  }
  const parsed = parseCli(rest);
  if (parsed.kind !== "run") return "help";
  return {
    cli: parsed.options,
    op: {
      kubeconfig: op.kubeconfig,
      context: op.context,
      namespace: op.namespace,
      leaseNamespace: op["lease-namespace"],
      leaseDurationSeconds: leaseDuration(op["lease-duration"]),
    },
  };
}

/** What a term of leadership works with: made once at start, used again by every term. */
interface Work {
  runtime: Runtime;
  config: FileConfig;
  htc: HTCJobConfig;
  planConfig: PlanConfig;
  client: KubeClient;
  store: HTCJobStore;
  condor: Condor;
  events: EventRecorder;
  log: Logger;
  /** --namespace: the only namespace watched (undefined: all). */
  namespace?: string;
  identity: string;
  dataRoot: string;
  spool: boolean;
  reconciles: Counter;
  writes: Counter;
}

async function startOperator(runtime: Runtime, o: CliOptions, op: OperatorFlags, io: Io): Promise<() => Promise<void>> {
  // Not the sidecar's idtokens/: both may share DataRootFolder with tokens of their own.
  const prepared = prepare(runtime, o, io, "operator-idtokens");
  const { config, log, env, spool, dataRoot } = prepared;
  // One HTCJob's procs are one cluster, and its cluster ids mean something on one schedd only (docs/schedds.md#the-htcjob-operator).
  if (config.Schedds.length > 0) log.warn("Schedds lists the sidecar's schedds; the operator submits to one schedd, the one --schedd-name names");
  if (!prepared.access.remoteSchedd) {
    log.warn(
      "the schedd is local: HTCJob procs run as this operator's user, and Apptainer binds /tmp and the working directory by default, " +
        "so a proc may reach the kubeconfig or token this operator holds; give --schedd-host (docs/operator.md#running-it-in-a-cluster)",
    );
  }
  ensureDir(dataRoot);
  ensureDir(join(dataRoot, "htcjobs"));
  // A file of its own: a sidecar with the same DataRootFolder keeps state.db, and neither reads the other's.
  const storePath = join(dataRoot, "htcjobs.db");
  const store = openHTCJobStore(runtime.openSqlite(storePath), storePath);

  const registry = createRegistry();
  const writes = registry.counter("htcjob_operator_api_writes_total", "Writes to the Kubernetes API, by what was written");
  const reconciles = registry.counter("htcjob_operator_reconciles_total", "Reconcile passes, by outcome");
  const commands = registry.counter("htcjob_operator_condor_commands_total", "HTCondor tool runs, by tool and outcome");
  registry.gauge(
    "htcjob_operator_htcjobs",
    "HTCJobs in the operator's store, by phase",
    () => Object.entries(store.count()).map(([phase, value]) => ({ labels: { phase }, value })),
  );
  registry.gauge("htcjob_operator_resident_memory_bytes", "Resident memory of the operator", () => [{ value: runtime.rss() }]);
  const condor = openCondor(runtime, prepared, (tool, outcome) => commands.inc({ tool, outcome }));

  const conn = loadConnection({ kubeconfig: op.kubeconfig, context: op.context, env, now: () => Date.now() });
  const { client, close } = openKubeClient(runtime, conn, `htcondor-sidecar-operator/${VERSION}`);
  const identity = `${runtime.hostname()}-${randomBytes(4).toString("hex")}`;
  const htc = htcjobConfig(config);
  const events = createEventRecorder({ client, component: "htcjob-operator", instance: identity, now: () => Date.now() });
  const lock = createLeaseLock({
    client,
    namespace: op.leaseNamespace ?? conn.namespace,
    name: leaseName(htc.operatorId),
    identity,
    leaseDurationSeconds: op.leaseDurationSeconds,
    now: () => Date.now(),
  });
  // client-go's defaults are 15 s, 10 s and 2 s: a shorter Lease keeps their proportions.
  const leaseMs = (op.leaseDurationSeconds ?? 15) * 1000;
  const timing = { renewDeadlineMs: Math.round((leaseMs * 2) / 3), retryMs: Math.round((leaseMs * 2) / 15) };

  let metricsServer: HttpServer | undefined;
  if (o.metricsListen) metricsServer = await serveMetrics(o.metricsListen, config, () => registry.render());

  const work: Work = {
    runtime,
    config,
    htc,
    planConfig: planConfig(config, o.dummyJob),
    client,
    store,
    condor,
    events,
    log,
    namespace: op.namespace,
    identity,
    dataRoot,
    spool,
    reconciles,
    writes,
  };
  const stopAll = new AbortController();
  // Leadership lost (the API server was away longer than the renew deadline, or another replica
  // took the Lease): the work stops, and this replica waits for the Lease again, as a new one would.
  const election = (async () => {
    while (!stopAll.signal.aborted) {
      const outcome = await runLeaderElection(
        { lock, ...timing, now: () => Date.now(), log: (m) => log.warn(m) },
        stopAll.signal,
        (lease) => lead(work, lease),
      );
      if (outcome === "lost") {
        log.warn("lost the leader-election Lease, or the work failed; stopped working and waiting for it again");
        // A term whose work failed at once (a store that fails) is not started again in a tight loop.
        await sleep(5000, stopAll.signal);
      }
    }
  })();
  log.info("started", { condorBin: prepared.bin, server: conn.server, origin: conn.origin, metricsUrl: metricsServer?.url, runtime: runtime.name });

  return async () => {
    log.info("shutting down");
    stopAll.abort();
    await election;
    await metricsServer?.close(0);
    close();
    store.close();
  };
}

/** One term of leadership: ends with the Lease, or when the work fails, so that the watch ends with it too. */
async function lead(w: Work, lease: AbortSignal): Promise<void> {
  const { store, dataRoot, log, config } = w;
  const term = new AbortController();
  const endTerm = () => term.abort();
  lease.addEventListener("abort", endTerm, { once: true });
  const leading = term.signal;
  const queue = createWorkQueue({
    random: Math.random,
    backoff: { initialMs: 1000, maxMs: 60_000 },
    log: (key, err, delay) => {
      w.reconciles.inc({ outcome: "error" });
      log.warn("reconcile failed; trying again", { htcjob: key, error: errorText(err), againInMs: delay });
    },
  });
  const informer = createInformer<HTCJob>({
    client: w.client,
    resource: HTCJOBS,
    namespace: w.namespace,
    handler: (_type, obj) => queue.add(keyOf(obj)),
    random: Math.random,
    now: () => Date.now(),
    log: (m) => log.warn(m),
  });
  const controller = createController({
    client: w.client,
    cached: (ns, name) => informer.get(ns, name),
    cachedAll: () => informer.list(),
    enqueue: (key, delay) => queue.add(key, delay),
    store,
    condor: w.condor,
    events: w.events,
    planConfig: w.planConfig,
    htcjob: w.htc,
    namespaces: config.HTCJob.Namespaces,
    watchedNamespace: w.namespace,
    dataRoot,
    spool: w.spool,
    terminalHoldCodes: config.TerminalHoldCodes,
    lostAfterMs: 60_000,
    log,
    now: () => Date.now(),
    leading,
    submitTimeoutMs: config.SubmitTimeoutSeconds * 1000,
    holdGraceMs: config.HoldGraceSeconds * 1000,
    onWrite: (what) => w.writes.inc({ what }),
    eventLog: () => driver.logForNewJob(),
    recorded: (cluster, procs) => driver.recorded(cluster, procs),
  });
  // What asks HTCondor about the procs, and when: the job event log, the slow reconciler, the
  // poll of spooled clusters (docs/operator.md#following-the-procs).
  const driver = createEventDriver({
    store,
    dataRoot,
    follow: (scope) => controller.follow(scope),
    jobStatus: (id) => controller.jobStatus(id),
    condor: w.condor,
    operatorId: w.htc.operatorId,
    statusCacheMs: Math.max(1, config.StatusCacheSeconds) * 1000,
    reconcileMs: config.ReconcileMinutes * 60_000,
    log,
    now: () => Date.now(),
    watchFolder: w.runtime.watchFolder,
  });
  log.info("leading: watching HTCJobs", { namespace: w.namespace ?? "(all)", identity: w.identity, dataRoot, spool: w.spool, operatorId: w.htc.operatorId });
  const watching = informer.run(leading);
  // The queue starts once the first list is in: before that a key would find nothing cached.
  while (!informer.synced() && !leading.aborted) await sleep(100, leading);
  // A deleted HTCJob's output goes after HTCJob.OutputRetentionSeconds (docs/operator.md#retention).
  const reap = () => {
    try {
      reapDeleted({ store, dataRoot, retentionMs: config.HTCJob.OutputRetentionSeconds * 1000, now: () => Date.now(), log });
    } catch (err) {
      log.warn("removing old output failed; trying again", { error: errorText(err) });
    }
  };
  let reaper: ReturnType<typeof setInterval> | undefined;
  try {
    await controller.sweep(w.namespace);
    // The procs are seen once before any status is written: a new term starts with no view, and
    // a status written from none would set running procs back to idle and repeat their Events.
    if (!leading.aborted) await driver.tick();
    driver.start();
    reap();
    reaper = setInterval(reap, REAP_INTERVAL_MS);
    await queue.run(4, leading, async (key) => {
      await controller.reconcile(key);
      w.reconciles.inc({ outcome: "ok" });
    });
  } finally {
    // Nothing of this term outlives it: not the timers, not a pass still asking HTCondor.
    clearInterval(reaper);
    endTerm();
    lease.removeEventListener("abort", endTerm);
    await driver.stop();
    await watching;
  }
}

/** A Lease name from the operator id (a DNS subdomain: lower case, no `_`). */
function leaseName(operatorId: string): string {
  const n = operatorId.toLowerCase().replace(/[^a-z0-9.-]/g, "-").replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, "");
  return n === "" ? "htcjob-operator" : n;
}

/** `htcjob logs NAMESPACE/NAME [--proc N] [--timestamps] [--config FILE]`; returns the exit code. */
function htcjobLogsCommand(runtime: Runtime, args: readonly string[], io: Io): number {
  let values;
  let positionals;
  try {
    ({ values, positionals } = parseArgs({
      args: [...args],
      options: {
        proc: { type: "string" },
        timestamps: { type: "boolean" },
        files: { type: "boolean" },
        file: { type: "string" },
        config: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      strict: true,
    }));
  } catch (err) {
    throw new UsageError(`htcjob logs: ${(err as Error).message.split("\n")[0]}`);
  }
  if (values.help) {
    io.out(OPERATOR_USAGE);
    return 0;
  }
  const target = positionals[0];
  if (positionals.length !== 1 || !target || !/^[^/\s]+\/[^/\s]+$/.test(target)) {
    throw new UsageError(
      `htcjob logs: give one NAMESPACE/NAME, e.g. default/queue (got ${positionals.length === 0 ? "none" : JSON.stringify(positionals.join(" "))})`,
    );
  }
  if (values.files && values.file !== undefined) throw new UsageError("htcjob logs: give --files (list) or --file PATH (print one), not both");
  const proc = values.proc === undefined ? 0 : Number(values.proc);
  if (!/^\d+$/.test(values.proc ?? "0") || !Number.isSafeInteger(proc)) throw new UsageError(`htcjob logs: --proc "${values.proc}" is not a ProcId (0, 1, …)`);
  const configPath = resolve(values.config ?? "./SidecarConfig.yaml");
  const { config, dir } = loadConfig({ config: configPath, given: new Set(values.config ? ["config"] : []) });
  const dataRoot = dataRootOf(config, dir);
  const [namespace, name] = target.split("/") as [string, string];
  const storePath = join(dataRoot, "htcjobs.db");
  if (!existsSync(storePath)) {
    io.err(`htcondor-sidecar: Cannot read the logs of HTCJob "${target}": no operator store at ${storePath} (is --config the operator's?)`);
    return 1;
  }
  const store = openHTCJobStore(runtime.openSqlite(storePath), storePath);
  let out;
  try {
    out = htcjobLogs({ store, namespace, name, proc, timestamps: values.timestamps === true, files: values.files === true, file: values.file });
  } finally {
    store.close();
  }
  if ("error" in out) {
    io.err(`htcondor-sidecar: ${out.error}`);
    return 1;
  }
  io.out(out.text);
  return 0;
}
