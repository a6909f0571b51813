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
 */
import { join } from "node:path";
import { boundaryIntact, capEvents, compareLogFile, emptyRateWindow, EVENT, readEventLog, scanForBoundary } from "../condor/eventlog.ts";
import type { Logger } from "../logger.ts";
import { checkEventsDir, ensureEventsDir, eventsDir, listEventLogFiles, readEventLogBytes, removeEventLogFile, statEventLog } from "../store/eventlog-file.ts";
import type { HTCJobRecord, HTCJobStore, OperatorEventLog } from "./store.ts";
import type { FollowResult, FollowScope } from "./track.ts";

/** The fallback poll for file systems that do not notify (issue 22: at most 250 ms). */
export const POLL_MS = 250;
/** A new log file is started for new clusters this often, or once the current one is this big. */
const ROTATE_MS = 24 * 3600_000;
const ROTATE_BYTES = 64 * 1024 * 1024;
/** Bytes read from one log per pass at most; the rest is read on the next pass, at once. */
const READ_MAX = 4 * 1024 * 1024;
/** Full follows for gaps at most this often: a job writing junk must not turn the reconciler into a poll. */
const GAP_MIN_MS = 10_000;
/** How often logs none of whose procs may still be queued are deleted. */
const CLEANUP_MS = 60_000;
/** A finished or deleted HTCJob's log is kept this long: a proc may still be leaving the queue, and the schedd appends to it. */
const LOG_KEEP_MS = 24 * 3600_000;
/** A file in the folder that no record names (a lost store, or made again by the schedd after a delete) goes once unwritten this long. */
const SWEEP_AGE_MS = 7 * 24 * 3600_000;
/**
 * After an event that ends a run (004, 005, 007, 024), a proc whose ad still says running is
 * asked about again after these delays: the shadow writes the event before the schedd commits
 * the new status (docs/htcondor.md#the-job-event-log), so the confirming query can race it.
 */
const SETTLE_DELAYS_MS = [500, 1000, 2000, 4000];
const ENDS_RUN = new Set<number>([EVENT.evicted, EVENT.terminated, EVENT.shadowException, EVENT.reconnectFailed]);

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

const pad = (n: number) => String(n).padStart(2, "0");
function logName(ms: number, taken: (name: string) => boolean): string {
  const d = new Date(ms);
  const stamp = `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${
    pad(d.getUTCSeconds())
  }Z`;
  let name = `events-${stamp}.log`;
  for (let i = 1; taken(name); i++) name = `events-${stamp}-${i}.log`;
  return name;
}

