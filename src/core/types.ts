/**
 * JobPlan: everything one pod becomes, as plain data.
 *
 * `planJob(request, config)` (core/plan.ts, pure) produces it; `renderWrapper(plan, options)` and
 * `renderSubmit(plan, dir, eventLog)` (render/, pure) turn it into the bash wrapper and the submit
 * description; the service writes `plan.files` under the pod's folder and submits.
 *
 * Sandbox layout on the execution point (the job's scratch dir, which is also the wrapper's cwd):
 *
 *   job.sh                     the wrapper (the job's executable)
 *   job-script.sh              interLink's jobScript, when it sent one (0700; core/job-script.ts)
 *   env/<key>.env              one per container: NUL-separated NAME=value records, mode 0600
 *   volumes/<volume>/…         configMap / secret / projected / downwardAPI files
 *   emptydir/<volume>/         created by the wrapper, shared by the pod's containers
 *   <key>.log, <key>.prev.log  per-container logs (current, previous instance); see {@link logFileName}
 *   podstate/<key>             per-container state line (see core/state-line.ts), returned with the output
 *   podstate/wrapper.log       the wrapper's own messages (operators' debug log)
 *
 * `<key>` is `c.<name>` for a container and `i.<name>` for an init container.
 */

import type { Flavor } from "./flavors.ts";
import type { ImageOverride } from "./images.ts";

/** A Kubernetes container name is a DNS label, so these keys are safe file names. */
export function containerKey(name: string, init: boolean): string {
  return `${init ? "i" : "c"}.${name}`;
}
export function logFileName(name: string, init: boolean, previous = false): string {
  return `${containerKey(name, init)}${previous ? ".prev" : ""}.log`;
}
/** Job attribute that the wrapper chirps a container's state line into (ClassAd identifier). */
export function stateAttrName(index: number, init: boolean): string {
  return `InterLink${init ? "Init" : "Ctr"}${index}State`;
}

/**
 * Variables bash keeps for itself: exported with a value of the pod's, they arrive replaced or
 * not at all. A host container gets them, like names that are not shell identifiers, through
 * env's arguments (render/wrapper-lib.bash, bash_own_variable, which must list the same).
 */
export const BASH_OWN_VARIABLES =
  /^(?:UID|EUID|PPID|BASHOPTS|SHELLOPTS|RANDOM|SRANDOM|SECONDS|LINENO|HISTCMD|BASHPID|EPOCHSECONDS|EPOCHREALTIME|FUNCNAME|GROUPS|DIRSTACK|OPTIND|SHLVL|_|BASH_[A-Za-z0-9_]*)$/;

export type RestartPolicy = "Never" | "OnFailure" | "Always";

export type ImageRef =
  /** Run under Apptainer/Singularity: a URI the runtime understands (docker://, oras://, library://, a .sif or directory path). */
  | { kind: "container"; uri: string }
  /** The deliberate `host` channel: run the command on the worker without a container. */
  | { kind: "host"; site?: string };

/** What a probe or lifecycle hook does. */
export type Handler =
  | { kind: "exec"; command: string[] }
  | {
    kind: "httpGet";
    scheme: "HTTP" | "HTTPS";
    host: string;
    port: number;
    path: string;
    headers: [string, string][];
  }
  | { kind: "tcpSocket"; host: string; port: number }
  | { kind: "sleep"; seconds: number };

export interface ProbePlan {
  handler: Handler;
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  successThreshold: number;
  failureThreshold: number;
  /** Liveness and startup probes: the grace period when their failure kills the container (else the pod's). */
  terminationGracePeriodSeconds?: number;
}

export interface MountPlan {
  /**
   * Where the data is: a path relative to the sandbox, or an absolute host path (hostPath volumes).
   * `root` is the volume's own folder (`emptydir/<name>`, `volumes/<name>`, the hostPath's path),
   * which `path` must not leave once the worker resolves its symlinks (a subPath is `path` below
   * `root`). Absent: the first two components of a sandbox path; a host path itself.
   */
  source: { kind: "sandbox"; path: string; root?: string } | { kind: "host"; path: string; root?: string };
  /** Absolute path inside the container. */
  target: string;
  readOnly: boolean;
}

