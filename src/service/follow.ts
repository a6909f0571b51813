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
 */
import { join } from "node:path";
import { boundaryIntact, capEvents, compareLogFile, emptyRateWindow, EVENT, readEventLog, scanForBoundary } from "../condor/eventlog.ts";
import { checkEventsDir, ensureEventsDir, listEventLogFiles, readEventLogBytes, removeEventLogFile, statEventLog } from "../store/eventlog-file.ts";
import type { EventLogRecord } from "../store/store.ts";
import { type Ctx, errorText } from "./context.ts";
import { realTimer } from "./queue.ts";

/** The fallback poll for file systems that do not notify (issue 22: at most 250 ms). */
export const POLL_MS = 250;
/** A new log file is started for new jobs this often, or once the current one is this big. */
const ROTATE_MS = 24 * 3600_000;
const ROTATE_BYTES = 64 * 1024 * 1024;
/** Bytes read from one log per pass at most; more is read on the next pass, at once. */
const READ_MAX = 4 * 1024 * 1024;
/** Full condor_q runs for gaps at most this often (a job writing junk must not turn the reconciler into a poll). */
const GAP_MIN_MS = 10_000;
/** How often logs none of whose jobs is queued are deleted. */
const CLEANUP_MS = 60_000;
/**
 * A finished or deleted record keeps its log for this long (as long as a tombstone lives): its
 * job may still be in the queue while its shadow exits, and the schedd then appends to the log.
 */
export const LOG_KEEP_MS = 24 * 3600_000;
/** A file in the folder that no record names (the store was lost) is deleted once unwritten for this long. */
export const SWEEP_AGE_MS = 7 * 24 * 3600_000;
/**
 * After an event that ends a run (004, 005, 007, 024) the queue may still say "running" for a
 * moment: the shadow logs it before it exits and the schedd's reaper sets the new JobStatus.
 * The job is asked about again after each of these delays until it no longer runs.
 */
export const SETTLE_DELAYS_MS = [500, 1000, 2000, 4000];
const ENDS_RUN = new Set<number>([EVENT.evicted, EVENT.terminated, EVENT.shadowException, EVENT.reconnectFailed]);

