/**
 * planJob: one validated create request (docs/interlink.md#the-create-request) → one JobPlan
 * (core/types.ts). Pure.
 *
 * The plan does what a kubelet would do before starting containers: resolve env (incl. `valueFrom`
 * and `$(VAR)` expansion), lay out volume files, add up resources, apply probe defaults. Whatever
 * the job cannot honour is refused here with a one-line message naming the field, never dropped.
 * Each concern has its file under core/plan/: env.ts, volumes.ts, probes.ts, resources.ts,
 * image.ts, annotations.ts, submit-options.ts, downward.ts, request-data.ts, expand.ts.
 */
import { type Container, type CreateRequest, type PathSeg, podLabel, requestQuote } from "./pod.ts";
import { fraction, toCpus, toKiB, toMiB } from "./quantity.ts";
import type { ContainerPlan, JobPlan, PlanConfig } from "./types.ts";
import { containerKey } from "./types.ts";
import { requestedJobScript, withJobScript } from "./job-script.ts";
import { combineRequirements } from "./flavors.ts";
import { planChannels, planPodIP } from "./plan/annotations.ts";
import { type Ctx, SECRET_FILE_MODE } from "./plan/context.ts";
import { checkEnvCarriage, encodeEnvFile, planEnv, podHostname } from "./plan/env.ts";
import { planImage } from "./plan/image.ts";
import { expandK8s } from "./plan/expand.ts";
import { planHandler, planProbe } from "./plan/probes.ts";
import { type Amounts, planResources } from "./plan/resources.ts";
import { planMount } from "./plan/volumes.ts";

