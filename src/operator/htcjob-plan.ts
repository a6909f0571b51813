/**
 * planHTCJob: one HTCJob (htc.cern.ch/v1alpha1) → one JobPlan (core/types.ts) for ONE cluster of
 * `queue` procs. Pure.
 *
 * The HTCJob's script runs as a pod's container would, through the pod planner: its image and the
 * site's ImageOverrides, its resources (DefaultResources, DefaultFlavor, the namespace's
 * accounting group) and the wrapper all come from there. The HTCJob is put as a pod of one
 * container, restartPolicy Never:
 *
 *   the script       a file mounted read-only at HTCJOB_SCRIPT_PATH (/htcjob/script)
 *   the argv         <command words> /htcjob/script <ProcId>
 *   the working dir  HTCJOB_WORKDIR (/htcjob/work), an empty folder of the proc's sandbox, which
 *                    comes back as the proc's `work/` within HTCJob.MaxOutputBytes (keepWork)
 *
 * What the pod planner cannot know is added to the plan afterwards: the proc count, the ProcId
 * argument, the HTCJob's labels (never the pod's or the sidecar's), and `spec.htcopts` checked
 * against the HTCJob allowlist (config `HTCJob.SubmitOptions`).
 *
 * Whatever cannot be run is refused here, before anything is submitted: a SidecarError
 * ("invalid") whose one-line message names the field and its value.
 */
import { z } from "zod";
import { SidecarError } from "../core/errors.ts";
import { hasControlOrLineBreak } from "../core/errors.ts";
import { canonicalImage } from "../core/images.ts";
import { type CreateRequest, parseCreateRequest, quote } from "../core/pod.ts";
import { planJob } from "../core/plan.ts";
import { parseSubmitOptions } from "../core/plan/submit-options.ts";
import type { HTCJobConfig, JobPlan, PlanConfig } from "../core/types.ts";

/** Where the script is in the container. */
export const HTCJOB_SCRIPT_PATH = "/htcjob/script";
/** The script's working directory in the container: an empty folder of the proc's own sandbox. */
export const HTCJOB_WORKDIR = "/htcjob/work";
/** The container's name, and so its log's (`c.htcjob.log`) and its state's (`podstate/c.htcjob`). */
export const HTCJOB_CONTAINER = "htcjob";
/** The sandbox folders behind the two mounts (the pod planner's volume layout). */
const SCRIPT_VOLUME = "htcjob-script";
const WORK_VOLUME = "htcjob-work";
const SCRIPT_KEY = "script";

/** What the watch hands over: the object's identity and its spec, not yet checked. */
export interface HTCJobObject {
  namespace: string;
  name: string;
  uid: string;
  generation: number;
  spec: unknown;
}

/** A whole number, with the reason an API server would give when it is not. */
const count = z.number({ error: (i) => (i.input === undefined ? "is required" : `must be a whole number, got ${show(i.input)}`) }).int({
  error: (i) => `must be a whole number, got ${show(i.input)}`,
});
const text = z.string({ error: (i) => (i.input === undefined ? "is required" : `must be a string, got ${show(i.input)}`) });

/**
 * spec, as the original operator reads it (docs/pod-to-job.md#an-htcjobs-procs): `name` is accepted and
 * ignored; `queue` absent or 0 means 1, and the seed README's `script.queue` is read when `queue`
 * is absent. Unknown fields are dropped, as the API server's structural schema would.
 */
export const HTCJobSpec = z.object({
  name: z.unknown().optional(),
  queue: count.optional(),
  script: z.object(
    {
      image: text,
      command: text,
      source: text,
      queue: count.optional(),
    },
    { error: (i) => (i.input === undefined ? "is required" : `must be an object, got ${show(i.input)}`) },
  ),
  htcopts: text.optional(),
}, { error: (i) => (i.input === undefined ? "is required" : `must be an object, got ${show(i.input)}`) });
export type HTCJobSpec = z.infer<typeof HTCJobSpec>;

function show(v: unknown): string {
  if (typeof v === "string") return quote(v);
  if (v === null || typeof v === "number" || typeof v === "boolean") return String(v);
  return Array.isArray(v) ? "a list" : typeof v;
}

export function htcjobLabel(namespace: string, name: string): string {
  return `HTCJob ${quote(`${namespace}/${name}`, 140)}`;
}

