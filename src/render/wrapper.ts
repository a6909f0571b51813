/**
 * `renderWrapper(plan)`: the job's executable, a bash script that runs the pod's containers.
 *
 * Layout of the script: a header, the plan (bash variables, arrays and one function per
 * container, every value quoted by {@link sh}), the constant library (wrapper-lib.bash, imported
 * as text: real bash that shellcheck reads, embedded by `bun build --compile`), then `main`. User data is never spliced into code: it only ever appears as a single-quoted word.
 * The deliberate code channels (CommandPrefix, pre-exec, wstunnel commands) are quoted strings
 * too, run by the library with `bash -c "$snippet"`; interLink's job script is a file of the pod
 * (plan.jobScript), which the plan names and the library executes.
 *
 * To run a wrapper outside HTCondor: put the pod's files (plan.files) and job.sh in a directory
 * and run `env -i _CONDOR_SCRATCH_DIR=<dir> bash <dir>/job.sh` (see test/render/run.test.ts).
 */
import type { ContainerPlan, Handler, JobPlan, MountPlan, ProbePlan } from "../core/types.ts";
import { containerKey, stateAttrName } from "../core/types.ts";
import { invalid } from "../core/errors.ts";
import { normalizeAbsolute } from "../core/pod.ts";
import { sh } from "./sh.ts";
import WRAPPER_LIB_TEXT from "./wrapper-lib.bash" with { type: "text" };

/** The constant library, the same for every pod (wrapper-lib.bash). */
export const WRAPPER_LIB: string = WRAPPER_LIB_TEXT;

export interface WrapperOptions {
  /** How long a dummy job (plan.dummy) reports its containers running, in seconds (default 1). */
  dummySeconds?: number;
}

/** Default run time of a dummy job: short, since it only proves the submit/status path. */
export const DEFAULT_DUMMY_SECONDS = 1;

/** Bash function name that loads one container's plan. */
function planFunction(c: ContainerPlan): string {
  return `${c.init ? "init" : "ctr"}_${c.index}`;
}

/** Instance names: `il-` + the first 12 alphanumerics of the pod UID (the wrapper adds its pid and the key). */
export function instancePrefix(uid: string): string {
  const short = uid.replace(/[^A-Za-z0-9]/g, "").slice(0, 12).toLowerCase();
  return `il-${short || "pod"}`;
}

function handlerWords(h: Handler): string {
  switch (h.kind) {
    case "exec":
      if (h.command.length === 0) throw invalid("Cannot render an exec handler without a command");
      return sh`exec ${h.command}`;
    case "httpGet": {
      const path = h.path.startsWith("/") ? h.path : `/${h.path}`;
      const headers = h.headers.flat();
      return sh`httpGet ${h.scheme} ${h.host} ${h.port} ${path} ${h.headers.length} ${headers}`.trimEnd();
    }
    case "tcpSocket":
      return sh`tcpSocket ${h.host} ${h.port}`;
    case "sleep":
      return sh`sleep ${h.seconds}`;
  }
}

function handlerComment(h: Handler): string {
  switch (h.kind) {
    case "exec":
      return "exec in the container";
    case "httpGet":
      return `HTTP GET (${h.scheme})`;
    case "tcpSocket":
      return "TCP connect";
    case "sleep":
      return "sleep";
  }
}

/**
 * One probe: `(delay period timeout success failure grace handler…)`. `grace` is the time a
 * container killed by this probe's failure gets: the probe's own, else the pod's.
 */
function probeLine(name: string, p: ProbePlan | undefined, podGrace: number): string {
  if (p === undefined) return `  ${name}=()`;
  const grace = p.terminationGracePeriodSeconds ?? podGrace;
  const nums = [p.initialDelaySeconds, p.periodSeconds, p.timeoutSeconds, p.successThreshold, p.failureThreshold, grace];
  return [
    `  # ${handlerComment(p.handler)}: first after ${p.initialDelaySeconds}s, every ${p.periodSeconds}s, ` +
    `timeout ${p.timeoutSeconds}s, ${p.successThreshold} success(es) / ${p.failureThreshold} failure(s) in a row` +
    // A readiness probe's failure kills nothing (its grace column is not read).
    (name === "C_READINESS_PROBE" ? "" : `; failing, kills with ${grace}s grace`),
    `  ${name}=(${sh`${nums}`} ${handlerWords(p.handler)})`,
  ].join("\n");
}

function hookLine(name: string, h: Handler | undefined): string {
  return h === undefined ? `  ${name}=()` : `  ${name}=(${handlerWords(h)})  # ${handlerComment(h)}`;
}

