/**
 * The HTCJob controller (docs/operator.md#behaviour). Level-triggered: a watch event only says
 * "look at this object again"; reconcile reads the object, the store and HTCondor's view, and
 * makes them agree, and running it twice does nothing new. The world is recorded before the
 * object is told: submit, record the cluster in the store, then write the status. A finalizer is
 * a promise: it goes only once the procs are removed or gone.
 */
import { randomUUID } from "node:crypto";
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
import { findClustersByUid } from "./follow.ts";
import { htcjobLabel, planHTCJob } from "./htcjob-plan.ts";
import { carryTimes, type HTCJobStatus, htcjobStatus, type ProcState, statusDiffers, statusEvents, UNSEEN } from "./status.ts";
import type { HTCJobRecord, HTCJobStore, NewHTCJob } from "./store.ts";
import { createTracker } from "./track.ts";

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
  /** `--namespace`: the only namespace watched, so the only one whose records this term may act on. */
  watchedNamespace?: string;
  dataRoot: string;
  spool: boolean;
  terminalHoldCodes: readonly number[];
  /** How long a proc may be in neither the queue nor the history before it counts as lost. */
  lostAfterMs: number;
  log: Logger;
  now: () => number;
  /** This term: aborted once another replica may lead. Checked again right before a submit. */
  leading?: AbortSignal;
  /** condor_submit's timeout: a submit begun by an earlier term may still be queueing until then. */
  submitTimeoutMs?: number;
  /** How long a proc held with a code in TerminalHoldCodes is left alone before it is removed. */
  holdGraceMs?: number;
  /** A submit's random token (default: a random UUID). */
  token?: () => string;
  /** Test-only (docs/operator.md#test-hooks): stop for good right after this step, to be killed there. */
  hangAfter?: "submit" | "record";
  /** Told of every API write (metrics and the steady-state benchmark). */
  onWrite?: (what: string) => void;
  /** The job event log a new, non-spooled cluster writes (events.ts); without it the cluster has its own job.log and is polled. */
  eventLog?: () => { name: string; path: string } | undefined;
  /** A cluster was recorded: its procs are asked about at once (their submit events may have been read already). */
  recorded?: (cluster: number, procs: number) => void;
}

export const keyOf = (o: { metadata: { namespace?: string; name: string } }) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** The HTCJob's folder: keyed by its UID, never its name. */
export const htcjobDir = (dataRoot: string, uid: string) => join(dataRoot, "htcjobs", uid);

const UID = /^[A-Za-z0-9-]{1,64}$/;

/** A key for one record by UID, not by name: the object it belonged to is gone, and its name may be another's now. */
const ORPHAN = "uid:";

