/**
 * Following the jobs that write no event log their reader can read: spooled jobs (every remote
 * schedd), and the few others without one (docs/status.md#following-spooled-jobs). The sidecar's
 * queue view and the operator's procs share it: instead of reading every such job's ad every few
 * seconds, the caller asks the schedd only what changed:
 *
 * - every WATCH_MS, one condor_q of the jobs whose status changed (EnteredCurrentStatus) or that
 *   chirped a new state (the wrapper's InterLinkStateTime) since the previous answer, timed by
 *   the schedd's own clock (ServerTime); nothing changed, nothing is sent;
 * - every COUNT_MS after it, one `condor_q -totals` counts this sidecar's live jobs (no job ad
 *   is sent). Fewer than the view holds live, even after one more question of what changed,
 *   means a job left the queue before a question could see its last status (a removal of an idle
 *   or held job leaves at once): the history since the last count that missed none says which,
 *   and a full condor_q when it cannot.
 *
 * The full condor_q of every followed job stays the caller's reconciler's (ReconcileMinutes), and
 * gives the first window its start. What comes back is matched to pods (or procs) by the recorded
 * job id alone; the times only decide which ads to read
 * (docs/threat-model.md#4-a-job-forges-another-pods-status).
 */
import type { JobAd } from "../core/classad.ts";
import { errorText } from "../core/errors.ts";
import { changedSince, type JobRef, leftSince, liveCount, nextSince, STATE_TIME_ATTR, timeForged } from "../core/watch.ts";
import type { Logger } from "../logger.ts";
import type { Condor } from "./tools.ts";

/** How often what changed is asked (a hold reaches /status within about this long). */
export const WATCH_MS = 1000;
/** How often the live jobs are counted (a job that left unseen is noticed within about this long). */
export const COUNT_MS = 5000;
/** The history search for jobs that left unseen reads at most this many of its newest ads. */
const HISTORY_SCAN = 10_000;
/** A deficit the history cannot explain runs the full condor_q, at most this often. */
const FULL_MIN_MS = 60_000;

/** What the caller (the sidecar's queue view, the operator's tracker) lends the watch: the followed jobs, its view, and how to merge into it. */
export interface WatchHost<J extends JobRef> {
  condor: Condor;
  /**
   * The clause that selects the caller's own jobs for the count and the history search
   * (`InterLinkSidecarId == "…"`, `HTCJobOperatorId == "…"`): it only narrows what is counted,
   * never says which job an ad is.
   */
  mine: string;
  now(): number;
  log: Pick<Logger, "warn" | "info">;
  /** The attributes a job's status needs (queue.ts). */
  attributes(): string[];
  /** The followed jobs by id, and the same ids by cluster and proc. */
  followed(): { jobs: ReadonlyMap<string, J>; ids: ReadonlyMap<number, ReadonlyMap<number, string>> };
  /** The JobStatus the caller's view holds for a job, if it holds one. */
  viewStatus(id: string): unknown;
  /**
   * Puts the ads into the view and acts on them for `asked` (an asked job without an ad has left
   * the queue); false when acting failed.
   */
  merge(ads: ReadonlyMap<string, JobAd>, at: number, asked: readonly J[]): Promise<boolean>;
  answered(): void;
  /** A query of the view failed: the view is stale until one answers. */
  failed(err: unknown, at: number): void;
  /** Runs the full condor_q as soon as possible. */
  kick(): void;
}

export interface Watch<J extends JobRef> {
  /** Whether a window has a start (a full condor_q with a ServerTime ran); until then the full one runs. */
  ready(): boolean;
  /** What the full condor_q's answer says of the schedd's clock: its ServerTimes and how long it took. */
  noteFull(ads: readonly JobAd[], callMs: number): void;
  /** The same, for a caller that read the followed jobs in several calls: the earliest of their windows' starts (core/watch.ts nextSince). */
  startAt(since: number): void;
  /** One turn: what changed among the polled jobs, then the count when it is due. */
  tick(polled: readonly J[]): Promise<void>;
}

const ref = (j: JobRef): JobRef => ({ cluster: j.cluster, proc: j.proc });

/**
 * The followed jobs from `oldest` on that the view holds as live (neither removed nor completed).
 * A status that is no number (a job can chirp an expression into JobStatus) is not counted: the
 * schedd's count would not match it either, and one such job must not look missing for ever.
 */
function liveInView<J extends JobRef>(h: WatchHost<J>, oldest: number): number {
  let n = 0;
  for (const [id, j] of h.followed().jobs) {
    if (j.cluster < oldest) continue;
    const st = h.viewStatus(id);
    if (typeof st === "number" && st !== 3 && st !== 4) n++;
  }
  return n;
}

