/**
 * What drives the operator's passes over its procs (docs/operator.md#following-the-procs). The
 * operator's new clusters that are not spooled write one shared job event log in its own folder,
 * as the sidecar's jobs do (docs/status.md#following-the-event-log). This module reads those logs
 * from their saved offsets, as the folder changes and at least every POLL_MS, and asks the queue
 * (the tracker's `follow`) about exactly the procs their events name. The log says WHICH procs
 * may have changed, never what they are: a forged event for another HTCJob's proc costs one
 * targeted condor_q and changes nothing, and one for a proc of no record costs nothing.
 *
 * The full follow (every live cluster) runs at start, after a gap the log cannot explain
 * (truncated, replaced or rewritten file, malformed event, event cap hit, a format this reader
 * does not read), and every ReconcileMinutes. Clusters the log does not cover (spooled, adopted,
 * submitted before the operator read logs, or whose log is unreadable) are followed by the watch
 * the sidecar's spooled pods have (condor/watch.ts): every WATCH_MS one condor_q of what changed
 * since the schedd's last answer, and a count; they are read whole every StatusCacheSeconds only
 * until an answer has given the watch its window's start. An offset is saved only after the pass
 * that acted on its events. The reading, the log files and the passes are the engine the sidecar
 * shares (src/eventlog/).
 */
import { join } from "node:path";
import type { JobAd } from "../core/classad.ts";
import type { Condor } from "../condor/tools.ts";
import { createWatch, WATCH_MS } from "../condor/watch.ts";
import type { JobRef } from "../core/watch.ts";
import { operatorJobs } from "../core/watch.ts";
import type { Logger } from "../logger.ts";
import { createEventLogFollow, eventsDir, SETTLE_DELAYS_MS } from "../eventlog/index.ts";
import type { HTCJobRecord, HTCJobStore } from "./store.ts";
import { PROC_ATTRIBUTES } from "./status.ts";
import type { FollowResult, FollowScope } from "./track.ts";
import { errorText } from "../core/errors.ts";

/** The operator's data folder: its HTCJobs' folders, and `events/` with its job event logs (apart from a sidecar's in the same DataRootFolder). */
const operatorRoot = (dataRoot: string) => join(dataRoot, "htcjobs");
export const operatorEventsDir = (dataRoot: string) => eventsDir(operatorRoot(dataRoot));

export interface EventDriverDeps {
  store: HTCJobStore;
  dataRoot: string;
  /** The tracker's pass; throws when condor_q fails (then nothing is saved, and the procs are asked about again). */
  follow(scope?: FollowScope): Promise<FollowResult>;
  statusCacheMs: number;
  reconcileMs: number;
  /** The watch of the polled clusters asks the schedd itself (what changed, the count), and selects the operator's procs by its id. */
  condor: Condor;
  operatorId: string;
  /** The JobStatus of a proc's last ad, as the tracker saw it. */
  jobStatus(id: string): number | undefined;
  log: Logger;
  now(): number;
  watchFolder?: (dir: string, onChange: () => void) => () => void;
}

export interface EventDriver {
  /** The log a new, non-spooled cluster writes: its name for the record, its path for the submit file. */
  logForNewJob(): { name: string; path: string };
  /** A cluster was recorded: ask about its procs on the next pass, which starts now. */
  recorded(cluster: number, procs: number): void;
  /** Is this record's cluster asked about every StatusCacheSeconds (the log does not cover it)? */
  polled(r: HTCJobRecord): boolean;
  /** One pass (reads the logs, asks about what they name, runs what is due); runs again at once if called while running. */
  tick(): Promise<void>;
  /** Starts following: the folder watch, and a pass at least every POLL_MS. Tests call `tick` instead. */
  start(): void;
  stop(): Promise<void>;
}