/** The volume's own folder a mount's source must stay in (see MountPlan), and the path below it. */
export function mountRoot(m: MountPlan): { root: string; sub: string } {
  const { path } = m.source;
  const root = m.source.root ?? (m.source.kind === "sandbox" ? path.split("/").slice(0, 2).join("/") : path);
  const inside = path === root || (root === "/" ? path.startsWith("/") : path.startsWith(`${root}/`));
  if (root === "" || !inside) throw invalid(`Cannot bind ${JSON.stringify(path)}: it is not below its volume's folder ${JSON.stringify(root)}`);
  const sub = path.slice(root.length).replace(/^\/+/, "");
  if (m.source.kind === "sandbox" && (root.startsWith("/") || path.split("/").includes(".."))) {
    throw invalid(`Cannot bind ${JSON.stringify(path)}: sandbox paths must be relative, without '..'`);
  }
  if (sub.split("/").includes("..")) throw invalid(`Cannot bind ${JSON.stringify(path)}: a subPath may not contain '..'`);
  return { root, sub };
}

function mountWords(m: MountPlan): string {
  for (const p of [m.source.path, m.target]) {
    // apptainer parses --bind as CSV split on ':' (a '"' opens a quoted field); no newlines either.
    if (/[:,"\n\r\0]/.test(p) || p === "") {
      throw invalid(`Cannot bind ${JSON.stringify(p)}: mount paths may not contain ':', ',', '"' or line breaks`);
    }
  }
  if (!m.target.startsWith("/")) throw invalid(`Cannot bind to ${JSON.stringify(m.target)}: the mount path must be absolute`);
  if (m.source.kind === "host" && !m.source.path.startsWith("/")) {
    throw invalid(`Cannot bind host path ${JSON.stringify(m.source.path)}: it must be absolute`);
  }
  const { root, sub } = mountRoot(m);
  return sh`    ${m.source.kind} ${root} ${sub} ${m.target} ${m.readOnly ? "ro" : "rw"}`;
}

/**
 * The order binds are made in: parent before child (fewer path elements first, pod order among
 * equals), as containerd's CRI sorts a container's mounts. Binds are made in order, so a parent
 * bound after its child would hide it (`/data/sub` then `/data`).
 */
export function bindOrder(mounts: readonly MountPlan[]): MountPlan[] {
  // One spelling per mount point (`/a//b/./` → `/a/b`), for the order and the wrapper's nesting check.
  const depth = (m: MountPlan) => m.target.split("/").length;
  return mounts
    // A relative target stays as it is, for mountWords to refuse (the plan makes them absolute).
    .map((m) => ({ ...m, target: m.target.startsWith("/") ? normalizeAbsolute(m.target) : m.target }))
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m) - depth(b.m) || a.i - b.i)
    .map(({ m }) => m);
}

/** The runtime's GPU support for a container: --rocm for its amd.com/gpu GPUs, --nv for the others. */
export function gpuFlags(c: ContainerPlan): string[] {
  const amd = c.amdGpus ?? 0;
  for (const [what, n] of [["gpus", c.gpus], ["amdGpus", amd]] as const) {
    if (!Number.isSafeInteger(n) || n < 0) throw invalid(`Cannot render container ${JSON.stringify(c.name)}: ${what} must be a whole number >= 0`);
  }
  if (amd > c.gpus) throw invalid(`Cannot render container ${JSON.stringify(c.name)}: amdGpus (${amd}) is more than gpus (${c.gpus})`);
  return [...(c.gpus > amd ? ["--nv"] : []), ...(amd > 0 ? ["--rocm"] : [])];
}

function arrayLines(name: string, words: readonly string[], indent = ""): string {
  if (words.length === 0) return `${indent}${name}=()`;
  return [`${indent}${name}=(`, ...words.map((w) => `${indent}  ${sh`${w}`}`), `${indent})`].join("\n");
}

