/**
 * An HTCJob's one cluster, submitted once (docs/operator.md#never-twice): the world is recorded
 * before the object is told. A record is begun, condor_submit runs, the cluster is recorded, and
 * only then is the status written. What is not known for sure is asked of HTCondor first, by UID:
 * a record left `submitting` by a crash or a timeout, and no record at all (a lost store).
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { jobIdString } from "../../condor/parse.ts";
import { SubmitRefused } from "../../condor/tools.ts";
import { SidecarError } from "../../core/errors.ts";
import { renderSubmit } from "../../render/submit.ts";
import { renderWrapper } from "../../render/wrapper.ts";
import { ensureDir, writePodFiles } from "../../store/files.ts";
import { htcjobLabel, planHTCJob } from "../htcjob-plan.ts";
import type { HTCJobRecord } from "../store.ts";
import { type Ctx, event, type HTCJob, keyOf, newRecord, procsAsked, search } from "./context.ts";

/**
 * No record: the store may have been lost (a new data volume) after a submit. Only what a search
 * by UID finds among the operator's own jobs is taken, its proc count HTCondor's; the status
 * (which anyone who may patch htcjobs/status can write) never names the cluster. It only says
 * whether to look in the history too, which a brand-new object does not need.
 */
export async function adopt(c: Ctx, obj: HTCJob): Promise<HTCJobRecord | undefined> {
  const uid = obj.metadata.uid!;
  const claimed = typeof obj.status?.clusterId === "number" || (Array.isArray(obj.status?.jobid) && obj.status.jobid.length > 0);
  const found = await search(c, uid, undefined, claimed, typeof obj.status?.clusterId === "number" ? obj.status.clusterId : undefined);
  if (found.size === 0) return undefined;
  if (found.size > 1) return await conflict(c, obj, found);
  const [cluster, procIds] = [...found][0]!;
  const procs = Math.max(...procIds) + 1;
  c.log.warn("the store has no record of an HTCJob whose procs HTCondor holds; taking them", { htcjob: keyOf(obj), uid, cluster, procs });
  c.store.beginSubmit(newRecord(c, obj, procs), c.now());
  c.store.recordCluster(uid, cluster, procs, c.now());
  c.recorded?.(cluster, procs);
  return c.store.get(uid);
}

/** Two clusters carry one UID: neither is taken, and an administrator must look. */
async function conflict(c: Ctx, obj: HTCJob, found: Map<number, unknown>): Promise<never> {
  const ids = [...found.keys()].join(" and ");
  await event(c, obj, "Warning", "ClusterConflict", `Clusters ${ids} both carry this HTCJob's UID; neither is adopted: remove the wrong one (condor_rm)`);
  throw new SidecarError("unavailable", `Clusters ${ids} both claim HTCJob "${keyOf(obj)}"`);
}

/**
 * Submits the HTCJob's one cluster, unless a submit already did. A record left `submitting`
 * (a crash, a timeout, a schedd that failed mid-way) is first settled by a search by UID:
 * condor_submit runs again only when no cluster carries the UID.
 */