export function createWatch<J extends JobRef>(h: WatchHost<J>): Watch<J> {
  /** The start of the next window, in the schedd's seconds. */
  let since: number | undefined;
  /** Since when every job that left unseen must have had its last status change (the last count that missed none). */
  let departedSince: number | undefined;
  let lastCount = -Infinity;
  let lastFull = -Infinity;
  /** Jobs that wrote an expression into their times: asked about by the reconciler only. */
  const quiet = new Map<string, JobRef>();

  async function count(oldest: number): Promise<{ jobs: number; from: number | undefined } | undefined> {
    const at = h.now();
    try {
      const c = await h.condor.totals(liveCount({ mine: h.mine, oldest }));
      h.answered();
      const from = c.serverTime === undefined ? undefined : c.serverTime - Math.max(1, Math.ceil((h.now() - at) / 1000));
      // The schedd's clock went back (a step of its time service): the window follows it, or
      // every change would fall before its start until the clock caught up.
      if (from !== undefined && since !== undefined && c.serverTime! < since) since = from;
      return { jobs: c.jobs, from };
    } catch (err) {
      h.failed(err, at);
      h.log.warn("condor_q -totals of the polled jobs failed; status leaves the followed pods out until the schedd answers", {
        error: errorText(err),
      });
      return undefined;
    }
  }

  /** What changed since the window's start; false when the query failed. */
  async function changes(oldest: number, polled: readonly J[]): Promise<boolean> {
    const f = h.followed();
    for (const id of quiet.keys()) if (!f.jobs.has(id)) quiet.delete(id);
    const from = since!;
    const at = h.now();
    let ads: JobAd[];
    try {
      ads = await h.condor.query({
        constraint: changedSince({ oldest, since: from, quiet: [...quiet.values()] }),
        attributes: [...h.attributes(), "ServerTime", STATE_TIME_ATTR],
      });
    } catch (err) {
      h.failed(err, at);
      h.log.warn("condor_q of what changed failed; status leaves the followed pods out until it answers", {
        error: errorText(err),
      });
      return false;
    }
    h.answered();
    const next = nextSince(ads, h.now() - at);
    const found = new Map<string, JobAd>();
    const asked: J[] = [];
    const polledIds = new Set(polled.map((j) => `${j.cluster}.${j.proc}`));
    for (const ad of ads) {
      // By the recorded id alone: the times only chose which ads to send.
      const id = typeof ad.ClusterId === "number" && typeof ad.ProcId === "number" ? f.ids.get(ad.ClusterId)?.get(ad.ProcId) : undefined;
      if (id === undefined || found.has(id)) continue;
      const j = f.jobs.get(id)!;
      found.set(id, ad);
      asked.push(j);
      if (polledIds.has(id) && !quiet.has(id) && timeForged(ad, from)) {
        quiet.set(id, ref(j));
        h.log.warn("a job wrote a value into its status or state time that is no time; only the reconciler asks about it from now on", { jid: id });
      }
    }
    // Never later than safe (core/watch.ts nextSince), and it follows the schedd's clock back when
    // a time service steps it.
    if (next !== undefined) since = next;
    if (asked.length > 0) await h.merge(found, at, asked);
    return true;
  }

  /** Which live jobs left unseen: this sidecar's jobs in the history since the last good count. */
  async function departed(oldest: number, missing: number): Promise<void> {
    const f = h.followed();
    let ads: JobAd[] = [];
    try {
      ads = await h.condor.history({
        constraint: leftSince({ mine: h.mine, oldest, since: departedSince ?? since! }),
        attributes: h.attributes(),
        limit: HISTORY_SCAN,
        scanLimit: HISTORY_SCAN,
      });
    } catch (err) {
      h.log.warn("condor_history of the jobs that left the queue failed; the next count tries again", {
        error: errorText(err),
      });
      return;
    }
    const gone: J[] = [];
    for (const ad of ads) {
      const id = typeof ad.ClusterId === "number" && typeof ad.ProcId === "number" ? f.ids.get(ad.ClusterId)?.get(ad.ProcId) : undefined;
      const st = id === undefined ? undefined : h.viewStatus(id);
      if (id !== undefined && typeof st === "number" && st !== 3 && st !== 4) gone.push(f.jobs.get(id)!);
    }
    // An empty map: every job asked about has left the queue, and the status path reads its end.
    if (gone.length > 0) await h.merge(new Map(), h.now(), gone);
    if (gone.length < missing && h.now() - lastFull >= FULL_MIN_MS) {
      lastFull = h.now();
      h.log.info("a followed job left the queue and the history does not say which; asking the queue about every followed job", {
        missing: missing - gone.length,
      });
      h.kick();
    }
  }

  function startAt(next: number): void {
    since = next;
    // The view was read whole: a job that leaves from now on changes its status from now on.
    departedSince = next;
  }

  return {
    ready: () => since !== undefined,
    noteFull(ads, callMs) {
      const next = nextSince(ads, callMs);
      if (next !== undefined) startAt(next);
    },
    startAt,
    async tick(polled) {
      if (polled.length === 0 || since === undefined) return;
      let oldest = Infinity;
      for (const j of polled) oldest = Math.min(oldest, j.cluster);
      if (!(await changes(oldest, polled)) || h.now() - lastCount < COUNT_MS) return;
      lastCount = h.now();
      const live = await count(oldest);
      if (!live) return;
      let expected = liveInView(h, oldest);
      // Short: a job changed status after the question above. If it is still in the queue, the
      // next question sees it, and only what that leaves unexplained has left unseen.
      if (live.jobs < expected) {
        if (!(await changes(oldest, polled))) return;
        expected = liveInView(h, oldest);
      }
      if (live.jobs >= expected) departedSince = live.from ?? departedSince;
      else await departed(oldest, expected - live.jobs);
    },
  };
}