function containerSection(c: ContainerPlan, podGrace: number): string {
  const key = containerKey(c.name, c.init);
  const where = `${c.init ? "spec.initContainers" : "spec.containers"}[${c.index}]`;
  const image = c.image;
  if (image.kind === "container" && (image.uri === "" || image.uri.startsWith("-"))) {
    throw invalid(`Cannot run container ${JSON.stringify(c.name)}: ${JSON.stringify(image.uri)} is not an image reference`);
  }
  return [
    `# ${where}`,
    "# shellcheck disable=SC2317 # main calls it by name (INIT_CONTAINERS, CONTAINERS)",
    `${planFunction(c)}() {`,
    sh`  C_NAME=${c.name} C_KEY=${key} C_INIT=${c.init ? 1 : 0} C_ATTR=${stateAttrName(c.index, c.init)}`,
    image.kind === "host"
      ? sh`  C_IMAGE_KIND=host C_IMAGE='' C_HOST_SITE=${image.site ?? ""}  # runs on the worker, no container`
      : sh`  C_IMAGE_KIND=container C_IMAGE=${image.uri} C_HOST_SITE=''`,
    `  C_COMMAND=(${sh`${c.command ?? []}`})  # empty: the image's entrypoint (run)`,
    `  C_ARGS=(${sh`${c.args ?? []}`})`,
    ...(c.procIdArg ? ['  C_ARGS+=("$PROC_ID")  # this proc\'s ProcId (see PROC_ID)'] : []),
    sh`  C_WORKDIR=${c.workingDir ?? ""}`,
    c.mounts.length === 0 ? "  C_MOUNTS=()" : [
      "  C_MOUNTS=(  # kind, volume folder (sandbox: relative to it), subPath, mount path, ro|rw; parent first",
      ...bindOrder(c.mounts).map(mountWords),
      "  )",
    ].join("\n"),
    `  C_RUNTIME_OPTIONS=(${sh`${c.runtimeOptions}`})  # instance start`,
    `  C_EXEC_OPTIONS=(${sh`${c.execOptions}`})  # every exec/run into the instance`,
    c.gpus > 0 ? sh`  C_GPU_FLAGS=(${gpuFlags(c)})  # ${c.gpus} GPU(s): --rocm for amd.com/gpu, --nv for the others` : sh`  C_GPU_FLAGS=(${gpuFlags(c)})`,
    probeLine("C_STARTUP_PROBE", c.startupProbe, podGrace),
    probeLine("C_READINESS_PROBE", c.readinessProbe, podGrace),
    probeLine("C_LIVENESS_PROBE", c.livenessProbe, podGrace),
    hookLine("C_POST_START", c.postStart),
    hookLine("C_PRE_STOP", c.preStop),
    "}",
  ].join("\n");
}

/**
 * An HTCJob's procs share one wrapper; HTCondor gives each its ProcId as the wrapper's argument
 * (`arguments = $(ProcId)`, render/submit.ts), since no variable of the job's environment holds it.
 */
const PROC_ID_LINES = [
  "# This proc's ProcId: HTCondor passes it as the argument (arguments = $(ProcId)).",
  "PROC_ID=${1-}",
  `[[ $PROC_ID =~ ^[0-9]+$ ]] || { echo "job.sh: expected the proc's ProcId as its argument, got '$PROC_ID'" >&2; exit 2; }`,
];

