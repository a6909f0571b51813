/**
 * An HTCJob's status, written from its record and what the follower saw of its procs
 * (docs/operator.md#status): only when it differs from the last one written, and with an Event
 * for each change a user should hear of.
 */
import { HTCJOBS } from "../../kube/resources.ts";
import { isNotFound } from "../../kube/errors.ts";
import { carryTimes, type HTCJobStatus, htcjobStatus, type ProcState, statusDiffers, statusEvents, UNSEEN } from "../status.ts";
import type { HTCJobRecord } from "../store.ts";
import { type Ctx, event, type HTCJob, procsAsked } from "./context.ts";

/** Why an HTCJob does not run, when no record says it (a namespace it may not run in). */
export interface Refusal {
  reason: string;
  message: string;
}

export async function writeStatus(c: Ctx, obj: HTCJob, rec: HTCJobRecord | undefined, refusal?: Refusal): Promise<void> {
  const uid = obj.metadata.uid!;
  let next: HTCJobStatus;
  const generation = obj.metadata.generation ?? 1;
  if (refusal || rec?.phase === "refused") {
    const why = refusal ?? { reason: "InvalidSpec", message: rec!.refusal ?? "refused" };
    next = htcjobStatus({ generation, procs: rec?.procs ?? procsAsked(obj.spec), states: [], refusal: why });
  } else if (rec?.cluster === undefined) {
    next = htcjobStatus({ generation, procs: rec?.procs ?? 1, states: [], pending: "Asking HTCondor whether a submit queued the cluster" });
  } else if (!c.views.has(rec.uid) && rec.outcomes.some((o) => o === null) && obj.status?.clusterId === rec.cluster) {
    // Not seen yet this term (a restart, a new Lease): the status already shows this cluster, and
    // one written from no view would set its procs back to idle and repeat their Events.
    return;
  } else {
    next = htcjobStatus({
      generation: rec.generation,
      observed: obj.metadata.generation,
      procs: rec.procs,
      cluster: rec.cluster,
      states: statesOf(c, rec),
      output: outputNote(rec, `${obj.metadata.namespace}/${obj.metadata.name}`),
    });
  }
  const before = c.written.get(uid) ?? obj.status;
  next = carryTimes(next, before, nowIso(c));
  if (!statusDiffers(next, before)) return;
  // The informer's copy may be older than our last write: compare with both before writing.
  if (c.written.has(uid) && !statusDiffers(next, obj.status)) return void c.written.set(uid, next);
  try {
    await c.client.patch(HTCJOBS, obj.metadata.namespace, obj.metadata.name, { status: next }, { type: "merge", subresource: "status" });
    c.onWrite?.("status");
  } catch (err) {
    if (isNotFound(err)) return;
    throw err;
  }
  c.written.set(uid, next);
  for (const e of statusEvents(before, next)) await event(c, obj, e.type, e.reason, e.message);
}

/** The states of a record's procs: the final outcomes kept, else what the follower saw. */
function statesOf(c: Ctx, rec: HTCJobRecord): ProcState[] {
  const seen = c.views.get(rec.uid) ?? [];
  return Array.from({ length: rec.procs }, (_, p) => rec.outcomes[p] ?? seen[p] ?? UNSEEN);
}

const nowIso = (c: Ctx) => new Date(c.now()).toISOString().replace(/\.\d{3}Z$/, "Z");

/** Where a proc's output is kept and how to read it (status.output). */
function outputNote(rec: HTCJobRecord, key: string): string {
  return `${rec.dir}/procs/<ProcId>: the log c.htcjob.log and the working directory's files in work/ ` +
    `(htcondor-sidecar htcjob logs ${key} --proc N [--files | --file PATH])`;
}
