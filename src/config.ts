/**
 * SidecarConfig.yaml: the original plugin's keys (CommandPrefix, ExportPodData, DataRootFolder)
 * plus this sidecar's own, validated with zod. Pure: text in, config (or a ConfigError) out.
 * Every key and its default is documented in the README's configuration table.
 */
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { tryParseQuantity } from "./core/quantity.ts";
import type { PlanConfig } from "./core/types.ts";
import { submitKey, submitValueProblem } from "./render/submit.ts";

export class ConfigError extends Error {
  override name = "ConfigError";
}

const seconds = z.number().int().nonnegative();
const str = z.string();
const quantity = z.string().refine((q) => tryParseQuantity(q) !== undefined, "is not a Kubernetes quantity (e.g. 500m, 2, 4Gi)");

/**
 * A submit command the renderer can write, checked when the file loads: a key it refuses would
 * otherwise fail every create (`+X` is fine: it is written `MY.X`).
 */
const submitCommand = z.string().superRefine((k, ctx) => {
  const r = submitKey(k);
  if ("problem" in r) ctx.addIssue({ code: "custom", message: r.problem });
});

const extraLines = z.record(str, z.union([str, z.number(), z.boolean()])).superRefine((lines, ctx) => {
  for (const [k, v] of Object.entries(lines)) {
    const r = submitKey(k);
    const problem = "problem" in r ? r.problem : submitValueProblem(String(v));
    if (problem) ctx.addIssue({ code: "custom", path: [k], message: "problem" in r ? problem : `the value ${problem}` });
  }
});

const Channels = z.object({
  /** Image `host` / `host:<site>`: run on the worker without a container. */
  HostImage: z.boolean().default(false),
  /** Flags the singularity-options annotation may use; empty: the annotation is refused. */
  SingularityOptions: z.array(str).default([]),
  /** Path prefixes hostPath volumes may use; empty: hostPath is refused. */
  HostPathPrefixes: z.array(str).default([]),
  /** slurm-job.vk.io/pre-exec (interLink's mesh network needs it). */
  PreExec: z.boolean().default(true),
  /** interlink.eu/wstunnel-client-commands (interLink's tunnel needs it). */
  Wstunnel: z.boolean().default(true),
  /** Submit commands the htcondor-job.vk.io/submit-options annotation may set. */
  SubmitOptions: z.array(submitCommand).default(["request_disk", "max_retries", "rank", "job_lease_duration", "priority"]),
});

const Schema = z.object({
  DataRootFolder: str.min(1).default("./data"),
  CommandPrefix: str.default(""),
  ExportPodData: z.boolean().default(true),
  SidecarId: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1-64 letters, digits, '.', '_' or '-'")
    .default("htcondor-sidecar"),
  BodyLimit: z.number().int().positive().default(64 * 1024 * 1024),
  KeepAliveTimeoutSeconds: z.number().int().min(121, "must exceed interLink's 120 s idle pool timeout").default(125),
  ShutdownGraceSeconds: seconds.default(10),
  Spool: z.enum(["auto", "always", "never"]).default("auto"),
  MaxConcurrentSubmits: z.number().int().min(1).default(8),
  SubmitTimeoutSeconds: z.number().int().min(1).default(60),
  QueryTimeoutSeconds: z.number().int().min(1).default(20),
  StatusCacheSeconds: z.number().nonnegative().default(2),
  PingFailureThreshold: z.number().int().min(1).default(3),
  /** Hold codes that cannot recover: removed after HoldGraceSeconds and reported terminated. */
  TerminalHoldCodes: z.array(z.number().int()).default([12, 13, 34, 46, 47]),
  HoldGraceSeconds: seconds.default(60),
  ReaperIntervalSeconds: z.number().int().min(1).default(30),
  SharedFilesystem: z.boolean().default(false),
  Node: z
    .object({
      Cpu: quantity.optional(),
      Memory: quantity.optional(),
      Gpus: z.number().int().nonnegative().optional(),
      Pods: str.default("1000"),
      Taints: z
        .array(z.object({ key: str.min(1), value: str.optional(), effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]) }))
        .optional(),
    })
    .default({ Pods: "1000" }),
  DefaultResources: z
    .object({ Cpu: quantity.default("1"), Memory: quantity.default("1Gi"), Disk: quantity.optional() })
    .default({ Cpu: "1", Memory: "1Gi" }),
  Restart: z
    .object({
      MaxRestarts: z.number().int().nonnegative().default(3),
      AlwaysAfterSuccess: z.boolean().default(false),
      BackoffInitialSeconds: seconds.default(10),
      BackoffMaxSeconds: seconds.default(300),
    })
    .default({ MaxRestarts: 3, AlwaysAfterSuccess: false, BackoffInitialSeconds: 10, BackoffMaxSeconds: 300 }),
  ContainerRuntime: str.default(""),
  RuntimeSearchPath: z.array(str).default([]),
  NoHome: z.boolean().default(true),
  ApptainerCacheDir: str.default(""),
  OldRuntime: z.enum(["warn", "refuse"]).default("warn"),
  Channels: Channels.default({
    HostImage: false,
    SingularityOptions: [],
    HostPathPrefixes: [],
    PreExec: true,
    Wstunnel: true,
    SubmitOptions: ["request_disk", "max_retries", "rank", "job_lease_duration", "priority"],
  }),
  Submit: z
    .object({
      /** Extra submit commands every job gets, in order. */
      ExtraLines: extraLines.default({}),
      /** Namespace → accounting group. */
      AccountingGroups: z.record(str, str).default({}),
      Requirements: str.default(""),
    })
    .default({ ExtraLines: {}, AccountingGroups: {}, Requirements: "" }),
});

export type FileConfig = z.infer<typeof Schema>;

export interface LoadedConfig {
  config: FileConfig;
  warnings: string[];
}

/**
 * Parses the file's text. `fileLabel` names it in messages (`SidecarConfig.yaml: <key>: <problem>`).
 * An empty or missing file is all defaults.
 */
export function parseConfig(text: string | undefined, fileLabel = "SidecarConfig.yaml"): LoadedConfig {
  let raw: unknown = {};
  if (text !== undefined && text.trim() !== "") {
    try {
      raw = parseYaml(text) ?? {};
    } catch (err) {
      const first = (err instanceof Error ? err.message : String(err)).split("\n")[0];
      throw new ConfigError(`${fileLabel}: not valid YAML: ${first}`);
    }
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${fileLabel}: must be a mapping of keys to values`);
  }
  const result = Schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = issue.path.length ? issue.path.join(".") : "(top level)";
    throw new ConfigError(`${fileLabel}: ${key}: ${issue.message}`);
  }
  return { config: result.data, warnings: unknownKeys(raw as Record<string, unknown>, Schema, "").map((k) => `${fileLabel}: unknown key ${k} (ignored)`) };
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
    extraSubmitLines: Object.entries(c.Submit.ExtraLines).map(([k, v]) => [k, String(v)]),
    accountingGroups: c.Submit.AccountingGroups,
    requirements: c.Submit.Requirements || undefined,
    sharedFilesystem: c.SharedFilesystem,
    dummyJob,
  };
}
