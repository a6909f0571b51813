/**
 * The HTCJob controller (docs/operator.md#behaviour). Level-triggered: a watch event only says
 * "look at this object again"; reconcile reads the object, the store and HTCondor's view, and
 * makes them agree, and running it twice does nothing new. The world is recorded before the
 * object is told: submit, record the cluster in the store, then write the status. A finalizer is
 * a promise: it goes only once the procs are removed or gone.
 */
import { join } from "node:path";
import { SubmitRefused } from "../condor/tools.ts";
import type { Condor } from "../condor/tools.ts";
import { jobIdString } from "../condor/parse.ts";
import { SidecarError } from "../core/errors.ts";
import type { HTCJobConfig, PlanConfig } from "../core/types.ts";
import type { KubeClient, KubeObject } from "../kube/client.ts";
import type { EventRecorder } from "../kube/events.ts";
import { isConflict, isNotFound } from "../kube/errors.ts";
import { HTCJOBS } from "../kube/resources.ts";
import type { Logger } from "../logger.ts";
import { renderSubmit } from "../render/submit.ts";
import { renderWrapper } from "../render/wrapper.ts";
import { ensureDir, writePodFiles } from "../store/files.ts";
import { findClustersByUid, sightProcs } from "./follow.ts";
import { settleWork } from "./output.ts";
import { htcjobLabel, planHTCJob } from "./htcjob-plan.ts";
import { carryTimes, type HTCJobStatus, htcjobStatus, isFinal, type ProcState, procState, statusDiffers, statusEvents, UNSEEN } from "./status.ts";
import type { HTCJobRecord, HTCJobStore, NewHTCJob } from "./store.ts";

export const FINALIZER = "htc.cern.ch/finalizer";

export interface HTCJob extends KubeObject {
  spec?: unknown;
  status?: Partial<HTCJobStatus>;
}

export interface ControllerDeps {
  client: KubeClient;
  /** The informer's cache: what the watch last said of an object. */
  cached(namespace: string, name: string): HTCJob | undefined;
  cachedAll(): HTCJob[];
  /** Ask for `namespace/name` to be reconciled (again), after `delayMs`. */
  enqueue(key: string, delayMs?: number): void;
  store: HTCJobStore;
  condor: Condor;
  events: EventRecorder;
  planConfig: PlanConfig;
  htcjob: HTCJobConfig;
  /** Namespaces whose HTCJobs run; empty: all. */
  namespaces: readonly string[];
  dataRoot: string;
  spool: boolean;
  terminalHoldCodes: readonly number[];
  /** How long a proc may be in neither the queue nor the history before it counts as lost. */
  lostAfterMs: number;
  log: Logger;
  now: () => number;
  /** Test-only (docs/operator.md#test-hooks): stop for good right after this step, to be killed there. */
  hangAfter?: "submit" | "record";
  /** Told of every API write (metrics and the steady-state benchmark). */
  onWrite?: (what: string) => void;
}

export const keyOf = (o: { metadata: { namespace?: string; name: string } }) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** The HTCJob's folder: keyed by its UID, never its name. */
export const htcjobDir = (dataRoot: string, uid: string) => join(dataRoot, "htcjobs", uid);

const UID = /^[A-Za-z0-9-]{1,64}$/;