export function createEventDriver(d: EventDriverDeps): EventDriver {
  /** The unsettled procs of live records, built once per pass and only when events need it: forged ids cost nothing. */
  let followed: Set<string> | undefined;
  const follows = (id: string) => {
    followed ??= new Set(
      d.store.list(["submitted"]).flatMap((r) => r.outcomes.flatMap((o, p) => (o === null ? [`${r.cluster}.${p}`] : []))),
    );
    return followed.has(id);
  };
  const engine = createEventLogFollow({
    root: operatorRoot(d.dataRoot),
    books: {
      eventLogs: () => d.store.eventLogs(),
      addEventLog: (name, createdAt) => d.store.addEventLog(name, createdAt),
      saveEventLog: (rec) => d.store.saveEventLog(rec),
      removeEventLog: (name) => d.store.removeEventLog(name),
      eventLogUsers: (since) => d.store.eventLogUsers(since),
    },
    follows,
    pass,
    words: {
      jobs: "clusters",
      capped: "proc(s)",
      reader: "operator",
      gap: "the job event log cannot say what changed; asking HTCondor about every proc",
      untrusted: "the event log folder cannot be trusted; not reading it, and every cluster is polled",
      undeletable: "cannot delete an event log none of whose procs is queued",
      passFailed: "following the procs failed; the next pass tries again",
    },
    log: d.log,
  });
  const watch = createProcWatch(d, (r) => polled(r), () => void (nextPoll = -Infinity));
  /** Procs to ask about at a time: recorded clusters, failed passes, the tracker's waits, races with the schedd. */
  const due = new Map<string, number>();
  /** Procs named by an event that ends a run, with how many rechecks they had. */
  const ending = new Map<string, number>();
  let nextFull = -Infinity;
  let nextPoll = -Infinity;

  const later = (id: string, at: number) => due.set(id, Math.min(at, due.get(id) ?? Infinity));

  function polled(r: HTCJobRecord): boolean {
    return r.spooled || engine.polled(r.eventLog) || !engine.known(r.eventLog!);
  }

  async function pass(): Promise<void> {
    const now = d.now();
    followed = undefined;
    const ids = new Set<string>();
    const ends = new Set<string>();
    for (const [id, at] of due) {
      if (at > now) continue;
      ids.add(id);
      due.delete(id);
    }
    const { saves, readable } = engine.read(ids, ends, now);
    const gapDue = engine.gapDue(now);
    const full = now >= nextFull || gapDue;
    // The polled clusters are read whole until the watch has its window's start, or when it asks.
    const poll = now >= nextPoll;
    const watching = !full && !poll && watch.due(now);
    if (!full && !poll && !watching && ids.size === 0) return commit(saves, now, readable);
    let result: FollowResult;
    try {
      // One pass, one condor_q: the full one, or the named procs and the polled clusters together;
      // with the schedd's clock, which starts the watch's window.
      const clock = full || poll ? (since: number) => watch.startAt(since) : undefined;
      result = ids.size > 0 || full || poll
        ? await d.follow(full ? { clock } : { ids, records: poll ? polled : undefined, clock })
        : { running: new Set(), recheck: new Map() };
      if (watching) await watch.tick(now, result);
    } catch (err) {
      // Nothing is saved: these events are read again after a restart; the procs are asked about again.
      const retry = d.now() + d.statusCacheMs;
      for (const id of ids) later(id, retry);
      for (const id of ends) ending.set(id, ending.get(id) ?? 0);
      if (full) nextFull = retry;
      if (poll) nextPoll = retry;
      d.log.warn("asking HTCondor about the procs failed; trying again", { error: errorText(err) });
      return;
    }
    if (full) {
      nextFull = now + d.reconcileMs;
      if (gapDue) engine.gapTaken(now);
    }
    // Read whole every StatusCacheSeconds while the watch has no window; after that, only when it asks (a failure, a job that left unseen).
    if (full || poll) nextPoll = watch.ready() ? Infinity : now + d.statusCacheMs;
    for (const [id, at] of result.recheck) later(id, at);
    // A run ended by the log's account but the ad still says running: the schedd has not committed it yet.
    for (const id of ends) if (!ending.has(id)) ending.set(id, 0);
    for (const [id, n] of ending) {
      if (!ids.has(id) && !full) continue;
      if (!result.running.has(id) || n >= SETTLE_DELAYS_MS.length) ending.delete(id);
      else {
        later(id, d.now() + SETTLE_DELAYS_MS[n]!);
        ending.set(id, n + 1);
      }
    }
    commit(saves, now, readable);
  }

  function commit(saves: Parameters<typeof engine.save>[0], now: number, readable: boolean): void {
    engine.save(saves);
    if (readable) engine.cleanupIfDue(now);
  }

  return {
    logForNewJob: () => engine.logForNewJob(d.now()),
    recorded(cluster, procs) {
      const now = d.now();
      for (let p = 0; p < procs; p++) later(`${cluster}.${p}`, now);
      void engine.tick();
    },
    polled,
    tick: engine.tick,
    start() {
      engine.start({
        timer: (fn, ms) => {
          const t = setTimeout(fn, ms);
          return () => clearTimeout(t);
        },
        watchFolder: d.watchFolder,
      });
    },
    stop: engine.stop,
  };
}

