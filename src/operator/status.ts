/**
 * What an HTCJob's status says, from what HTCondor says of its procs (pure;
 * docs/operator.md#status). HTCondor is the truth: each proc's own JobStatus and ExitCode, never
 * a message from the job. Also the Events a change of status deserves.
 */
import type { ProcOutcome } from "./store.ts";

/** The part of a proc's job ad the operator reads (condor_q or condor_history). */
export interface ProcAd {
  proc: number;
  jobStatus: number;
  exitCode?: number;
  exitBySignal?: boolean;
  exitSignal?: number;
  holdCode?: number;
  holdSubCode?: number;
  holdReason?: string;
  removeReason?: string;
}

export const PROC_ATTRIBUTES = [
  "ClusterId",
  "ProcId",
  "JobStatus",
  "ExitCode",
  "ExitBySignal",
  "ExitSignal",
  "HoldReasonCode",
  "HoldReasonSubCode",
  "HoldReason",
  "RemoveReason",
  "HTCJobUID",
] as const;

export type LiveState = { state: "idle" | "running" | "held"; reason?: string };
export type ProcState = LiveState | ProcOutcome;

/** A proc that has not been seen yet (just submitted, or the queue was not asked yet) counts as idle. */
export const UNSEEN: LiveState = { state: "idle" };

const oneLine = (s: string | undefined, max = 300) => (s ?? "").replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, " ").trim().slice(0, max);

/**
 * A proc's state from its ad. `removedByUs`: the operator removed it (the object is being
 * deleted), so a removal is not a failure to report. A hold with a code in `terminalHoldCodes`
 * cannot come back: the proc counts as failed at once, and the operator removes it at once
 * (docs/operator.md#following-the-procs).
 */
export function procState(ad: ProcAd, terminalHoldCodes: readonly number[]): ProcState {
  switch (ad.jobStatus) {
    case 1:
      return { state: "idle" };
    case 2:
    case 6: // transferring output: still running as far as the user can tell
    case 7: // suspended by the pool: it will run on
      return { state: "running" };
    case 5: {
      // SpoolingInput: condor_submit -spool holds each proc until its input arrives; it is waiting, not held.
      if (ad.holdCode === 16) return { state: "idle" };
      const reason = `held (code ${ad.holdCode ?? "?"}${ad.holdSubCode ? `.${ad.holdSubCode}` : ""}): ${oneLine(ad.holdReason) || "no reason given"}`;
      if (ad.holdCode !== undefined && terminalHoldCodes.includes(ad.holdCode)) return { state: "failed", reason };
      return { state: "held", reason };
    }
    case 3:
      return { state: "failed", reason: `removed outside the operator: ${oneLine(ad.removeReason) || "no reason given"}` };
    case 4: {
      if (ad.exitBySignal === true) {
        const sig = ad.exitSignal ?? 0;
        return { state: "failed", exitCode: 128 + sig, reason: `killed by signal ${sig}` };
      }
      const code = ad.exitCode;
      if (code === 0) return { state: "succeeded", exitCode: 0 };
      return { state: "failed", exitCode: code ?? 1, reason: code === undefined ? "ended without an exit code" : `exited with code ${code}` };
    }
    default:
      return { state: "idle" };
  }
}

export const isFinal = (s: ProcState): s is ProcOutcome => s.state === "succeeded" || s.state === "failed";

