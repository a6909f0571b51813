/**
 * The only submit-description renderer: `JobPlan` → the text given to `condor_submit -terse job.sub`,
 * run with cwd = the pod's folder (which holds job.sh, env/ and volumes/), or an HTCJob's.
 *
 * Quoting rules (docs/htcondor.md#submit-file-rules): a submit file is line-based and condor_submit
 * expands `$(…)` macros in every value, so a value that could reach another line is refused (see
 * {@link submitValueProblem}) and every `$` is written as `$(DOLLAR)`. `MY.Attr` values are
 * ClassAd expressions; strings become ClassAd string literals (`\` and `"` escaped). Env values
 * never appear here: the job ad is readable by every user of the pool, so they travel in
 * `env/<key>.env` files.
 */
import type { ContainerPlan, JobPlan } from "../core/types.ts";
import { logFileName, stateAttrName } from "../core/types.ts";
import { invalid } from "../core/errors.ts";
import { quote } from "../core/pod.ts";
import { formatStateLine } from "../core/state-line.ts";
import { classAdString } from "../core/classad.ts";
import { formatContainerList } from "../core/container-list.ts";
import { submitKey, submitValueProblem } from "../core/submit-rules.ts";

/** Seconds added to the vacate time so the wrapper can report after stopping its containers. */
const VACATE_MARGIN_SECONDS = 10;
/** Seconds added to activeDeadlineSeconds + grace before HTCondor's own time limit removes the job. */
const DEADLINE_MARGIN_SECONDS = 60;

function checkKey(key: string, from: string): string {
  const k = submitKey(key);
  if ("problem" in k) throw invalid(`Cannot write submit command ${quote(key)} (${from}): ${k.problem}`);
  return k.key;
}

/** A submit-file value: one line ({@link submitValueProblem}), no macro expansion. */
export function submitValue(value: string, what = "value"): string {
  const problem = submitValueProblem(value);
  if (problem) throw invalid(`Cannot write submit command ${what}: the value ${problem}: ${quote(value)}`);
  return value.replaceAll("$", "$(DOLLAR)");
}

/** A ClassAd string literal (core/classad.ts), ready for a submit value. */
export function submitString(value: string, what = "value"): string {
  return submitValue(classAdString(value), what);
}

function listItem(item: string, what: string): string {
  if (item === "" || /[,\s]/.test(item)) {
    throw invalid(`Cannot list ${quote(item)} in ${what}: names with commas or spaces are not allowed`);
  }
  return submitValue(item, what);
}

function plainValue(value: string, what: string): string {
  if (value.includes('"') || value.trim() !== value || value === "") {
    throw invalid(`Cannot write submit command ${what}: ${quote(value)} is empty, quoted or padded`);
  }
  return submitValue(value, what);
}

function nonNegInt(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 0) throw invalid(`Cannot write submit command ${what}: ${n} is not a whole number`);
  return n;
}

/** Every per-container log file (current and previous), init containers first. */
export function logFiles(plan: JobPlan): string[] {
  const all: ContainerPlan[] = [...plan.initContainers, ...plan.containers];
  return all.flatMap((c) => [logFileName(c.name, c.init), logFileName(c.name, c.init, true)]);
}

/** The state line a container has until the wrapper reports: waiting ContainerCreating. */
export const INITIAL_STATE_LINE = formatStateLine({ state: "waiting", reason: "ContainerCreating", ready: false, restartCount: 0 });

/** The folder an HTCJob's working directory comes back as, in the proc's folder (job.sh's keep_work). */
export const WORK_OUTPUT = "work";

/** One submit command of a job, written by the rules above: its key and its value. */
export type SubmitCommand = readonly [key: string, value: string];

/**
 * The folder of an HTCJob's proc, below the HTCJob's folder: the proc's initialdir, where its
 * output returns. Outputs come back by name (job.out, the container log, podstate/), so each proc
 * needs a folder of its own; whoever submits creates `procs/<i>` for every proc first, since
 * condor_submit refuses an initialdir that does not exist.
 */
export function procDir(procId: number | string): string {
  return `procs/${procId}`;
}

/**
 * The commands of a job, in order: everything but `initialdir`, `executable` and `queue`.
 * `eventLog` is the absolute path of the sidecar's shared job event log, which many jobs append
 * to (docs/status.md#following-the-event-log); without it (a spooled job, whose log a remote
 * schedd writes) the job has its own `job.log` in the pod folder.
 */
