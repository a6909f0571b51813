/**
 * SidecarConfig.yaml: the original plugin's keys (CommandPrefix, ExportPodData, DataRootFolder)
 * plus this sidecar's own, validated with zod. Pure: text in, config (or a ConfigError) out.
 * Every key and its default is documented in docs/configuration.md, generated from this schema.
 */
import { isMap, isScalar, parseDocument } from "yaml";
import { z } from "zod";
import { listenAddress } from "./flags.ts";
import { tryParseQuantity } from "./core/quantity.ts";
import type { HTCJobConfig, PlanConfig } from "./core/types.ts";
import { submitKey, submitValueProblem, userSubmitKeyProblem } from "./core/submit-rules.ts";
import { isDnsLabel } from "./core/pod.ts";
import { type ImageOverride, parseImageOverride } from "./core/images.ts";
import type { Flavor } from "./core/flavors.ts";
import { singularityOptionProblem } from "./core/runtime-flags.ts";

/** A `Channels.SingularityOptions` entry no supported runtime accepts where the wrapper passes it. */
function singularityOptionError(flag: string): string | undefined {
  const p = singularityOptionProblem(flag);
  return p && "error" in p ? p.error : undefined;
}

function validListen(v: string): boolean {
  try {
    listenAddress(v, "MetricsListen");
    return true;
  } catch {
    return false;
  }
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

const seconds = z.number().int().nonnegative();
const str = z.string();
const quantity = z.string().refine((q) => tryParseQuantity(q) !== undefined, "is not a Kubernetes quantity (e.g. 500m, 2, 4Gi)");

/**
 * A submit command on a users' allowlist, checked when the file loads: one the renderer refuses
 * would otherwise fail every create (`+X` is fine: it is written `MY.X`), and one that names files
 * of the submit host would let a pod or an HTCJob upload them (core/submit-rules.ts).
 */
const submitCommand = z.string().superRefine((k, ctx) => {
  const problem = userSubmitKeyProblem(k);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

const extraLines = z.record(str, z.union([str, z.number(), z.boolean()])).superRefine((lines, ctx) => {
  for (const [k, v] of Object.entries(lines)) {
    const r = submitKey(k);
    const problem = "problem" in r ? r.problem : submitValueProblem(String(v));
    if (problem) ctx.addIssue({ code: "custom", path: [k], message: "problem" in r ? problem : `the value ${problem}` });
  }
});

/** A submit value written as the config gives it (Requirements), checked by the one value rule. */
const submitText = str.superRefine((v, ctx) => {
  const problem = submitValueProblem(v);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

const Flavor = z
  .strictObject({
    Cpu: z
      .union([str, z.number()])
      .transform(String)
      .refine((q) => tryParseQuantity(q) !== undefined, "is not a Kubernetes quantity (e.g. 500m, 2)")
      .optional()
      .describe("CPUs of the job when none of its containers sets `cpu`"),
    Memory: z
      .union([str, z.number()])
      .transform(String)
      .refine((q) => tryParseQuantity(q) !== undefined, "is not a Kubernetes quantity (e.g. 4Gi)")
      .optional()
      .describe("Memory of the job when none of its containers sets `memory`"),
    Gpus: z.number().int().nonnegative().optional().describe("GPUs of the job when none of its containers requests one"),
    Requirements: submitText.optional().describe("ANDed with `Submit.Requirements`"),
    AccountingGroup: str
      .refine(
        (v) => v !== "" && v.trim() === v && !v.includes('"') && submitValueProblem(v) === undefined,
        "must be a plain value: not empty, quoted or padded",
      )
      .optional()
      .describe("`accounting_group` for namespaces that `Submit.AccountingGroups` does not name"),
    ExtraLines: extraLines.default({}).describe("Submit commands after `Submit.ExtraLines` (a key of both is refused)"),
  });

/** What the original HTCJob operator's examples put in `htcopts` (+JobFlavour, +MaxRuntime). */
const HTCJOB_SUBMIT_OPTIONS = ["+JobFlavour", "+MaxRuntime"] as const;

const Channels = z.object({
  HostImage: z.boolean().default(false).describe("Allow the image `host` or `host:<site>`: the container's command runs on the worker, without a container"),
  SingularityOptions: z
    .array(str.refine((f) => !singularityOptionError(f), { error: (i) => singularityOptionError(String(i.input)) }))
    .default([])
    .describe(
      "Flags the `singularity-options` annotation may use; empty: the annotation is refused. `--env`, `--env-file` and `--pwd` reach every exec into the container, the others act when the instance starts",
    ),
  HostPathPrefixes: z.array(str).default([]).describe("Path prefixes `hostPath` volumes may use; empty: `hostPath` volumes are refused"),
  PreExec: z.boolean().default(true).describe("Run the `slurm-job.vk.io/pre-exec` annotation (interLink's mesh network needs it)"),
  Wstunnel: z.boolean().default(true).describe("Run the `interlink.eu/wstunnel-client-commands` annotation (interLink's tunnel needs it)"),
  SubmitOptions: z
    .array(submitCommand)
    .default(["request_disk", "max_retries", "rank", "job_lease_duration", "priority"])
    .describe("Submit commands the `htcondor-job.vk.io/submit-options` annotation may set"),
  JobScript: z
    .boolean()
    .default(false)
    .describe(
      "Run the `jobScript` interLink sends when it has a `JobScriptTemplate` or `JobScriptBuilderURL`: the job runs that script on the worker, outside any container, instead of the pod's containers; off: such a create is refused",
    ),
});

/**
 * Every key carries its documentation (`.describe()`): docs/configuration.md's table is generated
 * from this schema (`npm run docs`), and a key without a description fails test/scripts/docs.test.ts.
 */
export const Schema = z.object({
  DataRootFolder: str
    .min(1)
    .default("./data")
    .describe(
      "Where the pod folders (job files, returned output) and the state store (`state.db`) live; created with mode 0700. A relative path is resolved against the configuration file's folder",
    ),
  CommandPrefix: str.default("").describe("Shell snippet every job runs first, outside the containers (site setup, e.g. `module load apptainer`)"),
  ExportPodData: z
    .boolean()
    .default(true)
    .describe("Write configMap, secret and projected volume data for the containers; `false` mounts empty folders instead, with a warning"),
  SidecarId: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1-64 letters, digits, '.', '_' or '-'")
    .default("htcondor-sidecar")
    .describe(
      "Stamped on every job (`MY.InterLinkSidecarId`) and used to find this sidecar's jobs; sidecars that share a schedd need different ids. 1 to 64 letters, digits, `.`, `_` or `-`",
    ),
  BodyLimit: z
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024)
    .describe("Request body limit in bytes: interLink sends every ConfigMap and Secret the pod mounts inside `/create`"),
  KeepAliveTimeoutSeconds: z
    .number()
    .int()
    .min(121, "must exceed interLink's 120 s idle pool timeout")
    .default(125)
    .describe("Idle timeout of a kept-alive connection; must exceed the 120 s for which interLink keeps idle connections"),
  ShutdownGraceSeconds: seconds.default(10).describe(
    "On SIGTERM, how long requests in flight (and creates waiting on `condor_submit`) get before the sidecar exits",
  ),
  Schedds: z
    .array(
      z.object({
        Name: str.min(1).describe("The schedd's name as `-name` takes it: `name@host`, or a host name (which must resolve, as for `--schedd-name`)"),
        Pool: str.default("").describe("Its collector (`-pool`); empty: `--collector-host`, else HTCondor's own configuration"),
        Spool: z.enum(["auto", "always", "never"]).optional().describe("`Spool` for this schedd's jobs; absent: the top-level `Spool` (or `--spool`)"),
        Weight: z.number().positive().default(1).describe("Its share of new pods: creates go where this sidecar has the fewest idle jobs per unit of weight"),
        ExtraLines: extraLines.default({}).describe(
          "Submit commands this schedd's jobs get after `Submit.ExtraLines` (e.g. its `accounting_group`)",
        ),
      }).strict(),
    )
    .default([])
    .describe(
      "Several schedds (docs/schedds.md): each create goes to one of those that answer, and each pod's job stays on its schedd. Empty, or one entry: one schedd, as with `--schedd-name` (or none); refused together with `--schedd-name`",
    ),
  Spool: z
    .enum(["auto", "always", "never"])
    .default("auto")
    .describe("Submit with `-spool` and fetch the output with `condor_transfer_data`: `auto` when the schedd is on another host; `--spool` overrides it"),
  MaxConcurrentSubmits: z
    .number()
    .int()
    .min(1)
    .default(8)
    .describe(
      "Most `condor_submit` processes at once (and `condor_rm`). Within it the number is measured: one at first, more while each keeps its time per job, halved when that time grows (a schedd serves one submit at a time). Creates that arrive while one runs wait and go together in the next (one cluster, one job per pod)",
    ),
  MaxSubmitBatch: z
    .number()
    .int()
    .min(1)
    .default(200)
    .describe("Most pods in one `condor_submit` (pods batch only with the same submit commands); `1` submits every pod alone"),
  SubmitTimeoutSeconds: z
    .number()
    .int()
    .min(1)
    .default(60)
    .describe(
      "Timeout of `condor_submit` and `condor_transfer_data`. After a submit timeout the schedd is asked for the pod's UID, so a job it queued anyway is kept, never submitted twice",
    ),
  QueryTimeoutSeconds: z
    .number()
    .int()
    .min(1)
    .default(20)
    .describe("Timeout of `condor_q`, `condor_history`, `condor_rm`, `condor_status` and `condor_tail`"),
  ScheddNameResolveSeconds: z
    .number()
    .int()
    .min(0)
    .default(30)
    .describe(
      "How long a schedd named by a host name that does not resolve is asked about again at start before the sidecar refuses it (a name server may come up after the sidecar)",
    ),
  StatusCacheSeconds: z
    .number()
    .min(1, "must be at least 1: a failed condor_q of changed jobs is retried this often")
    .default(2)
    .describe(
      "How often a failed `condor_q` of changed jobs is retried, a job between the queue and the history is asked about again, and (at first) a removed job still in the queue; the sidecar asks what changed among jobs with no shared event log (spooled jobs) every second regardless, and so does the operator, which reads such clusters whole this often only until an answer gives the schedd's clock",
    ),
  ReconcileMinutes: z
    .number()
    .positive("must be more than 0: the full condor_q of every followed job runs this often")
    .max(1440, "must be at most 1440 (a day): the full condor_q is what corrects anything the job event log missed")
    .default(5)
    .describe(
      "Jobs followed through the sidecar's job event log are asked about when their events name them; one `condor_q` of every followed job runs at start, after a gap the log cannot explain, and this often (minutes) besides",
    ),
  PingFailureThreshold: z
    .number()
    .int()
    .min(1)
    .default(3)
    .describe("Consecutive failures of the schedd (`condor_q`) or of the collector (`condor_status`) before the ping answers 503"),
  TerminalHoldCodes: z
    .array(z.number().int())
    .default([12, 13, 34, 46, 47])
    .describe(
      "Hold codes that cannot recover: such a job is removed after `HoldGraceSeconds` and its pod reported failed (`OOMKilled`, `DeadlineExceeded`, …)",
    ),
  HoldGraceSeconds: seconds.default(60).describe("How long a job held with one of `TerminalHoldCodes` is left alone before the sidecar removes it"),
  ReaperIntervalSeconds: z
    .number()
    .int()
    .min(1)
    .default(30)
    .describe("How often pending removals, and a reconcile with the schedd that failed, are retried"),
  ForgottenPods: z
    .object({
      AfterSeconds: z
        .number()
        .int()
        .min(1)
        .default(300)
        .describe(
          "Seconds of status activity (calls naming other pods) without a call naming a pod whose job is queued or running before it is reported forgotten",
        ),
      Rounds: z
        .number()
        .int()
        .min(1)
        .default(10)
        .describe("Rounds of interLink's status loop, at least, that must pass without the pod named before it is reported forgotten"),
      SilenceSeconds: z
        .number()
        .int()
        .min(1)
        .default(60)
        .describe("A gap longer than this between two status calls naming pods is silence: it does not count as activity"),
      RemoveAfterSeconds: seconds
        .default(3600)
        .describe("Seconds of status activity without the pod named after which its job is removed (`condor_rm`); 0: only reported, never removed"),
    })
    .refine((f) => f.RemoveAfterSeconds === 0 || f.RemoveAfterSeconds >= f.AfterSeconds, {
      message: "RemoveAfterSeconds must be 0 (never) or at least AfterSeconds",
      path: ["RemoveAfterSeconds"],
    })
    .default({ AfterSeconds: 300, Rounds: 10, SilenceSeconds: 60, RemoveAfterSeconds: 3600 })
    .describe("Pods that interLink no longer asks about while their jobs run (docs/status.md#pods-interlink-forgot)"),
  MetricsListen: str
    .default("")
    .refine((v) => v === "" || validListen(v), "must be ADDR:PORT (e.g. 127.0.0.1:9100 or [::1]:9100), or empty for off")
    .describe(
      "Also serve `GET /metrics` (Prometheus) on this `ADDR:PORT`, for deployments whose API is a unix socket; empty: only on the API listener. `--metrics-listen` overrides it",
    ),
  SharedFilesystem: z
    .boolean()
    .default(false)
    .describe(
      "The execute nodes see the pod folders: the wrapper writes the container logs into the pod folder (`$_CONDOR_JOB_IWD`), where they are read, not transferred. Refused together with spooling",
    ),
  Node: z
    .object({
      Cpu: quantity.optional().describe("Cap on the CPUs advertised (a Kubernetes quantity); absent: the pool's total"),
      Memory: quantity.optional().describe("Cap on the memory advertised (a quantity, e.g. `256Gi`); absent: the pool's total"),
      Gpus: z.number().int().nonnegative().optional().describe("Cap on the `nvidia.com/gpu` advertised; absent: the pool's total"),
      Pods: str.default("1000").describe("Pods the virtual node advertises (an integer quantity)"),
      Taints: z
        .array(z.object({ key: str.min(1), value: str.optional(), effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]) }))
        .optional()
        .describe(
          "Taints the ping sets on the node (`{key, value, effect}`), replacing all but interLink's own; absent: the node's taints are left as they are",
        ),
    })
    .default({ Pods: "1000" })
    .describe("What the virtual node advertises in the ping"),
  DefaultResources: z
    .object({
      Cpu: quantity.default("1").describe("CPUs of a container that sets neither a limit nor a request for `cpu`"),
      Memory: quantity.default("1Gi").describe("Memory of a container that sets neither a limit nor a request for `memory`"),
      Disk: quantity.optional().describe("Disk of a container that sets neither a limit nor a request for `ephemeral-storage`; absent: none is requested"),
    })
    .default({ Cpu: "1", Memory: "1Gi" })
    .describe("What a container counts with for a resource it sets neither a limit nor a request for, before containers are added up"),
  Restart: z
    .object({
      MaxRestarts: z.number().int().nonnegative().default(3).describe("Restarts per container under `restartPolicy` `OnFailure` or `Always`"),
      AlwaysAfterSuccess: z
        .boolean()
        .default(false)
        .describe("`restartPolicy: Always` also restarts a container that exited 0 (off by default: a batch slot must end)"),
      BackoffInitialSeconds: seconds.default(10).describe("First CrashLoopBackOff delay; it doubles at every restart"),
      BackoffMaxSeconds: seconds.default(300).describe("Longest CrashLoopBackOff delay"),
    })
    .default({ MaxRestarts: 3, AlwaysAfterSuccess: false, BackoffInitialSeconds: 10, BackoffMaxSeconds: 300 })
    .describe("Container restarts inside the job"),
  ContainerRuntime: str
    .default("")
    .describe("Absolute path of `apptainer` or `singularity` on the worker; empty: looked for there, `apptainer` first"),
  RuntimeSearchPath: z.array(str).default([]).describe("Extra folders searched for the container runtime on the worker"),
  NoHome: z.boolean().default(true).describe("Start the containers with `--no-home`"),
  ApptainerCacheDir: str
    .default("")
    .describe("Image cache folder on the worker; empty: HTCondor's per-job scratch folder, so every job pulls its images again"),
  OldRuntime: z.enum(["warn", "refuse"]).default("warn").describe("What a job does when the worker's runtime lacks `--no-eval`: run with a warning, or refuse"),
  Channels: Channels.default({
    HostImage: false,
    SingularityOptions: [],
    HostPathPrefixes: [],
    PreExec: true,
    Wstunnel: true,
    SubmitOptions: ["request_disk", "max_retries", "rank", "job_lease_duration", "priority"],
    JobScript: false,
  }).describe("Deliberate code channels: the ways a pod author runs code outside the container, or reaches the worker (see the threat model)"),
  Submit: z
    .object({
      ExtraLines: extraLines.default({}).describe("Submit commands every job gets, in order (`+X` is written `MY.X`; checked at start)"),
      AccountingGroups: z.record(str, str).default({}).describe("Namespace → `accounting_group`"),
      Requirements: str.default("").describe("Default `requirements` expression; empty: none"),
    })
    .default({ ExtraLines: {}, AccountingGroups: {}, Requirements: "" })
    .describe("Site policy written into every job's submit file"),
  Flavors: z
    .record(str.refine(isDnsLabel, "a flavor name must be a DNS label (lower-case letters, digits and '-', at most 63)"), Flavor)
    .default({})
    .describe(
      "Named job-level defaults a pod picks with the annotation `htcondor-job.vk.io/flavor` (keys `Cpu`, `Memory`, `Gpus`, `Requirements`, `AccountingGroup`, `ExtraLines`; see docs/pod-to-job.md). A pod that names none gets the first flavor with `Gpus` if it requests GPUs, else `DefaultFlavor`",
    ),
  DefaultFlavor: str.default("").describe("The flavor of a pod that names none (and requests no GPU a flavor offers); empty: none"),
  ImageOverrides: z
    .record(str, str)
    .default({})
    .superRefine((entries, ctx) => {
      for (const [k, v] of Object.entries(entries)) {
        const r = parseImageOverride(k, v);
        if ("problem" in r) ctx.addIssue({ code: "custom", path: [k], message: r.problem });
      }
    })
    .describe(
      "Image reference → what the runtime gets instead: a `.sif` file, an unpacked folder (e.g. on CVMFS) or another reference. References compare in canonical form (`python:3.12` is `docker.io/library/python:3.12`); a trailing `*` on both sides maps a prefix",
    ),
  HTCJob: z
    .object({
      SubmitOptions: z
        .array(submitCommand)
        .default([...HTCJOB_SUBMIT_OPTIONS])
        .describe("Submit commands an HTCJob's `spec.htcopts` may set; separate from `Channels.SubmitOptions`, which is the pods'"),
      MaxQueue: z.number().int().min(1).default(1000).describe("Most procs one HTCJob may ask for (`spec.queue`); a larger one is refused"),
      OperatorId: z
        .string()
        .regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1-64 letters, digits, '.', '_' or '-'")
        .default("htcjob-operator")
        .describe(
          "Stamped on every proc the operator submits (`MY.HTCJobOperatorId`, never `MY.InterLinkSidecarId`); operators that share a schedd need different ids",
        ),
      Namespaces: z
        .array(z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, "must be a namespace name"))
        .default([])
        .describe(
          "The namespaces whose HTCJobs the operator runs; empty: every namespace it watches. An HTCJob elsewhere gets a `Failed` condition and nothing is submitted",
        ),
      MaxOutputBytes: z
        .number()
        .int()
        .min(0)
        .default(100 * 1024 * 1024)
        .describe(
          "Most bytes of the files a proc's script leaves in its working directory that are brought back and kept (`procs/<ProcId>/work/`); above it none of that proc's files are kept and an `OutputKept` condition and an Event say so. 0: the working directory is not brought back",
        ),
      MaxOutputFiles: z
        .number()
        .int()
        .min(1)
        .default(10_000)
        .describe("Most files and folders of a proc's working directory that are brought back; above it none are kept, as for `MaxOutputBytes`"),
      OutputRetentionSeconds: seconds
        .default(86_400)
        .describe(
          "How long a deleted HTCJob's output (its folder `htcjobs/<uid>/`) and its record are kept after the object is gone; 0: removed with the object",
        ),
    })
    .default({
      SubmitOptions: [...HTCJOB_SUBMIT_OPTIONS],
      MaxQueue: 1000,
      OperatorId: "htcjob-operator",
      Namespaces: [],
      MaxOutputBytes: 100 * 1024 * 1024,
      MaxOutputFiles: 10_000,
      OutputRetentionSeconds: 86_400,
    })
    .describe("The HTCJob operator (`htcondor-sidecar operator`): what an HTCJob may ask for, and how its procs are labelled"),
})
  .superRefine((c, ctx) => {
    if (c.DefaultFlavor !== "" && !Object.hasOwn(c.Flavors, c.DefaultFlavor)) {
      ctx.addIssue({ code: "custom", path: ["DefaultFlavor"], message: `no flavor is named ${JSON.stringify(c.DefaultFlavor)}` });
    }
    const siteKeys = new Set(Object.keys(c.Submit.ExtraLines).map(lineKey));
    const named = new Map<string, number>();
    c.Schedds.forEach((sd, i) => {
      // HTCondor compares daemon names without regard to case
      const key = sd.Name.toLowerCase();
      const first = named.get(key);
      if (first !== undefined) {
        ctx.addIssue({ code: "custom", path: ["Schedds", i, "Name"], message: `names the same schedd as Schedds.${first} (${JSON.stringify(sd.Name)})` });
      } else named.set(key, i);
      for (const k of Object.keys(sd.ExtraLines)) {
        if (siteKeys.has(lineKey(k))) ctx.addIssue({ code: "custom", path: ["Schedds", i, "ExtraLines", k], message: "is also set by Submit.ExtraLines" });
      }
    });
    for (const [name, f] of Object.entries(c.Flavors)) {
      for (const k of Object.keys(f.ExtraLines)) {
        if (siteKeys.has(lineKey(k))) ctx.addIssue({ code: "custom", path: ["Flavors", name, "ExtraLines", k], message: "is also set by Submit.ExtraLines" });
      }
    }
  });

/** How condor_submit tells two ExtraLines keys apart: case-insensitively, `+X` being `MY.X`. */
function lineKey(k: string): string {
  const r = submitKey(k);
  return ("key" in r ? r.key : k).toLowerCase();
}

export type FileConfig = z.infer<typeof Schema> & {
  /** The flavor names in the file's order ("first" is the file's first: an object would put `"1"` before `"a"`). */
  flavorOrder: string[];
};

interface LoadedConfig {
  config: FileConfig;
  warnings: string[];
}

/**
 * Parses the file's text. `fileLabel` names it in messages (`SidecarConfig.yaml: <key>: <problem>`).
 * An empty or missing file is all defaults.
 */
export function parseConfig(text: string | undefined, fileLabel = "SidecarConfig.yaml"): LoadedConfig {
  let raw: unknown = {};
  let flavorOrder: string[] = [];
  if (text !== undefined && text.trim() !== "") {
    const doc = parseDocument(text);
    const err = doc.errors[0];
    if (err) throw new ConfigError(`${fileLabel}: not valid YAML: ${err.message.split("\n")[0]}`);
    raw = doc.toJS() ?? {};
    const flavors = doc.get("Flavors");
    if (isMap(flavors)) flavorOrder = flavors.items.map((i) => String(isScalar(i.key) ? i.key.value : i.key));
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${fileLabel}: must be a mapping of keys to values`);
  }
  const result = Schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const path = issue.code === "unrecognized_keys" ? [...issue.path, issue.keys[0]!] : issue.path;
    const key = path.length ? path.join(".") : "(top level)";
    const message = issue.code === "unrecognized_keys"
      ? "unknown key"
      : issue.code === "invalid_key"
      ? (issue.issues[0]?.message ?? issue.message)
      : issue.message;
    throw new ConfigError(`${fileLabel}: ${key}: ${message}`);
  }
  return {
    config: { ...result.data, flavorOrder },
    warnings: [
      ...unknownKeys(raw as Record<string, unknown>, Schema, "").map((k) => `${fileLabel}: unknown key ${k} (ignored)`),
      ...result.data.Channels.SingularityOptions.flatMap((f) => {
        const p = singularityOptionProblem(f);
        return p && "warning" in p ? [`${fileLabel}: Channels.SingularityOptions: ${p.warning}`] : [];
      }),
    ],
  };
}

function unknownKeys(raw: Record<string, unknown>, schema: z.ZodObject, prefix: string): string[] {
  const out: string[] = [];
  const shape = schema.shape as Record<string, z.ZodType>;
  for (const [k, v] of Object.entries(raw)) {
    const field = shape[k];
    if (!field) {
      out.push(prefix + k);
      continue;
    }
    const inner = unwrap(field);
    if (inner instanceof z.ZodObject && v && typeof v === "object" && !Array.isArray(v)) {
      out.push(...unknownKeys(v as Record<string, unknown>, inner, `${prefix}${k}.`));
    }
  }
  return out;
}

function unwrap(t: z.ZodType): z.ZodType {
  let cur: z.ZodType = t;
  while (cur instanceof z.ZodDefault || cur instanceof z.ZodOptional) cur = cur.unwrap() as z.ZodType;
  return cur;
}

/** The job-shaping part of the config, for core/plan.ts. */
export function planConfig(c: FileConfig, dummyJob: boolean): PlanConfig {
  return {
    sidecarId: c.SidecarId,
    exportPodData: c.ExportPodData,
    defaultResources: { cpu: c.DefaultResources.Cpu, memory: c.DefaultResources.Memory, disk: c.DefaultResources.Disk },
    maxRestarts: c.Restart.MaxRestarts,
    restartAlwaysAfterSuccess: c.Restart.AlwaysAfterSuccess,
    backoffInitialSeconds: c.Restart.BackoffInitialSeconds,
    backoffMaxSeconds: c.Restart.BackoffMaxSeconds,
    commandPrefix: c.CommandPrefix || undefined,
    containerRuntime: c.ContainerRuntime || undefined,
    runtimeSearchPath: c.RuntimeSearchPath,
    noHome: c.NoHome,
    apptainerCacheDir: c.ApptainerCacheDir || undefined,
    oldRuntime: c.OldRuntime,
    allowHostImage: c.Channels.HostImage,
    singularityOptionsAllow: c.Channels.SingularityOptions,
    hostPathAllow: c.Channels.HostPathPrefixes,
    allowPreExec: c.Channels.PreExec,
    allowWstunnel: c.Channels.Wstunnel,
    submitOptionsAllow: c.Channels.SubmitOptions,
    allowJobScript: c.Channels.JobScript,
    extraSubmitLines: Object.entries(c.Submit.ExtraLines).map(([k, v]) => [k, String(v)]),
    accountingGroups: c.Submit.AccountingGroups,
    requirements: c.Submit.Requirements || undefined,
    flavors: c.flavorOrder.map((name) => flavorOf(name, c.Flavors[name]!)),
    defaultFlavor: c.DefaultFlavor || undefined,
    imageOverrides: Object.entries(c.ImageOverrides).map(([k, v]) => parseImageOverride(k, v) as ImageOverride),
    sharedFilesystem: c.SharedFilesystem,
    dummyJob,
  };
}

function flavorOf(name: string, f: FileConfig["Flavors"][string]): Flavor {
  const flavor: Flavor = { name, extraLines: Object.entries(f.ExtraLines).map(([k, v]) => [k, String(v)]) };
  if (f.Cpu !== undefined) flavor.cpu = f.Cpu;
  if (f.Memory !== undefined) flavor.memory = f.Memory;
  if (f.Gpus !== undefined) flavor.gpus = f.Gpus;
  if (f.Requirements) flavor.requirements = f.Requirements;
  if (f.AccountingGroup !== undefined) flavor.accountingGroup = f.AccountingGroup;
  return flavor;
}

/** The HTCJob part of the config, for src/operator/htcjob-plan.ts. */
export function htcjobConfig(c: FileConfig): HTCJobConfig {
  return {
    submitOptionsAllow: c.HTCJob.SubmitOptions,
    maxQueue: c.HTCJob.MaxQueue,
    operatorId: c.HTCJob.OperatorId,
    maxOutputBytes: c.HTCJob.MaxOutputBytes,
    maxOutputFiles: c.HTCJob.MaxOutputFiles,
  };
}
