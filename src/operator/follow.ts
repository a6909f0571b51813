/**
 * Follows the operator's clusters in HTCondor: one condor_q for every cluster still running, then
 * one condor_history for the procs the queue no longer has (docs/operator.md#following-the-procs).
 * Procs are matched by their ids (`ClusterId.ProcId`, recorded at submit), never by an attribute
 * a job can rewrite. Also the search by UID that settles a submit whose answer was lost.
 */
import { type JobId, jobIdString } from "../condor/parse.ts";
import { adNumber, classAdString, type JobAd } from "../core/classad.ts";
import type { Condor, OwnedJob } from "../condor/tools.ts";
import { procConstraint } from "../core/job-identity.ts";
import { nextSince } from "../core/watch.ts";
import type { HTCJobRecord } from "./store.ts";
import { PROC_ATTRIBUTES, type ProcAd } from "./status.ts";

/** The most terms (a cluster, or one proc) in one constraint: condor_q's argument list stays short. */
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

/** What a pass already knows, or wants to know besides the procs' ads. */
export interface SightOptions {
  /**
   * The queue's ads of the wanted procs, read already (the watch's answer of what changed): no
   * condor_q runs, and a wanted proc without an ad here has left the queue (the history is asked).
   */
  seen?: ReadonlyMap<string, JobAd>;
  /** Ask the schedd's clock too: told where a window of what changed may start after this read (core/watch.ts nextSince). */
  clock?: (since: number) => void;
  now?: () => number;
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
export async function sightProcs(
  condor: Condor,
  wanted: ReadonlyMap<number, readonly number[]>,
  /** Told the `Owner` of the operator's own jobs (condor_q shows no one else's): the history search's bound. */
  onOwner?: (owner: string) => void,
  /** Clusters asked about by their wanted ProcIds only (a few procs a job event log named), not whole. */
  exact?: ReadonlySet<number>,
  o: SightOptions = {},
): Promise<Map<string, ProcSighting>> {
  const out = new Map<string, ProcSighting>();
  const inQueue = new Map<string, ProcAd>();
  const take = (ad: JobAd) => {
    if (typeof ad.Owner === "string") onOwner?.(ad.Owner);
    const c = adNumber(ad, "ClusterId");
    const p = toProcAd(ad);
    if (c !== undefined && p) inQueue.set(`${c}.${p.proc}`, p);
  };
  if (o.seen) {
    // Matched by the recorded ids: an ad of a proc not wanted is not taken.
    for (const ad of o.seen.values()) if (wanted.get(adNumber(ad, "ClusterId") ?? -1)?.includes(adNumber(ad, "ProcId") ?? -1)) take(ad);
  } else {
    const terms = [...wanted].flatMap(([c, procs]) => exact?.has(c) ? procs.map((p) => `ClusterId == ${c} && ProcId == ${p}`) : [`ClusterId == ${c}`]);
    const attributes = o.clock ? [...PROC_ATTRIBUTES, "Owner", "ServerTime"] : [...PROC_ATTRIBUTES, "Owner"];
    const now = o.now ?? Date.now;
    let since: number | undefined;
    for (let i = 0; i < terms.length; i += CLUSTERS_PER_QUERY) {
      const constraint = terms.slice(i, i + CLUSTERS_PER_QUERY).join(" || ");
      const at = now();
      const ads = await condor.query({ constraint, attributes });
      for (const ad of ads) take(ad);
      // The earliest of the calls' windows: a change after any of them is asked about.
      const next = o.clock ? nextSince(ads, now() - at) : undefined;
      if (next !== undefined) since = Math.min(next, since ?? next);
    }
    if (since !== undefined) o.clock?.(since);
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

/** What a search by UID asks for. */
export interface UidSearch {
  operatorId: string;
  uid: string;
  /** The submit's token (`MY.HTCJobSubmitToken`), when the store kept one. */
  token?: string;
  /** The operator's own `Owner`, when known: condor_history shows every user's jobs. */
  owner?: string;
  /** Also the history (costly: a scan); else the queue only. */
  history: boolean;
  /**
   * The cluster the object's status names. With neither a token nor an owner to narrow the
   * history to the operator's own jobs, the history is asked about that cluster only, and takes
   * it only if its ads carry the UID and the operator's id: a replica or a store that never saw
   * the submit must still not submit a finished HTCJob again.
   */
  claimedCluster?: number;
}

/**
 * The clusters, with the ProcIds found, that carry this HTCJob's UID and the operator's id (and,
 * when given, the submit's token): what a submit whose answer was lost queued, or what a lost
 * store had recorded. condor_q answers with the caller's own jobs only; the history is asked with
 * an explicit `Owner`, and not at all without an owner or a token to narrow it. No QDate bound:
 * the schedd's clock need not be ours. These attributes are the job's own to rewrite unless the
 * site lists them in IMMUTABLE_JOB_ATTRS (docs/threat-model.md): the operator's own procs get no
 * chirp (no want_io_proxy), and the token is written nowhere a job can read before it is queued.
 */
export async function findClustersByUid(condor: Condor, s: UidSearch): Promise<{ clusters: Map<number, Set<number>>; owner?: string }> {
  let constraint = `HTCJobOperatorId == ${classAdString(s.operatorId)} && HTCJobUID == ${classAdString(s.uid)}`;
  if (s.token !== undefined) constraint += ` && HTCJobSubmitToken == ${classAdString(s.token)}`;
  const attributes = ["ClusterId", "ProcId", "HTCJobUID", "HTCJobOperatorId", "HTCJobSubmitToken", "Owner"];
  const clusters = new Map<number, Set<number>>();
  let owner: string | undefined;
  const take = (ads: readonly JobAd[]) => {
    for (const ad of ads) {
      const c = adNumber(ad, "ClusterId");
      const p = adNumber(ad, "ProcId");
      if (c === undefined || p === undefined || ad.HTCJobUID !== s.uid || ad.HTCJobOperatorId !== s.operatorId) continue;
      if (s.token !== undefined && ad.HTCJobSubmitToken !== s.token) continue;
      if (typeof ad.Owner === "string") owner = ad.Owner;
      clusters.set(c, (clusters.get(c) ?? new Set()).add(p));
    }
  };
  take(await condor.query({ constraint, attributes }));
  const by = s.owner ?? owner;
  const claimed = s.claimedCluster !== undefined ? ` && ClusterId == ${s.claimedCluster}` : undefined;
  if (s.history && (by !== undefined || s.token !== undefined || claimed !== undefined)) {
    const mine = by !== undefined ? `${constraint} && Owner == ${classAdString(by)}` : s.token !== undefined ? constraint : `${constraint}${claimed}`;
    take((await condor.history({ constraint: mine, attributes, limit: 100_000, scanLimit: 100_000 })).filter((ad) => by === undefined || ad.Owner === by));
  }
  return { clusters, owner };
}

/** One proc of the record's cluster, as condor_rm and condor_transfer_data name it (core/job-identity.ts procConstraint). */
export function procJob(rec: Pick<HTCJobRecord, "cluster" | "uid" | "submitToken">, proc: number): OwnedJob {
  return { id: { cluster: rec.cluster!, proc }, constraint: procConstraint({ cluster: rec.cluster!, proc, uid: rec.uid, submitToken: rec.submitToken }) };
}
