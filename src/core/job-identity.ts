/**
 * Which job a job id names (docs/threat-model.md#a-job-id-is-not-an-identity). A schedd hands
 * out `cluster.proc` again after its queue starts over (a reinstalled schedd, a new spool, ids
 * that wrap), and a store restored from a backup or another sidecar names jobs it never
 * submitted: the ad at a recorded id is the pod's job only when it carries the identity recorded
 * for it. The identity is the job's `GlobalJobId` (`<schedd name>#<cluster>.<proc>#<queue time>`),
 * which the schedd writes when it queues the job; `ClusterId` and `ProcId`, which no one may
 * change once the job is queued, select the ad. Pure: no I/O.
 */
import type { JobAd } from "./classad.ts";
import { classAdString } from "./classad.ts";

/** What the sidecar recorded of the job it submitted for a pod. */
export interface RecordedJob {
  cluster: number;
  proc: number;
  /** The pod's UID, which the sidecar wrote into the ad as `InterLinkPodUID`. */
  uid: string;
  /** The ad's `GlobalJobId` when the job was first seen; undefined before (or in a record older than the column). */
  globalJobId?: string;
  /** Epoch seconds: the earliest `QDate` of a job this record's create could have queued (the create began then, less a clock slack). */
  queuedSince: number;
}

/**
 * What the ad at a recorded id is:
 * - `ours`: the job the sidecar submitted for the pod; `rewrote` lists the identity attributes it
 *   no longer carries (the job rewrote them: tampering); `learned`, the `GlobalJobId` to record
 *   when the record had none;
 * - `foreign`: another job that holds the id now; the pod's job is gone, and the ad is never acted on.
 */
export type Ownership =
  | { kind: "ours"; rewrote: string[]; learned?: string }
  | { kind: "foreign"; found: string | undefined };

/**
 * Reads the ad at a recorded job id. With a recorded `GlobalJobId`: the ad is the pod's job when
 * it carries that `GlobalJobId`, or, if it rewrote it, the pod's UID (a stranger carries neither,
 * unless it wrote them into its own ad; then only the stranger is affected). Without one (a job
 * not seen yet, or a record older than the column) it is proved the pod's job only by the pod's
 * UID on a job queued after the create began, and its `GlobalJobId` is learned from it.
 */
export function ownership(rec: RecordedJob, ad: JobAd, sidecarId: string): Ownership {
  const gid = typeof ad.GlobalJobId === "string" ? ad.GlobalJobId : undefined;
  const uidKept = ad.InterLinkPodUID === rec.uid;
  const sidecarRewritten = ad.InterLinkSidecarId !== sidecarId ? ["InterLinkSidecarId"] : [];
  if (rec.globalJobId !== undefined) {
    if (gid === rec.globalJobId) return { kind: "ours", rewrote: [...(uidKept ? [] : ["InterLinkPodUID"]), ...sidecarRewritten] };
    if (uidKept) return { kind: "ours", rewrote: ["GlobalJobId", ...sidecarRewritten] };
    return { kind: "foreign", found: gid };
  }
  const qdate = typeof ad.QDate === "number" ? ad.QDate : undefined;
  if (uidKept && qdate !== undefined && qdate >= rec.queuedSince) {
    // Learned only in the schedd's form, `<name>#<cluster>.<proc>` and the queue time
    // (GLOBAL_JOB_ID_WITH_TIME, on by default): the job's own id in it.
    const id = `#${rec.cluster}.${rec.proc}`;
    const schedds = gid !== undefined && (gid.endsWith(id) || gid.includes(`${id}#`));
    return { kind: "ours", rewrote: sidecarRewritten, ...(schedds ? { learned: gid } : {}) };
  }
  return { kind: "foreign", found: gid };
}

/**
 * The constraint that selects the recorded job and nothing else, for condor_rm and
 * condor_transfer_data (docs/threat-model.md#every-condor_rm-names-a-job-proved-ours): its
 * `ClusterId` and `ProcId` (no one may change them), and the same proof as {@link ownership}.
 * A bare id would act on whatever job holds it now; and the tools ignore `-constraint` next to a
 * `cluster.proc` argument (docs/htcondor.md#a-constraint-not-a-job-id), so the id goes into it.
 */
export function ownedConstraint(rec: Pick<RecordedJob, "cluster" | "proc" | "uid" | "globalJobId">): string {
  const whole = (n: number) => Number.isSafeInteger(n) && n >= 0;
  if (!whole(rec.cluster) || !whole(rec.proc)) throw new Error(`not a job id: ${JSON.stringify([rec.cluster, rec.proc])}`);
  const uid = `InterLinkPodUID == ${classAdString(rec.uid)}`;
  const proof = rec.globalJobId === undefined ? uid : `(GlobalJobId == ${classAdString(rec.globalJobId)} || ${uid})`;
  return `ClusterId == ${rec.cluster} && ProcId == ${rec.proc} && ${proof}`;
}

/**
 * The constraint that names one proc of an HTCJob's cluster for condor_rm and
 * condor_transfer_data: its `ClusterId` and `ProcId`, and what the operator wrote into it at
 * submit (the HTCJob's UID, and the submit's token when the record kept one). An HTCJob's procs
 * have no chirp (render/submit.ts), so they cannot rewrite these; another job that holds the id
 * after the schedd's queue started over carries neither.
 */
export function procConstraint(p: { cluster: number; proc: number; uid: string; submitToken?: string }): string {
  const whole = (n: number) => Number.isSafeInteger(n) && n >= 0;
  if (!whole(p.cluster) || !whole(p.proc)) throw new Error(`not a job id: ${JSON.stringify([p.cluster, p.proc])}`);
  const token = p.submitToken === undefined ? "" : ` && HTCJobSubmitToken == ${classAdString(p.submitToken)}`;
  return `ClusterId == ${p.cluster} && ProcId == ${p.proc} && HTCJobUID == ${classAdString(p.uid)}${token}`;
}
