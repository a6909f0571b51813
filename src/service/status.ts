/**
 * GET /status (spec: interlink §5): each pod's status from its job's ad in the queue, else in
 * the history, with the final status recorded once the job has left (and never asked again).
 */
import type { StatusAnswer } from "../app.ts";
import { type JobAd, adNumber } from "../condor/parse.ts";
import { staleness } from "../core/health.ts";
import { holdOutcome } from "../core/holds.ts";
import type { PodRef } from "../core/requests.ts";
import type { StateLine } from "../core/state-line.ts";
import { type PodStatus, linesFromAd, podStatus } from "../core/status.ts";
import { jobFileSize, readStateFiles, removeFiles } from "../store/files.ts";
import type { PodRecord } from "../store/store.ts";
import { type Ctx, containerKeys, errorText, identity, jid, jobId, secretPaths, unsafeFileWarning } from "./context.ts";
import type { Snapshot } from "./queue.ts";

/** A job in neither queue nor history for this long is lost (between the two is normal briefly). */
const LOST_AFTER_MS = 60_000;
/** condor_transfer_data runs before a spooled job is finalized with whatever came back. */
const MAX_FETCH_ATTEMPTS = 10;
const FETCH_RETRY_MS = 10_000;

export interface StatusService {
  status(pods: readonly PodRef[]): Promise<StatusAnswer>;
  /** The statuses of these records, finalizing those whose job has ended. */
  statusOf(records: readonly PodRecord[]): Promise<PodStatus[]>;
  /** Fetches a spooled job's output (once it succeeded, or gave up); false while a later try may bring it. */
  fetchOutput(r: PodRecord): Promise<boolean>;
}

/** Records the pod's final status and removes its secrets: the job has left. */
function finalize(c: Ctx, r: PodRecord, status: PodStatus): PodStatus {
  // A delete may have moved the record on meanwhile: then it is the delete's to finish.
  if (c.store.finish(r.uid, JSON.stringify(status), c.now())) {
    r.phase = "finished";
    removeFiles(r.dir, secretPaths(r));
  }
  c.lastFetch.delete(r.uid);
  return status;
}

/**
 * Fetches a spooled job's output once. condor_transfer_data prints success even for a job
 * that does not exist (observed), so success means the state files the wrapper always writes
 * came back. Returns false while a later attempt may still bring them.
 */
async function fetchOutput(c: Ctx, r: PodRecord): Promise<boolean> {
  if (!r.spooled || r.outputFetched) return true;
  const last = c.lastFetch.get(r.uid);
  if (last !== undefined && c.now() - last < FETCH_RETRY_MS) return false;
  c.lastFetch.set(r.uid, c.now());
  let problem: string | undefined;
  try {
    await c.condor.transferData(jobId(r));
    const missing = containerKeys(r).filter((k) => {
      try {
        return jobFileSize({ dir: r.dir, rel: `podstate/${k}` }) === undefined;
      } catch {
        return true; // not a plain file: readStateFiles says why
      }
    });
    if (missing.length > 0) problem = `condor_transfer_data brought back no state for ${missing.join(", ")}`;
  } catch (err) {
    problem = errorText(err);
  }
  const attempts = r.fetchAttempts + 1;
  r.fetchAttempts = attempts;
  if (problem === undefined || attempts >= MAX_FETCH_ATTEMPTS) {
    if (problem !== undefined) c.log.warn("giving up fetching the spooled output", { uid: r.uid, jid: jid(r), attempts, error: problem });
    c.store.update(r.uid, { outputFetched: true, fetchAttempts: attempts }, c.now());
    r.outputFetched = true;
    return true;
  }
  c.log.warn("spooled output not fetched yet; retrying", { uid: r.uid, jid: jid(r), attempts, error: problem });
  c.store.update(r.uid, { fetchAttempts: attempts }, c.now());
  return false;
}

async function observeEnded(c: Ctx, r: PodRecord, ad: JobAd, inQueue = false): Promise<PodStatus> {
  // Still in the queue, the output can be fetched on a later pass: not final yet.
  if (!(await fetchOutput(c, r)) && inQueue) return podStatus(identity(r), { kind: "queued", ad });
  const files = readStateFiles(r.dir, containerKeys(r), unsafeFileWarning(c, r));
  // Chirped lines are the fallback when the files did not come back.
  const lines = new Map<string, StateLine>(linesFromAd(ad, r.containers));
  for (const [k, v] of files) lines.set(k, v);
  return finalize(c, r, podStatus(identity(r), { kind: "ended", ad, lines }));
}