/** The procs an HTCJob asks for, or why it cannot have them. */
function procCount(spec: HTCJobSpec, maxQueue: number, refuse: (field: string, what: string) => never): number {
  const field = spec.queue !== undefined ? "spec.queue" : "spec.script.queue";
  const queue = spec.queue ?? spec.script.queue ?? 0;
  if (queue < 0) refuse(field, `${queue} must be 0 or more (0 means 1)`);
  if (queue > maxQueue) refuse(field, `${queue} is more than this site allows (HTCJob.MaxQueue: ${maxQueue})`);
  return queue === 0 ? 1 : queue;
}

/**
 * The HTCJob as the pod it runs as. The command is written with every `$` doubled: the pod
 * planner expands Kubernetes' `$(VAR)`, which an HTCJob's command does not have. The image is
 * always a `docker://` reference, so that it can never read as the `host` channel.
 */
function asPod(job: HTCJobObject, spec: HTCJobSpec, words: string[]): CreateRequest {
  const image = spec.script.image.startsWith("docker://") ? spec.script.image : `docker://${spec.script.image}`;
  return parseCreateRequest({
    pod: {
      metadata: { name: job.name, namespace: job.namespace, uid: job.uid },
      spec: {
        restartPolicy: "Never",
        containers: [{
          name: HTCJOB_CONTAINER,
          image,
          command: words.map((w) => w.replaceAll("$", "$$")),
          args: [HTCJOB_SCRIPT_PATH],
          workingDir: HTCJOB_WORKDIR,
          volumeMounts: [
            { name: SCRIPT_VOLUME, mountPath: HTCJOB_SCRIPT_PATH, subPath: SCRIPT_KEY, readOnly: true },
            { name: WORK_VOLUME, mountPath: HTCJOB_WORKDIR },
          ],
        }],
        volumes: [{ name: SCRIPT_VOLUME, configMap: { name: SCRIPT_VOLUME } }, { name: WORK_VOLUME, emptyDir: {} }],
      },
    },
    container: [{ name: HTCJOB_CONTAINER, configMaps: [{ metadata: { name: SCRIPT_VOLUME }, data: { [SCRIPT_KEY]: spec.script.source } }] }],
  });
}

/** A validated HTCJob and the site's config → the plan of its cluster. Throws SidecarError("invalid"). */
export function planHTCJob(job: HTCJobObject, cfg: PlanConfig, htc: HTCJobConfig): JobPlan {
  const label = htcjobLabel(job.namespace, job.name);
  const refuse = (field: string, what: string): never => {
    throw new SidecarError("invalid", `${label}: ${field}: ${what}`);
  };

  const parsed = HTCJobSpec.safeParse(job.spec);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    refuse(["spec", ...issue.path.map(String)].join("."), issue.message);
  }
  const spec = parsed.data!;
  const procs = procCount(spec, htc.maxQueue, refuse);

  const { image, command, source } = spec.script;
  if (canonicalImage(image) === undefined) {
    refuse("spec.script.image", `${quote(image)} is not an image reference (e.g. centos or registry.example.org/group/image:1.0)`);
  }
  if (hasControlOrLineBreak(command)) refuse("spec.script.command", `${quote(command)} must not contain control characters or line breaks`);
  // Split at spaces, as the original's unquoted bash line did, but never read by a shell.
  const words = command.split(" ").filter((w) => w !== "");
  if (words.length === 0) refuse("spec.script.command", "must name a program (e.g. bash)");
  if (source.includes("\0")) refuse("spec.script.source", "must not contain NUL characters");

  const options = parseSubmitOptions(spec.htcopts ?? "", htc.submitOptionsAllow);
  if ("error" in options) refuse("spec.htcopts", options.error);

  let plan: JobPlan;
  try {
    // The script is the job itself, not pod data a site may keep off the submit side
    // (ExportPodData); and an HTCJob gets no host image, whatever pods may.
    plan = planJob(asPod(job, spec, words), { ...cfg, exportPodData: true, allowHostImage: false, sidecarId: htc.operatorId });
  } catch (e) {
    if (e instanceof SidecarError && e.kind === "invalid") throw new SidecarError("invalid", `${label}: cannot be run as planned: ${e.message}`);
    throw e;
  }
  plan.containers[0]!.procIdArg = true;
  plan.htcjob = { operatorId: htc.operatorId, procs, generation: job.generation };
  if (htc.maxOutputBytes > 0) plan.htcjob.keepWork = { volume: WORK_VOLUME, maxBytes: htc.maxOutputBytes, maxFiles: htc.maxOutputFiles };
  plan.submit.podOptions = (options as { lines: [string, string][] }).lines;
  return plan;
}
