/**
 * What the parts of the pod planner share while they plan one pod (planJob, core/plan.ts): the
 * request, the site's config, the quoting for reasons, and what the parts collect (files, empty
 * directories, warnings).
 */
import { type CreateRequest, type PathSeg, type Pod, podError, type Quote, type Volume } from "../pod.ts";
import type { Quantity } from "../quantity.ts";
import type { PlanConfig, PodFile } from "../types.ts";

export const DEFAULT_FILE_MODE = 0o644;
export const SECRET_FILE_MODE = 0o600;

/** The site's DefaultResources as quantities (config validated them; a bad one is our bug). */
export interface Defaults {
  cpu: Quantity;
  memory: Quantity;
  disk?: Quantity;
}

export interface Ctx {
  req: CreateRequest;
  pod: Pod;
  cfg: PlanConfig;
  label: string;
  /**
   * The only quoting for reasons and warnings about the pod: this plan derives values from the
   * request's secrets and configMaps, which it never shows (pod.ts requestQuote).
   */
  quote: Quote;
  podIP?: string;
  hostname: string;
  volumes: Map<string, { volume: Volume; index: number }>;
  /** Pod-level amounts that stand in for node allocatable in `limits.*` resourceFieldRefs. */
  podTotals: { cpu: Quantity; memory: Quantity; disk?: Quantity };
  /** What a container that sets no limit or request counts with (DefaultResources). */
  defaults: Defaults;
  files: PodFile[];
  /** Volume name → sandbox directory, once laid out. */
  volumeDirs: Map<string, string>;
  emptyDirs: string[];
  warnings: string[];
}

export function fail(ctx: Ctx, path: readonly PathSeg[], what: string): never {
  throw podError(ctx.label, path, what);
}
