/**
 * The questions the sidecar asks the schedd about jobs that write no event log it can read
 * (spooled jobs: docs/status.md#following-spooled-jobs), and how it reads the answers. Pure.
 *
 * - what changed: the jobs whose `EnteredCurrentStatus` or chirped `InterLinkStateTime` lies in
 *   the window since the last answer, timed by the schedd's own clock (`ServerTime`), so that no
 *   clock of this host is compared with the schedd's (docs/htcondor.md#what-changed-since);
 * - how many are still live: a count (`condor_q -totals`, no job ad), which shows a job that
 *   left the queue before a question about what changed could see it;
 * - which ones left: the history, from the last count that missed none.
 */
import { adNumber, type JobAd } from "./classad.ts";
import { classAdString } from "./classad.ts";

/**
 * The job attribute the wrapper chirps the time of its latest state change into (epoch seconds of
 * the execute node), beside the states themselves: chirping changes no status time
 * (docs/htcondor.md#what-changed-since). It says only which ads to read: a job may write any value.
 */
export const STATE_TIME_ATTR = "InterLinkStateTime";

/** Job ids, `cluster.proc` (recorded by the sidecar, never read from an attribute a job can write). */
export interface JobRef {
  cluster: number;
  proc: number;
}

function idsClause(jobs: readonly JobRef[]): string {
  return jobs.map((j) => `(ClusterId == ${j.cluster} && ProcId == ${j.proc})`).join(" || ");
}

/**
 * The jobs from cluster `oldest` on that changed since `since` (the schedd's seconds): a status
 * change sets EnteredCurrentStatus; a chirped state sets the wrapper's time. Either time counts
 * only up to the schedd's `time()`: a job can write both (condor_chirp), and a time in the
 * future, forged or from a clock ahead, is then read once when it comes, not at every question.
 * `quiet` lists the jobs that wrote an expression there (one that changes by itself, such as
 * `time()`, would match every question): they are left out, and read by the reconciler.
 */
export function changedSince(o: { oldest: number; since: number; quiet?: readonly JobRef[] }): string {
  const inWindow = (attr: string) => `${attr} >= ${o.since} && ${attr} <= time()`;
  const quiet = o.quiet && o.quiet.length > 0 ? ` && !(${idsClause(o.quiet)})` : "";
  return `ClusterId >= ${o.oldest} && ((${inWindow("EnteredCurrentStatus")}) || (${inWindow(STATE_TIME_ATTR)}))${quiet}`;
}

/** The clause that selects one sidecar's jobs (the watch's `mine`): they carry its id. */
export const sidecarJobs = (sidecarId: string) => `InterLinkSidecarId == ${classAdString(sidecarId)}`;

/** The clause that selects one operator's procs (the watch's `mine`): they carry its id. */
export const operatorJobs = (operatorId: string) => `HTCJobOperatorId == ${classAdString(operatorId)}`;

/** The caller's jobs (`mine`) from cluster `oldest` on that are neither removed (3) nor completed (4): what `condor_q -totals` counts. */
export function liveCount(o: { mine: string; oldest: number }): string {
  return `${o.mine} && ClusterId >= ${o.oldest} && JobStatus != 3 && JobStatus != 4`;
}

/** The caller's jobs (`mine`) from cluster `oldest` on whose last status change is at `since` or later: what left the queue is searched in the history with it. */
export function leftSince(o: { mine: string; oldest: number; since: number }): string {
  return `${o.mine} && ClusterId >= ${o.oldest} && EnteredCurrentStatus >= ${o.since}`;
}

/**
 * The next window's start, from an answer: the earliest ServerTime in it, less the call's length
 * rounded up to whole seconds (at least one). The schedd stamps an ad when it sends it, and may
 * have checked a job against the constraint earlier in the same call, at most the call's length
 * earlier (the check came after the call began, the stamp before it ended); a change to a job
 * already checked carries a time no earlier than that. Both are whole seconds and the window is
 * compared with `>=`, so a change within the stamp's own second is asked about again. Undefined
 * when the answer has no ad: the window then stays where it was, since nothing in it changed.
 */
export function nextSince(ads: readonly JobAd[], callMs: number): number | undefined {
  let first: number | undefined;
  for (const ad of ads) {
    const t = adNumber(ad, "ServerTime");
    if (t !== undefined && Number.isInteger(t) && (first === undefined || t < first)) first = t;
  }
  return first === undefined ? undefined : first - Math.max(1, Math.ceil(callMs / 1000));
}

/**
 * Whether the ad came back without a whole number of seconds in the window in either time: the
 * job wrote an expression (or another value) there, which must not cost an ad at every question
 * ({@link changedSince} `quiet`).
 */
export function timeForged(ad: JobAd, since: number): boolean {
  const now = adNumber(ad, "ServerTime");
  const inWindow = (attr: string) => {
    const t = ad[attr];
    return typeof t === "number" && Number.isInteger(t) && t >= since && (now === undefined || t <= now);
  };
  return !inWindow("EnteredCurrentStatus") && !inWindow(STATE_TIME_ATTR);
}
