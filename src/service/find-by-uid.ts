/**
 * The search of this sidecar's jobs by pod UID: how a create whose job id was never recorded
 * finds its job (create.ts, delete.ts, submitter.ts, reconcile.ts).
 */
import type { Condor } from "../condor/tools.ts";
import { type JobId, jobIdString } from "../condor/parse.ts";
import { adNumber, classAdString, type JobAd } from "../core/classad.ts";
import { SidecarError } from "../core/errors.ts";
import type { PodRecord, Store } from "../store/store.ts";
import { QDATE_SLACK_SECONDS } from "./records.ts";

/** What the search needs of the service's context. */
export interface UidSearch {
  store: Store;
  condor: Condor;
  /** Selects this sidecar's jobs (context.ts). */
  sidecarConstraint: string;
}

/** Two jobs claim one pod UID (see findJobByUid): neither is adopted, and an operator must look. */
export class UidConflict extends SidecarError {
  constructor(uid: string, ids: readonly JobId[]) {
    super(
      "unavailable",
      `Jobs ${ids.map(jobIdString).join(" and ")} both claim pod ${uid}; neither is adopted: remove the one that is not the pod's (condor_rm)`,
    );
  }
}

/**
 * The jobs creates submitted, found by the pods' UIDs when their ids were never recorded (the
 * sidecar died, or condor_submit timed out, between the schedd's commit and the record): one
 * condor_q for any number of records, then one condor_history for those the queue lacks.
 * The UID is an attribute a job can rewrite, so a record only takes jobs queued since its
 * create began (they cannot have run yet), never one recorded for another pod, and two
 * candidates are a conflict that nothing here can settle: neither is adopted.
 */
export async function findJobsByUid(
  c: UidSearch,
  records: readonly Pick<PodRecord, "uid" | "createdAt">[],
): Promise<Map<string, JobId | UidConflict | undefined>> {
  const out = new Map<string, JobId | UidConflict | undefined>();
  if (records.length === 0) return out;
  const since = (r: Pick<PodRecord, "createdAt">) => Math.floor(r.createdAt / 1000) - QDATE_SLACK_SECONDS;
  const byUid = new Map(records.map((r) => [r.uid, r]));
  const one = records.length === 1 ? ` && InterLinkPodUID == ${classAdString(records[0]!.uid)}` : "";
  const constraint = `${c.sidecarConstraint} && QDate >= ${Math.min(...records.map(since))}${one}`;
  const attributes = ["ClusterId", "ProcId", "InterLinkPodUID", "QDate"];
  const claims = (ads: readonly JobAd[]) => {
    const found = new Map<string, JobId[]>();
    for (const ad of ads) {
      const r = typeof ad.InterLinkPodUID === "string" ? byUid.get(ad.InterLinkPodUID) : undefined;
      if (!r || typeof ad.ClusterId !== "number" || typeof ad.ProcId !== "number" || (adNumber(ad, "QDate") ?? 0) < since(r)) continue;
      if ((c.store.byJob(ad.ClusterId, ad.ProcId)?.uid ?? r.uid) !== r.uid) continue;
      found.set(r.uid, [...(found.get(r.uid) ?? []), { cluster: ad.ClusterId, proc: ad.ProcId }]);
    }
    return found;
  };
  const found = claims(await c.condor.query({ constraint, attributes }));
  if (records.some((r) => !found.has(r.uid))) {
    const ended = claims(await c.condor.history({ constraint, attributes, limit: 10_000, scanLimit: 100_000 }));
    for (const [uid, ids] of ended) if (!found.has(uid)) found.set(uid, ids);
  }
  for (const r of records) {
    const ids = found.get(r.uid) ?? [];
    out.set(r.uid, ids.length > 1 ? new UidConflict(r.uid, ids) : ids[0]);
  }
  return out;
}

/** {@link findJobsByUid} for one record; a conflict is thrown. */
export async function findJobByUid(c: UidSearch, r: Pick<PodRecord, "uid" | "createdAt">): Promise<JobId | undefined> {
  const found = (await findJobsByUid(c, [r])).get(r.uid);
  if (found instanceof UidConflict) throw found;
  return found;
}