export interface Condition {
  /** `OutputKept` appears only when some proc's working-directory files were not kept. */
  type: "Submitted" | "Complete" | "Failed" | "OutputKept";
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface HTCJobStatus {
  jobid: string[];
  clusterId?: number;
  idle: number;
  running: number;
  held: number;
  active: number;
  succeeded: number;
  failed: number;
  observedGeneration: number;
  /** Where each proc's output is kept, and the command that reads it. */
  output?: string;
  conditions: Condition[];
}

export interface StatusInput {
  /** The generation the procs run (the one submitted). */
  generation: number;
  /** The object's generation, when a spec edit came after the submit: noted, never applied. */
  observed?: number;
  procs: number;
  cluster?: number;
  /** Per ProcId (length `procs`); refused or not yet submitted: empty. */
  states: readonly ProcState[];
  /** The refusal, when nothing was (or will be) submitted. */
  refusal?: { reason: string; message: string };
  /** Submitting but not yet known (a search by UID is pending). */
  pending?: string;
  output?: string;
}

/** The status from the procs' states. lastTransitionTime is filled in by {@link carryTimes}. */
export function htcjobStatus(i: StatusInput): HTCJobStatus {
  const n = (s: string) => i.states.filter((x) => x.state === s).length;
  const st: HTCJobStatus = {
    jobid: i.cluster === undefined ? [] : Array.from({ length: i.procs }, (_, p) => `${i.cluster}.${p}`),
    idle: n("idle"),
    running: n("running"),
    held: n("held"),
    active: 0,
    succeeded: n("succeeded"),
    failed: n("failed"),
    observedGeneration: i.observed ?? i.generation,
    conditions: [],
  };
  st.active = st.idle + st.running + st.held;
  if (i.cluster !== undefined) st.clusterId = i.cluster;
  if (i.output !== undefined) st.output = i.output;
  const cond = (type: Condition["type"], ok: boolean, reason: string, message: string): Condition => ({
    type,
    status: ok ? "True" : "False",
    reason,
    message,
    observedGeneration: i.generation,
  });

  if (i.refusal) {
    // Argo's failureCondition (status.failed > 0) must fire for a refused HTCJob too.
    st.failed = i.procs;
    st.conditions = [
      cond("Submitted", false, i.refusal.reason, i.refusal.message),
      cond("Complete", false, i.refusal.reason, "Nothing was submitted"),
      cond("Failed", true, i.refusal.reason, i.refusal.message),
    ];
    return st;
  }
  if (i.cluster === undefined) {
    const why = i.pending ?? "Waiting to submit";
    st.idle = i.procs;
    st.active = i.procs;
    st.conditions = [cond("Submitted", false, "Submitting", why), cond("Complete", false, "Submitting", why), cond("Failed", false, "Submitting", why)];
    return st;
  }
  // An HTCJob runs once: a later spec is observed (observedGeneration) but its procs stay those of the submitted one.
  const submitted = i.observed !== undefined && i.observed !== i.generation
    ? cond(
      "Submitted",
      true,
      "SpecNotApplied",
      `HTCondor cluster ${i.cluster} holds the ${i.procs} proc(s) of generation ${i.generation}; the spec of generation ${i.observed} is not applied: an HTCJob runs once (delete it and create it again to run a new spec)`,
    )
    : cond("Submitted", true, "Submitted", `HTCondor cluster ${i.cluster} holds the ${i.procs} proc(s)`);
  const ended = st.succeeded + st.failed;
  const complete = st.succeeded === i.procs
    ? cond("Complete", true, "AllSucceeded", `All ${i.procs} proc(s) exited with code 0`)
    : cond("Complete", false, ended === i.procs ? "SomeFailed" : "Running", `${ended} of ${i.procs} proc(s) ended, ${st.succeeded} succeeded`);
  const failures = i.states.map((s, p) => ({ s, p })).filter((x) => x.s.state === "failed");
  let failed: Condition;
  if (failures.length === 0) failed = cond("Failed", false, "NoFailure", "No proc failed");
  else {
    const first = failures[0]!;
    const o = first.s as ProcOutcome;
    const more = failures.length > 1 ? ` (and ${failures.length - 1} more)` : "";
    const reason = o.exitCode !== undefined && o.exitCode !== 0 && /^exited/.test(o.reason ?? "")
      ? "ProcFailed"
      : /^held/.test(o.reason ?? "")
      ? "ProcHeld"
      : /^removed/.test(o.reason ?? "")
      ? "ProcRemoved"
      : "ProcFailed";
    failed = cond("Failed", true, reason, `Proc ${i.cluster}.${first.p} ${o.reason ?? "failed"}${more}`);
  }
  st.conditions = [submitted, complete, failed];
  // Never a part silently: a proc whose files were not kept says so (docs/operator.md#output).
  const notKept = i.states.map((s, p) => ({ s, p })).filter((x) => isFinal(x.s) && x.s.files?.kept === false);
  if (notKept.length > 0) {
    const first = notKept[0]!;
    const more = notKept.length > 1 ? ` (and ${notKept.length - 1} more)` : "";
    const why = oneLine((first.s as ProcOutcome).files!.reason, 400);
    st.conditions.push(cond("OutputKept", false, "OutputNotKept", `The files of proc ${i.cluster}.${first.p} were not kept: ${why}${more}`));
  }
  return st;
}

/** Keeps each condition's lastTransitionTime while its status is unchanged; a changed one gets `now`. */
export function carryTimes(next: HTCJobStatus, previous: Partial<HTCJobStatus> | undefined, now: string): HTCJobStatus {
  const before = new Map((previous?.conditions ?? []).map((c) => [c.type, c]));
  return {
    ...next,
    conditions: next.conditions.map((c) => {
      const old = before.get(c.type);
      return { ...c, lastTransitionTime: old && old.status === c.status && old.lastTransitionTime ? old.lastTransitionTime : now };
    }),
  };
}

/** True when writing `next` would change what the object says (a status is written only then). */
export function statusDiffers(next: HTCJobStatus, previous: unknown): boolean {
  return canonical(next) !== canonical(previous ?? {});
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

export interface StatusEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/**
 * The Events a change from `before` to `after` deserves: submit, completion, failure, a new hold,
 * a refusal. Compared with the status the object held, so a restart does not repeat them.
 */
export function statusEvents(before: Partial<HTCJobStatus> | undefined, after: HTCJobStatus): StatusEvent[] {
  const out: StatusEvent[] = [];
  const was = (type: Condition["type"]) => before?.conditions?.find((c) => c.type === type);
  const now = (type: Condition["type"]) => after.conditions.find((c) => c.type === type)!;
  const submitted = now("Submitted");
  if (submitted.status === "True" && was("Submitted")?.status !== "True") {
    out.push({ type: "Normal", reason: "Submitted", message: submitted.message });
  }
  if (submitted.reason === "SpecNotApplied" && (was("Submitted")?.reason !== "SpecNotApplied" || before?.observedGeneration !== after.observedGeneration)) {
    out.push({ type: "Warning", reason: "SpecNotApplied", message: submitted.message });
  }
  const failed = now("Failed");
  if (submitted.status === "False" && failed.status === "True" && was("Failed")?.status !== "True") {
    out.push({ type: "Warning", reason: failed.reason, message: failed.message });
    return out;
  }
  if ((after.held ?? 0) > (before?.held ?? 0)) {
    out.push({ type: "Warning", reason: "ProcHeld", message: `${after.held} proc(s) held by HTCondor` });
  }
  if (failed.status === "True" && ((before?.failed ?? 0) < after.failed || was("Failed")?.status !== "True")) {
    out.push({ type: "Warning", reason: failed.reason, message: failed.message });
  }
  const kept = after.conditions.find((c) => c.type === "OutputKept");
  if (kept && kept.message !== was("OutputKept")?.message) out.push({ type: "Warning", reason: kept.reason, message: kept.message });
  const complete = now("Complete");
  if (complete.status === "True" && was("Complete")?.status !== "True") out.push({ type: "Normal", reason: "Completed", message: complete.message });
  return out;
}
