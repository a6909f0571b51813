/**
 * GET /status (docs/interlink.md#get-status) is a lookup: each pod's status from its job's ad in
 * the latest view of the queue (queue.ts), or the final status recorded when the job left. The
 * work behind it runs after every query of the queue, full or targeted (`track`, for the jobs
 * that query asked about): one condor_history for all the jobs that left, the removal of
 * unrecoverable holds and of jobs that rewrote their identity, the fetch of spooled output, and
 * the search for jobs that seem lost. What must happen later without a new event (a hold's grace
 * ending, a job between queue and history, a removal to retry) is a recheck of that job
 * (docs/status.md#what-drives-status).
 */
import type { StatusAnswer } from "../app.ts";
import { adNumber, type JobAd } from "../core/classad.ts";
import { staleness } from "../core/health.ts";
import { holdOutcome } from "../core/holds.ts";
import { type Ownership, ownership } from "../core/job-identity.ts";
import type { PodRef } from "../core/requests.ts";
import type { StateLine } from "../core/state-line.ts";
import { linesFromAd, type PodStatus, podStatus } from "../core/status.ts";
import { jobFileSize, readStateFiles, removeFiles } from "../store/files.ts";
import type { LiveJob, PodRecord } from "../store/store.ts";
import type { Ctx } from "./context.ts";
import { containerKeys, identity, jid, ownedJob, recordedJob, secretPaths, unsafeFileWarning } from "./records.ts";
import { askedAt, type Snapshot } from "./queue.ts";
import { errorText } from "../core/errors.ts";

/** A job in neither queue nor history for this long is lost (between the two is normal briefly). */
const LOST_AFTER_MS = 60_000;
/** condor_transfer_data runs before a spooled job is finalized with whatever came back. */
const MAX_FETCH_ATTEMPTS = 10;
const FETCH_RETRY_MS = 10_000;
/** Job ids in one condor_history at most. */
const HISTORY_BATCH_MAX = 1000;

export interface StatusService {
  status(pods: readonly PodRef[]): Promise<StatusAnswer>;
}

export function createStatusService(c: Ctx): StatusService {
  c.queue.afterRefresh = (snapshot, live) => track(c, snapshot, live);
  return { status: (pods) => status(c, pods) };
}

async function status(c: Ctx, pods: readonly PodRef[]): Promise<StatusAnswer> {
  // Which pods interLink still asks about (docs/status.md#pods-interlink-forgot).
  c.forget.named(pods.map((p) => p.uid));
  const reported = () =>
    pods.flatMap((p) => {
      const r = c.store.get(p.uid);
      return r && r.phase !== "deleted" && r.phase !== "removing" ? [r] : [];
    });
  let records = reported();
  let live = records.some((r) => r.phase === "submitted");
  // Only the first refresh after start is waited for (and the records read again after it, which
  // may have finished some); then the view is read as it is.
  if (live && !c.queue.current()) {
    await c.queue.ready();
    records = reported();
    live = records.some((r) => r.phase === "submitted");
  }
  if (live) c.queue.checkAlive();
  const snap = c.queue.current();
  const usable = snap && !c.queue.failing() ? snap : undefined;
  const statuses = records.flatMap((r) => {
    const s = view(c, r, usable);
    if (s) c.tracing.pods.observed(r, s);
    return s ?? [];
  });
  // Pods left out because condor_q failed: say so (interLink keeps their last state).
  return { statuses, stale: live ? staleness(c.queue.schedd) : undefined };
}

/**
 * One pod's status as known now; undefined leaves the pod out, and interLink keeps serving the
 * last state it had (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status, "A pod missing
 * from the answer"): while HTCondor does not answer, and between the job leaving the queue and the
 * refresher recording its end.
 */
