/**
 * The pod's annotations that the plan reads (docs/interlink.md#annotations): the deliberate code
 * channels (pre-exec, wstunnel, singularity-options), the site-policy hooks (submit-options), and
 * the pod's IP.
 */
import { type PathSeg, type Pod, podError, quote as quoteSpec } from "../pod.ts";
import { type Ctx, fail } from "./context.ts";
import { parseSubmitOptions } from "./submit-options.ts";
import { singularityOptionCommands } from "../runtime-flags.ts";

// Annotation keys (docs/interlink.md#annotations).
export const ANNOTATIONS = {
  podIP: "interlink.eu/pod-ip",
  wstunnel: "interlink.eu/wstunnel-client-commands",
  preExec: ["slurm-job.vk.io/pre-exec", "htcondor-job.vk.io/pre-exec"],
  singularityOptions: ["htcondor-job.vk.io/singularity-options", "slurm-job.vk.io/singularity-options"],
  submitOptions: "htcondor-job.vk.io/submit-options",
  imageRoot: ["htcondor-job.knoc.io/image-root", "htcondor-job.vk.io/image-root"],
} as const;

export function annotationPath(key: string): PathSeg[] {
  return ["metadata", "annotations", key];
}

/** Values that undo what the wrapper relies on: byte-exact env and args, a clean environment. */
const CANNOT_WORK: Record<string, string> = {
  "--cleanenv=false": "the wrapper runs every container with --cleanenv (the slot's environment stays out)",
  "-e=false": "the wrapper runs every container with --cleanenv (the slot's environment stays out)",
  "--no-eval=false": "the wrapper passes --no-eval so that env values and arguments reach the container byte for byte",
};

function planSingularityOptions(ctx: Ctx): { start: string[]; exec: string[] } {
  const start: string[] = [];
  const exec: string[] = [];
  const allow = ctx.cfg.singularityOptionsAllow;
  for (const key of ANNOTATIONS.singularityOptions) {
    const text = ctx.pod.metadata.annotations[key];
    if (text === undefined || !text.trim()) continue;
    if (allow.length === 0) fail(ctx, annotationPath(key), "singularity-options are disabled on this site");
    // Whitespace-separated flags; a flag with a value is written `--flag=value` (a lone value
    // token is refused, since it could not be checked against the allowlist).
    for (const tok of text.trim().split(/\s+/)) {
      if (!tok.startsWith("-")) fail(ctx, annotationPath(key), `${ctx.quote(tok)} is not a flag; write options with a value as --flag=value`);
      const flag = tok.split("=")[0]!;
      if (!allow.includes(flag)) fail(ctx, annotationPath(key), `flag ${ctx.quote(flag)} is not allowed on this site (allowed: ${allow.join(" ")})`);
      const why = CANNOT_WORK[tok.toLowerCase()];
      if (why) fail(ctx, annotationPath(key), `flag ${ctx.quote(tok)} cannot work: ${why}`);
      // Where a flag acts (docs/container-runtimes.md#singularity-options): the same routing
      // decides at config load which runtimes accept the entry.
      const commands = singularityOptionCommands(flag);
      if (commands.includes("exec")) exec.push(tok);
      if (commands.includes("instance start")) start.push(tok);
    }
  }
  return { start, exec };
}

/**
 * The code channels and the pod's submit options, each refused here when the site disables it.
 * Planned before any container: a refused channel is the clearest message, before any container
 * detail.
 */
export function planChannels(
  ctx: Ctx,
): { preExec: string[]; backgroundCommands: string[]; runtimeOptions: { start: string[]; exec: string[] }; podOptions: [string, string][] } {
  const { annotations } = ctx.pod.metadata;
  const cfg = ctx.cfg;
  const preExec: string[] = [];
  for (const key of ANNOTATIONS.preExec) {
    const text = annotations[key];
    if (text === undefined || !text.trim()) continue;
    if (!cfg.allowPreExec) fail(ctx, annotationPath(key), "pre-exec is disabled on this site");
    preExec.push(text);
  }
  const backgroundCommands: string[] = [];
  const ws = annotations[ANNOTATIONS.wstunnel];
  if (ws !== undefined && ws.trim()) {
    if (!cfg.allowWstunnel) fail(ctx, annotationPath(ANNOTATIONS.wstunnel), "wstunnel client commands are disabled on this site");
    backgroundCommands.push(ws);
  }
  const runtimeOptions = planSingularityOptions(ctx);
  const podOptions: [string, string][] = [];
  const so = annotations[ANNOTATIONS.submitOptions];
  if (so !== undefined) {
    const r = parseSubmitOptions(so, cfg.submitOptionsAllow);
    if ("error" in r) fail(ctx, annotationPath(ANNOTATIONS.submitOptions), r.error);
    podOptions.push(...r.lines);
  }
  return { preExec, backgroundCommands, runtimeOptions, podOptions };
}

export function planPodIP(pod: Pod, label: string): string | undefined {
  const ip = pod.metadata.annotations[ANNOTATIONS.podIP]?.trim() || pod.status.podIP || undefined;
  if (ip !== undefined && !/^[0-9A-Fa-f.:]+$/.test(ip)) {
    const from = pod.metadata.annotations[ANNOTATIONS.podIP] ? annotationPath(ANNOTATIONS.podIP) : ["status", "podIP"];
    throw podError(label, from, `${quoteSpec(ip)} is not an IP address`);
  }
  return ip;
}