export function createController(d: ControllerDeps) {
  /** What the follower last saw of each live HTCJob's procs, by UID. */
  const views = new Map<string, ProcState[]>();
  /** The status last written, by UID: the informer's copy may lag behind our own write. */
  const written = new Map<string, HTCJobStatus>();
  /** Procs first seen missing from both the queue and the history, by `cluster.proc`. */
  const missingSince = new Map<string, number>();
  const nowIso = () => new Date(d.now()).toISOString().replace(/\.\d{3}Z$/, "Z");

  const event = (o: HTCJob, type: "Normal" | "Warning", reason: string, message: string) =>
    d.events.record(o, type, reason, message).then(() => d.onWrite?.("event"), (err) => d.log.warn("cannot write an Event", { reason, error: String(err) }));

  const allowed = (ns: string) => d.namespaces.length === 0 || d.namespaces.includes(ns);

  async function reconcile(key: string): Promise<void> {
    const slash = key.indexOf("/");
    const [ns, name] = [key.slice(0, slash), key.slice(slash + 1)];
    let obj = d.cached(ns, name);
    if (!obj) return await gone(ns, name);
    const uid = obj.metadata.uid ?? "";
    if (!UID.test(uid)) throw new SidecarError("invalid", `Cannot reconcile HTCJob "${key}": its uid "${uid}" is not one`);
    const hasFinalizer = (obj.metadata.finalizers ?? []).includes(FINALIZER);
    if (obj.metadata.deletionTimestamp) return hasFinalizer ? await finalize(obj) : undefined;

    if (!allowed(ns)) {
      return await writeStatus(obj, undefined, {
        reason: "NamespaceNotAllowed",
        message: `${htcjobLabel(ns, name)}: namespace "${ns}" is not one this operator runs HTCJobs for (config HTCJob.Namespaces)`,
      });
    }
    let rec = d.store.get(uid);
    if (rec?.phase === "deleted") return;
    if (rec?.phase === "refused" && rec.generation !== (obj.metadata.generation ?? 1)) {
      d.store.forget(uid);
      rec = undefined;
    }
    if (!hasFinalizer && rec?.phase !== "refused") obj = await addFinalizer(obj);

    if (!rec && typeof obj.status?.clusterId === "number") rec = adoptFromStatus(obj, obj.status.clusterId);
    if (!rec || rec.phase === "submitting") rec = await submitOnce(obj, rec);
    if (rec) await writeStatus(obj, rec);
  }

  /** The finalizer first: a delete must never find jobs the operator cannot be made to remove. */
  async function addFinalizer(obj: HTCJob): Promise<HTCJob> {
    const finalizers = [...(obj.metadata.finalizers ?? []), FINALIZER];
    try {
      const out = await d.client.patch<HTCJob>(HTCJOBS, obj.metadata.namespace, obj.metadata.name, {
        metadata: { finalizers, resourceVersion: obj.metadata.resourceVersion },
      }, { type: "merge" });
      d.onWrite?.("finalizer");
      return out;
    } catch (err) {
      // Changed since the cache saw it: the watch brings the new version, and with it another pass.
      if (isConflict(err)) throw new SidecarError("gone", `HTCJob "${keyOf(obj)}" changed while its finalizer was added; looking again`);
      throw err;
    }
  }

  /**
   * The store lost its record (a new data volume) but the status names the cluster the operator
   * wrote there: take it, rather than submit a second one.
   */
  function adoptFromStatus(obj: HTCJob, cluster: number): HTCJobRecord | undefined {
    const uid = obj.metadata.uid!;
    const procs = Array.isArray(obj.status?.jobid) && obj.status!.jobid.length > 0 ? obj.status!.jobid.length : 1;
    d.log.warn("the store has no record of an HTCJob whose status names a cluster; taking that cluster", { htcjob: keyOf(obj), uid, cluster });
    const rec: NewHTCJob = newRecord(obj, procs);
    d.store.beginSubmit(rec, d.now());
    d.store.recordCluster(uid, cluster, procs, d.now());
    return d.store.get(uid);
  }

  function newRecord(obj: HTCJob, procs: number): NewHTCJob {
    const uid = obj.metadata.uid!;
    return {
      uid,
      namespace: obj.metadata.namespace ?? "",
      name: obj.metadata.name,
      generation: obj.metadata.generation ?? 1,
      dir: htcjobDir(d.dataRoot, uid),
      procs,
      spooled: d.spool,
    };
  }

  /**
   * Submits the HTCJob's one cluster, unless a submit already did. A record left `submitting`
   * (a crash, a timeout, a schedd that failed mid-way) is first settled by a search by UID:
   * condor_submit runs again only when no cluster carries the UID.
   */
  async function submitOnce(obj: HTCJob, rec: HTCJobRecord | undefined): Promise<HTCJobRecord | undefined> {
    const uid = obj.metadata.uid!;
    const ns = obj.metadata.namespace ?? "";
    const name = obj.metadata.name;
    if (rec?.phase === "submitting") {
      const found = await findClustersByUid(d.condor, d.htcjob.operatorId, uid, rec.submitStartedAt);
      if (found.size > 1) {
        const ids = [...found.keys()].join(" and ");
        await event(obj, "Warning", "ClusterConflict", `Clusters ${ids} both carry this HTCJob's UID; neither is adopted: remove the wrong one (condor_rm)`);
        throw new SidecarError("unavailable", `Clusters ${ids} both claim HTCJob "${ns}/${name}"`);
      }
      if (found.size === 1) {
        const [cluster] = [...found.keys()];
        d.log.info("a submit whose answer was lost had queued its cluster; recording it", { htcjob: `${ns}/${name}`, cluster });
        d.store.recordCluster(uid, cluster!, rec.procs, d.now());
        return d.store.get(uid);
      }
    }

    let plan;
    try {
      plan = planHTCJob({ namespace: ns, name, uid, generation: obj.metadata.generation ?? 1, spec: obj.spec }, d.planConfig, d.htcjob);
    } catch (err) {
      if (!(err instanceof SidecarError) || err.kind !== "invalid") throw err;
      return refuse(obj, procsAsked(obj.spec), err.message);
    }
    const procs = plan.htcjob!.procs;
    const base = newRecord(obj, procs);
    const dir = base.dir;
    d.store.beginSubmit(base, d.now());
    const enc = new TextEncoder();
    try {
      writePodFiles(dir, [
        ...plan.files,
        { path: "job.sh", content: enc.encode(renderWrapper(plan)), mode: 0o700, secret: false },
        { path: "job.sub", content: enc.encode(renderSubmit(plan, dir)), mode: 0o600, secret: false },
      ]);
      // condor_submit refuses an initialdir that does not exist (docs/pod-to-job.md#an-htcjobs-procs).
      for (let p = 0; p < procs; p++) ensureDir(join(dir, "procs", String(p)));
    } catch (err) {
      throw new SidecarError("unavailable", `Cannot write the files of HTCJob "${ns}/${name}" under ${dir}: ${(err as Error).message}`);
    }
    let ids;
    try {
      ids = await d.condor.submit(join(dir, "job.sub"), { spool: d.spool, podOptions: (plan.submit.podOptions ?? []).length > 0, count: procs });
    } catch (err) {
      if (err instanceof SubmitRefused) {
        // Nothing was queued (docs/htcondor.md#condor_submit-exit-codes-and-errors).
        const what = (plan.submit.podOptions ?? []).length > 0 ? "spec.htcopts: condor_submit refused the HTCJob" : "condor_submit refused the HTCJob";
        return refuse(obj, procs, `${htcjobLabel(ns, name)}: ${what}: ${err.refusal}`);
      }
      // The record stays `submitting`: the next pass asks HTCondor before it submits again.
      await event(obj, "Warning", "SubmitFailed", (err as Error).message);
      throw err;
    }
    if (d.hangAfter === "submit") await hang("submit", ids.map(jobIdString));
    const clusters = new Set(ids.map((i) => i.cluster));
    if (clusters.size !== 1 || ids.length !== procs) {
      throw new SidecarError("internal", `condor_submit of HTCJob "${ns}/${name}" answered ${ids.map(jobIdString).join(" ")} for one cluster of ${procs}`);
    }
    d.store.recordCluster(uid, ids[0]!.cluster, procs, d.now());
    if (d.hangAfter === "record") await hang("record", ids.map(jobIdString));
    d.log.info("submitted", { htcjob: `${ns}/${name}`, uid, cluster: ids[0]!.cluster, procs });
    return d.store.get(uid);
  }

  function hang(step: string, ids: string[]): Promise<never> {
    d.log.warn(`test hook: hanging after ${step}`, { ids });
    return new Promise<never>(() => {});
  }

  function refuse(obj: HTCJob, procs: number, message: string): HTCJobRecord | undefined {
    d.store.refuse(newRecord(obj, procs), message, d.now());
    d.log.info("refused", { htcjob: keyOf(obj), reason: message });
    return d.store.get(obj.metadata.uid!);
  }

  /** The states of a record's procs: the final outcomes kept, else what the follower saw. */
  function statesOf(rec: HTCJobRecord): ProcState[] {
    const seen = views.get(rec.uid) ?? [];
    return Array.from({ length: rec.procs }, (_, p) => rec.outcomes[p] ?? seen[p] ?? UNSEEN);
  }

  async function writeStatus(obj: HTCJob, rec: HTCJobRecord | undefined, refusal?: { reason: string; message: string }): Promise<void> {
    const uid = obj.metadata.uid!;
    let next: HTCJobStatus;
    const generation = obj.metadata.generation ?? 1;
    if (refusal || rec?.phase === "refused") {
      const why = refusal ?? { reason: "InvalidSpec", message: rec!.refusal ?? "refused" };
      next = htcjobStatus({ generation, procs: rec?.procs ?? procsAsked(obj.spec), states: [], refusal: why });
    } else if (rec?.cluster === undefined) {
      next = htcjobStatus({ generation, procs: rec?.procs ?? 1, states: [], pending: "Asking HTCondor whether a submit queued the cluster" });
    } else {
      next = htcjobStatus({
        generation: rec.generation,
        procs: rec.procs,
        cluster: rec.cluster,
        states: statesOf(rec),
        output: outputNote(rec, `${obj.metadata.namespace}/${obj.metadata.name}`),
      });
    }
    const before = written.get(uid) ?? obj.status;
    next = carryTimes(next, before, nowIso());
    if (!statusDiffers(next, before)) return;
    // The informer's copy may be older than our last write: compare with both before writing.
    if (written.has(uid) && !statusDiffers(next, obj.status)) return void written.set(uid, next);
    try {
      await d.client.patch(HTCJOBS, obj.metadata.namespace, obj.metadata.name, { status: next }, { type: "merge", subresource: "status" });
      d.onWrite?.("status");
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    written.set(uid, next);
    for (const e of statusEvents(before, next)) await event(obj, e.type, e.reason, e.message);
  }

  /**
   * Deleting: condor_rm of every recorded `cluster.proc` (never the bare cluster, which could
   * hold procs that are not this HTCJob's), then the finalizer goes, only once each is removed
   * or already gone.
   */
  async function finalize(obj: HTCJob): Promise<void> {
    const uid = obj.metadata.uid!;
    let rec = d.store.get(uid);
    if (rec?.phase === "submitting") {
      const found = await findClustersByUid(d.condor, d.htcjob.operatorId, uid, rec.submitStartedAt);
      if (found.size > 1) throw new SidecarError("unavailable", `Clusters ${[...found.keys()].join(" and ")} both claim HTCJob "${keyOf(obj)}"`);
      if (found.size === 1) {
        d.store.recordCluster(uid, [...found.keys()][0]!, rec.procs, d.now());
        rec = d.store.get(uid);
      }
    }
    let removed = 0;
    if (rec?.cluster !== undefined) {
      removed = await removeProcs(rec, `HTCJob ${keyOf(obj)} was deleted`, (msg) => event(obj, "Warning", "RemoveFailed", msg));
      if (removed > 0) await event(obj, "Normal", "Removed", `Removed ${removed} proc(s) of cluster ${rec.cluster} from HTCondor`);
    }
    const i = (obj.metadata.finalizers ?? []).indexOf(FINALIZER);
    try {
      await d.client.patch(HTCJOBS, obj.metadata.namespace, obj.metadata.name, [
        { op: "test", path: `/metadata/finalizers/${i}`, value: FINALIZER },
        { op: "remove", path: `/metadata/finalizers/${i}` },
      ], { type: "json" });
      d.onWrite?.("finalizer");
    } catch (err) {
      if (isNotFound(err)) return void finish(uid);
      // The list changed under us (422 from a failed test): the watch brings the new one.
      if (err instanceof SidecarError && (err.kind === "invalid" || err.kind === "gone")) {
        throw new SidecarError("gone", `HTCJob "${keyOf(obj)}" changed while its finalizer was removed; looking again`);
      }
      throw err;
    }
    finish(uid);
  }

  function finish(uid: string) {
    if (d.store.get(uid)) d.store.markDeleted(uid, d.now());
    views.delete(uid);
    written.delete(uid);
  }

  /** condor_rm of the record's procs that may still be queued; throws unless each is removed or gone. Returns how many it removed. */
  async function removeProcs(rec: HTCJobRecord, reason: string, onFail: (msg: string) => Promise<void>): Promise<number> {
    const ids = Array.from({ length: rec.procs }, (_, proc) => ({ cluster: rec.cluster!, proc }));
    let outcome;
    try {
      outcome = await d.condor.remove(ids, reason);
    } catch (err) {
      await onFail(`Cannot remove the procs of cluster ${rec.cluster}: ${(err as Error).message}; the finalizer stays until they are removed`);
      throw err;
    }
    const bad = [...outcome].filter(([, o]) => o !== "removed" && o !== "not_found" && o !== "already_removing");
    if (bad.length > 0) {
      const msg = `condor_rm did not remove ${bad.map(([id, o]) => `${id} (${o})`).join(", ")}; the finalizer stays until they are removed`;
      await onFail(msg);
      throw new SidecarError("unavailable", msg);
    }
    return [...outcome.values()].filter((o) => o === "removed").length;
  }

  /**
   * The object went without its finalizer being honoured by us (an administrator removed it by
   * hand during an HTCondor outage): the procs are still removed, since nothing else will.
   */
  async function gone(ns: string, name: string): Promise<void> {
    const rec = d.store.byName(ns, name);
    if (!rec || rec.phase === "deleted") return;
    if (rec.cluster !== undefined && rec.phase !== "finished") {
      await removeProcs(rec, `HTCJob ${ns}/${name} is gone`, async (msg) => void d.log.warn("cannot remove the procs of a deleted HTCJob", { error: msg }));
    }
    if (rec.phase === "submitting") {
      // Whatever it queued carries the UID; remove that too before forgetting it.
      const found = await findClustersByUid(d.condor, d.htcjob.operatorId, rec.uid, rec.submitStartedAt);
      for (const cluster of found.keys()) {
        await removeProcs({ ...rec, cluster }, `HTCJob ${ns}/${name} is gone`, async () => {});
      }
    }
    finish(rec.uid);
  }

  /**
   * One pass of the follower: one condor_q (and one condor_history) for every live cluster;
   * outcomes that became final are recorded; an HTCJob whose procs changed is reconciled.
   */
  async function follow(): Promise<void> {
    const live = d.store.list(["submitted"]);
    if (live.length === 0) return;
    const wanted = new Map<number, number[]>();
    for (const r of live) wanted.set(r.cluster!, r.outcomes.map((o, p) => (o === null ? p : -1)).filter((p) => p >= 0));
    const sightings = await sightProcs(d.condor, wanted);
    const now = d.now();
    for (const r of live) {
      const outcomes = [...r.outcomes];
      const fetch: number[] = [];
      const exited: number[] = [];
      const heldForGood: number[] = [];
      const states = Array.from({ length: r.procs }, (_, p): ProcState => {
        if (outcomes[p]) return outcomes[p]!;
        const id = `${r.cluster}.${p}`;
        const seen = sightings.get(id);
        let s: ProcState = views.get(r.uid)?.[p] ?? UNSEEN;
        if (seen?.ad) {
          missingSince.delete(id);
          s = procState(seen.ad, d.terminalHoldCodes);
          if (seen.ad.jobStatus === 5 && isFinal(s)) heldForGood.push(p);
          if (seen.ad.jobStatus === 4 && r.spooled && !r.fetched[p]) fetch.push(p);
          if (seen.ad.jobStatus === 4 && isFinal(s)) exited.push(p);
        } else if (seen?.where === "nowhere") {
          const since = missingSince.get(id) ?? now;
          missingSince.set(id, since);
          if (now - since >= d.lostAfterMs) s = { state: "failed", reason: "was lost: HTCondor has it in neither the queue nor the history" };
        }
        if (isFinal(s)) {
          outcomes[p] = s;
          missingSince.delete(id);
        }
        return s;
      });
      // Spooled output first: the outcome is recorded only with the output fetched, so a failed fetch is tried again.
      if (fetch.length > 0) {
        try {
          await d.condor.transferData(fetch.map((proc) => ({ cluster: r.cluster!, proc })));
          const fetched = [...r.fetched];
          for (const p of fetch) fetched[p] = true;
          d.store.setFetched(r.uid, fetched, d.now());
        } catch (err) {
          d.log.warn("cannot fetch the output of spooled procs; trying again later", { uid: r.uid, error: (err as Error).message });
          for (const p of fetch) outcomes[p] = r.outcomes[p] ?? null;
        }
      }
      // The output is back (local: HTCondor brought it with the exit; spooled: fetched above).
      for (const p of exited) {
        if (!outcomes[p] || !d.htcjob.maxOutputBytes) continue;
        const files = settleWork(join(r.dir, "procs", String(p)), { maxBytes: d.htcjob.maxOutputBytes, maxFiles: d.htcjob.maxOutputFiles });
        outcomes[p] = { ...outcomes[p]!, files };
        if (!files.kept) d.log.warn("a proc's working-directory files are not kept", { uid: r.uid, proc: `${r.cluster}.${p}`, reason: files.reason });
      }
      // A hold that cannot recover: the proc counts as failed and leaves the queue, so that it holds no slot of the user's.
      if (heldForGood.length > 0) {
        const why = `HTCJob ${r.namespace}/${r.name}: held with a code that cannot recover (config TerminalHoldCodes)`;
        await d.condor.remove(heldForGood.map((proc) => ({ cluster: r.cluster!, proc })), why).catch((err) => {
          d.log.warn("cannot remove procs held for good; trying again later", { uid: r.uid, error: String(err) });
          for (const p of heldForGood) outcomes[p] = r.outcomes[p] ?? null;
        });
      }
      const changed = outcomes.some((o, p) => o !== r.outcomes[p]);
      if (changed) d.store.setOutcomes(r.uid, outcomes, now);
      const before = views.get(r.uid);
      views.set(r.uid, states);
      if (changed || !before || JSON.stringify(before) !== JSON.stringify(states)) d.enqueue(`${r.namespace}/${r.name}`);
    }
  }

  /** After the first list: records whose object went while the operator was away. */
  async function sweep(watchedNamespace: string | undefined): Promise<void> {
    const present = new Set(d.cachedAll().map((o) => o.metadata.uid));
    for (const r of d.store.list(["submitting", "submitted", "finished", "refused"])) {
      if (present.has(r.uid) || (watchedNamespace !== undefined && r.namespace !== watchedNamespace)) continue;
      d.enqueue(`${r.namespace}/${r.name}`);
    }
  }

  return { reconcile, follow, sweep, views };
}

/** Where a proc's output is kept and how to read it (status.output). */
function outputNote(rec: HTCJobRecord, key: string): string {
  return `${rec.dir}/procs/<ProcId>: the log c.htcjob.log and the working directory's files in work/ ` +
    `(htcondor-sidecar htcjob logs ${key} --proc N [--files | --file PATH])`;
}

/** The proc count a spec asks for, for a refusal's `failed` (1 when it cannot be read). */
function procsAsked(spec: unknown): number {
  const s = (spec ?? {}) as { queue?: unknown; script?: { queue?: unknown } };
  const q = typeof s.queue === "number" ? s.queue : typeof s.script?.queue === "number" ? s.script.queue : 0;
  return Number.isSafeInteger(q) && q > 0 && q <= 1_000_000 ? q : 1;
}

export type Controller = ReturnType<typeof createController>;
