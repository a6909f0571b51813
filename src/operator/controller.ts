/**
 * The HTCJob controller (docs/operator.md#behaviour). Level-triggered: a watch event only says
 * "look at this object again"; reconcile reads the object, the store and HTCondor's view, and
 * makes them agree, and running it twice does nothing new. The world is recorded before the
 * object is told: submit, record the cluster in the store, then write the status. A finalizer is
 * a promise: it goes only once the procs are removed or gone.
 *
 * This module routes a key to its use case; each lives in controller/, around a shared context
 * (controller/context.ts): submit.ts (a cluster submitted once, adopted after a lost store),
 * status.ts, finalize.ts (the finalizer, and removing the procs of a deleted HTCJob), and
 * cleanup.ts (records whose object went without it).
 */
import { SidecarError } from "../core/errors.ts";
import { htcjobLabel } from "./htcjob-plan.ts";
import { createTracker } from "./track.ts";
import { gone, orphan, sweep } from "./controller/cleanup.ts";
import { type ControllerDeps, createContext, FINALIZER, ORPHAN } from "./controller/context.ts";
import { addFinalizer, finalize } from "./controller/finalize.ts";
import { writeStatus } from "./controller/status.ts";
import { adopt, submitOnce } from "./controller/submit.ts";

export { type ControllerDeps, FINALIZER, type HTCJob, htcjobDir, keyOf } from "./controller/context.ts";

const UID = /^[A-Za-z0-9-]{1,64}$/;

export function createController(d: ControllerDeps) {
  const c = createContext(d);
  const tracker = createTracker({
    ...d,
    requeue: (r) => d.enqueue(d.cached(r.namespace, r.name)?.metadata.uid === r.uid ? `${r.namespace}/${r.name}` : ORPHAN + r.uid),
  }, c.views);
  const allowed = (ns: string) => d.namespaces.length === 0 || d.namespaces.includes(ns);

  /** One pass over `namespace/name` (or a record by UID, `uid:…`, whose object is gone). */
  async function reconcile(key: string): Promise<void> {
    if (key.startsWith(ORPHAN)) return await orphan(c, key.slice(ORPHAN.length));
    const slash = key.indexOf("/");
    const [ns, name] = [key.slice(0, slash), key.slice(slash + 1)];
    let obj = d.cached(ns, name);
    if (!obj) return await gone(c, ns, name);
    const uid = obj.metadata.uid ?? "";
    if (!UID.test(uid)) throw new SidecarError("invalid", `Cannot reconcile HTCJob "${key}": its uid "${uid}" is not one`);
    const hasFinalizer = (obj.metadata.finalizers ?? []).includes(FINALIZER);
    if (obj.metadata.deletionTimestamp) return hasFinalizer ? await finalize(c, obj) : undefined;

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
      return await writeStatus(c, obj, undefined, {
        reason: "NamespaceNotAllowed",
        message: `${htcjobLabel(ns, name)}: namespace "${ns}" is not one this operator runs HTCJobs for (config HTCJob.Namespaces)`,
      });
    }
    if (!hasFinalizer && rec?.phase !== "refused") obj = await addFinalizer(c, obj);

    if (!rec) rec = await adopt(c, obj);
    if (!rec || rec.phase === "submitting") rec = await submitOnce(c, obj, rec);
    if (rec) await writeStatus(c, obj, rec);
  }

  return {
    reconcile,
    follow: tracker.follow,
    jobStatus: tracker.jobStatus,
    sweep: async (watchedNamespace: string | undefined) => sweep(c, watchedNamespace),
    views: c.views,
  };
}

export type Controller = ReturnType<typeof createController>;
