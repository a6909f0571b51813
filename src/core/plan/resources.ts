import { SidecarError } from "../errors.ts";
import { chooseFlavor, FLAVOR_ANNOTATION } from "../flavors.ts";
import { type Container, type Pod, podError, type Quote, quote as quoteSpec } from "../pod.ts";
import { add, max, parseQuantity, type Quantity, toInteger, tryParseQuantity, ZERO } from "../quantity.ts";
import type { PlanConfig } from "../types.ts";
import { annotationPath } from "./annotations.ts";
import type { Defaults } from "./context.ts";

// Resources
//
//   pod field (per container: limits, else requests)  → submit command   rounding
//   ------------------------------------------------------------------------------------------
//   cpu                                                → request_cpus     up to whole CPUs, ≥ 1
//   memory                                             → request_memory   bytes → MiB, up, ≥ 1 (M)
//   ephemeral-storage                                  → request_disk     bytes → KiB, up (K)
//   nvidia.com/gpu, amd.com/gpu, any "<vendor>/gpu"    → request_gpus     whole GPUs
//
// The containers that ask for GPUs get the runtime's GPU support: --rocm for amd.com/gpu, --nv
// for nvidia.com/gpu and any other vendor's (a container asking for both kinds gets both flags).
//
// Pod total per resource = max(sum over containers, max over init containers): containers run
// together, init containers one at a time (Kubernetes' effective request). A container that sets
// neither a limit nor a request for cpu, memory or ephemeral-storage counts with the site default
// (config DefaultResources, disk only if configured), as a LimitRange default would.

const isGpu = (name: string) => name === "gpu" || name.endsWith("/gpu");
const AMD_GPU = "amd.com/gpu";

export interface Amounts {
  cpu?: Quantity;
  memory?: Quantity;
  disk?: Quantity;
  gpus: number;
  /** Of gpus, the amd.com/gpu ones. */
  amdGpus: number;
}

/**
 * One container's amounts: limit, else request, else the site default for that resource (as a
 * LimitRange default would be, per container: a 100Mi sidecar does not make the whole pod 100Mi).
 */
function containerAmounts(c: Container, defaults: Defaults): Amounts {
  const pick = (name: string) => {
    const t = c.resources.limits[name] ?? c.resources.requests[name];
    return t === undefined ? undefined : parseQuantity(t);
  };
  let gpus = 0;
  let amdGpus = 0;
  for (const name of new Set([...Object.keys(c.resources.limits), ...Object.keys(c.resources.requests)])) {
    if (!isGpu(name)) continue;
    const n = toInteger(pick(name)!);
    gpus += n;
    if (name === AMD_GPU) amdGpus += n;
  }
  return {
    cpu: pick("cpu") ?? defaults.cpu,
    memory: pick("memory") ?? defaults.memory,
    disk: pick("ephemeral-storage") ?? defaults.disk,
    gpus,
    amdGpus,
  };
}

function total(main: (Quantity | undefined)[], init: (Quantity | undefined)[]): Quantity | undefined {
  if (![...main, ...init].some((q) => q !== undefined)) return undefined;
  const sum = main.reduce<Quantity>((s, q) => (q ? add(s, q) : s), ZERO);
  return init.reduce<Quantity>((m, q) => (q ? max(m, q) : m), sum);
}

function configQuantity(text: string, what: string): Quantity {
  const q = tryParseQuantity(text);
  if (!q) throw new SidecarError("internal", `config ${what}: ${quoteSpec(text)} is not a Kubernetes quantity`);
  return q;
}

/** Whether any container of the pod sets `resource` (a limit or a request). */
function podSets(pod: Pod, resource: string): boolean {
  return [...pod.spec.initContainers, ...pod.spec.containers].some((c) =>
    Object.hasOwn(c.resources.limits, resource) || Object.hasOwn(c.resources.requests, resource)
  );
}

/**
 * The job's resources: the containers' amounts added up, and the pod's flavor
 * (docs/pod-to-job.md#flavors). A flavor's Cpu, Memory and Gpus are job-level: each stands in
 * for the total only where no container sets that resource, never per container.
 */
export function planResources(pod: Pod, cfg: PlanConfig, label: string, quote: Quote) {
  const defaults: Defaults = {
    cpu: configQuantity(cfg.defaultResources.cpu, "DefaultResources.Cpu"),
    memory: configQuantity(cfg.defaultResources.memory, "DefaultResources.Memory"),
  };
  if (cfg.defaultResources.disk !== undefined) defaults.disk = configQuantity(cfg.defaultResources.disk, "DefaultResources.Disk");
  const initAmounts = pod.spec.initContainers.map((c) => containerAmounts(c, defaults));
  const mainAmounts = pod.spec.containers.map((c) => containerAmounts(c, defaults));
  const podGpus = Math.max(
    mainAmounts.reduce((s, a) => s + a.gpus, 0),
    ...initAmounts.map((a) => a.gpus),
  );
  const choice = chooseFlavor(pod.metadata.annotations[FLAVOR_ANNOTATION], podGpus > 0, cfg.flavors, cfg.defaultFlavor);
  if ("unknown" in choice) {
    const offered = cfg.flavors.length ? `this site offers ${cfg.flavors.map((f) => f.name).join(", ")}` : "this site offers none";
    throw podError(label, annotationPath(FLAVOR_ANNOTATION), `no flavor is named ${quote(choice.unknown)}; ${offered}`);
  }
  const flavor = choice.flavor;
  const fromFlavor = (res: "cpu" | "memory", text: string | undefined) =>
    text !== undefined && !podSets(pod, res) ? configQuantity(text, `Flavors.${flavor!.name}.${res === "cpu" ? "Cpu" : "Memory"}`) : undefined;
  // A pod with no container at all (nothing offloaded) still asks for one container's defaults.
  const cpu = fromFlavor("cpu", flavor?.cpu) ?? total(mainAmounts.map((a) => a.cpu), initAmounts.map((a) => a.cpu)) ?? defaults.cpu;
  const memory = fromFlavor("memory", flavor?.memory) ?? total(mainAmounts.map((a) => a.memory), initAmounts.map((a) => a.memory)) ?? defaults.memory;
  const disk = total(mainAmounts.map((a) => a.disk), initAmounts.map((a) => a.disk)) ?? defaults.disk;
  const gpus = podGpus === 0 && flavor?.gpus ? flavor.gpus : podGpus;
  return { defaults, initAmounts, mainAmounts, cpu, memory, disk, gpus, flavor };
}