function planSection(plan: JobPlan, opts: WrapperOptions): string {
  const modes = plan.files.flatMap((f) => {
    if (f.path.startsWith("/") || f.path.split("/").includes("..")) {
      throw invalid(`Cannot ship file ${JSON.stringify(f.path)}: paths must be relative, without '..'`);
    }
    return [`0${((f.podMode ?? f.mode) & 0o7777).toString(8)}`, f.path];
  });
  const all = [...plan.initContainers, ...plan.containers];
  return [
    "# ===========================================================================================",
    "# The plan: what this job runs (generated from the pod; every value is one quoted word).",
    "# ===========================================================================================",
    sh`POD_NAMESPACE=${plan.namespace}`,
    sh`POD_NAME=${plan.name}`,
    sh`POD_UID=${plan.uid}`,
    sh`POD_IP=${plan.podIP ?? ""}`,
    sh`INSTANCE_PREFIX=${instancePrefix(plan.uid)}`,
    ...(all.some((c) => c.procIdArg) ? PROC_ID_LINES : []),
    "",
    sh`RESTART_POLICY=${plan.restartPolicy}  # Never | OnFailure | Always`,
    sh`MAX_RESTARTS=${plan.maxRestarts}`,
    sh`RESTART_AFTER_SUCCESS=${plan.restartAfterSuccess ? 1 : 0}  # Always: also restart after exit 0`,
    sh`BACKOFF_INITIAL_SECONDS=${plan.backoffInitialSeconds}`,
    sh`BACKOFF_MAX_SECONDS=${plan.backoffMaxSeconds}`,
    sh`GRACE_SECONDS=${plan.terminationGracePeriodSeconds}`,
    sh`ACTIVE_DEADLINE_SECONDS=${plan.activeDeadlineSeconds ?? 0}  # 0: none`,
    sh`DUMMY=${plan.dummy ? 1 : 0}  # 1: report the containers running, sleep, report them completed`,
    sh`SHARED_FILESYSTEM=${plan.sharedFilesystem ? 1 : 0}  # 1: container logs go to $_CONDOR_JOB_IWD, the pod folder`,
    sh`DUMMY_SECONDS=${opts.dummySeconds ?? DEFAULT_DUMMY_SECONDS}`,
    "",
    "# Deliberate code channels (site config and allowed annotations), run with bash -c.",
    sh`COMMAND_PREFIX=${plan.commandPrefix ?? ""}`,
    arrayLines("BACKGROUND_COMMANDS", plan.backgroundCommands),
    arrayLines("PRE_EXEC", plan.preExec),
    plan.jobScript === undefined
      ? "JOB_SCRIPT=''  # none: the containers run"
      : sh`JOB_SCRIPT=${plan.jobScript}  # interLink's jobScript (a file of the pod): runs instead of the containers`,
    "",
    sh`RUNTIME_PINNED=${plan.runtime.pinned ?? ""}  # empty: apptainer, then singularity`,
    arrayLines("RUNTIME_SEARCH_PATH", plan.runtime.searchPath),
    sh`RUNTIME_NO_HOME=${plan.runtime.noHome ? 1 : 0}`,
    sh`RUNTIME_CACHE_DIR=${plan.runtime.cacheDir ?? ""}`,
    sh`OLD_RUNTIME=${plan.runtime.oldRuntime}  # without --no-eval: warn | refuse`,
    "",
    arrayLines("EMPTY_DIRS", plan.emptyDirs),
    ...(plan.htcjob?.keepWork
      ? [
        "# An HTCJob: this emptyDir comes back as work/, whole or not at all (keep_work).",
        sh`KEEP_WORK_DIR=${plan.htcjob.keepWork.volume}`,
        sh`KEEP_WORK_MAX_BYTES=${plan.htcjob.keepWork.maxBytes}`,
        sh`KEEP_WORK_MAX_FILES=${plan.htcjob.keepWork.maxFiles}`,
      ]
      : []),
    "# A hostPath volume is bound only when it resolves, on the worker, below one of these (resolved too).",
    arrayLines("HOST_PATH_PREFIXES", plan.hostPathPrefixes),
    modes.length === 0
      ? "FILE_MODES=()"
      : ["FILE_MODES=(  # mode path: HTCondor's transfer may not keep them", ...chunk(modes, 2).map((p) => `  ${sh`${p}`}`), ")"].join("\n"),
    `INIT_CONTAINERS=(${plan.initContainers.map(planFunction).join(" ")})`,
    `CONTAINERS=(${plan.containers.map(planFunction).join(" ")})`,
    "",
    ...all.flatMap((c) => [containerSection(c, plan.terminationGracePeriodSeconds), ""]),
  ].join("\n");
}

function chunk<T>(xs: readonly T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

const HEADER = `#!/bin/bash
# htcondor-sidecar job wrapper: runs one Kubernetes pod as this HTCondor job.
#
# Order: CommandPrefix, background commands, pre-exec snippets, init containers one at a time,
# then all containers together (each as an Apptainer/Singularity instance), or in their place
# interLink's job script (JOB_SCRIPT), outside any container. Each container's
# state line goes to podstate/<key> and to the job attribute named in its plan (condor_chirp);
# its output, every line timestamped, to <key>.log (in the pod folder with a shared filesystem);
# the wrapper's own messages to
# podstate/wrapper.log. The job exits with the highest container exit code.
# shellcheck disable=SC2016 # the plan's values are data: '$' in single quotes stays literal
set -u
`;

const MAIN = `main "$@"\n`;

/** Renders the wrapper script for a plan. */
export function renderWrapper(plan: JobPlan, opts: WrapperOptions = {}): string {
  const seen = new Set<string>();
  for (const c of [...plan.initContainers, ...plan.containers]) {
    const key = containerKey(c.name, c.init);
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(c.name)) {
      throw invalid(`Cannot render container ${JSON.stringify(c.name)}: the name is not a DNS label`);
    }
    if (seen.has(key)) throw invalid(`Cannot render container ${JSON.stringify(c.name)}: the name is used twice`);
    seen.add(key);
  }
  if (plan.jobScript !== undefined) {
    const file = plan.files.find((f) => f.path === plan.jobScript);
    // The wrapper names the script's file, never its text; that file must ship with the job.
    if (!file || !/^[A-Za-z0-9._-]+$/.test(plan.jobScript) || !plan.transferInput.includes(plan.jobScript)) {
      throw invalid(
        `Cannot run the job script ${JSON.stringify(plan.jobScript)}: it must be a file of the plan in the sandbox's top folder, shipped with the job`,
      );
    }
    if (((file.podMode ?? file.mode) & 0o700) !== 0o700) {
      throw invalid(`Cannot run the job script ${JSON.stringify(plan.jobScript)}: its mode must let the job read and run it`);
    }
    if (plan.containers.length === 0) throw invalid("Cannot run a job script without a container to report it");
  }
  return [HEADER, planSection(plan, opts), WRAPPER_LIB, MAIN].join("\n");
}