/**
 * The watch (condor/watch.ts) of the polled clusters' unsettled procs: what changed since the
 * schedd's last answer, every WATCH_MS, and a count; what changed is acted on by the tracker's
 * pass with the ads the watch read. `readWhole`: the watch asks for the polled clusters to be
 * read whole (a question failed, a proc left the queue and the history does not say which).
 */
function createProcWatch(d: EventDriverDeps, polled: (r: HTCJobRecord) => boolean, readWhole: () => void) {
  /** The unsettled procs of the polled clusters, by `cluster.proc` and by cluster and proc. */
  function watched(): { jobs: Map<string, JobRef>; ids: Map<number, Map<number, string>> } {
    const jobs = new Map<string, JobRef>();
    const ids = new Map<number, Map<number, string>>();
    for (const r of d.store.list(["submitted"])) {
      if (r.cluster === undefined || !polled(r)) continue;
      const procs = new Map<number, string>();
      r.outcomes.forEach((o, proc) => {
        if (o !== null) return;
        const id = `${r.cluster}.${proc}`;
        jobs.set(id, { cluster: r.cluster!, proc });
        procs.set(proc, id);
      });
      if (procs.size > 0) ids.set(r.cluster, procs);
    }
    return { jobs, ids };
  }
  /** Built once per turn. */
  let followed: ReturnType<typeof watched> | undefined;
  /** What the merges of the turn running found. */
  let merged: FollowResult[] = [];
  let nextTurn = -Infinity;
  const watch = createWatch<JobRef>({
    condor: d.condor,
    mine: operatorJobs(d.operatorId),
    now: d.now,
    log: d.log,
    attributes: () => [...PROC_ATTRIBUTES, "Owner"],
    followed: () => (followed ??= watched()),
    viewStatus: d.jobStatus,
    async merge(ads: ReadonlyMap<string, JobAd>, _at: number, asked: readonly JobRef[]) {
      try {
        merged.push(await d.follow({ ids: new Set(asked.map((j) => `${j.cluster}.${j.proc}`)), seen: ads }));
        return true;
      } catch (err) {
        d.log.warn("acting on what changed among the polled procs failed; they are read whole next", {
          error: errorText(err),
        });
        readWhole();
        return false;
      }
    },
    answered: () => {},
    // The watch logs its own failures.
    failed: readWhole,
    kick: readWhole,
  });
  return {
    startAt: watch.startAt,
    ready: watch.ready,
    /** Whether a turn is due: the watch has its window's start, and WATCH_MS went by since the last turn. */
    due: (now: number) => watch.ready() && now >= nextTurn,
    /** One turn; what the tracker's passes found is added to `result`. */
    async tick(now: number, result: FollowResult): Promise<void> {
      nextTurn = now + WATCH_MS;
      merged = [];
      followed = undefined;
      await watch.tick([...(followed ??= watched()).jobs.values()]);
      for (const m of merged) {
        for (const id of m.running) result.running.add(id);
        for (const [id, at] of m.recheck) result.recheck.set(id, Math.min(at, result.recheck.get(id) ?? Infinity));
      }
    },
  };
}