function view(c: Ctx, r: PodRecord, snap: Snapshot | undefined): PodStatus | undefined {
  if (r.phase === "creating") return podStatus(identity(r), { kind: "creating" });
  if (r.phase === "finished") return JSON.parse(r.terminal!) as PodStatus;
  if (!snap) return undefined;
  const ad = snap.ads.get(jid(r));
  if (ad) {
    const owner = ownership(recordedJob(r), ad, c.planConfig.sidecarId);
    if (owner.kind === "foreign") return replacedStatus(r, owner);
    return owner.rewrote.length > 0 ? tamperedStatus(r, owner.rewrote.join(" and "), true) : podStatus(identity(r), { kind: "queued", ad });
  }
  // A job recorded after the view's condor_q started cannot be in it: not gone, just new.
  if ((r.submittedAt ?? 0) >= askedAt(snap, jid(r))) return podStatus(identity(r), { kind: "creating" });
  return undefined;
}

/** Asks about the job again after StatusCacheSeconds (no event may come to say so). */
function retryLater(c: Ctx, id: string): void {
  c.queue.recheck(id, c.now() + c.config.StatusCacheSeconds * 1000);
}

/** Records the pod's final status and removes its secrets: the job has left. */
function finalize(c: Ctx, r: PodRecord, status: PodStatus): void {
  // A delete may have moved the record on meanwhile: then it is the delete's to finish.
  if (c.store.finish(r.uid, JSON.stringify(status), c.now())) {
    removeFiles(r.dir, secretPaths(r));
    c.tracing.pods.ended(r, status);
  }
  c.lastFetch.delete(r.uid);
  c.removedSeen.delete(jid(r));
}

/**
 * The ad at the pod's job id is another job's (core/job-identity.ts): the schedd's queue started
 * over, or the store is older than the queue. The pod's job is gone; the other job is left alone
 * (docs/status.md#a-job-id-that-names-another-job).
 */
function replacedStatus(r: PodRecord, owner: Extract<Ownership, { kind: "foreign" }>): PodStatus {
  const found = owner.found === undefined ? "no GlobalJobId" : `GlobalJobId ${JSON.stringify(owner.found)}`;
  const recorded = r.globalJobId === undefined ? "" : `, not ${JSON.stringify(r.globalJobId)}`;
  return podStatus(identity(r), {
    kind: "lost",
    reason: "JobReplaced",
    message: `Job ${jid(r)} now names another job (${found}${recorded}): the schedd's queue started over or the state store is older than it; ` +
      "the pod's job is gone, and the sidecar removed nothing",
  });
}

/** Finalizes a pod whose job id names another job now; that job is never acted on. */
function observeReplaced(c: Ctx, r: PodRecord, owner: Extract<Ownership, { kind: "foreign" }>): void {
  c.log.warn("the pod's job id names another job now: reporting the pod's job gone, removing nothing", {
    uid: r.uid,
    jid: jid(r),
    recorded: r.globalJobId,
    found: owner.found,
  });
  finalize(c, r, replacedStatus(r, owner));
}

/** The ownership of an ad at a pod's job id; a `GlobalJobId` learned from it is recorded. */
function ownerOf(c: Ctx, r: Parameters<typeof recordedJob>[0], ad: JobAd): Ownership {
  const owner = ownership(recordedJob(r), ad, c.planConfig.sidecarId);
  if (owner.kind === "ours" && owner.learned !== undefined && r.globalJobId === undefined) c.store.update(r.uid, { globalJobId: owner.learned }, c.now());
  return owner;
}

function tamperedStatus(r: PodRecord, attrs: string, inQueue: boolean): PodStatus {
  return podStatus(identity(r), {
    kind: "failed",
    reason: "JobTampered",
    message: `Job ${jid(r)} rewrote ${attrs} in its job ad; the sidecar no longer trusts what it reports${inQueue ? " and removed it" : ""}`,
    exitCode: 1,
    lines: new Map(),
  });
}

/**
 * A job that rewrote its identity is failed and removed: its container states are the job's
 * word, which no longer counts. Until condor_rm succeeds the failure is reported but not final,
 * and the next refresh tries the removal again.
 */