export function createController(d: ControllerDeps) {
  /** What the follower last saw of each live HTCJob's procs, by UID. */
  const views = new Map<string, ProcState[]>();
  /** The status last written, by UID: the informer's copy may lag behind our own write. */
  const written = new Map<string, HTCJobStatus>();
  const tracker = createTracker({
    ...d,
    requeue: (r) => d.enqueue(d.cached(r.namespace, r.name)?.metadata.uid === r.uid ? `${r.namespace}/${r.name}` : ORPHAN + r.uid),
  }, views);
  /** UIDs whose latest submit ran in this term and is over: no earlier term's condor_submit can still be queueing. */
  const settledHere = new Set<string>();
  const nowIso = () => new Date(d.now()).toISOString().replace(/\.\d{3}Z$/, "Z");

  const event = (o: HTCJob, type: "Normal" | "Warning", reason: string, message: string) =>
    d.events.record(o, type, reason, message).then(() => d.onWrite?.("event"), (err) => d.log.warn("cannot write an Event", { reason, error: String(err) }));

  const allowed = (ns: string) => d.namespaces.length === 0 || d.namespaces.includes(ns);

  async function reconcile(key: string): Promise<void> {
    if (key.startsWith(ORPHAN)) return await orphan(key.slice(ORPHAN.length));
    const slash = key.indexOf("/");
    const [ns, name] = [key.slice(0, slash), key.slice(slash + 1)];
    let obj = d.cached(ns, name);
    if (!obj) return await gone(ns, name);
    const uid = obj.metadata.uid ?? "";
    if (!UID.test(uid)) throw new SidecarError("invalid", `Cannot reconcile HTCJob "${key}": its uid "${uid}" is not one`);
    const hasFinalizer = (obj.metadata.finalizers ?? []).includes(FINALIZER);
    if (obj.metadata.deletionTimestamp) return hasFinalizer ? await finalize(obj) : undefined;

    // Records of this name with another UID belong to objects that are gone (a name is one object's at a time).
    for (const other of d.store.named(ns, name)) if (other.uid !== uid) d.enqueue(ORPHAN + other.uid);
    let rec = d.store.get(uid);
    if (rec?.phase === "deleted") return;
    if (rec?.phase === "refused" && rec.generation !== (obj.metadata.generation ?? 1)) {
      d.store.forget(uid);
      rec = undefined;
    }
    // Only before a submit: procs already queued are followed (and removed on delete) whatever the config says now.
    if (!rec && !allowed(ns)) {
      return await writeStatus(obj, undefined, {
        reason: "NamespaceNotAllowed",
        message: `${htcjobLabel(ns, name)}: namespace "${ns}" is not one this operator runs HTCJobs for (config HTCJob.Namespaces)`,
      });
    }
    if (!hasFinalizer && rec?.phase !== "refused") obj = await addFinalizer(obj);

    if (!rec) rec = await adopt(obj);
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

  /** The UID search, with the owner learned from the operator's own condor_q answers. */
  async function search(uid: string, token: string | undefined, history: boolean, claimedCluster?: number) {
    const found = await findClustersByUid(d.condor, { operatorId: d.htcjob.operatorId, uid, token, owner: d.store.owner(), history, claimedCluster });
    if (found.owner !== undefined && found.owner !== d.store.owner()) d.store.setOwner(found.owner);
    return found.clusters;
  }

  /**
   * No record: the store may have been lost (a new data volume) after a submit. Only what a search
   * by UID finds among the operator's own jobs is taken, its proc count HTCondor's; the status
   * (which anyone who may patch htcjobs/status can write) never names the cluster. It only says
   * whether to look in the history too, which a brand-new object does not need.
   */
  async function adopt(obj: HTCJob): Promise<HTCJobRecord | undefined> {
    const uid = obj.metadata.uid!;
    const claimed = typeof obj.status?.clusterId === "number" || (Array.isArray(obj.status?.jobid) && obj.status.jobid.length > 0);
    const found = await search(uid, undefined, claimed, typeof obj.status?.clusterId === "number" ? obj.status.clusterId : undefined);
    if (found.size === 0) return undefined;
    if (found.size > 1) return await conflict(obj, found);
    const [cluster, procIds] = [...found][0]!;
    const procs = Math.max(...procIds) + 1;
    d.log.warn("the store has no record of an HTCJob whose procs HTCondor holds; taking them", { htcjob: keyOf(obj), uid, cluster, procs });
    d.store.beginSubmit(newRecord(obj, procs), d.now());
    d.store.recordCluster(uid, cluster, procs, d.now());
    d.recorded?.(cluster, procs);
    return d.store.get(uid);
  }

  async function conflict(obj: HTCJob, found: Map<number, unknown>): Promise<never> {
    const ids = [...found.keys()].join(" and ");
    await event(obj, "Warning", "ClusterConflict", `Clusters ${ids} both carry this HTCJob's UID; neither is adopted: remove the wrong one (condor_rm)`);
    throw new SidecarError("unavailable", `Clusters ${ids} both claim HTCJob "${keyOf(obj)}"`);
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
      const found = await search(uid, rec.submitToken, true);
      if (found.size > 1) return await conflict(obj, found);
      if (found.size === 1) {
        const [cluster] = [...found.keys()];
        d.log.info("a submit whose answer was lost had queued its cluster; recording it", { htcjob: `${ns}/${name}`, cluster });
        d.store.recordCluster(uid, cluster!, rec.procs, d.now());
        d.recorded?.(cluster!, rec.procs);
        return d.store.get(uid);
      }
      // A condor_submit of an earlier term (or replica) may still be queueing: wait out its timeout before another.
      const until = rec.submitStartedAt + (d.submitTimeoutMs ?? 0) + 5000;
      if (!settledHere.has(uid) && d.now() < until) {
        throw new SidecarError("unavailable", `A condor_submit of HTCJob "${ns}/${name}" begun earlier may still be running; looking again after it times out`);
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
    // A spooled job's log is written by a remote schedd, where the operator cannot read it.
    const log = d.spool ? undefined : d.eventLog?.();
    const base = { ...newRecord(obj, procs), eventLog: log?.name };
    const dir = base.dir;
    const token = d.token?.() ?? randomUUID();
    plan.htcjob!.submitToken = token;
    d.store.beginSubmit(base, d.now(), token);
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
    if (d.leading?.aborted) throw new SidecarError("unavailable", `Not submitting HTCJob "${ns}/${name}": this replica no longer leads`);
    let ids;
    try {
      ids = await d.condor.submit(join(dir, "job.sub"), { spool: d.spool, podOptions: (plan.submit.podOptions ?? []).length > 0, count: procs });
    } catch (err) {
      // Nothing was queued (docs/htcondor.md#condor_submit-exit-codes-and-errors). Only a refusal
      // with htcopts lines is the spec's fault; without them the site's own lines were refused,
      // which a fix of the config mends: an Event, and the next pass submits again.
      if (err instanceof SubmitRefused && (plan.submit.podOptions ?? []).length > 0) {
        return refuse(obj, procs, `${htcjobLabel(ns, name)}: spec.htcopts: condor_submit refused the HTCJob: ${err.refusal}`);
      }
      // The record stays `submitting`: the next pass asks HTCondor before it submits again.
      await event(obj, "Warning", "SubmitFailed", (err as Error).message);
      throw err;
    } finally {
      settledHere.add(uid);
    }
    if (d.hangAfter === "submit") await hang("submit", ids.map(jobIdString));
    const clusters = new Set(ids.map((i) => i.cluster));
    if (clusters.size !== 1 || ids.length !== procs) {
      throw new SidecarError("internal", `condor_submit of HTCJob "${ns}/${name}" answered ${ids.map(jobIdString).join(" ")} for one cluster of ${procs}`);
    }
    d.store.recordCluster(uid, ids[0]!.cluster, procs, d.now());
    d.recorded?.(ids[0]!.cluster, procs);
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
    } else if (!views.has(rec.uid) && rec.outcomes.some((o) => o === null) && obj.status?.clusterId === rec.cluster) {
      // Not seen yet this term (a restart, a new Lease): the status already shows this cluster, and
      // one written from no view would set its procs back to idle and repeat their Events.
      return;
    } else {
      next = htcjobStatus({
        generation: rec.generation,
        observed: obj.metadata.generation,
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
      const found = await search(uid, rec.submitToken, true);
      if (found.size > 1) throw new SidecarError("unavailable", `Clusters ${[...found.keys()].join(" and ")} both claim HTCJob "${keyOf(obj)}"`);
      if (found.size === 1) {
        d.store.recordCluster(uid, [...found.keys()][0]!, rec.procs, d.now());
        d.recorded?.([...found.keys()][0]!, rec.procs);
        rec = d.store.get(uid);
      }
    }
    const onFail = (msg: string) => event(obj, "Warning", "RemoveFailed", msg);
    if (!rec) {
      // A lost store: what the operator's own jobs say of this UID is removed, so that the delete orphans nothing.
      for (const [cluster, procIds] of await search(uid, undefined, true)) {
        const found = { ...newRecord(obj, Math.max(...procIds) + 1), cluster } as HTCJobRecord;
        const removed = await removeProcs(found, `HTCJob ${keyOf(obj)} was deleted`, onFail);
        if (removed > 0) await event(obj, "Normal", "Removed", `Removed ${removed} proc(s) of cluster ${cluster} from HTCondor`);
      }
    } else if (rec.cluster !== undefined) {
      const removed = await removeProcs(rec, `HTCJob ${keyOf(obj)} was deleted`, onFail);
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
   * Not in the cache: the object may be gone without its finalizer being honoured by us (an
   * administrator removed it by hand during an HTCondor outage), and then its procs are still
   * removed, since nothing else will. A missing cache entry alone proves nothing (a watch of one
   * namespace, a cache behind): the API server is asked, and only records whose UID it does not
   * have under that name are cleaned up.
   */
  async function gone(ns: string, name: string): Promise<void> {
    const recs = d.store.named(ns, name);
    if (recs.length === 0) return;
    const live = await liveUid(ns, name);
    for (const r of recs) if (r.uid !== live) await cleanUp(r);
  }

  /** A record queued by UID: cleaned up once the API server confirms its object is gone. */
  async function orphan(uid: string): Promise<void> {
    const r = d.store.get(uid);
    if (!r || r.phase === "deleted") return;
    if (d.cached(r.namespace, r.name)?.metadata.uid === uid) return;
    if ((await liveUid(r.namespace, r.name)) === uid) return;
    await cleanUp(r);
  }

  /** The UID of the object the API server holds under this name now, if any. */
  async function liveUid(ns: string, name: string): Promise<string | undefined> {
    try {
      return (await d.client.get<HTCJob>(HTCJOBS, ns, name)).metadata.uid;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async function cleanUp(rec: HTCJobRecord): Promise<void> {
    const what = `HTCJob ${rec.namespace}/${rec.name} is gone`;
    if (rec.cluster !== undefined && rec.phase !== "finished") {
      await removeProcs(rec, what, async (msg) => void d.log.warn("cannot remove the procs of a deleted HTCJob", { uid: rec.uid, error: msg }));
    }
    if (rec.phase === "submitting") {
      // Whatever its submit queued carries its token; remove that too before forgetting it.
      for (const cluster of (await search(rec.uid, rec.submitToken, true)).keys()) {
        await removeProcs({ ...rec, cluster }, what, async () => {});
      }
    }
    finish(rec.uid);
  }

  /** After the first list: records whose object went while the operator was away. */
  async function sweep(watchedNamespace: string | undefined): Promise<void> {
    const present = new Set(d.cachedAll().map((o) => o.metadata.uid));
    for (const r of d.store.list(["submitting", "submitted", "finished", "refused"])) {
      if (present.has(r.uid) || (watchedNamespace !== undefined && r.namespace !== watchedNamespace)) continue;
      d.enqueue(ORPHAN + r.uid);
    }
  }

  return { reconcile, follow: tracker.follow, sweep, views };
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
