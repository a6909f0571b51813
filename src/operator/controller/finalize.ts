/**
 * The finalizer, a promise (docs/operator.md#deleting): it is added before anything is
 * submitted, so that a delete never finds procs the operator cannot be made to remove, and it
 * goes only once every recorded proc is removed or already gone.
 */
import { SidecarError } from "../../core/errors.ts";
import { isConflict, isNotFound } from "../../kube/errors.ts";
import { HTCJOBS } from "../../kube/resources.ts";
import { procJob } from "../follow.ts";
import type { HTCJobRecord } from "../store.ts";
import { type Ctx, event, FINALIZER, type HTCJob, keyOf, newRecord, search } from "./context.ts";

/** The finalizer first: a delete must never find jobs the operator cannot be made to remove. */
export async function addFinalizer(c: Ctx, obj: HTCJob): Promise<HTCJob> {
  const finalizers = [...(obj.metadata.finalizers ?? []), FINALIZER];
  try {
    const out = await c.client.patch<HTCJob>(HTCJOBS, obj.metadata.namespace, obj.metadata.name, {
      metadata: { finalizers, resourceVersion: obj.metadata.resourceVersion },
    }, { type: "merge" });
    c.onWrite?.("finalizer");
    return out;
  } catch (err) {
    // Changed since the cache saw it: the watch brings the new version, and with it another pass.
    if (isConflict(err)) throw new SidecarError("gone", `HTCJob "${keyOf(obj)}" changed while its finalizer was added; looking again`);
    throw err;
  }
}

/**
 * Deleting: condor_rm of every recorded `cluster.proc` (never the bare cluster, which could
 * hold procs that are not this HTCJob's), then the finalizer goes, only once each is removed
 * or already gone.
 */
export async function finalize(c: Ctx, obj: HTCJob): Promise<void> {
  const uid = obj.metadata.uid!;
  let rec = c.store.get(uid);
  if (rec?.phase === "submitting") {
    const found = await search(c, uid, rec.submitToken, true);
    if (found.size > 1) throw new SidecarError("unavailable", `Clusters ${[...found.keys()].join(" and ")} both claim HTCJob "${keyOf(obj)}"`);
    if (found.size === 1) {
      c.store.recordCluster(uid, [...found.keys()][0]!, rec.procs, c.now());
      c.recorded?.([...found.keys()][0]!, rec.procs);
      rec = c.store.get(uid);
    }
  }
  const onFail = (msg: string) => event(c, obj, "Warning", "RemoveFailed", msg);
  if (!rec) {
    // A lost store: what the operator's own jobs say of this UID is removed, so that the delete orphans nothing.
    for (const [cluster, procIds] of await search(c, uid, undefined, true)) {
      const found = { ...newRecord(c, obj, Math.max(...procIds) + 1), cluster } as HTCJobRecord;
      const removed = await removeProcs(c, found, `HTCJob ${keyOf(obj)} was deleted`, onFail);
      if (removed > 0) await event(c, obj, "Normal", "Removed", `Removed ${removed} proc(s) of cluster ${cluster} from HTCondor`);
    }
  } else if (rec.cluster !== undefined) {
    const removed = await removeProcs(c, rec, `HTCJob ${keyOf(obj)} was deleted`, onFail);
    if (removed > 0) await event(c, obj, "Normal", "Removed", `Removed ${removed} proc(s) of cluster ${rec.cluster} from HTCondor`);
  }
  const i = (obj.metadata.finalizers ?? []).indexOf(FINALIZER);
  try {
    await c.client.patch(HTCJOBS, obj.metadata.namespace, obj.metadata.name, [
      { op: "test", path: `/metadata/finalizers/${i}`, value: FINALIZER },
      { op: "remove", path: `/metadata/finalizers/${i}` },
    ], { type: "json" });
    c.onWrite?.("finalizer");
  } catch (err) {
    if (isNotFound(err)) return void finish(c, uid);
    // The list changed under us (422 from a failed test): the watch brings the new one.
    if (err instanceof SidecarError && (err.kind === "invalid" || err.kind === "gone")) {
      throw new SidecarError("gone", `HTCJob "${keyOf(obj)}" changed while its finalizer was removed; looking again`);
    }
    throw err;
  }
  finish(c, uid);
}

/** The record becomes a tombstone (`deleted`), and nothing is remembered of its procs or status. */
export function finish(c: Ctx, uid: string): void {
  if (c.store.get(uid)) c.store.markDeleted(uid, c.now());
  c.views.delete(uid);
  c.written.delete(uid);
}

/** condor_rm of the record's procs that may still be queued; throws unless each is removed or gone. Returns how many it removed. */
export async function removeProcs(c: Ctx, rec: HTCJobRecord, reason: string, onFail: (msg: string) => Promise<void>): Promise<number> {
  // Each proc by what proves it the HTCJob's, never by its bare id (docs/threat-model.md#every-condor_rm-names-a-job-proved-ours).
  const ids = Array.from({ length: rec.procs }, (_, proc) => procJob(rec, proc));
  let outcome;
  try {
    outcome = await c.condor.remove(ids, reason);
  } catch (err) {
    await onFail(`Cannot remove the procs of cluster ${rec.cluster}: ${(err as Error).message}; the finalizer stays until they are removed`);
    throw err;
  }
  const bad = [...outcome].filter(([, o]) => o !== "removed" && o !== "not_found" && o !== "already_removing" && o !== "done");
  if (bad.length > 0) {
    const msg = `condor_rm did not remove ${bad.map(([id, o]) => `${id} (${o})`).join(", ")}; the finalizer stays until they are removed`;
    await onFail(msg);
    throw new SidecarError("unavailable", msg);
  }
  return [...outcome.values()].filter((o) => o === "removed" || o === "done").length;
}