async function observeTampered(c: Ctx, r: PodRecord, inQueue: boolean, attrs: string): Promise<void> {
  c.log.error("a job rewrote its identity attributes: reporting its pod failed", { uid: r.uid, jid: jid(r), attributes: attrs, inQueue });
  if (inQueue) {
    try {
      await c.remove(ownedJob(r), "htcondor-sidecar: the job rewrote its identity attributes");
    } catch (err) {
      c.log.warn("cannot remove a job that rewrote its identity; retrying next time", { uid: r.uid, jid: jid(r), error: errorText(err) });
      retryLater(c, jid(r));
      return;
    }
  }
  finalize(c, r, tamperedStatus(r, attrs, inQueue));
}

/** The final status of a job that ended: the state files that came back, else what it chirped. */
function observeEnded(c: Ctx, r: PodRecord, ad: JobAd): void {
  const files = readStateFiles(r.dir, containerKeys(r), unsafeFileWarning(c, r));
  const lines = new Map<string, StateLine>(linesFromAd(ad, r.containers));
  for (const [k, v] of files) lines.set(k, v);
  finalize(c, r, podStatus(identity(r), { kind: "ended", ad, lines }));
}

/** A hold that cannot recover is removed after HoldGraceSeconds, and the pod fails (core/holds.ts). */
async function observeHeld(c: Ctx, j: LiveJob, ad: JobAd): Promise<void> {
  const code = adNumber(ad, "HoldReasonCode") ?? 0;
  if (!c.config.TerminalHoldCodes.includes(code)) return;
  const since = j.heldSince ?? c.now();
  if (j.heldSince === undefined) c.store.update(j.uid, { heldSince: since }, c.now());
  // A job followed through the event log is not asked about again unless something happens:
  // the end of the grace period is a reason of its own.
  if (c.now() - since < c.config.HoldGraceSeconds * 1000) return c.queue.recheck(`${j.cluster}.${j.proc}`, since + c.config.HoldGraceSeconds * 1000);
  const r = c.store.get(j.uid);
  if (!r) return;
  const holdReason = typeof ad.HoldReason === "string" ? ad.HoldReason : undefined;
  const { reason, exitCode } = holdOutcome({
    code,
    subCode: adNumber(ad, "HoldReasonSubCode"),
    reason: holdReason,
    usageKiB: adNumber(ad, "ResidentSetSize"),
    requestMiB: adNumber(ad, "RequestMemory"),
  });
  // A memory kill reads as the kubelet's OOMKilled, with HTCondor's words for it
  // (docs/status.md#memory-kills).
  const why = reason === "OOMKilled" && holdReason ? holdReason : `${holdReason ?? "held"} (HoldReasonCode ${code}); removed by the sidecar`;
  try {
    await c.remove(ownedJob(r), `htcondor-sidecar: unrecoverable hold ${code}`);
  } catch (err) {
    c.log.warn("cannot remove unrecoverably held job; retrying next time", { uid: r.uid, error: errorText(err) });
    retryLater(c, jid(r));
    return;
  }
  finalize(c, r, podStatus(identity(r), { kind: "failed", reason, message: why, exitCode, lines: linesFromAd(ad, r.containers) }));
}

/**
 * Fetches the output of spooled jobs that completed, with one condor_transfer_data for all that
 * are due. condor_transfer_data prints success even for a job that does not exist (observed), so
 * success means the state files the wrapper always writes came back; a pod is tried again every
 * FETCH_RETRY_MS, MAX_FETCH_ATTEMPTS times at most. Returns the pods that are done (fetched, or
 * given up on).
 */