/** A hold that cannot recover is removed after HoldGraceSeconds, and the pod fails (core/holds.ts). */
async function observeHeld(c: Ctx, r: PodRecord, ad: JobAd): Promise<PodStatus> {
  const code = adNumber(ad, "HoldReasonCode") ?? 0;
  if (!c.config.TerminalHoldCodes.includes(code)) return podStatus(identity(r), { kind: "queued", ad });
  const since = r.heldSince ?? c.now();
  if (r.heldSince === undefined) c.store.update(r.uid, { heldSince: since }, c.now());
  if (c.now() - since < c.config.HoldGraceSeconds * 1000) return podStatus(identity(r), { kind: "queued", ad });
  const { reason, exitCode } = holdOutcome(code, adNumber(ad, "HoldReasonSubCode"));
  const why = `${typeof ad.HoldReason === "string" ? ad.HoldReason : "held"} (HoldReasonCode ${code}); removed by the sidecar`;
  try {
    await c.condor.remove(jobId(r), `htcondor-sidecar: unrecoverable hold ${code}`);
  } catch (err) {
    c.log.warn("cannot remove unrecoverably held job; retrying next time", { uid: r.uid, error: errorText(err) });
    return podStatus(identity(r), { kind: "queued", ad });
  }
  const lines = new Map([...linesFromAd(ad, r.containers)]);
  return finalize(c, r, podStatus(identity(r), { kind: "failed", reason, message: why, exitCode, lines }));
}

/**
 * The identity attributes the sidecar wrote at submit, when the job's ad no longer holds them:
 * the job rewrote them (condor_chirp), to pass for another pod or to hide from this sidecar.
 */
function tampered(c: Ctx, r: PodRecord, ad: JobAd): string | undefined {
  const changed = [
    ad.InterLinkPodUID !== r.uid ? "InterLinkPodUID" : "",
    ad.InterLinkSidecarId !== c.planConfig.sidecarId ? "InterLinkSidecarId" : "",
  ].filter(Boolean);
  return changed.length > 0 ? changed.join(" and ") : undefined;
}

/**
 * A job that rewrote its identity is failed and removed: its container states are the job's
 * word, which no longer counts. Until condor_rm succeeds the failure is reported but not
 * final, so the next status tries the removal again.
 */
async function observeTampered(c: Ctx, r: PodRecord, inQueue: boolean, attrs: string): Promise<PodStatus> {
  const failed = podStatus(identity(r), {
    kind: "failed",
    reason: "JobTampered",
    message: `Job ${jid(r)} rewrote ${attrs} in its job ad; the sidecar no longer trusts what it reports${inQueue ? " and removed it" : ""}`,
    exitCode: 1,
    lines: new Map(),
  });
  c.log.error("a job rewrote its identity attributes: reporting its pod failed", { uid: r.uid, jid: jid(r), attributes: attrs, inQueue });
  if (inQueue) {
    try {
      await c.condor.remove(jobId(r), "htcondor-sidecar: the job rewrote its identity attributes");
    } catch (err) {
      c.log.warn("cannot remove a job that rewrote its identity; retrying next time", { uid: r.uid, jid: jid(r), error: errorText(err) });
      return failed;
    }
  }
  return finalize(c, r, failed);
}

