/**
 * The view of this sidecar's jobs in the schedd's queue: one condor_q for every pod, shared by
 * concurrent callers and cached briefly, and the schedd's failure streak that the ping and the
 * stale-status header read.
 */
import type { JobAd } from "../condor/parse.ts";
import { type Streak, recordFailure, recordSuccess } from "../core/health.ts";
import { stateAttrName } from "../core/types.ts";
import type { Condor } from "../condor/tools.ts";
import type { Store } from "../store/store.ts";

/** Attributes the status path asks condor_q/condor_history for (never the whole ad). */
const BASE_ATTRS = [
  "ClusterId",
  "ProcId",
  "JobStatus",
  "InterLinkPodUID",
  "InterLinkSidecarId",
  "HoldReasonCode",
  "HoldReasonSubCode",
  "HoldReason",
  "ExitCode",
  "ExitBySignal",
  "ExitSignal",
  "RemoveReason",
  "NumJobStarts",
  "EnteredCurrentStatus",
] as const;

/**
 * A snapshot of this sidecar's jobs in the queue, by job id (`cluster.proc`); `at` is when its
 * condor_q started. Ads are keyed by the job id alone: it is the one thing a job cannot rewrite.
 */
export interface Snapshot {
  at: number;
  ads: Map<string, JobAd>;
}

export interface QueueView {
  /** The current snapshot, refreshed when it is older than StatusCacheSeconds. */
  snapshot(): Promise<Snapshot>;
  /** The attributes a job's status needs: the base ones and a state attribute per container slot. */
  attributes(): string[];
  /** Counts a new pod's containers into the attributes asked for. */
  noteWidth(containers: readonly { init: boolean }[]): void;
  /** condor_q's failure streak. */
  readonly schedd: Streak;
}

interface QueueDeps {
  store: Store;
  condor: Condor;
  config: { StatusCacheSeconds: number };
  now: () => number;
}

export function createQueueView(d: QueueDeps): QueueView {
  const statusCacheMs = d.config.StatusCacheSeconds * 1000;
  const schedd: Streak = { failures: 0 };
  let current: Snapshot | undefined;
  let refreshing: Promise<Snapshot> | undefined;

  /**
   * The widest pod (init containers, containers) is counted once from the store, then kept up to
   * date on create (asking for an attribute no job has costs nothing).
   */
  let widest: { init: number; main: number } | undefined;
  function noteWidth(containers: readonly { init: boolean }[]): { init: number; main: number } {
    if (!widest) {
      widest = { init: 0, main: 0 };
      for (const r of d.store.list(["creating", "submitted"])) noteWidth(r.containers);
    }
    widest.init = Math.max(widest.init, containers.filter((c) => c.init).length);
    widest.main = Math.max(widest.main, containers.filter((c) => !c.init).length);
    return widest;
  }
  function attributes(): string[] {
    const w = noteWidth([]);
    const out: string[] = [...BASE_ATTRS];
    for (let i = 0; i < w.init; i++) out.push(stateAttrName(i, true));
    for (let i = 0; i < w.main; i++) out.push(stateAttrName(i, false));
    return out;
  }

  async function refresh(): Promise<Snapshot> {
    try {
      const at = d.now();
      // The jobs recorded at create, selected by their cluster ids: a job can rewrite its
      // InterLinkSidecarId and hide from a query by attribute. With nothing to follow, a query
      // that matches nothing still tells whether the schedd answers.
      const clusters = [...new Set(d.store.liveJobs().map((j) => j.cluster))].sort((a, b) => a - b);
      const ads = await d.condor.query(clusters.length > 0 ? { clusters, attributes: attributes() } : { constraint: "false", attributes: ["ClusterId"] });
      const byJob = new Map<string, JobAd>();
      for (const ad of ads) {
        if (typeof ad.ClusterId === "number" && typeof ad.ProcId === "number") byJob.set(`${ad.ClusterId}.${ad.ProcId}`, ad);
      }
      current = { at, ads: byJob };
      recordSuccess(schedd);
      return current;
    } catch (err) {
      recordFailure(schedd, err instanceof Error ? err.message : String(err), d.now());
      throw err;
    }
  }

  return {
    /**
     * While a refresh runs, callers get the snapshot it replaces if that is at most one cache
     * period past its age: interLink polls pod after pod (spec: interlink §5.1), and one slow
     * condor_q must not hold every one of those calls.
     */
    async snapshot() {
      const now = d.now();
      if (current && now - current.at < statusCacheMs) return current;
      if (refreshing) {
        if (current && now - current.at < 2 * statusCacheMs) return current;
        return refreshing;
      }
      const p = refresh();
      refreshing = p;
      const done = () => {
        if (refreshing === p) refreshing = undefined;
      };
      p.then(done, done);
      return p;
    },
    attributes,
    noteWidth,
    schedd,
  };
}
