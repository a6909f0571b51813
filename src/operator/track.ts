/**
 * What the queue says of the operator's procs, turned into their states and outcomes
 * (docs/operator.md#following-the-procs). Whoever decides WHICH procs to look at (the job event
 * log, the slow reconciler, the poll of spooled clusters) calls `follow` with a scope; what they
 * ARE comes only from condor_q and condor_history, matched by the ids recorded at submit.
 */
import { join } from "node:path";
import type { JobAd } from "../core/classad.ts";
import { jobFileSize } from "../store/files.ts";
import type { ControllerDeps } from "./controller/context.ts";
import { procJob, sightProcs } from "./follow.ts";
import { settleWork } from "./output.ts";
import { isFinal, type ProcState, procState, UNSEEN } from "./status.ts";
import type { HTCJobRecord } from "./store.ts";

/** The state file the wrapper always writes for the one container: spooled output came back only if it did. */
const STATE_FILE = "podstate/c.htcjob";
/** How many times a spooled proc's output is fetched before the operator gives up on it. */
const MAX_FETCHES = 5;
/** A proc whose history could not be read, or whose removal or fetch failed, is asked about again after this. */
const RETRY_MS = 5000;

/** Which procs a pass asks about. Neither field: every unsettled proc of every live record. */
export interface FollowScope {
  /** These procs (`cluster.proc`), when a live record has them unsettled... */
  ids?: ReadonlySet<string>;
  /** ...and every unsettled proc of the records for which this holds. */
  records?: (r: HTCJobRecord) => boolean;
  /** The queue's ads of the `ids`, read already by the watch: no condor_q; an id without an ad has left the queue (follow.ts SightOptions). */
  seen?: ReadonlyMap<string, JobAd>;
  /** Ask the schedd's clock too, and tell where the watch's window may start (follow.ts SightOptions). */
  clock?: (since: number) => void;
}

export interface FollowResult {
  /** Procs whose ad said running (or transferring output): a terminal event may be ahead of the schedd's commit. */
  running: Set<string>;
  /** Procs to ask about again at a time, whatever the log says: a hold's grace, a lost proc's wait, a failed step. */
  recheck: Map<string, number>;
}

export type TrackerDeps =
  & Pick<ControllerDeps, "store" | "condor" | "watchedNamespace" | "terminalHoldCodes" | "holdGraceMs" | "lostAfterMs" | "htcjob" | "log" | "now">
  & {
    /** An HTCJob whose procs changed: reconcile it (by name, or by UID when its object is gone). */
    requeue(r: HTCJobRecord): void;
  };

