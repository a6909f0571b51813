/**
 * The only code that runs the condor tools. Every call is an argv array with a timeout; the
 * environment is the sidecar's own plus what the flags map to (flags.ts condorAccess).
 */
import { basename, dirname } from "node:path";
import type { CondorAccess } from "../flags.ts";
import { tokenCopier } from "./credentials.ts";
import { errorText, SidecarError } from "../core/errors.ts";
import type { Logger } from "../logger.ts";
import type { Runtime, SpawnResult } from "../runtime/types.ts";
import {
  classifySubmitFailure,
  type JobId,
  jobIdString,
  type JsonAdSlices,
  parseJsonAds,
  parseRmTotals,
  parseTerseSubmit,
  parseTotals,
  type RmOutcome,
  type RmTotals,
  sliceJsonAds,
  submitRefusal,
  toolErrorReason,
} from "./parse.ts";
import type { JobAd } from "../core/classad.ts";

export const CONDOR_TOOLS = [
  "condor_submit",
  "condor_q",
  "condor_history",
  "condor_rm",
  "condor_status",
  "condor_tail",
  "condor_transfer_data",
] as const;
export type CondorTool = (typeof CONDOR_TOOLS)[number];

interface CondorOptions {
  runtime: Runtime;
  /** Directory holding the condor_* tools. */
  bin: string;
  access: CondorAccess;
  /** The environment the tools inherit (the sidecar's own). */
  baseEnv: Record<string, string>;
  submitTimeoutMs: number;
  queryTimeoutMs: number;
  log: Logger;
  /** Told about every tool run that ended (metrics). */
  onCommand?: (tool: CondorTool, outcome: "ok" | "error" | "timeout", seconds: number) => void;
}

export interface Condor {
  /**
   * condor_submit -terse of one description of `count` jobs (one cluster): their ids, in order.
   * `podOptions`: a pod wrote part of the description (its submit-options annotation); a
   * description refused then is a {@link SubmitRefused}.
   */
  submit(file: string, opts: { spool: boolean; podOptions: boolean; count: number }): Promise<JobId[]>;
  /**
   * condor_q -json of the caller's own jobs (condor_q's default,
   * docs/htcondor.md#which-jobs-condor_q-shows) that match the constraint, only the named
   * attributes.
   */
  query(opts: { constraint: string; attributes: readonly string[] }): Promise<JobAd[]>;
  /**
   * {@link Condor.query}, the answer's bytes with each ad's place in them (the refresher parses
   * only what changed), read into `into` (or a larger buffer when it does not fit).
   */
  querySlices(opts: { constraint: string; attributes: readonly string[]; into: Uint8Array }): Promise<JsonAdSlices>;
  /**
   * condor_q -json -totals: how many of the caller's jobs match, and the schedd's clock, from the
   * one summary ad; the schedd sends no job ad (docs/htcondor.md#counting-without-ads).
   */
  totals(constraint: string): Promise<{ jobs: number; serverTime: number | undefined }>;
  /** condor_history -json for ids and/or a constraint (newest first); no scanLimit: the whole history. */
  history(opts: { ids?: readonly JobId[]; constraint?: string; attributes: readonly string[]; limit: number; scanLimit?: number }): Promise<JobAd[]>;
  /**
   * condor_rm of many jobs with one reason, each named by the constraint that proves it the
   * sidecar's (core/job-identity.ts ownedConstraint; never a bare id, which names whatever job
   * holds it now): each job's outcome, keyed by `cluster.proc`, from the counts the tool prints
   * (docs/htcondor.md#a-constraint-not-a-job-id). Throws when the tool could not ask the schedd.
   */
  remove(jobs: readonly OwnedJob[], reason: string): Promise<Map<string, RmOutcome>>;
  /** condor_transfer_data of spooled jobs (several in one call), each named by its constraint as for {@link Condor.remove}. */
  transferData(jobs: readonly OwnedJob[]): Promise<void>;
  /** condor_tail -no-stdout of one sandbox file; resolves with its bytes. */
  tail(id: JobId, file: string, maxBytes: number, timeoutMs: number): Promise<SpawnResult>;
  machines(attributes: readonly string[]): Promise<JobAd[]>;
}

