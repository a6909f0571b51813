/**
 * Flavors: named job-level resource and policy defaults a site offers (as the SLURM plugin's
 * `Flavors` and `DefaultFlavor`), and which one a pod gets (docs/pod-to-job.md#flavors). Pure.
 */

/** The annotation by which a pod picks a flavor. */
export const FLAVOR_ANNOTATION = "htcondor-job.vk.io/flavor";

/** One flavor of the site's config, validated at start. */
export interface Flavor {
  name: string;
  /** Job-level defaults (Kubernetes quantities; whole GPUs), used where no container sets the resource. */
  cpu?: string;
  memory?: string;
  gpus?: number;
  /** ANDed with Submit.Requirements. */
  requirements?: string;
  /** Used only where Submit.AccountingGroups has no entry for the pod's namespace. */
  accountingGroup?: string;
  /** Submit lines written after Submit.ExtraLines; a key of both is refused at start. */
  extraLines: [string, string][];
}

export type FlavorChoice = { flavor?: Flavor } | { unknown: string };

/**
 * The pod's flavor: the one its annotation names, else the first (in the file's order) with GPUs
 * when the pod requests GPUs, else the default, else none. A name the site does not have is an
 * error, never a fallback: a typo must not run on the wrong resources.
 */
export function chooseFlavor(
  annotation: string | undefined,
  podRequestsGpus: boolean,
  flavors: readonly Flavor[],
  defaultFlavor: string | undefined,
): FlavorChoice {
  if (annotation !== undefined) {
    const name = annotation.trim();
    const named = flavors.find((f) => f.name === name);
    return named ? { flavor: named } : { unknown: name };
  }
  const gpuFlavor = podRequestsGpus ? flavors.find((f) => (f.gpus ?? 0) > 0) : undefined;
  if (gpuFlavor) return { flavor: gpuFlavor };
  const byDefault = defaultFlavor === undefined ? undefined : flavors.find((f) => f.name === defaultFlavor);
  return byDefault ? { flavor: byDefault } : {};
}

/** Submit.Requirements and the flavor's, both required. */
export function combineRequirements(site: string | undefined, flavor: string | undefined): string | undefined {
  if (site && flavor) return `(${site}) && (${flavor})`;
  return site || flavor || undefined;
}