/** One pod's status from its queue ad, else its history ad; undefined when not known yet. */
async function observe(c: Ctx, r: PodRecord, ad: JobAd | undefined, historyAd: JobAd | undefined): Promise<PodStatus | undefined> {
  const forged = ad ? tampered(c, r, ad) : historyAd ? tampered(c, r, historyAd) : undefined;
  if (forged) return observeTampered(c, r, ad !== undefined, forged);
  if (ad) {
    if (r.missingSince !== undefined) c.store.update(r.uid, { missingSince: undefined }, c.now());
    const js = adNumber(ad, "JobStatus");
    if (js !== 5 && r.heldSince !== undefined) {
      // Released: a later hold gets its own grace period.
      c.store.update(r.uid, { heldSince: undefined }, c.now());
      r.heldSince = undefined;
    }
    if (js === 4) return observeEnded(c, r, ad, true); // spooled: stays in the queue until fetched
    if (js === 5) return observeHeld(c, r, ad);
    return podStatus(identity(r), { kind: "queued", ad });
  }
  if (historyAd) return observeEnded(c, r, historyAd);
  const since = r.missingSince ?? c.now();
  if (r.missingSince === undefined) c.store.update(r.uid, { missingSince: since }, c.now());
  if (c.now() - since <= LOST_AFTER_MS) return undefined;
  // Before calling it lost: the bounded history scan may have stopped short of an old job on
  // a busy schedd; ask for this one job with no scan limit (a search by id stops when found).
  try {
    const [h] = await c.condor.history({ ids: [jobId(r)], attributes: c.queue.attributes(), limit: 1 });
    const forgedLate = h && tampered(c, r, h);
    if (forgedLate) return observeTampered(c, r, false, forgedLate);
    if (h) return observeEnded(c, r, h);
  } catch (err) {
    c.log.warn("condor_history failed; the pod is left out", { uid: r.uid, error: errorText(err) });
    return undefined;
  }
  return finalize(c, r, podStatus(identity(r), { kind: "lost", message: `Job ${jid(r)} is in neither the queue nor the history` }));
}

/** The history ads of the followed jobs that left the queue, by job id; undefined when condor_history failed. */
async function historyOf(c: Ctx, gone: readonly PodRecord[]): Promise<Map<string, JobAd> | undefined> {
  if (gone.length === 0) return new Map();
  try {
    // By id alone, like the queue: a constraint on InterLinkSidecarId would let a job that
    // rewrote it look lost.
    const found = await c.condor.history({
      ids: gone.map(jobId),
      attributes: c.queue.attributes(),
      limit: gone.length,
      scanLimit: Math.max(10_000, gone.length * 10),
    });
    return new Map(found.map((ad) => [`${ad.ClusterId}.${ad.ProcId}`, ad]));
  } catch (err) {
    c.log.warn("condor_history failed; those pods are left out, so interLink keeps their last state", { error: errorText(err) });
    return undefined;
  }
}

async function statusOf(c: Ctx, records: readonly PodRecord[]): Promise<PodStatus[]> {
  const live = records.filter((r) => r.phase === "submitted");
  let snap: Snapshot | undefined;
  if (live.length > 0) {
    try {
      snap = await c.queue.snapshot();
    } catch (err) {
      c.log.warn("condor_q failed; those pods are left out, so interLink keeps their last state", { error: errorText(err) });
    }
  }
  // A job recorded after its snapshot's condor_q started cannot be in it: not gone, just new.
  const fresh = (r: PodRecord) => snap !== undefined && (r.submittedAt ?? 0) >= snap.at;
  const inQueue = snap?.ads;
  const history = await historyOf(c, inQueue ? live.filter((r) => !inQueue.has(jid(r)) && !fresh(r)) : []);
  if (!history) snap = undefined;

  const out: PodStatus[] = [];
  for (const r of records) {
    if (r.phase === "creating") {
      out.push(podStatus(identity(r), { kind: "creating" }));
    } else if (r.phase === "finished") {
      out.push(JSON.parse(r.terminal!) as PodStatus);
    } else if (!snap) {
      // HTCondor did not answer: omit the pod, and interLink keeps serving the last state it
      // had (spec: interlink §5.3, "Missing pod in the response"); the answer says it is stale.
    } else if (fresh(r) && !snap.ads.has(jid(r))) {
      out.push(podStatus(identity(r), { kind: "creating" }));
    } else {
      const st = await observe(c, r, snap.ads.get(jid(r)), history!.get(jid(r)));
      if (st) out.push(st);
    }
  }
  return out;
}

export function createStatusService(c: Ctx): StatusService {
  return {
    async status(pods) {
      const records = pods.flatMap((p) => {
        const r = c.store.get(p.uid);
        return r && r.phase !== "deleted" && r.phase !== "removing" ? [r] : [];
      });
      const statuses = await statusOf(c, records);
      // Pods left out because condor_q failed: say so (interLink keeps their last state).
      const live = records.some((r) => r.phase === "submitted");
      return { statuses, stale: live ? staleness(c.queue.schedd) : undefined } satisfies StatusAnswer;
    },
    statusOf: (records) => statusOf(c, records),
    fetchOutput: (r) => fetchOutput(c, r),
  };
}