async function fetchOutputs(c: Ctx, records: readonly PodRecord[]): Promise<PodRecord[]> {
  const done = records.filter((r) => !r.spooled || r.outputFetched);
  const due = records.filter((r) => r.spooled && !r.outputFetched && c.now() - (c.lastFetch.get(r.uid) ?? -Infinity) >= FETCH_RETRY_MS);
  if (due.length === 0) return done;
  for (const r of due) c.lastFetch.set(r.uid, c.now());
  let failure: string | undefined;
  try {
    await c.condor.transferData(due.map(ownedJob));
  } catch (err) {
    failure = errorText(err);
  }
  for (const r of due) {
    const missing = containerKeys(r).filter((k) => {
      try {
        return jobFileSize({ dir: r.dir, rel: `podstate/${k}` }) === undefined;
      } catch {
        return true; // not a plain file: readStateFiles says why
      }
    });
    const problem = failure ?? (missing.length > 0 ? `condor_transfer_data brought back no state for ${missing.join(", ")}` : undefined);
    const attempts = r.fetchAttempts + 1;
    if (problem === undefined || attempts >= MAX_FETCH_ATTEMPTS) {
      if (problem !== undefined) c.log.warn("giving up fetching the spooled output", { uid: r.uid, jid: jid(r), attempts, error: problem });
      c.store.update(r.uid, { outputFetched: true, fetchAttempts: attempts }, c.now());
      done.push(r);
    } else {
      c.log.warn("spooled output not fetched yet; retrying", { uid: r.uid, jid: jid(r), attempts, error: problem });
      c.store.update(r.uid, { fetchAttempts: attempts }, c.now());
    }
  }
  return done;
}

/** History ads by job id, in batches of HISTORY_BATCH_MAX; `scanLimit` bounds how far each call reads. */
async function historyOf(c: Ctx, jobs: readonly LiveJob[], scanLimit: boolean): Promise<Map<string, JobAd>> {
  const out = new Map<string, JobAd>();
  for (let i = 0; i < jobs.length; i += HISTORY_BATCH_MAX) {
    const part = jobs.slice(i, i + HISTORY_BATCH_MAX);
    // By id alone, like the queue: a constraint on InterLinkSidecarId would let a job that
    // rewrote it look lost. A search by id alone stops when it has found them.
    const found = await c.condor.history({
      ids: part.map((j) => ({ cluster: j.cluster, proc: j.proc })),
      attributes: c.queue.attributes(),
      limit: part.length,
      ...(scanLimit ? { scanLimit: Math.max(10_000, part.length * 10) } : {}),
    });
    for (const ad of found) out.set(`${ad.ClusterId}.${ad.ProcId}`, ad);
  }
  return out;
}

/** The end of jobs that left the queue: their history ads, or, after LOST_AFTER_MS in neither, lost. */
async function trackGone(c: Ctx, gone: readonly LiveJob[]): Promise<void> {
  let history: Map<string, JobAd>;
  try {
    history = await historyOf(c, gone, true);
  } catch (err) {
    c.log.warn("condor_history failed; the pods whose jobs left the queue are left out until it answers", { error: errorText(err) });
    for (const j of gone) retryLater(c, `${j.cluster}.${j.proc}`);
    return;
  }
  const ended: [PodRecord, JobAd][] = [];
  const missing: LiveJob[] = [];
  for (const j of gone) {
    const ad = history.get(`${j.cluster}.${j.proc}`);
    const r = ad && c.store.get(j.uid);
    if (ad && r) ended.push([r, ad]);
    else if (!ad) missing.push(j);
  }
  // Between queue and history is normal for a moment; a job in neither for long is searched once
  // more with no scan limit (a bounded scan may stop short of an old job on a busy schedd).
  const now = c.now();
  for (const j of missing) {
    if (j.missingSince === undefined) c.store.update(j.uid, { missingSince: now }, now);
    retryLater(c, `${j.cluster}.${j.proc}`);
  }
  const overdue = missing.filter((j) => j.missingSince !== undefined && now - j.missingSince > LOST_AFTER_MS);
  if (overdue.length > 0) {
    let late: Map<string, JobAd>;
    try {
      late = await historyOf(c, overdue, false);
    } catch (err) {
      c.log.warn("condor_history failed; the pods whose jobs seem lost are left out", { error: errorText(err) });
      late = new Map();
      overdue.length = 0;
    }
    for (const j of overdue) {
      const r = c.store.get(j.uid);
      if (!r) continue;
      const ad = late.get(jid(r));
      if (ad) ended.push([r, ad]);
      else finalize(c, r, podStatus(identity(r), { kind: "lost", message: `Job ${jid(r)} is in neither the queue nor the history` }));
    }
  }
  // No fetch: a spooled job's sandbox leaves the schedd with the job (docs/htcondor.md#condor_transfer_data),
  // so condor_transfer_data could only say it fetched nothing, ten times over.
  for (const [r, ad] of ended) {
    const owner = ownerOf(c, r, ad);
    if (owner.kind === "foreign") observeReplaced(c, r, owner);
    else if (owner.rewrote.length > 0) await observeTampered(c, r, false, owner.rewrote.join(" and "));
    else observeEnded(c, r, ad);
  }
}

