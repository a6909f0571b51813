/**
 * Bringing the store in line with the schedd (at start, and by the reaper until it succeeded):
 * creates interrupted between submit and record, a lost store, jobs of pods deleted meanwhile.
 * And the reaper's other work: pending removals and expired tombstones.
 */
import { jobIdString } from "../condor/parse.ts";
import { type JobAd } from "../core/classad.ts";
import { parseContainerList } from "../core/container-list.ts";
import { holdsOnlyKeptLog, isDir, listPodDirs, podDir, removePodDir } from "../store/files.ts";
import type { Ctx } from "./context.ts";
import { findJobsByUid, UidConflict } from "./find-by-uid.ts";
import { ownedJob, secretPaths } from "./records.ts";
import type { DeleteService } from "./delete.ts";
import { errorText } from "../core/errors.ts";

const TOMBSTONE_TTL_MS = 24 * 3600 * 1000;
/** How far back the history is searched for the jobs of pods whose record was lost. */
const ADOPT_HISTORY_LIMIT = 10_000;
const ADOPT_HISTORY_SCAN = 200_000;
const ADOPT_ATTRS = ["ClusterId", "ProcId", "InterLinkPodUID", "InterLinkPodName", "InterLinkPodNamespace", "InterLinkContainers", "GlobalJobId"];

export interface ReconcileService {
  reconcile(): Promise<void>;
  /** One pass of the background work: reconcile if still needed, pending removals, tombstones. */
  reap(): Promise<void>;
}

