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
 * submitted before the operator read logs, or whose log is unreadable) are asked about every
 * StatusCacheSeconds, as before. An offset is saved only after the pass that acted on its events.
 * The reading, the log files and the passes are the engine the sidecar shares (store/eventlog-follow.ts).
 */
import { join } from "node:path";
import type { Logger } from "../logger.ts";
import { eventsDir } from "../store/eventlog-file.ts";
import { createEventLogFollow, SETTLE_DELAYS_MS } from "../store/eventlog-follow.ts";
import type { HTCJobRecord, HTCJobStore } from "./store.ts";
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
    const poll = now >= nextPoll;
    if (!full && !poll && ids.size === 0) return commit(saves, now, readable);
    let result: FollowResult;
    try {
      // One pass, one condor_q: the full one, or the named procs and the polled clusters together.
      result = await d.follow(full ? {} : { ids, records: poll ? polled : undefined });
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
    if (full || poll) nextPoll = now + d.statusCacheMs;
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
