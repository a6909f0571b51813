/**
 * POST /delete (docs/interlink.md#post-delete): condor_rm of the pod's job, then its folder. A
 * removal that HTCondor does not confirm stays pending and the reaper retries it.
 */
import { jobIdString } from "../condor/parse.ts";
import type { PodRef } from "../core/requests.ts";
import { podDir, removePodDirKeepingLog } from "../store/files.ts";
import type { PodRecord } from "../store/store.ts";
import type { Ctx } from "./context.ts";
import { findJobByUid } from "./find-by-uid.ts";
import { jid, ownedJob, secretPaths } from "./records.ts";
import { errorText } from "../core/errors.ts";

type RemoveOutcome = { outcome: "removed" | "ended" | "pending"; job?: string };

export interface DeleteService {
  remove(ref: PodRef): Promise<string>;
  /** Removes the pod's job and files; `job` is the job id when there was one. */
  removeJob(r: PodRecord): Promise<RemoveOutcome>;
}

export function createDeleteService(c: Ctx): DeleteService {
  async function removeJob(r: PodRecord): Promise<RemoveOutcome> {
    // Recorded first: a sidecar killed between condor_rm and the cleanup finds the removal
    // pending at start and finishes it, instead of keeping the pod's files (secrets) forever.
    c.store.requestRemoval(r.uid, c.now());
    c.tracing.pods.deleted(r);
    let outcome: "removed" | "ended" = "ended";
    let job = jid(r) || undefined;
    try {
      // Even when the pod already has a final status: a job reported lost may only have hidden
      // itself (by rewriting its attributes), and condor_rm of a job that left costs one line.
      // A create interrupted before its job id was recorded: the schedd knows the job. Either
      // way condor_rm names it by what proves it the pod's, never by its id alone: a job that is
      // not the pod's stays (docs/threat-model.md#every-condor_rm-names-a-job-proved-ours).
      const id = r.cluster !== undefined ? { cluster: r.cluster, proc: r.proc! } : await findJobByUid(c, r);
      if (id) {
        job = jobIdString(id);
        const said = await c.remove(ownedJob({ ...r, ...id }), "interLink deleted the pod");
        outcome = said === "removed" || said === "done" ? "removed" : "ended";
      }
    } catch (err) {
      c.log.warn("condor_rm failed; the reaper will retry", { uid: r.uid, jid: job, error: errorText(err) });
      return { outcome: "pending", job };
    }
    // The wrapper's log stays while the tombstone lives, for the operator who asks why the pod
    // failed after interLink has deleted it (docs/logs.md#the-wrappers-log); the reaper removes it.
    const { problem } = removePodDirKeepingLog(r.dir, secretPaths(r));
    if (problem !== undefined) c.log.warn("the wrapper's log of a deleted pod is not kept", { uid: r.uid, error: problem });
    c.store.completeRemoval(r.uid, c.now());
    c.lastFetch.delete(r.uid);
    return { outcome, job };
  }

  return {
    async remove(ref) {
      await c.inflight.get(ref.uid)?.catch(() => undefined);
      const r = c.store.get(ref.uid);
      if (!r) {
        // A tombstone keeps a late create for this pod from submitting a job
        // (docs/interlink.md#when-interlink-sends-a-create), and tells reconcile to remove a job of
        // this pod it finds later (a lost store).
        const rec = { uid: ref.uid, name: ref.name, namespace: ref.namespace, dir: podDir(c.dataRoot, ref.uid), spooled: false, containers: [], secrets: [] };
        c.store.tombstone({ ...rec, createdAt: c.now() }, c.now());
        return `Pod ${ref.uid} is not known here; nothing to remove`;
      }
      if (r.phase === "deleted") return `Pod ${ref.uid} was already deleted`;
      const { outcome, job } = await removeJob(r);
      if (outcome === "pending") {
        return `Pod ${r.namespace}/${r.name}: removal of job ${job ?? "(not yet known)"} is pending; it is retried until HTCondor confirms`;
      }
      return `Pod ${r.namespace}/${r.name} deleted${job ? (outcome === "removed" ? ` (job ${job} removed)` : ` (job ${job} had already ended)`) : ""}`;
    },
    removeJob,
  };
}