export function createReconcileService(c: Ctx, deletes: DeleteService): ReconcileService {
  /** Creates interrupted between submit and record: the schedd knows whether the job exists (one query for all). */
  async function settleInterrupted(): Promise<void> {
    // A create running now settles itself.
    const records = c.store.list(["creating"]).filter((r) => !c.inflight.has(r.uid));
    const found = await findJobsByUid(c, records);
    for (const r of records) {
      const id = found.get(r.uid);
      if (id instanceof UidConflict) {
        c.log.error("an interrupted create is left undecided", { uid: r.uid, error: id.message });
      } else if (id) {
        c.store.recordJob(r.uid, id.cluster, id.proc, c.now());
        // Asked about at once, as a create's job is: its events may lie behind the saved offset,
        // read while it was no followed job, and it may have left the queue before this start.
        c.queue.recheck(jobIdString(id), c.now());
        c.log.info("reconciled an interrupted create", { uid: r.uid, jid: jobIdString(id) });
      } else {
        removePodDir(r.dir, secretPaths(r));
        c.store.abandon(r.uid);
        c.log.info("dropped an interrupted create that never reached HTCondor", { uid: r.uid });
      }
    }
  }

  /**
   * Jobs of this sidecar the store does not know: the store file was lost, or a pod was deleted
   * while its create was interrupted. Jobs of deleted pods are removed; the others are adopted
   * when their pod folder is still there (a pod deleted before the loss has no folder).
   */
  async function adoptOrRemove(ads: readonly JobAd[], inQueue: boolean, asked: number): Promise<void> {
    // Jobs whose id is recorded are known, whatever their ad claims now (the status path checks
    // their identity). Of the others, a UID claimed by two jobs is adopted by neither.
    const claims = new Map<string, JobAd[]>();
    for (const ad of ads) {
      const uid = ad.InterLinkPodUID;
      if (typeof uid !== "string" || typeof ad.ClusterId !== "number" || typeof ad.ProcId !== "number") continue;
      if (c.store.byJob(ad.ClusterId, ad.ProcId)) continue;
      claims.set(uid, [...(claims.get(uid) ?? []), ad]);
    }
    for (const [uid, claimants] of claims) {
      const ids = claimants.map((a) => ({ cluster: a.ClusterId as number, proc: a.ProcId as number }));
      const known = c.store.get(uid);
      if (known?.phase === "deleted" || known?.phase === "removing") {
        // Removing a job that claims a deleted pod removes only that job, whoever it really is.
        for (const id of inQueue && known.cluster === undefined ? ids : []) {
          await c.remove(ownedJob({ uid, ...id }), "interLink deleted the pod");
          c.log.info("removed the job of a pod deleted while its create was interrupted", { uid, jid: jobIdString(id) });
        }
        continue;
      }
      if (known) continue;
      if (claimants.length > 1) {
        c.log.error("several jobs claim one pod; adopting none of them", { uid, jids: ids.map(jobIdString) });
        continue;
      }
      const ad = claimants[0]!;
      const id = ids[0]!;
      const containers = parseContainerList(ad.InterLinkContainers);
      if (!containers) {
        c.log.warn("found a job of this sidecar with no container list; leaving it alone", { jid: jobIdString(id) });
        continue;
      }
      const dir = podDir(c.dataRoot, uid);
      if (!inQueue && !isDir(dir)) continue;
      const rec = {
        uid,
        name: String(ad.InterLinkPodName ?? ""),
        namespace: String(ad.InterLinkPodNamespace ?? ""),
        dir,
        spooled: c.spool,
        containers,
        secrets: [],
        // Adopted by the UID it claims, the job is known by its GlobalJobId from now on
        // (docs/threat-model.md#a-job-id-is-not-an-identity): its create's time is not known.
        ...(typeof ad.GlobalJobId === "string" ? { globalJobId: ad.GlobalJobId } : {}),
      };
      c.store.adopt({ ...rec, createdAt: c.now() }, id.cluster, id.proc, asked);
      c.queue.noteWidth(containers);
      c.log.info("adopted a job from the schedd", { uid, jid: jobIdString(id), inQueue });
    }
  }

  async function reconcile(): Promise<void> {
    await settleInterrupted();
    // An adopted job is known to every queue snapshot taken from the moment it was asked about,
    // not from the moment it was recorded: a snapshot that started between the two (or in the
    // same millisecond) would otherwise count it as just submitted, and report it as being
    // created for one more refresh although it has ended.
    let asked = c.now();
    await adoptOrRemove(await c.condor.query({ constraint: c.sidecarConstraint, attributes: ADOPT_ATTRS }), true, asked);
    // Pod folders with no record: the store was lost after their jobs had left the queue. A
    // folder that holds only the wrapper log kept after a delete lost its tombstone with the
    // store: it goes, as it would have when the tombstone expired, and its job is not adopted.
    const unknown = listPodDirs(c.dataRoot).filter((uid) => !c.store.get(uid));
    for (const uid of unknown.filter((u) => holdsOnlyKeptLog(podDir(c.dataRoot, u)))) {
      removePodDir(podDir(c.dataRoot, uid));
      c.log.info("removed the kept wrapper log of a pod deleted before the store was lost", { uid });
    }
    if (listPodDirs(c.dataRoot).some((uid) => !c.store.get(uid))) {
      asked = c.now();
      await adoptOrRemove(
        await c.condor.history({ constraint: c.sidecarConstraint, attributes: ADOPT_ATTRS, limit: ADOPT_HISTORY_LIMIT, scanLimit: ADOPT_HISTORY_SCAN }),
        false,
        asked,
      );
    }
    c.reconciled = true;
    c.queue.wake();
  }

  async function reap(): Promise<void> {
    if (!c.reconciled) {
      try {
        await reconcile();
      } catch (err) {
        c.log.warn("reconcile with the schedd failed; retrying on the next pass", { error: errorText(err) });
      }
    }
    // Together, so that the remover sends them as one condor_rm.
    await Promise.all(c.store.list(["removing"]).map((r) => deletes.removeJob(r)));
    for (const r of c.store.list(["deleted"])) {
      if (c.now() - r.updatedAt <= TOMBSTONE_TTL_MS) continue;
      // What a delete left of the pod folder (its wrapper log) lives as long as the tombstone.
      try {
        removePodDir(r.dir);
      } catch (err) {
        c.log.warn("cannot remove the kept wrapper log of a deleted pod", { uid: r.uid, error: errorText(err) });
      }
      c.store.forget(r.uid);
    }
  }

  return { reconcile, reap };
}