/** A validated create request (see `parseCreateRequest`) and the site's config → the job. */
export function planJob(req: CreateRequest, cfg: PlanConfig): JobPlan {
  const pod = req.pod;
  const { name, namespace, uid } = pod.metadata;
  const label = podLabel(namespace, name);

  const quote = requestQuote(req);
  const { defaults, initAmounts, mainAmounts, cpu, memory, disk, gpus, flavor } = planResources(pod, cfg, label, quote);

  const ctx: Ctx = {
    req,
    pod,
    cfg,
    label,
    quote,
    podIP: planPodIP(pod, label),
    hostname: podHostname(pod),
    volumes: new Map(pod.spec.volumes.map((volume, index) => [volume.name, { volume, index }])),
    podTotals: { cpu: fraction(BigInt(toCpus(cpu))), memory, disk },
    defaults,
    files: [],
    volumeDirs: new Map(),
    emptyDirs: [],
    warnings: [],
  };

  const { preExec, backgroundCommands, runtimeOptions, podOptions } = planChannels(ctx);
  const jobScript = requestedJobScript(req, cfg, label);

  const planContainer = (c: Container, index: number, init: boolean, amounts: Amounts): ContainerPlan => {
    const base: PathSeg[] = ["spec", init ? "initContainers" : "containers", index];
    const { ref: image, statusImage } = planImage(c, base, ctx);
    const { env, defined, fromData } = planEnv(c, base, ctx);
    const lookup = (n: string) => defined.get(n);
    const mounts = c.volumeMounts.map((m, j) => planMount(m, j, c, base, defined, ctx));
    const plan: ContainerPlan = {
      name: c.name,
      init,
      index,
      image,
      env,
      mounts,
      runtimeOptions: [...runtimeOptions.start],
      execOptions: [...runtimeOptions.exec],
      gpus: amounts.gpus,
    };
    if (statusImage !== undefined) plan.statusImage = statusImage;
    if (c.command !== undefined && c.command.length > 0) plan.command = c.command.map((s) => expandK8s(s, lookup));
    if (c.args !== undefined && c.args.length > 0) plan.args = c.args.map((s) => expandK8s(s, lookup));
    if (amounts.amdGpus > 0) plan.amdGpus = amounts.amdGpus;
    if (c.workingDir) plan.workingDir = c.workingDir;
    for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"] as const) {
      const p = c[probe];
      if (p) plan[probe] = planProbe(p, probe, c, [...base, probe], ctx);
    }
    if (c.lifecycle?.postStart) plan.postStart = planHandler(c.lifecycle.postStart, c, [...base, "lifecycle", "postStart"], ctx);
    if (c.lifecycle?.preStop) plan.preStop = planHandler(c.lifecycle.preStop, c, [...base, "lifecycle", "preStop"], ctx);
    checkEnvCarriage(c, plan, base, ctx, fromData);
    ctx.files.push({ path: `env/${containerKey(c.name, init)}.env`, content: encodeEnvFile(plan.env), mode: SECRET_FILE_MODE, secret: true });
    return plan;
  };

  const initContainers = pod.spec.initContainers.map((c, i) => planContainer(c, i, true, initAmounts[i]!));
  // GPUs from the flavor alone: the main containers get them, for --nv.
  const flavorGpus = gpus > 0 && mainAmounts.every((a) => a.gpus === 0) && initAmounts.every((a) => a.gpus === 0);
  const containers = pod.spec.containers.map((c, i) => planContainer(c, i, false, flavorGpus ? { ...mainAmounts[i]!, gpus } : mainAmounts[i]!));
  if (containers.length === 0) ctx.warnings.push("the pod has no offloaded containers: the job runs only its init containers");

  const transferInput = ["env", "volumes"].filter((top) => ctx.files.some((f) => f.path.startsWith(top + "/")));

  // A flavor's group only where the site names none for the namespace: a pod must not leave its
  // namespace's group by picking a flavor.
  const accountingGroup = Object.hasOwn(cfg.accountingGroups, namespace) ? cfg.accountingGroups[namespace] : flavor?.accountingGroup;
  const requirements = combineRequirements(cfg.requirements, flavor?.requirements);
  const plan: JobPlan = {
    uid,
    name,
    namespace,
    sidecarId: cfg.sidecarId,
    batchName: `${namespace}/${name}`,
    restartPolicy: pod.spec.restartPolicy ?? "Always",
    maxRestarts: cfg.maxRestarts,
    restartAfterSuccess: cfg.restartAlwaysAfterSuccess,
    backoffInitialSeconds: cfg.backoffInitialSeconds,
    backoffMaxSeconds: cfg.backoffMaxSeconds,
    terminationGracePeriodSeconds: pod.spec.terminationGracePeriodSeconds ?? 30,
    backgroundCommands,
    preExec,
    runtime: {
      searchPath: [...cfg.runtimeSearchPath],
      noHome: cfg.noHome,
      oldRuntime: cfg.oldRuntime,
    },
    emptyDirs: ctx.emptyDirs,
    hostPathPrefixes: [...cfg.hostPathAllow],
    files: ctx.files,
    transferInput,
    initContainers,
    containers,
    resources: {
      cpus: toCpus(cpu),
      memoryMiB: Math.max(1, toMiB(memory)),
      gpus,
    },
    submit: { lines: [...cfg.extraSubmitLines, ...(flavor?.extraLines ?? [])], podOptions },
    sharedFilesystem: cfg.sharedFilesystem,
    dummy: cfg.dummyJob,
    warnings: ctx.warnings,
  };
  if (disk !== undefined) plan.resources.diskKiB = toKiB(disk);
  if (pod.spec.activeDeadlineSeconds !== undefined) plan.activeDeadlineSeconds = pod.spec.activeDeadlineSeconds;
  if (cfg.commandPrefix) plan.commandPrefix = cfg.commandPrefix;
  if (ctx.podIP !== undefined) plan.podIP = ctx.podIP;
  if (cfg.containerRuntime) plan.runtime.pinned = cfg.containerRuntime;
  if (cfg.apptainerCacheDir) plan.runtime.cacheDir = cfg.apptainerCacheDir;
  if (requirements) plan.submit.requirements = requirements;
  if (accountingGroup) plan.submit.accountingGroup = accountingGroup;
  if (jobScript !== undefined) withJobScript(plan, jobScript, label, ctx.quote);
  return plan;
}
