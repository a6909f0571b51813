/**
 * The job event log follower (docs/status.md#following-the-event-log). New jobs that are not
 * spooled write to one shared event log in DataRootFolder/events; the follower reads what was
 * appended since the saved offset, as the file changes (a folder watch) and at least every
 * POLL_MS, and asks the queue about exactly the jobs the new events name (queue.ts
 * `refreshIds`). The log says which jobs may have changed, never what they are: a job of a
 * single-user pool can append any event for any job id, so a forged event costs one targeted
 * condor_q and changes nothing.
 *
 * What the log cannot explain (a truncated, replaced or rewritten file, a malformed event, a job
 * over the event cap) is a gap: one full condor_q (the queue's `kick`). The jobs of a file this
 * reader cannot follow (another format, a file replaced or deleted while shadows keep writing to
 * the old one) are polled by id until they are gone, and new jobs go to a new file.
 *
 * The shadow writes 004/005/007/024 before the schedd changes JobStatus (docs/htcondor.md#who-writes-an-event-and-when):
 * a job those events name that the queue still shows running is asked about again, a few times
 * with a growing delay.
 *
 * The reading, the log files and the passes are the engine the operator shares
 * (src/eventlog/); this module is what the sidecar's pass asks and does.
 */
import { createEventLogFollow, LOG_KEEP_MS, POLL_MS, SETTLE_DELAYS_MS, SWEEP_AGE_MS } from "../eventlog/index.ts";
import type { FileConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { Store } from "../store/store.ts";
import { type QueueView, realTimer, type SetTimer } from "./queue.ts";

export { LOG_KEEP_MS, POLL_MS, SETTLE_DELAYS_MS, SWEEP_AGE_MS };

export interface Follower {
  /** The log a new job writes to (its name for the record, its path for the submit file); undefined when jobs are spooled. */
  logForNewJob(): { name: string; path: string } | undefined;
  /** A job was recorded: the next targeted condor_q asks about it (its submit event may have been read already). */
  recorded(id: string): void;
  /** Reads the logs and asks about what they name; runs again at once if called while running. */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

/** What the follower needs: built before the service's context, it is one of its parts (context.ts). */
export interface FollowDeps {
  store: Store;
  queue: QueueView;
  config: Pick<FileConfig, "StatusCacheSeconds">;
  dataRoot: string;
  spool: boolean;
  log: Logger;
  /** Epoch milliseconds. */
  now: () => number;
  timer?: SetTimer;
  watchFolder?: (dir: string, onChange: () => void) => () => void;
}

export function createFollower(c: FollowDeps): Follower {
  const engine = createEventLogFollow({
    root: c.dataRoot,
    books: {
      eventLogs: () => c.store.eventLogs(),
      addEventLog: (name, createdAt) => c.store.addEventLog(name, createdAt),
      saveEventLog: (rec) => c.store.saveEventLog(rec.name, rec),
      removeEventLog: (name) => c.store.removeEventLog(name),
      eventLogUsers: (since) => c.store.eventLogUsers(since),
    },
    follows: (id) => c.queue.follows(id),
    pass,
    pollingChanged: () => c.queue.pollingChanged(),
    breathe: true,
    words: {
      jobs: "jobs",
      capped: "job(s)",
      reader: "sidecar",
      gap: "the job event log cannot say what changed; asking the queue about every followed job",
      untrusted: "the event log folder cannot be trusted; not reading it, and every followed job is polled",
      undeletable: "cannot delete an event log none of whose jobs is queued",
      passFailed: "reading the job event log failed; the next pass tries again",
    },
    log: c.log,
  });
  c.queue.polled = engine.polled;
  /** Jobs an event said ended a run while the queue still said running: how many rechecks so far. */
  const settling = new Map<string, number>();
  let backoffUntil = -Infinity;

  /** After the targeted condor_q: a job whose run ended by the log but not yet by the queue is asked about again. */
  function settle(asked: readonly string[], ending: ReadonlySet<string>): void {
    const snap = c.queue.current();
    for (const id of asked) {
      if (!ending.has(id) && !settling.has(id)) continue;
      const stillRunning = snap?.ads.get(id)?.JobStatus === 2;
      const n = settling.get(id) ?? 0;
      if (!stillRunning || n >= SETTLE_DELAYS_MS.length) {
        settling.delete(id);
        continue;
      }
      settling.set(id, n + 1);
      c.queue.recheck(id, c.now() + SETTLE_DELAYS_MS[n]!);
    }
  }

  async function pass(): Promise<void> {
    const now = c.now();
    if (now < backoffUntil) return;
    const ids = new Set<string>(c.queue.takeDue(now));
    const ending = new Set<string>();
    const { saves, readable } = engine.read(ids, ending, now);
    const mine = [...ids];
    if (mine.length > 0 && !(await c.queue.refreshIds(mine))) {
      // Nothing is saved: after a restart or the next try, these events are read again.
      backoffUntil = c.now() + c.config.StatusCacheSeconds * 1000;
      for (const id of mine) c.queue.recheck(id, backoffUntil);
      for (const id of ending) settling.set(id, settling.get(id) ?? 0);
      return;
    }
    settle(mine, ending);
    engine.save(saves);
    if (engine.gapDue(c.now())) {
      engine.gapTaken(c.now());
      c.queue.kick();
    }
    if (readable) engine.cleanupIfDue(c.now());
  }

  engine.start({ timer: c.timer ?? realTimer, watchFolder: c.watchFolder });

  return {
    logForNewJob() {
      if (c.spool) return undefined;
      return engine.logForNewJob(c.now());
    },
    recorded(id) {
      c.queue.recheck(id, c.now());
    },
    tick: engine.tick,
    stop: engine.stop,
  };
}
