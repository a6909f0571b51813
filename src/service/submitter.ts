/**
 * Batched submission: the creates that arrive while a condor_submit runs go together in the next
 * one, one cluster with one proc per pod (group-commit.ts;
 * docs/htcondor.md#submitting-many-pods-at-once). Only pods with the same submit commands share a
 * description (render/submit.ts submitShape). One bad pod fails the whole submit with nothing
 * queued, so a refused batch is halved until every valid pod has its job and only the bad one gets
 * the error; a pod that was refused once is submitted alone next time. A batch killed at its
 * timeout is settled with one query for the whole batch.
 */
import { basename, dirname, join } from "node:path";
import { SubmitRefused } from "../condor/tools.ts";
import { type JobId, jobIdString } from "../condor/parse.ts";
import { errorText, SidecarError } from "../core/errors.ts";
import { renderBatch, type SubmitJob, submitShape } from "../render/submit.ts";
import { removeFiles, writeBatchFile } from "../store/files.ts";
import type { Ctx } from "./context.ts";
import { findJobsByUid, UidConflict } from "./find-by-uid.ts";
import { groupCommit, type Settled } from "./group-commit.ts";

export interface SubmitEntry {
  uid: string;
  /** The pod's job; its folder holds job.sub, the same job alone. */
  job: SubmitJob;
  /** The pod wrote part of its description (its submit-options annotation). */
  podOptions: boolean;
}

/**
 * condor_submit timed out and the schedd cannot say whether it queued the pod's job (or two jobs
 * claim it): the pod's record stays `creating`, for a repeated create, a delete or the reaper's
 * reconcile to settle.
 */
export class SubmitUndecided extends SidecarError {
  constructor(message: string) {
    super("timeout", message);
  }
}

/** How many pods refused once are remembered, to be submitted alone (a bound on memory). */
const SUSPECTS_MAX = 10_000;

export type Submitter = ReturnType<typeof createSubmitter>;

export function createSubmitter(c: Ctx, onBatch?: (size: number) => void) {
  const suspects = new Set<string>();
  /** Names the batch files: a pod's UID may read as an option (store/files.ts writeBatchFile). */
  let batches = 0;

  function suspect(uid: string): void {
    suspects.delete(uid);
    suspects.add(uid);
    if (suspects.size > SUSPECTS_MAX) suspects.delete(suspects.values().next().value!);
  }

  /** Submits one description; a batch of one is its pod's own job.sub, a bigger one a file of its own. */
  async function submitOnce(batch: readonly SubmitEntry[]): Promise<JobId[]> {
    const podOptions = batch.some((e) => e.podOptions);
    if (batch.length === 1) return c.condor.submit(join(batch[0]!.job.dir, "job.sub"), { spool: c.spool, podOptions, count: 1 });
    const file = writeBatchFile(c.dataRoot, () => ++batches, renderBatch(batch.map((e) => e.job)));
    try {
      return await c.condor.submit(file, { spool: c.spool, podOptions, count: batch.length });
    } finally {
      removeFiles(dirname(file), [basename(file)]);
    }
  }

  async function run(batch: SubmitEntry[]): Promise<Settled<JobId>[]> {
    const started = c.now();
    try {
      return (await c.submitLimit.measure(batch.length, () => submitOnce(batch))).map((value) => ({ ok: true, value }));
    } catch (err) {
      if (err instanceof SubmitRefused) {
        if (batch.length === 1) {
          suspect(batch[0]!.uid);
          return [{ ok: false, error: err }];
        }
        // One pod's description may fail them all, and nothing was queued: halve and try again.
        c.log.info("condor_submit refused a batch; splitting it to find the pod it refuses", { pods: batch.length, error: err.refusal });
        const half = Math.ceil(batch.length / 2);
        return [...(await run(batch.slice(0, half))), ...(await run(batch.slice(half)))];
      }
      if (err instanceof SidecarError && err.kind === "timeout") return settle(batch, started, err);
      // The schedd cannot be reached or did not commit: nothing to split, every pod is retried by interLink.
      return batch.map(() => ({ ok: false, error: err }));
    }
  }

  /**
   * condor_submit was killed at its timeout: the schedd may have queued the cluster anyway. One
   * query for the whole batch (jobs queued since it began, by pod UID; such jobs cannot have run
   * yet, so they cannot have rewritten their UID) decides each pod: never without its job, never
   * with two.
   */
  async function settle(batch: readonly SubmitEntry[], started: number, err: SidecarError): Promise<Settled<JobId>[]> {
    let found: Map<string, JobId | UidConflict | undefined>;
    try {
      found = await findJobsByUid(c, batch.map((e) => ({ uid: e.uid, createdAt: started })));
    } catch (e) {
      c.reconciled = false;
      c.log.warn("condor_submit timed out and the schedd cannot say whether the jobs exist; the reaper will find out", {
        pods: batch.length,
        error: errorText(e),
      });
      return batch.map(() => ({ ok: false, error: new SubmitUndecided(`${err.message}; whether HTCondor queued it is not known yet`) }));
    }
    return batch.map((e) => {
      const id = found.get(e.uid);
      if (id instanceof UidConflict) return { ok: false, error: new SubmitUndecided(id.message) };
      if (!id) return { ok: false, error: err };
      c.log.warn("condor_submit timed out but the job was queued", { uid: e.uid, jid: jobIdString(id) });
      return { ok: true, value: id };
    });
  }

  return groupCommit<SubmitEntry, JobId>({
    maxInFlight: c.submitLimit.current,
    onLimited: c.submitLimit.limited,
    maxBatch: c.config.MaxSubmitBatch,
    group: (e) => (suspects.has(e.uid) ? `alone ${e.uid}` : submitShape(e.job)),
    run,
    onBatch,
  });
}
