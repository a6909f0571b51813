/**
 * Records whose object is gone without its finalizer having been honoured here (removed by hand,
 * or gone while the operator was away): their procs are removed and the record becomes a
 * tombstone, since nothing else will do it (docs/operator.md#deleting).
 */
import { isNotFound } from "../../kube/errors.ts";
import { HTCJOBS } from "../../kube/resources.ts";
import type { HTCJobRecord } from "../store.ts";
import { type Ctx, type HTCJob, ORPHAN, search } from "./context.ts";
import { finish, removeProcs } from "./finalize.ts";

/**
 * Not in the cache: the object may be gone without its finalizer being honoured by us (an
 * administrator removed it by hand during an HTCondor outage), and then its procs are still
 * removed, since nothing else will. A missing cache entry alone proves nothing (a watch of one
 * namespace, a cache behind): the API server is asked, and only records whose UID it does not
 * have under that name are cleaned up.
 */
export async function gone(c: Ctx, ns: string, name: string): Promise<void> {
  const recs = c.store.named(ns, name);
  if (recs.length === 0) return;
  const live = await liveUid(c, ns, name);
  for (const r of recs) if (r.uid !== live) await cleanUp(c, r);
}

/** A record queued by UID: cleaned up once the API server confirms its object is gone. */
export async function orphan(c: Ctx, uid: string): Promise<void> {
  const r = c.store.get(uid);
  if (!r || r.phase === "deleted") return;
  if (c.cached(r.namespace, r.name)?.metadata.uid === uid) return;
  if ((await liveUid(c, r.namespace, r.name)) === uid) return;
  await cleanUp(c, r);
}

/** After the first list: records whose object went while the operator was away. */
export function sweep(c: Ctx, watchedNamespace: string | undefined): void {
  const present = new Set(c.cachedAll().map((o) => o.metadata.uid));
  for (const r of c.store.list(["submitting", "submitted", "finished", "refused"])) {
    if (present.has(r.uid) || (watchedNamespace !== undefined && r.namespace !== watchedNamespace)) continue;
    c.enqueue(ORPHAN + r.uid);
  }
}

/** The UID of the object the API server holds under this name now, if any. */
async function liveUid(c: Ctx, ns: string, name: string): Promise<string | undefined> {
  try {
    return (await c.client.get<HTCJob>(HTCJOBS, ns, name)).metadata.uid;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function cleanUp(c: Ctx, rec: HTCJobRecord): Promise<void> {
  const what = `HTCJob ${rec.namespace}/${rec.name} is gone`;
  if (rec.cluster !== undefined && rec.phase !== "finished") {
    await removeProcs(c, rec, what, async (msg) => void c.log.warn("cannot remove the procs of a deleted HTCJob", { uid: rec.uid, error: msg }));
  }
  if (rec.phase === "submitting") {
    // Whatever its submit queued carries its token; remove that too before forgetting it.
    for (const cluster of (await search(c, rec.uid, rec.submitToken, true)).keys()) {
      await removeProcs(c, { ...rec, cluster }, what, async () => {});
    }
  }
  finish(c, rec.uid);
}