export function createEventDriver(d: EventDriverDeps): EventDriver {
  const root = operatorRoot(d.dataRoot);
  const dir = ensureEventsDir(root);
  const logs = new Map<string, OperatorEventLog>(d.store.eventLogs().map((r) => [r.name, r]));
  /**
   * Logs no longer read: in another format, or replaced or deleted while shadows keep writing to
   * the file they opened. Their clusters are polled until they are settled.
   */
  const polledLogs = new Set<string>();
  /** Whether the events folder passed its check on the last pass; while not, no log is read and every cluster is polled. */
  let dirOk = true;
  /** Logs whose event at the offset is longer than READ_MAX: where the scan for its end stands. */
  const skipping = new Map<string, { resume: number; atLineStart: boolean }>();
  /** Procs to ask about at a time: recorded clusters, failed passes, the tracker's waits, races with the schedd. */
  const due = new Map<string, number>();
  /** Procs named by an event that ends a run, with how many rechecks they had. */
  const ending = new Map<string, number>();
  const rates = emptyRateWindow();
  let pendingGap: string | undefined;
  let lastGap = -Infinity;
  let nextFull = -Infinity;
  let nextPoll = -Infinity;
  let lastCleanup = -Infinity;
  let sizeChecked = { at: -Infinity, size: 0 };
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;

  const later = (id: string, at: number) => due.set(id, Math.min(at, due.get(id) ?? Infinity));

  function current(): OperatorEventLog | undefined {
    let newest: OperatorEventLog | undefined;
    for (const r of logs.values()) if (!newest || r.createdAt >= newest.createdAt) newest = r;
    return newest;
  }

  function gap(why: string): void {
    d.log.warn("the job event log cannot say what changed; asking HTCondor about every proc", { reason: why });
    pendingGap = why;
  }

  /** Stops reading a log: its clusters are polled until settled, and new clusters go to a new log. */
  function poll(rec: OperatorEventLog, why: string): void {
    gap(why);
    polledLogs.add(rec.name);
    skipping.delete(rec.name);
  }

  /** The unsettled procs of live records, built once per pass and only when events need it: forged ids cost nothing. */
  let followed: Set<string> | undefined;
  const follows = (id: string) => {
    followed ??= new Set(
      d.store.list(["submitted"]).flatMap((r) => r.outcomes.flatMap((o, p) => (o === null ? [`${r.cluster}.${p}`] : []))),
    );
    return followed.has(id);
  };

  /** Reads one log from its saved offset into `ids`; returns the state to save once they were acted on. */
  function readOne(rec: OperatorEventLog, ids: Set<string>, ends: Set<string>, now: number): OperatorEventLog | undefined {
    const path = join(dir, rec.name);
    const st = statEventLog(path);
    if (!st) {
      // Not written yet (no proc of it queued so far), or deleted under the operator.
      if (rec.inode === 0) return undefined;
      poll(rec, `event log ${rec.name} is gone; its clusters are polled`);
      return undefined;
    }
    let state = { offset: rec.offset, inode: rec.inode, size: rec.size };
    if (rec.inode !== 0) {
      const change = compareLogFile(state, st);
      if (change === "replaced") {
        // Shadows keep writing to the file they opened (write_user_log.cpp): what they write is out of reach.
        poll(rec, `event log ${rec.name} was replaced; its clusters are polled`);
        return undefined;
      }
      if (change === "truncated") {
        gap(`event log ${rec.name} was truncated`);
        skipping.delete(rec.name);
        state = { offset: 0, inode: st.inode, size: 0 };
      }
    }
    const skip = skipping.get(rec.name);
    if (skip) return skipOn(rec, path, skip);
    if (st.size === state.offset) return { ...rec, ...state, inode: st.inode, size: st.size };
    const r = readEventLogBytes(path, state.offset, READ_MAX);
    if (!r || r.inode !== st.inode) return undefined; // replaced between stat and open: the next pass sees it
    if (!boundaryIntact(state.offset, r.before)) {
      gap(`event log ${rec.name} was rewritten before offset ${state.offset}`);
      return readOne({ ...rec, offset: 0, inode: r.inode, size: 0 }, ids, ends, now);
    }
    const read = readEventLog(r.bytes, state.offset, { year: new Date(now).getFullYear(), localOffsetMinutes: -new Date(now).getTimezoneOffset() });
    // Ids that are no live record's unsettled procs are dropped before anything is counted for them.
    const capped = capEvents(read.events, rates, now, { follows });
    for (const e of capped.kept) {
      const id = `${e.cluster}.${e.proc}`;
      ids.add(id);
      if (ENDS_RUN.has(e.type)) ends.add(id);
    }
    for (const j of capped.limited) ids.add(`${j.cluster}.${j.proc}`);
    // A forged header with no `...` may have swallowed a real event: the procs it names are asked about.
    for (const j of read.named) if (follows(`${j.cluster}.${j.proc}`)) ids.add(`${j.cluster}.${j.proc}`);
    if (capped.limited.length > 0) gap(`${capped.limited.length} proc(s) wrote more than the event cap to ${rec.name}`);
    if (read.malformed > 0) gap(`${read.malformed} malformed event(s) in ${rec.name}`);
    if (read.format !== "classic" && read.format !== "empty") {
      poll(rec, `event log ${rec.name} holds events in a format the operator does not read (${read.format}); its clusters are polled`);
    } else if (read.offset === state.offset && r.bytes.length >= READ_MAX) {
      // READ_MAX bytes without the end of one event: scan on, chunk by chunk, for the next boundary.
      const scan = scanForBoundary(r.bytes, state.offset, true);
      skipping.set(rec.name, { resume: scan.resume, atLineStart: scan.atLineStart });
    }
    if (r.bytes.length >= READ_MAX) again = true;
    return { ...rec, offset: read.offset, inode: r.inode, size: r.size };
  }

  /** One chunk of the scan for the end of an oversized event; its procs are asked about through the gap. */
  function skipOn(rec: OperatorEventLog, path: string, skip: { resume: number; atLineStart: boolean }): OperatorEventLog | undefined {
    const r = readEventLogBytes(path, skip.resume, READ_MAX);
    if (!r) return undefined;
    const scan = scanForBoundary(r.bytes, skip.resume, skip.atLineStart);
    if (r.bytes.length >= READ_MAX) again = true;
    if (scan.boundary === undefined) {
      skipping.set(rec.name, { resume: scan.resume, atLineStart: scan.atLineStart });
      return undefined;
    }
    skipping.delete(rec.name);
    again = true;
    gap(`event log ${rec.name} has an event longer than ${READ_MAX} bytes; it was skipped`);
    return { ...rec, offset: scan.boundary, inode: r.inode, size: r.size };
  }

  function cleanup(now: number): void {
    lastCleanup = now;
    const users = d.store.eventLogUsers(now - LOG_KEEP_MS);
    const cur = current();
    for (const rec of [...logs.values()]) {
      if (rec === cur || (users.get(rec.name) ?? 0) > 0) continue;
      try {
        removeEventLogFile(join(dir, rec.name));
      } catch (err) {
        d.log.warn("cannot delete an event log none of whose procs is queued", { log: rec.name, error: String(err) });
        continue;
      }
      d.store.removeEventLog(rec.name);
      logs.delete(rec.name);
      polledLogs.delete(rec.name);
      skipping.delete(rec.name);
    }
    for (const f of listEventLogFiles(dir)) {
      if (logs.has(f.name) || now - f.mtimeMs < SWEEP_AGE_MS) continue;
      try {
        removeEventLogFile(join(dir, f.name));
      } catch (err) {
        d.log.warn("cannot delete an event log no record names", { log: f.name, error: String(err) });
      }
    }
  }

  function polled(r: HTCJobRecord): boolean {
    return r.spooled || !dirOk || r.eventLog === undefined || !logs.has(r.eventLog) || polledLogs.has(r.eventLog);
  }

  function checkDir(): boolean {
    const bad = checkEventsDir(root);
    if ((bad === undefined) !== dirOk) {
      dirOk = bad === undefined;
      if (bad) d.log.warn("the event log folder cannot be trusted; not reading it, and every cluster is polled", { reason: bad });
    }
    return dirOk;
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
    const saves: OperatorEventLog[] = [];
    const readable = checkDir();
    if (readable) {
      for (const rec of logs.values()) {
        if (polledLogs.has(rec.name)) continue;
        const next = readOne(rec, ids, ends, now);
        if (next && (next.offset !== rec.offset || next.inode !== rec.inode || next.size !== rec.size)) saves.push(next);
      }
    }
    const gapDue = pendingGap !== undefined && now - lastGap >= GAP_MIN_MS;
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
      d.log.warn("asking HTCondor about the procs failed; trying again", { error: err instanceof Error ? err.message : String(err) });
      return;
    }
    if (full) {
      nextFull = now + d.reconcileMs;
      if (gapDue) {
        lastGap = now;
        pendingGap = undefined;
      }
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

  function commit(saves: OperatorEventLog[], now: number, readable: boolean): void {
    for (const s of saves) {
      d.store.saveEventLog(s);
      logs.set(s.name, s);
    }
    if (readable && now - lastCleanup >= CLEANUP_MS) cleanup(now);
  }

  function tick(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await pass();
        } catch (err) {
          d.log.warn("following the procs failed; the next pass tries again", { error: err instanceof Error ? err.message : String(err) });
        }
      } while (again && !stopped);
    })().finally(() => (running = undefined));
    return running;
  }

  let timer: ReturnType<typeof setTimeout> | undefined;
  let unwatch = () => {};
  const loop = () => {
    if (stopped) return;
    void tick().finally(() => {
      if (!stopped) timer = setTimeout(loop, POLL_MS);
    });
  };

  return {
    logForNewJob() {
      const now = d.now();
      let cur = current();
      if (cur && now - sizeChecked.at >= 1000) sizeChecked = { at: now, size: statEventLog(join(dir, cur.name))?.size ?? 0 };
      // A log no longer read takes no new clusters: they would be polled too.
      if (!cur || now - cur.createdAt >= ROTATE_MS || sizeChecked.size >= ROTATE_BYTES || polledLogs.has(cur.name)) {
        cur = { name: logName(now, (n) => logs.has(n)), createdAt: now, offset: 0, inode: 0, size: 0 };
        d.store.addEventLog(cur.name, cur.createdAt);
        logs.set(cur.name, cur);
        sizeChecked = { at: now, size: 0 };
      }
      return { name: cur.name, path: join(dir, cur.name) };
    },
    recorded(cluster, procs) {
      const now = d.now();
      for (let p = 0; p < procs; p++) later(`${cluster}.${p}`, now);
      void tick();
    },
    polled,
    tick,
    start() {
      if (stopped) return;
      unwatch = d.watchFolder?.(dir, () => void tick()) ?? (() => {});
      timer = setTimeout(loop, POLL_MS);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      unwatch();
      await running;
    },
  };
}
