/**
 * Batched removal: concurrent deletes, the reaper's pending removals and the refresher's
 * removals go out as one condor_rm with many job ids (observed to work, one line per job;
 * docs/htcondor.md#submitting-many-pods-at-once). One `-reason` covers every id, so removals are
 * grouped by reason; each id's own line decides its outcome.
 */
import { jobIdString, type RmOutcome } from "../condor/parse.ts";
import type { OwnedJob } from "../condor/tools.ts";
import { SidecarError } from "../core/errors.ts";
import type { Condor } from "../condor/tools.ts";
import { groupCommit, type Settled } from "./group-commit.ts";
import type { SubmitLimit } from "./submit-limit.ts";

/** Job ids in one condor_rm at most (its command line stays far below the kernel's limit). */
const REMOVE_BATCH_MAX = 500;

/** What a removal found: the job removed now, gone already, or being removed already. */
export type Removed = Exclude<RmOutcome, "denied" | "unknown">;

/** Removes a job named by the constraint that proves it the sidecar's (core/job-identity.ts), never by a bare id. */
export type Remover = (job: OwnedJob, reason: string) => Promise<Removed>;

export function createRemover(c: { condor: Pick<Condor, "remove">; submitLimit: Pick<SubmitLimit, "current"> }): Remover {
  const remove = groupCommit<{ job: OwnedJob; reason: string }, Removed>({
    // condor_rm commits on the same schedd, one transaction at a time as a submit does
    // (docs/htcondor.md#one-submit-at-a-time): it follows the limit the submits measured.
    maxInFlight: c.submitLimit.current,
    maxBatch: REMOVE_BATCH_MAX,
    group: (r) => r.reason,
    async run(batch): Promise<Settled<Removed>[]> {
      const outcomes = await c.condor.remove([...new Map(batch.map((r) => [jobIdString(r.job.id), r.job])).values()], batch[0]!.reason);
      return batch.map(({ job }) => {
        const sid = jobIdString(job.id);
        const outcome = outcomes.get(sid);
        // The job keeps running: the removal must stay pending, not be taken for done.
        if (outcome === "denied") {
          return {
            ok: false,
            error: new SidecarError("unavailable", `Cannot remove job ${sid}: permission denied (is the sidecar running as the job's owner?)`),
          };
        }
        if (outcome === undefined || outcome === "unknown") {
          return { ok: false, error: new SidecarError("unavailable", `Cannot remove job ${sid}: condor_rm said nothing about it`) };
        }
        return { ok: true, value: outcome };
      });
    },
  });
  return (job, reason) => remove({ job, reason });
}