/** A job the sidecar acts on, with the constraint that selects it and nothing else. */
export interface OwnedJob {
  id: JobId;
  constraint: string;
}

/** Several jobs' constraints in one call: any of them. */
function anyOf(jobs: readonly OwnedJob[]): string {
  return jobs.length === 1 ? jobs[0]!.constraint : jobs.map((j) => `(${j.constraint})`).join(" || ");
}

/**
 * One job's outcome from the counts of a condor_rm that named it alone. The schedd never matches
 * a job already being removed (it adds `JobStatus != 3` to the constraint), so "nothing matched"
 * is a job that left or is leaving.
 */
function aloneOutcome(t: RmTotals): RmOutcome {
  if (t.succeeded > 0) return "removed";
  if (t.denied > 0) return "denied";
  if (t.failed > 0 || t.badStatus > 0) return "unknown";
  return t.alreadyDone > 0 ? "already_removing" : "not_found";
}

/**
 * Each job's outcome of a condor_rm of their constraints (`once` runs one), keyed by `sids`. The
 * counts settle a single job, and a batch that went all one way; a batch with refusals among
 * removals is asked again job by job (those the first call removed then match nothing: `done`).
 */
async function rmOutcomes(
  jobs: readonly OwnedJob[],
  sids: readonly string[],
  once: (part: readonly OwnedJob[]) => Promise<RmTotals>,
): Promise<Map<string, RmOutcome>> {
  const t = await once(jobs);
  const n = jobs.length;
  const all = (v: RmOutcome) => new Map(sids.map((sid) => [sid, v] as const));
  if (n === 1) return all(aloneOutcome(t));
  if (t.succeeded === n) return all("removed");
  if (t.denied === 0 && t.failed === 0 && t.badStatus === 0) return all(t.succeeded === 0 ? (t.alreadyDone === n ? "already_removing" : "not_found") : "done");
  const out = new Map<string, RmOutcome>();
  for (const [i, j] of jobs.entries()) {
    const o1 = aloneOutcome(await once([j]));
    out.set(sids[i]!, o1 === "not_found" || o1 === "already_removing" ? "done" : o1);
  }
  return out;
}

/**
 * The flags each tool gets before its own arguments. Schedd selection (`-name`, `-pool`) only
 * for the tools that talk to a schedd: condor_status has no `-name` (it exits 1 with
 * "Unknown option").
 */
export function toolArgs(access: Pick<CondorAccess, "scheddArgs" | "debugArgs">, tool: CondorTool): string[] {
  switch (tool) {
    case "condor_status":
      return [...access.debugArgs];
    default:
      return [...access.scheddArgs, ...access.debugArgs];
  }
}

/**
 * A file the tool reads as data, never as an option: one that starts with `-` would be an option
 * to it (docs/htcondor.md#conventions-of-every-tool). The sidecar names its files itself, so one
 * that does is a bug, refused here rather than run.
 */
function fileArg(tool: CondorTool, file: string): string {
  if (file.startsWith("-")) throw new SidecarError("internal", `Refusing to run ${tool} with ${JSON.stringify(file)}: it would read as an option`);
  return file;
}

/** A job id as a tool's argument: `cluster.proc`, both whole numbers, never something that reads as an option. */
function jobArg(tool: CondorTool, id: JobId): string {
  const whole = (n: number) => Number.isSafeInteger(n) && n >= 0;
  if (!whole(id.cluster) || !whole(id.proc)) throw new SidecarError("internal", `Refusing to run ${tool} with job id ${JSON.stringify(id)}: not a job id`);
  return jobIdString(id);
}

/**
 * condor_submit refused the description (a parse or validation error,
 * docs/htcondor.md#condor_submit-exit-codes-and-errors). Nothing was queued. With several pods in
 * the description it may be any one's fault; alone, it is the pod's (a 400) when the pod wrote part
 * of the description, else the sidecar's or the site's (a 503).
 */
export class SubmitRefused extends SidecarError {
  constructor(readonly refusal: string, podOptions: boolean, exitCode: number | string | null) {
    super(
      podOptions ? "invalid" : "unavailable",
      podOptions
        ? `metadata.annotations["htcondor-job.vk.io/submit-options"]: condor_submit refused the pod's submit options: ${refusal}`
        : `condor_submit exited with ${exitCode}: ${refusal}`,
    );
  }
}