/** What a fresh view of the queue asks for: run by the refresher after every condor_q. */
async function track(c: Ctx, snap: Snapshot, live: ReadonlyMap<string, LiveJob>): Promise<void> {
  const gone: LiveJob[] = [];
  const completed: [PodRecord, JobAd][] = [];
  for (const id of live.keys()) {
    const j = live.get(id)!;
    const ad = snap.ads.get(id);
    if (!ad) {
      if (j.submittedAt < snap.at) gone.push(j);
      continue;
    }
    if (j.missingSince !== undefined) c.store.update(j.uid, { missingSince: undefined }, c.now());
    const js = adNumber(ad, "JobStatus");
    // Released: a later hold gets its own grace period.
    if (js !== 5 && j.heldSince !== undefined) c.store.update(j.uid, { heldSince: undefined }, c.now());
    if (js !== 3) c.removedSeen.delete(id);
    // The ad at the job's id is the pod's job only when it carries what was recorded of it
    // (core/job-identity.ts): another job that holds the id now is never acted on.
    const owner = ownerOf(c, j, ad);
    const forged = owner.kind === "ours" && owner.rewrote.length > 0 ? owner.rewrote.join(" and ") : undefined;
    const r = owner.kind === "foreign" || forged || js === 4 ? c.store.get(j.uid) : undefined;
    if (owner.kind === "foreign") {
      if (r) observeReplaced(c, r, owner);
    } else if (forged && r) await observeTampered(c, r, true, forged);
    else if (js === 5) await observeHeld(c, j, ad);
    // Completed but still in the queue: a spooled job waits there until its output is fetched.
    else if (js === 4 && r) completed.push([r, ad]);
    else if (js === 3) recheckRemoved(c, id);
  }
  const done = await fetchOutputs(c, completed.map(([r]) => r));
  for (const r of done) observeEnded(c, r, completed.find(([e]) => e.uid === r.uid)![1]);
  // A fetch to try again when it is due: no new status comes to say when (a spooled job is watched for changes only).
  for (const [r] of completed) if (!done.includes(r)) c.queue.recheck(jid(r), (c.lastFetch.get(r.uid) ?? c.now()) + FETCH_RETRY_MS);
  if (gone.length > 0) await trackGone(c, gone);
}

/**
 * A removed job still in the queue (its shadow exiting) leaves with no new status for the watch
 * to see: it is asked about again, after StatusCacheSeconds at first and less often the longer it
 * stays (a job that wrote JobStatus itself may stay for ever), at most a minute apart.
 */
function recheckRemoved(c: Ctx, id: string): void {
  const now = c.now();
  const since = c.removedSeen.get(id) ?? now;
  c.removedSeen.set(id, since);
  c.queue.recheck(id, now + Math.min(60_000, Math.max(c.config.StatusCacheSeconds * 1000, (now - since) / 2)));
}