export async function submitOnce(c: Ctx, obj: HTCJob, rec: HTCJobRecord | undefined): Promise<HTCJobRecord | undefined> {
  const uid = obj.metadata.uid!;
  const ns = obj.metadata.namespace ?? "";
  const name = obj.metadata.name;
  if (rec?.phase === "submitting") {
    const found = await search(c, uid, rec.submitToken, true);
    if (found.size > 1) return await conflict(c, obj, found);
    if (found.size === 1) {
      const [cluster] = [...found.keys()];
      c.log.info("a submit whose answer was lost had queued its cluster; recording it", { htcjob: `${ns}/${name}`, cluster });
      c.store.recordCluster(uid, cluster!, rec.procs, c.now());
      c.recorded?.(cluster!, rec.procs);
      return c.store.get(uid);
    }
    // A condor_submit of an earlier term (or replica) may still be queueing: wait out its timeout before another.
    const until = rec.submitStartedAt + (c.submitTimeoutMs ?? 0) + 5000;
    if (!c.settledHere.has(uid) && c.now() < until) {
      throw new SidecarError("unavailable", `A condor_submit of HTCJob "${ns}/${name}" begun earlier may still be running; looking again after it times out`);
    }
  }

  let plan;
  try {
    plan = planHTCJob({ namespace: ns, name, uid, generation: obj.metadata.generation ?? 1, spec: obj.spec }, c.planConfig, c.htcjob);
  } catch (err) {
    if (!(err instanceof SidecarError) || err.kind !== "invalid") throw err;
    return refuse(c, obj, procsAsked(obj.spec), err.message);
  }
  const procs = plan.htcjob!.procs;
  // A spooled job's log is written by a remote schedd, where the operator cannot read it.
  const log = c.spool ? undefined : c.eventLog?.();
  const base = { ...newRecord(c, obj, procs), eventLog: log?.name };
  const dir = base.dir;
  const token = c.token?.() ?? randomUUID();
  plan.htcjob!.submitToken = token;
  c.store.beginSubmit(base, c.now(), token);
  const enc = new TextEncoder();
  try {
    writePodFiles(dir, [
      ...plan.files,
      { path: "job.sh", content: enc.encode(renderWrapper(plan)), mode: 0o700, secret: false },
      { path: "job.sub", content: enc.encode(renderSubmit(plan, dir, log?.path)), mode: 0o600, secret: false },
    ]);
    // condor_submit refuses an initialdir that does not exist (docs/pod-to-job.md#an-htcjobs-procs).
    for (let p = 0; p < procs; p++) ensureDir(join(dir, "procs", String(p)));
  } catch (err) {
    throw new SidecarError("unavailable", `Cannot write the files of HTCJob "${ns}/${name}" under ${dir}: ${(err as Error).message}`);
  }
  // The term may have ended while the files were written: another replica may be submitting now.
  if (c.leading?.aborted) throw new SidecarError("unavailable", `Not submitting HTCJob "${ns}/${name}": this replica no longer leads`);
  let ids;
  try {
    ids = await c.condor.submit(join(dir, "job.sub"), { spool: c.spool, podOptions: (plan.submit.podOptions ?? []).length > 0, count: procs });
  } catch (err) {
    // Nothing was queued (docs/htcondor.md#condor_submit-exit-codes-and-errors). Only a refusal
    // with htcopts lines is the spec's fault; without them the site's own lines were refused,
    // which a fix of the config mends: an Event, and the next pass submits again.
    if (err instanceof SubmitRefused && (plan.submit.podOptions ?? []).length > 0) {
      return refuse(c, obj, procs, `${htcjobLabel(ns, name)}: spec.htcopts: condor_submit refused the HTCJob: ${err.refusal}`);
    }
    // The record stays `submitting`: the next pass asks HTCondor before it submits again.
    await event(c, obj, "Warning", "SubmitFailed", (err as Error).message);
    throw err;
  } finally {
    c.settledHere.add(uid);
  }
  const clusters = new Set(ids.map((i) => i.cluster));
  if (clusters.size !== 1 || ids.length !== procs) {
    throw new SidecarError("internal", `condor_submit of HTCJob "${ns}/${name}" answered ${ids.map(jobIdString).join(" ")} for one cluster of ${procs}`);
  }
  c.store.recordCluster(uid, ids[0]!.cluster, procs, c.now());
  c.recorded?.(ids[0]!.cluster, procs);
  c.log.info("submitted", { htcjob: `${ns}/${name}`, uid, cluster: ids[0]!.cluster, procs });
  return c.store.get(uid);
}

/** A spec that cannot run: recorded as refused, so that the status says why until the spec changes. */
function refuse(c: Ctx, obj: HTCJob, procs: number, message: string): HTCJobRecord | undefined {
  c.store.refuse(newRecord(c, obj, procs), message, c.now());
  c.log.info("refused", { htcjob: keyOf(obj), reason: message });
  return c.store.get(obj.metadata.uid!);
}
