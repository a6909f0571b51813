/**
 * How many condor_submit may run at once, chosen from what they take (docs/performance.md#bursts).
 * A schedd serves one submit at a time (docs/htcondor.md#one-submit-at-a-time): a second
 * condor_submit waits for the first, and on a small submit host the processes also take CPU from
 * each other and from the schedd. So more of them help only while each one keeps its pace.
 *
 * An AIMD rule, as TCP's: after a condor_submit that kept the time per job flat while work waited
 * for a slot, the limit grows by one slot per limit's worth of such runs; after one that grew
 * while others ran beside it, the limit halves, once for the runs that started before the cut.
 * A run is compared with the best of the recent ones, sized fairly: a run of at least as many
 * jobs bounds it from above as it is, a smaller one scaled by the ratio of jobs (each job costs at
 * most its share of a smaller run, whose fixed cost a bigger one spreads thinner). The limit never
 * leaves 1 … `cap` (MaxConcurrentSubmits).
 *
 * Pure: the caller measures the runs and passes in when they ended.
 */

/** One condor_submit that queued its jobs (or was killed at its timeout: then as slow as it was). */
export interface SubmitRun {
  /** The jobs it submitted. */
  jobs: number;
  /** Its wall time, ms. */
  ms: number;
  /** When it ended, epoch ms. */
  at: number;
  /** The most condor_submit running at once while it ran, itself included. */
  overlap: number;
  /** Whether work waited for a free slot while it ran: the limit, not the arrivals, set the pace. */
  limited: boolean;
  /** `cuts` of the state when it started: a run from before the last cut measured the old limit. */
  cuts: number;
}

export interface LimitState {
  readonly cap: number;
  /** Fractional: a flat run adds 1/⌊limit⌋. */
  readonly limit: number;
  /** How many times the limit was cut. */
  readonly cuts: number;
  /** The recent runs, oldest first: what the schedd has shown it can do. */
  readonly recent: readonly Pick<SubmitRun, "jobs" | "ms" | "at">[];
}

export type Decision = "raise" | "lower" | "hold";

/** A run within this factor of the best recent one kept the time per job flat. */
export const FLAT = 1.25;
/** A run this many times as slow as the best recent one, while others ran beside it, was slowed by them. */
export const GROWN = 1.5;
/** Runs remembered, and for how long: a run from before an idle night says little of the schedd today. */
export const RECENT_RUNS = 32;
export const RECENT_MS = 10 * 60_000;

/** One condor_submit at first: more only once measured. */
export function initialLimit(cap: number): LimitState {
  return { cap: Math.max(1, Math.floor(cap)), limit: 1, cuts: 0, recent: [] };
}

/** The condor_submit allowed at once. */
export function currentLimit(s: LimitState): number {
  return Math.max(1, Math.min(s.cap, Math.floor(s.limit)));
}

/**
 * How many times as long as the recent runs say it should have taken the run took: 1 with nothing
 * to compare with, below 1 when it was the fastest yet.
 */
export function slowdown(recent: LimitState["recent"], run: Pick<SubmitRun, "jobs" | "ms">): number {
  let expected = Infinity;
  for (const r of recent) {
    if (r.jobs <= 0) continue;
    expected = Math.min(expected, r.jobs >= run.jobs ? r.ms : (r.ms * run.jobs) / r.jobs);
  }
  return expected === Infinity || expected <= 0 ? 1 : run.ms / expected;
}

/** The state after a run, and what was decided. */
export function nextLimit(s: LimitState, run: SubmitRun): { state: LimitState; decision: Decision; slowdown: number } {
  const recent = s.recent.filter((r) => run.at - r.at <= RECENT_MS);
  const slow = slowdown(recent, run);
  const remembered = [...recent, { jobs: run.jobs, ms: run.ms, at: run.at }].slice(-RECENT_RUNS);
  const held = { state: { ...s, recent: remembered }, decision: "hold" as Decision, slowdown: slow };
  if (run.jobs <= 0 || run.cuts !== s.cuts) return held;
  const now = currentLimit(s);
  if (slow >= GROWN && run.overlap > 1 && now > 1) {
    return { state: { ...s, recent: remembered, limit: Math.max(1, now / 2), cuts: s.cuts + 1 }, decision: "lower", slowdown: slow };
  }
  if (slow <= FLAT && run.limited && now < s.cap) {
    return { state: { ...s, recent: remembered, limit: Math.min(s.cap, s.limit + 1 / now) }, decision: "raise", slowdown: slow };
  }
  return held;
}