export interface ContainerPlan {
  name: string;
  init: boolean;
  /** Position within its group (init containers or containers), in spec order. */
  index: number;
  image: ImageRef;
  /**
   * What the status reports as the container's image when ImageOverrides replaced it: the pod's
   * own image, never the override's target (which only the runtime sees).
   */
  statusImage?: string;
  /** Kubernetes `command`: replaces the image entrypoint (→ `exec`). */
  command?: string[];
  /** Kubernetes `args`: replaces the image CMD (with no command → `run` with these args). */
  args?: string[];
  workingDir?: string;
  /** Resolved environment, in order. Written to `env/<key>.env`, never into the submit file. */
  env: [string, string][];
  mounts: MountPlan[];
  startupProbe?: ProbePlan;
  readinessProbe?: ProbePlan;
  livenessProbe?: ProbePlan;
  postStart?: Handler;
  preStop?: Handler;
  /** Extra runtime flags for `instance start` (from the allowlisted singularity-options annotation). */
  runtimeOptions: string[];
  /**
   * Extra runtime flags for every exec/run into the instance (main process, probes, hooks): those
   * of the annotation that act there, not at instance start (--env, --env-file, --pwd, --home).
   */
  execOptions: string[];
  /** GPUs this container asks for, of every vendor (request_gpus). Those that are not amdGpus add --nv. */
  gpus: number;
  /** Of `gpus`, the `amd.com/gpu` ones (> 0 adds --rocm); absent: none. */
  amdGpus?: number;
  /**
   * Append the proc's ProcId to the arguments: the procs of an HTCJob share one wrapper, and
   * HTCondor gives each its ProcId as the wrapper's argument (`arguments = $(ProcId)`).
   */
  procIdArg?: boolean;
}

/** A file the sidecar writes under the pod's folder and ships with the job. */
export interface PodFile {
  /** Relative to the pod's folder and to the sandbox, e.g. `volumes/config/app.yaml`. Never absolute, never `..`. */
  path: string;
  content: Uint8Array;
  /**
   * Octal permission bits on the submit side, e.g. 0o644. A secret file is always 0o600 there
   * (docs/threat-model.md#secrets: secrets and tokens are 0600 files in 0700 folders), whatever mode the pod asks for.
   */
  mode: number;
  /** The mode the pod asks for, which the wrapper sets in the job's sandbox; absent: `mode`. */
  podMode?: number;
  /** Secret data (secret and projected volumes, env files): recorded and removed when the job leaves. */
  secret: boolean;
}

export interface JobResources {
  /** request_cpus: whole CPUs, at least 1. */
  cpus: number;
  /** request_memory in MiB (rendered with an `M` suffix). */
  memoryMiB: number;
  /** request_disk in KiB (rendered with a `K` suffix), when asked for. */
  diskKiB?: number;
  /** request_gpus, 0 for none. */
  gpus: number;
}

export interface JobPlan {
  uid: string;
  name: string;
  namespace: string;
  /** Identifies this sidecar among others sharing a schedd (config `SidecarId`). */
  sidecarId: string;
  /** Readable batch name, e.g. `default/web-1`. */
  batchName: string;
  /**
   * Set when the job is an HTCJob's (src/operator/htcjob-plan.ts) rather than a pod's: `procs`
   * procs of one cluster, labelled with the HTCJob (`MY.HTCJobUID`, …) and the operator
   * (`MY.HTCJobOperatorId`) instead of the pod and sidecar labels, so that a sidecar and an
   * operator never take each other's jobs for their own.
   */
  htcjob?: {
    operatorId: string;
    procs: number;
    generation: number;
    /** Stamped on every proc (`MY.HTCJobSubmitToken`) and kept in the store before the submit: the search for a submit whose answer was lost. */
    submitToken?: string;
    /**
     * The working directory's files come back as `work/` in each proc's folder, whole or not at
     * all (docs/operator.md#output). Absent: they do not come back.
     */
    keepWork?: { volume: string; maxBytes: number; maxFiles: number };
  };

  restartPolicy: RestartPolicy;
  /** Restarts allowed per container before it stays terminated. */
  maxRestarts: number;
  /** With restartPolicy Always: also restart after a clean exit (config). */
  restartAfterSuccess: boolean;
  /** CrashLoopBackOff delays: initial and cap, in seconds (doubling). */
  backoffInitialSeconds: number;
  backoffMaxSeconds: number;
  terminationGracePeriodSeconds: number;
  activeDeadlineSeconds?: number;

  /** Site-level shell snippet (config `CommandPrefix`) run first in the job. */
  commandPrefix?: string;
  /** wstunnel client commands: run in the background before the containers (deliberate code channel). */
  backgroundCommands: string[];
  /** pre-exec snippets: run in the foreground before the containers (deliberate code channel). */
  preExec: string[];
  /**
   * interLink's `jobScript` (deliberate code channel): the sandbox path of the 0700 file (in
   * `files`) that the job runs instead of the containers (core/job-script.ts).
   */
  jobScript?: string;
  /** POD_IP exported to containers when known (annotation `interlink.eu/pod-ip`). */
  podIP?: string;

