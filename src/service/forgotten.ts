/**
 * Pods that interLink forgot (docs/status.md#pods-interlink-forgot): every /status call marks the
 * pods it names (status.ts); the ping, the metrics and every reaper pass ask which pods whose job
 * is queued or running have gone unnamed while calls about other pods kept coming (the rule is
 * core/forgotten.ts). They are reported: a log line when a pod is forgotten and when it is asked
 * about again, the `htcondor_sidecar_forgotten_pods` gauge, the list in the ping's answer. After
 * `ForgottenPods.RemoveAfterSeconds` the job is removed through the remover.
 *
 * What it knows lives in memory: after a restart every pod's clock starts again.
 */
import { adNumber } from "../core/classad.ts";
import { errorText } from "../core/errors.ts";
import { type ForgetRules, judgeForgotten, type Mark, markOf, newActivity, noteNamed, type StatusActivity } from "../core/forgotten.ts";
import type { FileConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { Store } from "../store/store.ts";
import type { QueueView } from "./queue.ts";
import { jid, ownedJob } from "./records.ts";
import type { Remover } from "./remover.ts";

/** A forgotten pod as the ping lists it. */
export interface ForgottenPod {
  uid: string;
  /** namespace/name */
  pod: string;
  /** The job, cluster.proc. */
  job: string;
  /** Seconds of status activity since the pod was last named. */
  idleSeconds: number;
  rounds: number;
}

export interface ForgetService {
  /** A status call named these pods (a ping names none). */
  named(uids: readonly string[]): void;
  /** The pods forgotten now. */
  list(): ForgottenPod[];
  /** Logs what changed since the last pass and removes the jobs that are due (a reaper pass). */
  sweep(): Promise<void>;
  /**
   * Counts status calls on this clock from now on (core/forgotten.ts): several schedds' services
   * share one, so that a call about a pod on one schedd is activity for all (schedds.ts).
   */
  shareActivity(activity: StatusActivity): void;
}

/** What the service needs: built before the service's context, it is one of its parts (context.ts). */
export interface ForgetDeps {
  store: Store;
  queue: QueueView;
  config: Pick<FileConfig, "ForgottenPods">;
  log: Logger;
  /** Epoch milliseconds. */
  now: () => number;
  remove: Remover;
}

/** JobStatus of a job that is still queued or running: idle, running, held, transferring output, suspended. */
const ALIVE = new Set([1, 2, 5, 6, 7]);

export const forgetRules = (c: Pick<ForgetDeps, "config">): ForgetRules => ({
  afterMs: c.config.ForgottenPods.AfterSeconds * 1000,
  rounds: c.config.ForgottenPods.Rounds,
  maxGapMs: c.config.ForgottenPods.SilenceSeconds * 1000,
  removeAfterMs: c.config.ForgottenPods.RemoveAfterSeconds * 1000,
});

export function createForgetService(c: ForgetDeps): ForgetService {
  /** The clock of status calls (core/forgotten.ts), this service's own until one is shared. */
  let activity = newActivity();
  const marks = new Map<string, Mark>();
  /** The pods reported forgotten by the last sweep (to log a change once). */
  let reported = new Map<string, ForgottenPod>();
  /** Jobs whose removal was asked for, by pod UID: not asked again while the view still shows them. */
  const removing = new Set<string>();

  /** Pods whose job the current view shows queued or running; undefined while the view is stale or not there. */
  function candidates(): string[] | undefined {
    const snap = c.queue.current();
    // A schedd that does not answer: whether the job still runs is unknown, and such pods do not count.
    if (!snap || c.queue.failing()) return undefined;
    const out: string[] = [];
    for (const j of c.store.liveJobs()) {
      const js = adNumber(snap.ads.get(`${j.cluster}.${j.proc}`) ?? {}, "JobStatus");
      if (js !== undefined && ALIVE.has(js)) out.push(j.uid);
    }
    return out;
  }

  /** The forgotten pods now; undefined while the schedd does not answer (nothing is judged then). */
  function judge(): { pod: ForgottenPod; remove: boolean }[] | undefined {
    const uids = candidates();
    if (!uids) return undefined;
    return judgeForgotten(uids, marks, activity, forgetRules(c)).flatMap((f) => {
      const r = c.store.get(f.uid);
      if (!r || r.phase !== "submitted") return [];
      return [{ pod: { uid: f.uid, pod: `${r.namespace}/${r.name}`, job: jid(r), idleSeconds: f.idleSeconds, rounds: f.rounds }, remove: f.remove }];
    });
  }

  return {
    named(uids) {
      if (uids.length === 0) return;
      noteNamed(activity, uids, c.now(), c.config.ForgottenPods.SilenceSeconds * 1000);
      const m = markOf(activity);
      for (const uid of uids) marks.set(uid, m);
    },
    list: () => judge()?.map((f) => f.pod) ?? [],
    shareActivity: (a) => void (activity = a),
    async sweep() {
      const now = judge();
      // A schedd that does not answer: what was reported stays reported, and nothing is removed.
      if (!now) return;
      const next = new Map(now.map((f) => [f.pod.uid, f.pod]));
      for (const { pod } of now) {
        if (!reported.has(pod.uid)) {
          c.log.warn("interLink no longer asks about this pod while its job is queued or running: forgotten", {
            uid: pod.uid,
            pod: pod.pod,
            jid: pod.job,
            idleSeconds: pod.idleSeconds,
            rounds: pod.rounds,
          });
        }
      }
      for (const [uid, pod] of reported) {
        if (next.has(uid)) continue;
        const r = c.store.get(uid);
        if (r?.phase === "submitted" && marks.has(uid)) {
          c.log.info("interLink asks about a forgotten pod again: remembered", { uid, pod: pod.pod, jid: pod.job });
        }
        removing.delete(uid);
      }
      reported = next;
      for (const { pod, remove } of now) {
        if (!remove || removing.has(pod.uid)) continue;
        const r = c.store.get(pod.uid);
        if (!r || r.cluster === undefined) continue;
        removing.add(pod.uid);
        try {
          const outcome = await c.remove(ownedJob(r), "htcondor-sidecar: interLink no longer asks about the pod");
          c.log.warn("removed the job of a pod interLink forgot", { uid: pod.uid, pod: pod.pod, jid: pod.job, idleSeconds: pod.idleSeconds, outcome });
        } catch (err) {
          removing.delete(pod.uid);
          c.log.warn("cannot remove the job of a pod interLink forgot; retrying next pass", { uid: pod.uid, jid: pod.job, error: errorText(err) });
        }
      }
    },
  };
}