export function jobCommands(plan: JobPlan, eventLog?: string): SubmitCommand[] {
  const out: SubmitCommand[] = [];
  const cmd = (key: string, value: string | number) => out.push([key, String(value)]);
  const r = plan.resources;
  const htcjob = plan.htcjob;
  cmd("universe", "vanilla");
  // The one value HTCondor fills in per proc, written as the macro itself: job.sh passes it on
  // to the container (docs/htcondor.md#the-jobs-environment has no ProcId variable).
  if (htcjob) cmd("arguments", "$(ProcId)");
  cmd("transfer_executable", "true");
  cmd("should_transfer_files", "YES");
  cmd("when_to_transfer_output", "ON_EXIT");
  if (plan.transferInput.length > 0) {
    // Relative to the initialdir: an HTCJob's procs start two folders down (procDir).
    const up = htcjob ? "../../" : "";
    cmd("transfer_input_files", plan.transferInput.map((f) => listItem(up + f, "transfer_input_files")).join(", "));
  }
  // With a shared filesystem the wrapper writes the logs straight into the pod folder: listed
  // here, a log missing from the sandbox at transfer time would hold the job
  // (docs/htcondor.md#submit-file-rules).
  // An HTCJob's working directory comes back as work/, which job.sh always creates
  // (docs/operator.md#output).
  const output = [...(plan.sharedFilesystem ? [] : logFiles(plan)), "podstate", ...(htcjob?.keepWork ? [WORK_OUTPUT] : [])];
  cmd("transfer_output_files", output.map((f) => listItem(f, "transfer_output_files")).join(", "));
  cmd("output", "job.out");
  cmd("error", "job.err");
  cmd("log", eventLog === undefined ? "job.log" : submitValue(eventLog, "log"));
  cmd("request_cpus", Math.max(1, nonNegInt(r.cpus, "request_cpus")));
  cmd("request_memory", `${nonNegInt(r.memoryMiB, "request_memory")}M`);
  if (r.diskKiB !== undefined) cmd("request_disk", `${nonNegInt(r.diskKiB, "request_disk")}K`);
  if (nonNegInt(r.gpus, "request_gpus") > 0) cmd("request_gpus", r.gpus);
  // No chirp for an HTCJob's procs: the operator reads no state from them, and a proc that could
  // rewrite its own ad could rewrite the attributes the operator searches by (docs/operator.md#never-twice).
  if (!htcjob) cmd("want_io_proxy", "true");
  const grace = nonNegInt(plan.terminationGracePeriodSeconds, "job_max_vacate_time");
  cmd("job_max_vacate_time", grace + VACATE_MARGIN_SECONDS);
  if (plan.activeDeadlineSeconds !== undefined) {
    const deadline = nonNegInt(plan.activeDeadlineSeconds, "allowed_job_duration");
    cmd("allowed_job_duration", deadline + grace + DEADLINE_MARGIN_SECONDS);
  }
  cmd("batch_name", plainValue(plan.batchName, "batch_name"));
  if (plan.submit.accountingGroup !== undefined) {
    cmd("accounting_group", plainValue(plan.submit.accountingGroup, "accounting_group"));
  }
  if (plan.submit.requirements !== undefined) cmd("requirements", submitValue(plan.submit.requirements, "requirements (config Submit.Requirements)"));
  const all = [...plan.initContainers, ...plan.containers];
  if (htcjob) {
    // Never the pod and sidecar labels: a sidecar on the same schedd must not adopt these procs.
    cmd("MY.HTCJobUID", submitString(plan.uid, "MY.HTCJobUID"));
    cmd("MY.HTCJobName", submitString(plan.name, "MY.HTCJobName"));
    cmd("MY.HTCJobNamespace", submitString(plan.namespace, "MY.HTCJobNamespace"));
    cmd("MY.HTCJobGeneration", nonNegInt(htcjob.generation, "MY.HTCJobGeneration"));
    cmd("MY.HTCJobOperatorId", submitString(htcjob.operatorId, "MY.HTCJobOperatorId"));
    if (htcjob.submitToken !== undefined) cmd("MY.HTCJobSubmitToken", submitString(htcjob.submitToken, "MY.HTCJobSubmitToken"));
  } else {
    cmd("MY.InterLinkPodUID", submitString(plan.uid, "MY.InterLinkPodUID"));
    cmd("MY.InterLinkPodName", submitString(plan.name, "MY.InterLinkPodName"));
    cmd("MY.InterLinkPodNamespace", submitString(plan.namespace, "MY.InterLinkPodNamespace"));
    cmd("MY.InterLinkSidecarId", submitString(plan.sidecarId, "MY.InterLinkSidecarId"));
    // The offloaded containers, so that a sidecar whose store was lost can adopt the job again.
    cmd("MY.InterLinkContainers", submitString(formatContainerList(all), "MY.InterLinkContainers"));
  }
  for (const c of all) {
    cmd(`MY.${stateAttrName(c.index, c.init)}`, submitString(INITIAL_STATE_LINE));
  }
  for (const [key, value] of plan.submit.lines) cmd(checkKey(key, "config Submit.ExtraLines"), submitValue(value, `${key} (config Submit.ExtraLines)`));
  const from = htcjob
    ? `HTCJob ${quote(plan.batchName)}: spec.htcopts`
    : `pod ${quote(plan.batchName)}: metadata.annotations["htcondor-job.vk.io/submit-options"]`;
  for (const [key, value] of plan.submit.podOptions ?? []) cmd(checkKey(key, from), submitValue(value, `${key} (${from})`));
  return out;
}

