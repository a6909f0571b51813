/**
 * interLink's `jobScript` (docs/interlink.md#the-create-request): with a `JobScriptTemplate` or a
 * `JobScriptBuilderURL`, interLink sends a complete script, which the job then runs instead of the
 * pod's containers, as the SLURM plugin does. It runs on the worker outside any container, and a
 * template can paste pod fields into it unquoted: a deliberate code channel, off by default
 * (`Channels.JobScript`; docs/threat-model.md#deliberate-code-channels). What the job does with it:
 * docs/pod-to-job.md#the-job-script. Pure.
 */
import type { CreateRequest } from "./pod.ts";
import { podError, type Quote, SHELL_IDENTIFIER } from "./pod.ts";
import { BASH_OWN_VARIABLES, type JobPlan, type PlanConfig } from "./types.ts";

/**
 * Where the script lives, in the pod folder and in the job's sandbox: a name of the sidecar's,
 * so that the wrapper and the submit file only ever name this constant, never the script's text.
 */
export const JOB_SCRIPT_FILE = "job-script.sh";

/**
 * The script the request carries, or undefined when it has none. Go leaves an empty string out
 * (`omitempty`); a blank one is read as absent too, as a blank annotation is. Refused, with how to
 * turn the channel on, when the site has not.
 */
export function requestedJobScript(req: CreateRequest, cfg: PlanConfig, label: string): string | undefined {
  const text = req.jobScript;
  if (text === undefined || text.trim() === "") return undefined;
  if (!cfg.allowJobScript) {
    throw podError(
      label,
      ["jobScript"],
      "interLink sent a job script (its JobScriptTemplate or the virtual kubelet's JobScriptBuilderURL), and this site does not run job scripts: " +
        "set Channels.JobScript: true in the sidecar's SidecarConfig.yaml to run it instead of the containers, or remove the template from interLink's configuration",
    );
  }
  return text;
}

/**
 * A name the script can get only through its environment: the wrapper leaves out every other
 * one (a command line would be the only way, docs/threat-model.md#3-secret-values-on-command-lines).
 */
export function scriptCanReceive(name: string): boolean {
  return SHELL_IDENTIFIER.test(name) && !BASH_OWN_VARIABLES.test(name);
}

/**
 * Makes a planned pod run the script: the file (0700, secret, since a template can paste the
 * pod's data into it) ships with the job, the wrapper runs it, and what the pod asks for that a
 * script does not do is said in the warnings, quoted with the request's own quoting (pod.ts
 * requestQuote: an env name may be made from a secret's key).
 */
export function withJobScript(plan: JobPlan, text: string, label: string, quote: Quote): void {
  const first = plan.containers[0];
  if (!first) {
    throw podError(label, ["jobScript"], "the pod has no offloaded container to report the job script's state and output: offload at least one container");
  }
  plan.files.push({ path: JOB_SCRIPT_FILE, content: new TextEncoder().encode(text), mode: 0o700, secret: true });
  if (!plan.transferInput.includes(JOB_SCRIPT_FILE)) plan.transferInput.push(JOB_SCRIPT_FILE);
  plan.jobScript = JOB_SCRIPT_FILE;

  const w = (what: string) => plan.warnings.push(`jobScript: ${what}`);
  w(`the job runs interLink's job script instead of the containers; its output is the log of container ${quote(first.name)}`);
  const left = first.env.map(([n]) => n).filter((n) => !scriptCanReceive(n));
  if (left.length > 0) {
    w(`env ${left.map((n) => quote(n)).join(", ")} of container ${quote(first.name)} cannot reach the job script: only a command line could carry such names`);
  }
  const unrun = [...plan.initContainers, ...plan.containers].filter((c) => c.startupProbe || c.readinessProbe || c.livenessProbe || c.postStart || c.preStop);
  if (unrun.length > 0) w(`probes and lifecycle hooks do not run with a job script (containers ${unrun.map((c) => quote(c.name)).join(", ")})`);
  if (plan.restartPolicy !== "Never") w(`the job script runs once: restartPolicy ${plan.restartPolicy} does not restart it`);
}
