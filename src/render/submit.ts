/**
 * The only submit-description renderer: `JobPlan` → the text given to `condor_submit -terse job.sub`,
 * run with cwd = the pod's folder (which holds job.sh, env/ and volumes/).
 *
 * Quoting rules (spec: htcondor-cli.md §1.4): a submit file is line-based and condor_submit expands
 * `$(…)` macros in every value, so a value that could reach another line is refused (see
 * {@link submitValueProblem}) and every `$` is written as `$(DOLLAR)`. `MY.Attr` values are
 * ClassAd expressions; strings become ClassAd string literals (`\` and `"` escaped). Env values
 * never appear here: the job ad is readable by every user of the pool, so they travel in
 * `env/<key>.env` files.
 */
import type { ContainerPlan, JobPlan } from "../core/types.ts";
import { POD_SUBMIT_OPTIONS_HEADER, containerKey, logFileName, stateAttrName } from "../core/types.ts";
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

export function renderSubmit(plan: JobPlan): string {
  const out: string[] = [];
  const cmd = (key: string, value: string | number) => out.push(`${key} = ${value}`);
  const r = plan.resources;

  out.push(`# HTCondor job for pod ${submitValue(plan.batchName, "comment")} (uid ${submitValue(plan.uid, "comment")})`);
  out.push("# Rendered by htcondor-sidecar; job.sh runs the pod's containers.");
  cmd("universe", "vanilla");
  cmd("executable", "job.sh");
  cmd("transfer_executable", "true");
  cmd("should_transfer_files", "YES");
  cmd("when_to_transfer_output", "ON_EXIT");
  if (plan.transferInput.length > 0) {
    cmd("transfer_input_files", plan.transferInput.map((f) => listItem(f, "transfer_input_files")).join(", "));
  }
  // With a shared filesystem the wrapper writes the logs straight into the pod folder: listed
  // here, a log missing from the sandbox at transfer time would hold the job (spec: htcondor-cli §1.4).
  const output = [...(plan.sharedFilesystem ? [] : logFiles(plan)), "podstate"];
  cmd("transfer_output_files", output.map((f) => listItem(f, "transfer_output_files")).join(", "));
  cmd("output", "job.out");
  cmd("error", "job.err");
  cmd("log", "job.log");
  out.push("");
  cmd("request_cpus", Math.max(1, nonNegInt(r.cpus, "request_cpus")));
  cmd("request_memory", `${nonNegInt(r.memoryMiB, "request_memory")}M`);
  if (r.diskKiB !== undefined) cmd("request_disk", `${nonNegInt(r.diskKiB, "request_disk")}K`);
  if (nonNegInt(r.gpus, "request_gpus") > 0) cmd("request_gpus", r.gpus);
  out.push("");
  cmd("want_io_proxy", "true");
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
  out.push("");
  cmd("MY.InterLinkPodUID", submitString(plan.uid, "MY.InterLinkPodUID"));
  cmd("MY.InterLinkPodName", submitString(plan.name, "MY.InterLinkPodName"));
  cmd("MY.InterLinkPodNamespace", submitString(plan.namespace, "MY.InterLinkPodNamespace"));
  cmd("MY.InterLinkSidecarId", submitString(plan.sidecarId, "MY.InterLinkSidecarId"));
  const all = [...plan.initContainers, ...plan.containers];
  // The offloaded containers, so that a sidecar whose store was lost can adopt the job again.
  cmd("MY.InterLinkContainers", submitString(formatContainerList(all), "MY.InterLinkContainers"));
  for (const c of all) {
    cmd(`MY.${stateAttrName(c.index, c.init)}`, submitString(INITIAL_STATE_LINE));
  }
  if (plan.submit.lines.length > 0) {
    out.push("");
    out.push("# Site policy (config Submit.ExtraLines)");
    for (const [key, value] of plan.submit.lines) cmd(checkKey(key, "config Submit.ExtraLines"), submitValue(value, `${key} (config Submit.ExtraLines)`));
  }
  const podOptions = plan.submit.podOptions ?? [];
  if (podOptions.length > 0) {
    const from = `pod ${quote(plan.batchName)}: metadata.annotations["htcondor-job.vk.io/submit-options"]`;
    out.push("");
    out.push(POD_SUBMIT_OPTIONS_HEADER);
    for (const [key, value] of podOptions) cmd(checkKey(key, from), submitValue(value, `${key} (${from})`));
  }
  out.push("");
  out.push("queue 1");
  return out.join("\n") + "\n";
}