/** A pod's job as condor_submit gets it: the pod folder (its `initialdir`), a label for the comment, its commands. */
export interface SubmitJob {
  dir: string;
  /** `namespace/name (uid …)`, written as a comment. */
  label: string;
  commands: readonly SubmitCommand[];
  /** An HTCJob's: this many procs of one cluster, each in its own {@link procDir}. Never batched. */
  procs?: number;
}

/**
 * Jobs that may share one condor_submit: the same commands in the same order, each with a value.
 * A job that leaves a command unset inherits the first job's value for some of them (observed:
 * accounting_group, transfer_input_files, allowed_job_duration;
 * docs/htcondor.md#submitting-many-pods-at-once), so jobs of different shapes never share a
 * cluster.
 */
export function submitShape(job: SubmitJob): string {
  return job.commands.map(([key]) => key).join(" ");
}

/** The macro that holds job `step`'s value of command `k` (`InterLink…` keys are the sidecar's, see core/submit-rules.ts). */
const macro = (k: number, step: number | string) => `InterLinkV${k}_${step}`;

/**
 * One submit description for jobs of one shape (see {@link submitShape}): one cluster, one
 * proc per job, in order. A value that is the same for every job is written once; the others
 * are macros indexed by `$(Step)`, one line per job, which condor_submit expands per proc (the
 * observed form; several `queue` statements are deprecated and several files on one command
 * line submit only the last). `initialdir` is the pod's folder and `executable` its job.sh,
 * so the file may live anywhere.
 */
export function renderBatch(jobs: readonly SubmitJob[]): string {
  if (jobs.length === 0) throw new Error("renderBatch: no jobs");
  if (jobs.some((j) => j.procs !== undefined)) {
    // One HTCJob, one cluster of its own: never beside pods or another HTCJob.
    if (jobs.length !== 1) throw new Error("renderBatch: an HTCJob's procs are a cluster of their own");
    return renderCluster(jobs[0]!, jobs[0]!.procs!);
  }
  const shape = submitShape(jobs[0]!);
  if (jobs.some((j) => submitShape(j) !== shape)) throw new Error("renderBatch: the jobs have different commands");
  const dirs = jobs.map((j) => submitValue(j.dir, "initialdir"));
  const columns: SubmitCommand[][] = [dirs.map((d) => ["initialdir", d] as const), ...jobs[0]!.commands.map((_, k) => jobs.map((j) => j.commands[k]!))];
  const out = [
    `# htcondor-sidecar: ${
      jobs.length === 1 ? "one pod" : `${jobs.length} pods, one job each ($(Step) picks each job's values)`
    }; job.sh runs the pod's containers`,
  ];
  const shared: string[] = [];
  const perJob: string[][] = jobs.map((j, step) => [`# job ${step} (Step ${step}): pod ${submitValue(j.label, "comment")}`]);
  columns.forEach((column, k) => {
    const key = column[0]![0];
    const values = column.map(([, v]) => v);
    if (values.every((v) => v === values[0])) {
      shared.push(`${key} = ${values[0]}`);
      return;
    }
    values.forEach((v, step) => perJob[step]!.push(`${macro(k, step)} = ${v}`));
    shared.push(`${key} = $(${macro(k, "$(Step)")})`);
  });
  // The executable is the pod's job.sh: an absolute path, since initialdir does not apply to it.
  shared.splice(1, 0, `executable = ${dirs.every((d) => d === dirs[0]) ? dirs[0] : `$(${macro(0, "$(Step)")})`}/job.sh`);
  if (jobs.length === 1) out.push(`# pod ${submitValue(jobs[0]!.label, "comment")}`);
  else out.push(...perJob.flatMap((lines) => [...lines, ""]));
  out.push(...shared, "", `queue ${jobs.length}`);
  return out.join("\n") + "\n";
}

/**
 * An HTCJob's procs: one cluster of `procs`, each proc in its own folder below `job.dir`
 * ({@link procDir}, indexed by `$(ProcId)`) and given its ProcId as job.sh's argument.
 */
function renderCluster(job: SubmitJob, procs: number): string {
  if (!Number.isSafeInteger(procs) || procs < 1) throw invalid(`Cannot queue ${procs} procs: the count must be a whole number of at least 1`);
  const dir = submitValue(job.dir, "initialdir");
  return [
    `# htcondor-sidecar: one HTCJob, ${procs} proc(s) of one cluster; job.sh runs its script with the proc's ProcId`,
    `# HTCJob ${submitValue(job.label, "comment")}`,
    `initialdir = ${dir}/${procDir("$(ProcId)")}`,
    `executable = ${dir}/job.sh`,
    ...job.commands.map(([k, v]) => `${k} = ${v}`),
    "",
    `queue ${procs}`,
  ].join("\n") + "\n";
}

/**
 * A job alone: the description `job.sub` in the pod folder shows, and a batch of one submits;
 * for an HTCJob, its whole cluster.
 */
export function renderSubmit(plan: JobPlan, dir: string, eventLog?: string): string {
  const job: SubmitJob = { dir, label: `${plan.batchName} (uid ${plan.uid})`, commands: jobCommands(plan, eventLog) };
  if (plan.htcjob) job.procs = plan.htcjob.procs;
  return renderBatch([job]);
}