  runtime: {
    /** Absolute path of apptainer/singularity pinned in config; otherwise found on the worker. */
    pinned?: string;
    /** Extra directories searched for apptainer/singularity after the wrapper's own PATH. */
    searchPath: string[];
    noHome: boolean;
    /** APPTAINER_CACHEDIR / SINGULARITY_CACHEDIR on the worker. */
    cacheDir?: string;
    /** What to do on a runtime too old for --no-eval. */
    oldRuntime: "warn" | "refuse";
  };

  /** Volume names that become `emptydir/<name>` in the sandbox. */
  emptyDirs: string[];
  /**
   * Config `HostPathPrefixes`. The sidecar refuses a hostPath outside them by its string (an early
   * 400); the wrapper binds a hostPath only when its path, resolved on the worker at the moment of
   * use, lies below one of them, resolved there too (a symlink cannot lead out).
   */
  hostPathPrefixes: string[];
  /** Files written under the pod's folder (volumes and env files); shipped with transfer_input_files. */
  files: PodFile[];
  /** Top-level sandbox entries to transfer in (e.g. `env`, `volumes`). */
  transferInput: string[];

  initContainers: ContainerPlan[];
  containers: ContainerPlan[];

  resources: JobResources;

  submit: {
    /** The site's extra submit commands (config Submit.ExtraLines), rendered in order. */
    lines: [string, string][];
    /**
     * The pod's allowlisted `submit-options`, rendered after the site's lines in their own
     * section: a condor_submit failure they cause is the pod author's to fix (condor/tools.ts).
     */
    podOptions?: [string, string][];
    /** Site default requirements expression, if any. */
    requirements?: string;
    accountingGroup?: string;
  };

  /**
   * Config `SharedFilesystem`: the execution point sees the pod folder (the job's Iwd), so the
   * wrapper writes container logs there ($_CONDOR_JOB_IWD) and they are not transferred back.
   */
  sharedFilesystem: boolean;
  /** --dummy-job: submit a placeholder that sleeps instead of running containers. */
  dummy: boolean;
  /** Warnings for the create response log (never fatal). */
  warnings: string[];
}

/** The part of the sidecar's configuration that shapes a job (mapped from SidecarConfig.yaml by config.ts). */
export interface PlanConfig {
  sidecarId: string;
  /** `ExportPodData`: write configMap/secret/projected data and mount it (false: skip those volumes with a warning). */
  exportPodData: boolean;
  /** Used when a pod gives neither limits nor requests (Kubernetes quantities). */
  defaultResources: { cpu: string; memory: string; disk?: string };
  maxRestarts: number;
  restartAlwaysAfterSuccess: boolean;
  backoffInitialSeconds: number;
  backoffMaxSeconds: number;
  commandPrefix?: string;
  containerRuntime?: string;
  runtimeSearchPath: string[];
  noHome: boolean;
  apptainerCacheDir?: string;
  oldRuntime: "warn" | "refuse";
  /** Deliberate code channels. */
  allowHostImage: boolean;
  /** Allowed flags for the singularity-options annotation; empty = the annotation is refused. */
  singularityOptionsAllow: string[];
  /** Allowed hostPath prefixes; empty = hostPath volumes are refused. */
  hostPathAllow: string[];
  allowPreExec: boolean;
  allowWstunnel: boolean;
  /** Submit commands a pod may set through the submit-options annotation. */
  submitOptionsAllow: string[];
  /** Run interLink's `jobScript` instead of the containers; false: a create that carries one is refused. */
  allowJobScript: boolean;
  /** Site policy lines every job gets. */
  extraSubmitLines: [string, string][];
  accountingGroups: Record<string, string>;
  requirements?: string;
  /** Flavors in the file's order (core/flavors.ts). */
  flavors: Flavor[];
  defaultFlavor?: string;
  /** The site's ImageOverrides (core/images.ts). */
  imageOverrides: ImageOverride[];
  /** `SharedFilesystem`: container logs are written to the pod folder directly (see JobPlan). */
  sharedFilesystem: boolean;
  dummyJob: boolean;
}

/** The part of the configuration that shapes an HTCJob's procs (config `HTCJob`, src/operator/htcjob-plan.ts). */
export interface HTCJobConfig {
  /** Submit commands `spec.htcopts` may set, as the config lists them (`+X` and `MY.X` are one). */
  submitOptionsAllow: string[];
  /** Most procs one HTCJob may ask for. */
  maxQueue: number;
  /** Stamped on every proc (`MY.HTCJobOperatorId`). */
  operatorId: string;
  /** Most bytes of a proc's working-directory files kept (0: none come back). */
  maxOutputBytes: number;
  /** Most files of a proc's working directory kept. */
  maxOutputFiles: number;
}
