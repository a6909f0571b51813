/**
 * Follows the operator's clusters in HTCondor: one condor_q for every cluster still running, then
 * one condor_history for the procs the queue no longer has (docs/operator.md#following-the-procs).
 * Procs are matched by their ids (`ClusterId.ProcId`, recorded at submit), never by an attribute
 * a job can rewrite. Also the search by UID that settles a submit whose answer was lost.
 */
import { adNumber, type JobAd, type JobId, jobIdString } from "../condor/parse.ts";
import type { Condor } from "../condor/tools.ts";
import { classAdString } from "../core/classad.ts";
import { PROC_ATTRIBUTES, type ProcAd } from "./status.ts";

/** The most cluster ids in one constraint: condor_q's argument list stays short. */
const CLUSTERS_PER_QUERY = 500;

function toProcAd(ad: JobAd): ProcAd | undefined {
  const proc = adNumber(ad, "ProcId");
  const jobStatus = adNumber(ad, "JobStatus");
  if (proc === undefined || jobStatus === undefined) return undefined;
  const out: ProcAd = { proc, jobStatus };
  const n = (k: string) => adNumber(ad, k);
  const s = (k: string) => (typeof ad[k] === "string" ? (ad[k] as string) : undefined);
  if (n("ExitCode") !== undefined) out.exitCode = n("ExitCode");
  if (typeof ad.ExitBySignal === "boolean") out.exitBySignal = ad.ExitBySignal;
  if (n("ExitSignal") !== undefined) out.exitSignal = n("ExitSignal");
  if (n("HoldReasonCode") !== undefined) out.holdCode = n("HoldReasonCode");
  if (n("HoldReasonSubCode") !== undefined) out.holdSubCode = n("HoldReasonSubCode");
  if (s("HoldReason") !== undefined) out.holdReason = s("HoldReason");
  if (s("RemoveReason") !== undefined) out.removeReason = s("RemoveReason");
  return out;
}

/** What HTCondor says of some procs: in the queue, in the history, or in neither. */
export interface ProcSighting {
  ad?: ProcAd;
  /** `unknown`: the history could not be read this time; nothing may be concluded. */
  where: "queue" | "history" | "nowhere" | "unknown";
}

/**
 * The ads of the given procs, by `cluster.proc`. `wanted`: cluster → the ProcIds still unsettled.
 * Throws when condor_q fails: then nothing is known, and nothing may be concluded.
 */
export async function sightProcs(condor: Condor, wanted: ReadonlyMap<number, readonly number[]>): Promise<Map<string, ProcSighting>> {
  const out = new Map<string, ProcSighting>();
  const clusters = [...wanted.keys()];
  const inQueue = new Map<string, ProcAd>();
  for (let i = 0; i < clusters.length; i += CLUSTERS_PER_QUERY) {
    const part = clusters.slice(i, i + CLUSTERS_PER_QUERY);
    const constraint = part.map((c) => `ClusterId == ${c}`).join(" || ");
    for (const ad of await condor.query({ constraint, attributes: PROC_ATTRIBUTES })) {
      const c = adNumber(ad, "ClusterId");
      const p = toProcAd(ad);
      if (c !== undefined && p) inQueue.set(`${c}.${p.proc}`, p);
    }
  }
  const missing: JobId[] = [];
  for (const [cluster, procs] of wanted) {
    for (const proc of procs) {
      const id = `${cluster}.${proc}`;
      const ad = inQueue.get(id);
      if (ad) out.set(id, { ad, where: "queue" });
      else missing.push({ cluster, proc });
    }
  }
  if (missing.length > 0) {
    let ended: JobAd[] = [];
    try {
      ended = await condor.history({ ids: missing, attributes: PROC_ATTRIBUTES, limit: missing.length });
    } catch {
      // The history cannot be read now: those procs stay unknown until the next refresh.
      for (const id of missing) out.set(jobIdString(id), { where: "unknown" });
      return out;
    }
    const found = new Map<string, ProcAd>();
    for (const ad of ended) {
      const c = adNumber(ad, "ClusterId");
      const p = toProcAd(ad);
      if (c !== undefined && p) found.set(`${c}.${p.proc}`, p);
    }
    for (const id of missing) {
      const sid = jobIdString(id);
      const ad = found.get(sid);
      out.set(sid, ad ? { ad, where: "history" } : { where: "nowhere" });
    }
  }
  return out;
}

/** A search by UID must not trust a job that may have run: only procs queued since the submit began. */
const QDATE_SLACK_SECONDS = 5;

/**
 * The clusters that carry this HTCJob's UID and were queued since `since` (epoch ms): what a
 * submit whose answer was lost (a crash, a timeout) queued, if anything. Such procs cannot have
 * run yet, so they cannot have rewritten the UID. Queue first, then the history.
 */
export async function findClustersByUid(condor: Condor, operatorId: string, uid: string, since: number): Promise<Map<number, number>> {
  const bound = Math.floor(since / 1000) - QDATE_SLACK_SECONDS;
  const constraint = `HTCJobOperatorId == ${classAdString(operatorId)} && HTCJobUID == ${classAdString(uid)} && QDate >= ${bound}`;
  const attributes = ["ClusterId", "ProcId", "HTCJobUID", "QDate"];
  const clusters = new Map<number, number>();
  const take = (ads: readonly JobAd[]) => {
    for (const ad of ads) {
      const c = adNumber(ad, "ClusterId");
      if (c === undefined || ad.HTCJobUID !== uid || (adNumber(ad, "QDate") ?? 0) < bound) continue;
      clusters.set(c, (clusters.get(c) ?? 0) + 1);
    }
  };
  take(await condor.query({ constraint, attributes }));
  if (clusters.size === 0) take(await condor.history({ constraint, attributes, limit: 100_000, scanLimit: 100_000 }));
  return clusters;
}