export function createCondor(o: CondorOptions): Condor {
  const env = { ...o.baseEnv, ...o.access.env };
  const path = (tool: CondorTool) => `${o.bin}/${tool}`;
  const command = (tool: CondorTool, args: readonly string[]) => [path(tool), ...toolArgs(o.access, tool), ...args];
  // The tools read a --token-file only through its private copy, brought up to date before each run.
  const syncToken = o.access.tokenCopy ? tokenCopier(o.access.tokenCopy) : undefined;

  /** Runs a tool and tells onCommand how it ended. */
  async function spawnTool(
    tool: CondorTool,
    args: readonly string[],
    opts: { cwd?: string; timeoutMs: number; stdoutInto?: Uint8Array },
  ): Promise<SpawnResult> {
    const started = performance.now();
    try {
      syncToken?.();
      const r = await o.runtime.spawn({ argv: command(tool, args), env, cwd: opts.cwd, timeoutMs: opts.timeoutMs, stdoutInto: opts.stdoutInto });
      o.onCommand?.(tool, r.timedOut ? "timeout" : r.code === 0 ? "ok" : "error", r.durationMs / 1000);
      return r;
    } catch (err) {
      o.onCommand?.(tool, "error", (performance.now() - started) / 1000);
      throw err;
    }
  }

  async function run(tool: CondorTool, args: string[], opts: { cwd?: string; timeoutMs: number; stdoutInto?: Uint8Array }): Promise<SpawnResult> {
    let r: SpawnResult;
    try {
      r = await spawnTool(tool, args, opts);
    } catch (err) {
      throw new SidecarError("unavailable", `Cannot run ${tool}: ${errorText(err)}`);
    }
    o.log.debug("condor tool", { tool, args, code: r.code, durationMs: Math.round(r.durationMs) });
    if (r.timedOut) throw new SidecarError("timeout", `${tool} did not answer within ${Math.round(opts.timeoutMs / 1000)} s`);
    return r;
  }

  function fail(tool: CondorTool, r: SpawnResult, what: string): never {
    throw new SidecarError("unavailable", `${what}: ${tool} exited with ${r.code ?? r.signal}: ${toolErrorReason(r.stderr, r.stdout)}`);
  }

  function ads(tool: CondorTool, r: SpawnResult): JobAd[] {
    if (r.code !== 0) fail(tool, r, `Cannot query HTCondor`);
    try {
      return parseJsonAds(r.stdout);
    } catch (err) {
      throw new SidecarError("unavailable", `Cannot parse ${tool} -json output: ${errorText(err)}`);
    }
  }

  return {
    async submit(file, { spool, podOptions, count }) {
      // `./`: condor_submit takes any other argument that starts with `-` for an option, and has no `--`.
      const r = await run("condor_submit", ["-terse", ...(spool ? ["-spool"] : []), fileArg("condor_submit", `./${basename(file)}`)], {
        cwd: dirname(file),
        timeoutMs: o.submitTimeoutMs,
      });
      if (r.code !== 0) {
        // A description that condor_submit refused is the pod's to fix only when the pod wrote
        // part of it: the sidecar's own lines and the site's are the same for every pod.
        if (classifySubmitFailure(r.stderr) === "description") throw new SubmitRefused(submitRefusal(r.stderr), podOptions, r.code ?? r.signal);
        const line = toolErrorReason(r.stderr, r.stdout);
        // Only a refusal that names root gets the advice; other failures say what they are.
        const refusedRoot = r.stderr.split("\n").some((l) => /\broot\b/i.test(l) && /\b(owner|submitter|user)\b/i.test(l));
        const hint = refusedRoot ? " (the sidecar runs as root and HTCondor refuses jobs owned by root: run it as an ordinary submit user)" : "";
        throw new SidecarError("unavailable", `condor_submit exited with ${r.code ?? r.signal}: ${line}${hint}`);
      }
      try {
        return parseTerseSubmit(r.stdout, count);
      } catch (err) {
        throw new SidecarError("unavailable", errorText(err));
      }
    },

    async query({ constraint, attributes }) {
      const r = await run("condor_q", ["-json", "-attributes", attributes.join(","), "-constraint", constraint], { timeoutMs: o.queryTimeoutMs });
      return ads("condor_q", r);
    },

    async querySlices({ constraint, attributes, into }) {
      const r = await run("condor_q", ["-json", "-attributes", attributes.join(","), "-constraint", constraint], {
        timeoutMs: o.queryTimeoutMs,
        stdoutInto: into,
      });
      if (r.code !== 0) fail("condor_q", r, `Cannot query HTCondor`);
      try {
        return sliceJsonAds(r.stdoutBytes ?? into.subarray(0, 0));
      } catch (err) {
        throw new SidecarError("unavailable", `Cannot parse condor_q -json output: ${errorText(err)}`);
      }
    },

    async totals(constraint) {
      const r = await run("condor_q", ["-json", "-totals", "-constraint", constraint], { timeoutMs: o.queryTimeoutMs });
      if (r.code !== 0) fail("condor_q", r, `Cannot query HTCondor`);
      try {
        return parseTotals(r.stdout);
      } catch (err) {
        throw new SidecarError("unavailable", `Cannot parse condor_q -totals output: ${errorText(err)}`);
      }
    },

    async history({ ids = [], constraint, attributes, limit, scanLimit }) {
      const args = [...ids.map((id) => jobArg("condor_history", id)), "-json", "-attributes", attributes.join(","), "-limit", String(limit)];
      if (scanLimit !== undefined) args.push("-scanlimit", String(scanLimit));
      if (constraint) args.push("-constraint", constraint);
      const r = await run("condor_history", args, { timeoutMs: o.queryTimeoutMs });
      // A schedd that is down: exit 0 and no ads, yet nothing was asked
      // (docs/htcondor.md#several-schedds-in-one-pool); never "no such job".
      if (r.code === 0 && /^Unable to locate remote schedd/m.test(r.stderr)) fail("condor_history", r, "Cannot query HTCondor");
      return ads("condor_history", r);
    },

    async remove(jobs, reason) {
      const sids = jobs.map((j) => jobArg("condor_rm", j.id));
      /** One condor_rm of the jobs' constraints: its counts. */
      const once = async (part: readonly OwnedJob[]): Promise<RmTotals> => {
        // The tool takes the word after -reason as the reason, whatever it starts with. A job
        // id next to -constraint would make the tool ignore the constraint
        // (docs/htcondor.md#a-constraint-not-a-job-id): the constraint alone names the jobs.
        const r = await run("condor_rm", ["-totals", "-reason", reason, "-constraint", anyOf(part)], { timeoutMs: o.queryTimeoutMs });
        const totals = parseRmTotals(r.stdout);
        // An empty queue answers exit 0 with "There are no jobs in the queue" and no counts that
        // matter (docs/htcondor.md#clusters-users-and-constraints-one-summary-line).
        if (/There are no jobs in the queue/.test(r.stderr)) return { succeeded: 0, failed: 0, notFound: 0, badStatus: 0, alreadyDone: 0, denied: 0 };
        if (!totals) fail("condor_rm", r, `Cannot remove job ${part.map((j) => jobIdString(j.id)).join(" ")}`);
        return totals;
      };
      return rmOutcomes(jobs, sids, once);
    },

    async transferData(jobs) {
      const sids = jobs.map((j) => jobArg("condor_transfer_data", j.id));
      const r = await run("condor_transfer_data", ["-constraint", anyOf(jobs)], { timeoutMs: o.submitTimeoutMs });
      if (r.code !== 0) fail("condor_transfer_data", r, `Cannot fetch the output of job ${sids.join(" ")}`);
    },

    async tail(id, file, maxBytes, timeoutMs) {
      // condor_tail on a job that is not running waits forever (docs/htcondor.md#condor_tail).
      return spawnTool("condor_tail", ["-no-stdout", "-maxbytes", String(maxBytes), jobArg("condor_tail", id), fileArg("condor_tail", file)], {
        timeoutMs,
      });
    },

    async machines(attributes) {
      const r = await run("condor_status", ["-json", "-attributes", attributes.join(",")], { timeoutMs: o.queryTimeoutMs });
      return ads("condor_status", r);
    },
  };
}