export function createTracker(d: TrackerDeps, views: Map<string, ProcState[]>) {
  /** Procs first seen missing from both the queue and the history, by `cluster.proc`. */
  const missingSince = new Map<string, number>();
  /** Procs held with a terminal code, since when (by `cluster.proc`): removed after the grace. */
  const terminalHeldSince = new Map<string, number>();
  /** Fetches of spooled output that did not bring it back, by `cluster.proc`. */
  const fetchAttempts = new Map<string, number>();
  /** The JobStatus of each unsettled proc's last ad (the watch's count compares with it). */
  const statuses = new Map<string, number>();

  /**
   * One pass: one condor_q (and one condor_history) of the procs in scope; outcomes that became
   * final are recorded; an HTCJob whose procs changed is reconciled. Procs out of scope keep the
   * state last seen.
   */
  async function follow(scope: FollowScope = {}): Promise<FollowResult> {
    const result: FollowResult = { running: new Set(), recheck: new Map() };
    const later = (id: string, at: number) => result.recheck.set(id, Math.min(at, result.recheck.get(id) ?? Infinity));
    // Only the watched namespace's: another's object is not in this term's cache, and would look gone.
    const all = d.store.list(["submitted"]).filter((r) => d.watchedNamespace === undefined || r.namespace === d.watchedNamespace);
    const everything = scope.ids === undefined && scope.records === undefined;
    const live: HTCJobRecord[] = [];
    const wanted = new Map<number, number[]>();
    const exact = new Set<number>();
    for (const r of all) {
      const whole = everything || scope.records?.(r) === true;
      // Matched by the ids recorded here: an event naming a proc of no record asks nothing.
      const procs = r.outcomes.map((o, p) => (o === null && (whole || scope.ids?.has(`${r.cluster}.${p}`)) ? p : -1)).filter((p) => p >= 0);
      if (procs.length === 0) continue;
      live.push(r);
      wanted.set(r.cluster!, procs);
      if (!whole) exact.add(r.cluster!);
    }
    // A full pass sees every unsettled proc: the statuses of the others (deleted HTCJobs) go.
    if (everything) { for (const id of statuses.keys()) if (!wanted.get(Number(id.split(".")[0]))?.includes(Number(id.split(".")[1]))) statuses.delete(id); }
    if (live.length === 0) return result;
    let owner: string | undefined;
    const sightings = await sightProcs(d.condor, wanted, (o) => (owner = o), exact, { seen: scope.seen, clock: scope.clock, now: d.now });
    if (owner !== undefined && owner !== d.store.owner()) d.store.setOwner(owner);
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
          statuses.set(id, seen.ad.jobStatus);
          missingSince.delete(id);
          s = procState(seen.ad, d.terminalHoldCodes);
          if (seen.ad.jobStatus === 5 && isFinal(s)) {
            // Held for good, but left alone for HoldGraceSeconds (an administrator may release it): held till then.
            const since = terminalHeldSince.get(id) ?? now;
            terminalHeldSince.set(id, since);
            if (now - since < (d.holdGraceMs ?? 0)) {
              s = { state: "held", reason: s.reason };
              later(id, since + (d.holdGraceMs ?? 0));
            } else heldForGood.push(p);
          } else terminalHeldSince.delete(id);
          if (seen.ad.jobStatus === 4 && r.spooled && !r.fetched[p]) fetch.push(p);
          if (seen.ad.jobStatus === 4 && isFinal(s)) exited.push(p);
          if (seen.ad.jobStatus === 2 || seen.ad.jobStatus === 6) result.running.add(id);
        } else if (seen?.where === "nowhere") {
          const since = missingSince.get(id) ?? now;
          missingSince.set(id, since);
          if (now - since >= d.lostAfterMs) s = { state: "failed", reason: "was lost: HTCondor has it in neither the queue nor the history" };
          else later(id, since + d.lostAfterMs);
        } else if (seen?.where === "unknown") later(id, now + RETRY_MS);
        if (isFinal(s)) {
          outcomes[p] = s;
          statuses.delete(id);
          missingSince.delete(id);
          terminalHeldSince.delete(id);
        }
        return s;
      });
      // Spooled output first: the outcome is recorded only with the output fetched, so a failed fetch is tried again.
      if (fetch.length > 0) {
        let failure: string | undefined;
        try {
          await d.condor.transferData(fetch.map((proc) => procJob(r, proc)));
        } catch (err) {
          failure = (err as Error).message;
        }
        // condor_transfer_data exits 0 for a job it does not have: fetched means the state file the wrapper always writes came back.
        const fetched = [...r.fetched];
        for (const p of fetch) {
          const id = `${r.cluster}.${p}`;
          let back = false;
          try {
            back = failure === undefined && jobFileSize({ dir: join(r.dir, "procs", String(p)), rel: STATE_FILE }) !== undefined;
          } catch { /* not a plain file: not back */ }
          // Only an answer that brought nothing back counts: a schedd that does not answer is asked again, however long.
          const attempts = (fetchAttempts.get(id) ?? 0) + (failure === undefined ? 1 : 0);
          if (back || attempts >= MAX_FETCHES) {
            if (!back) {
              d.log.warn("giving up fetching the output of a spooled proc", { uid: r.uid, proc: id, attempts, error: failure ?? `no ${STATE_FILE} came back` });
            }
            fetched[p] = true;
            fetchAttempts.delete(id);
          } else {
            d.log.warn("the output of a spooled proc is not back; trying again later", {
              uid: r.uid,
              proc: id,
              attempts,
              error: failure ?? `no ${STATE_FILE} came back`,
            });
            fetchAttempts.set(id, attempts);
            outcomes[p] = r.outcomes[p] ?? null;
            later(id, now + RETRY_MS);
          }
        }
        if (fetched.some((f, p) => f !== r.fetched[p])) d.store.setFetched(r.uid, fetched, d.now());
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
        await d.condor.remove(heldForGood.map((proc) => procJob(r, proc)), why).catch((err) => {
          d.log.warn("cannot remove procs held for good; trying again later", { uid: r.uid, error: String(err) });
          for (const p of heldForGood) {
            outcomes[p] = r.outcomes[p] ?? null;
            later(`${r.cluster}.${p}`, now + RETRY_MS);
          }
        });
      }
      const changed = outcomes.some((o, p) => o !== r.outcomes[p]);
      if (changed) d.store.setOutcomes(r.uid, outcomes, now);
      const before = views.get(r.uid);
      views.set(r.uid, states);
      if (changed || !before || JSON.stringify(before) !== JSON.stringify(states)) {
        d.requeue(r);
      }
    }
    return result;
  }

  return { follow, jobStatus: (id: string) => statuses.get(id) };
}