export interface Follower {
  /** The log a new job writes to (its name for the record, its path for the submit file); undefined when jobs are spooled. */
  logForNewJob(): { name: string; path: string } | undefined;
  /** A job was recorded: the next targeted condor_q asks about it (its submit event may have been read already). */
  recorded(id: string): void;
  /** Reads the logs and asks about what they name; runs again at once if called while running. */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");
function logName(ms: number, taken: (name: string) => boolean): string {
  const d = new Date(ms);
  const stamp = `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${
    pad(d.getUTCSeconds())
  }Z`;
  let name = `events-${stamp}.log`;
  for (let i = 1; taken(name); i++) name = `events-${stamp}-${i}.log`;
  return name;
}

export function createFollower(c: Ctx): Follower {
  const dir = ensureEventsDir(c.dataRoot);
  const logs = new Map<string, EventLogRecord>(c.store.eventLogs().map((r) => [r.name, r]));
  /**
   * Logs the follower no longer reads: in another format, or replaced or deleted while shadows
   * keep writing to the file they opened. Their jobs are polled until they are gone.
   */
  const polledLogs = new Set<string>();
  /** Whether the events folder passed its check on the last pass; while not, no log is read. */
  let dirOk = true;
  c.queue.polled = (log) => log === undefined || !dirOk || polledLogs.has(log);
  /** Logs whose event at the offset is longer than READ_MAX: where the scan for its end stands. */
  const skipping = new Map<string, { resume: number; atLineStart: boolean }>();
  /** Jobs an event said ended a run while the queue still said running: how many rechecks so far. */
  const settling = new Map<string, number>();
  const rates = emptyRateWindow();
  let lastGap = -Infinity;
  let pendingGap: string | undefined;
  let backoffUntil = -Infinity;
  let lastCleanup = -Infinity;
  let sizeChecked = { at: -Infinity, size: 0 };
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;

  function current(): EventLogRecord | undefined {
    let newest: EventLogRecord | undefined;
    for (const r of logs.values()) if (!newest || r.createdAt >= newest.createdAt) newest = r;
    return newest;
  }

  function startLog(now: number): EventLogRecord {
    const rec: EventLogRecord = { name: logName(now, (n) => logs.has(n)), createdAt: now, offset: 0, inode: 0, size: 0 };
    c.store.addEventLog(rec.name, rec.createdAt);
    logs.set(rec.name, rec);
    return rec;
  }

  function gap(why: string): void {
    c.log.warn("the job event log cannot say what changed; asking the queue about every followed job", { reason: why });
    pendingGap = why;
  }

  /** Stops reading a log: its jobs are polled by id until they are gone, and new jobs go to a new log. */
  function poll(rec: EventLogRecord, why: string): void {
    gap(why);
    if (polledLogs.has(rec.name)) return;
    polledLogs.add(rec.name);
    skipping.delete(rec.name);
    c.queue.pollingChanged();
  }

  /** Reads one log from its saved offset; returns the state to save and the job ids its events name. */
  function readOne(rec: EventLogRecord, ids: Set<string>, ending: Set<string>, now: number): EventLogRecord | undefined {
    const path = join(dir, rec.name);
    const st = statEventLog(path);
    if (!st) {
      // Not written yet (no job of it has started), or deleted under the sidecar.
      if (rec.inode === 0) return undefined;
      poll(rec, `event log ${rec.name} is gone; its jobs are polled`);
      return undefined;
    }
    let state = { offset: rec.offset, inode: rec.inode, size: rec.size };
    if (rec.inode !== 0) {
      const change = compareLogFile(state, st);
      if (change === "replaced") {
        // Shadows keep writing to the file they opened (write_user_log.cpp): what they write is out of reach.
        poll(rec, `event log ${rec.name} was replaced; its jobs are polled`);
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
      // Read again from the start (offset 0 needs no check, so this recurses once).
      return readOne({ ...rec, offset: 0, inode: r.inode, size: 0 }, ids, ending, now);
    }
    const read = readEventLog(r.bytes, state.offset, { year: new Date(now).getFullYear(), localOffsetMinutes: -new Date(now).getTimezoneOffset() });
    // Ids that are not followed jobs are dropped before anything is counted or kept for them.
    const capped = capEvents(read.events, rates, now, { follows: c.queue.follows });
    for (const e of capped.kept) {
      const id = `${e.cluster}.${e.proc}`;
      ids.add(id);
      if (ENDS_RUN.has(e.type)) ending.add(id);
    }
    for (const j of capped.limited) ids.add(`${j.cluster}.${j.proc}`);
    for (const j of read.named) {
      const id = `${j.cluster}.${j.proc}`;
      if (c.queue.follows(id)) ids.add(id);
    }
    if (capped.limited.length > 0) gap(`${capped.limited.length} job(s) wrote more than the event cap to ${rec.name}`);
    if (read.malformed > 0) gap(`${read.malformed} malformed event(s) in ${rec.name}`);
    if (read.format !== "classic" && read.format !== "empty") {
      poll(rec, `event log ${rec.name} holds events in a format the sidecar does not read (${read.format}); its jobs are polled`);
    } else if (read.offset === state.offset && r.bytes.length >= READ_MAX) {
      // READ_MAX bytes without the end of one event: scan on, chunk by chunk, for the next boundary.
      const scan = scanForBoundary(r.bytes, state.offset, true);
      skipping.set(rec.name, { resume: scan.resume, atLineStart: scan.atLineStart });
    }
    if (r.bytes.length >= READ_MAX) again = true;
    return { ...rec, offset: read.offset, inode: r.inode, size: r.size };
  }

  /** One chunk of the scan for the end of an oversized event; its jobs are asked about through the gap. */
  function skipOn(rec: EventLogRecord, path: string, skip: { resume: number; atLineStart: boolean }): EventLogRecord | undefined {
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
    const users = c.store.eventLogUsers(now - LOG_KEEP_MS);
    const cur = current();
    for (const rec of [...logs.values()]) {
      if (rec === cur || (users.get(rec.name) ?? 0) > 0) continue;
      try {
        removeEventLogFile(join(dir, rec.name));
      } catch (err) {
        c.log.warn("cannot delete an event log none of whose jobs is queued", { log: rec.name, error: errorText(err) });
        continue;
      }
      c.store.removeEventLog(rec.name);
      logs.delete(rec.name);
      polledLogs.delete(rec.name);
      skipping.delete(rec.name);
    }
    // Files no record names: left by a lost store, or made again by the schedd after a delete.
    for (const f of listEventLogFiles(dir)) {
      if (logs.has(f.name) || now - f.mtimeMs < SWEEP_AGE_MS) continue;
      try {
        removeEventLogFile(join(dir, f.name));
      } catch (err) {
        c.log.warn("cannot delete an event log no record names", { log: f.name, error: errorText(err) });
      }
    }
  }

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

  function checkDir(): boolean {
    const bad = checkEventsDir(c.dataRoot);
    if ((bad === undefined) !== dirOk) {
      dirOk = bad === undefined;
      if (bad) {
        c.log.warn("the event log folder cannot be trusted; not reading it, and every followed job is polled", { reason: bad });
        c.queue.pollingChanged();
      }
    }
    return dirOk;
  }

  async function pass(): Promise<void> {
    const now = c.now();
    if (now < backoffUntil) return;
    const ids = new Set<string>(c.queue.takeDue(now));
    const ending = new Set<string>();
    const saves: EventLogRecord[] = [];
    const readable = checkDir();
    if (readable) {
      for (const rec of logs.values()) {
        if (polledLogs.has(rec.name)) continue;
        const next = readOne(rec, ids, ending, now);
        if (next && (next.offset !== rec.offset || next.inode !== rec.inode || next.size !== rec.size)) saves.push(next);
      }
    }
    const mine = [...ids];
    if (mine.length > 0 && !(await c.queue.refreshIds(mine))) {
      // Nothing is saved: after a restart or the next try, these events are read again.
      backoffUntil = c.now() + c.config.StatusCacheSeconds * 1000;
      for (const id of mine) c.queue.recheck(id, backoffUntil);
      for (const id of ending) settling.set(id, settling.get(id) ?? 0);
      return;
    }
    settle(mine, ending);
    for (const s of saves) {
      c.store.saveEventLog(s.name, s);
      logs.set(s.name, s);
    }
    if (pendingGap !== undefined && c.now() - lastGap >= GAP_MIN_MS) {
      lastGap = c.now();
      pendingGap = undefined;
      c.queue.kick();
    }
    if (readable && c.now() - lastCleanup >= CLEANUP_MS) cleanup(c.now());
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
          c.log.warn("reading the job event log failed; the next pass tries again", { error: errorText(err) });
        }
        // Passes back to back (a log read READ_MAX at a time) leave room for HTTP between them.
        if (again && !stopped) await new Promise<void>((r) => setTimeout(r, 0));
      } while (again && !stopped);
    })().finally(() => (running = undefined));
    return running;
  }

  let cancelTimer: (() => void) | undefined;
  const pollTick = () => {
    if (stopped) return;
    void tick().finally(() => {
      if (!stopped) cancelTimer = timer(pollTick, POLL_MS);
    });
  };
  const unwatch = c.watchFolder?.(dir, () => void tick()) ?? (() => {});
  const timer = c.timer ?? realTimer;
  cancelTimer = timer(pollTick, POLL_MS);

  return {
    logForNewJob() {
      if (c.spool) return undefined;
      const now = c.now();
      let cur = current();
      if (cur && now - sizeChecked.at >= 1000) sizeChecked = { at: now, size: statEventLog(join(dir, cur.name))?.size ?? 0 };
      // A log the follower no longer reads takes no new jobs: they would be polled too.
      if (!cur || now - cur.createdAt >= ROTATE_MS || sizeChecked.size >= ROTATE_BYTES || polledLogs.has(cur.name)) {
        cur = startLog(now);
        sizeChecked = { at: now, size: 0 };
      }
      return { name: cur.name, path: join(dir, cur.name) };
    },
    recorded(id) {
      c.queue.recheck(id, c.now());
    },
    tick,
    async stop() {
      stopped = true;
      cancelTimer?.();
      unwatch();
      await running;
    },
  };
}
