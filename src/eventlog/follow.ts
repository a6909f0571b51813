/**
 * The one engine that follows a folder of shared job event logs (docs/status.md#following-the-event-log),
 * for the sidecar (service/follow.ts) and for the HTCJob operator (operator/events.ts). It keeps
 * the logs' records, starts a new log for new jobs, reads each log from its saved offset, names
 * the job ids its events name, notices what the log cannot explain (a gap) and the logs it can
 * no longer read (polled logs), deletes logs no job uses, and runs passes as the folder changes
 * and at least every POLL_MS.
 *
 * What a pass asks the queue, and what it does with the answer, differs between its users and
 * stays with them: the engine only reads (`read`), saves what was acted on (`save`) and cleans
 * up (`cleanupIfDue`); the user's pass decides when a gap runs the full query (`gapDue`,
 * `gapTaken`). The parser it uses (parse.ts) is pure; the files are read through files.ts.
 */
import { join } from "node:path";
import { boundaryIntact, capEvents, compareLogFile, emptyRateWindow, EVENT, readEventLog, scanForBoundary } from "./parse.ts";
import type { Logger } from "../logger.ts";
import { checkEventsDir, ensureEventsDir, listEventLogFiles, readEventLogBytes, removeEventLogFile, statEventLog } from "./files.ts";
import { errorText } from "../core/errors.ts";

/** The fallback poll for file systems that do not notify (at most 250 ms: docs/status.md#following-the-event-log). */
export const POLL_MS = 250;
/** A new log file is started for new jobs this often, or once the current one is this big. */
const ROTATE_MS = 24 * 3600_000;
const ROTATE_BYTES = 64 * 1024 * 1024;
/** Bytes read from one log per pass at most; more is read on the next pass, at once. */
const READ_MAX = 4 * 1024 * 1024;
/** Full queries for gaps at most this often (a job writing junk must not turn the reconciler into a poll). */
const GAP_MIN_MS = 10_000;
/** How often logs none of whose jobs is queued are deleted. */
const CLEANUP_MS = 60_000;
/**
 * A finished or deleted record keeps its log for this long (as long as a tombstone lives): its
 * job may still be in the queue while its shadow exits, and the schedd then appends to the log.
 */
export const LOG_KEEP_MS = 24 * 3600_000;
/** A file in the folder that no record names (the store was lost, or the schedd made it again after a delete) is deleted once unwritten for this long. */
export const SWEEP_AGE_MS = 7 * 24 * 3600_000;
/**
 * After an event that ends a run (004, 005, 007, 024) the queue may still say "running" for a
 * moment: the shadow logs it before it exits and the schedd's reaper sets the new JobStatus
 * (docs/htcondor.md#who-writes-an-event-and-when). The job is asked about again after each of
 * these delays until it no longer runs.
 */
export const SETTLE_DELAYS_MS = [500, 1000, 2000, 4000];
const ENDS_RUN = new Set<number>([EVENT.evicted, EVENT.terminated, EVENT.shadowException, EVENT.reconnectFailed]);

/**
 * A shared job event log and how far it has been read: `offset` (just past a `...` line),
 * and the file's `inode` and `size` at that read (0 and 0 before the file was first seen).
 */
export interface EventLogRecord {
  name: string;
  createdAt: number;
  offset: number;
  inode: number;
  size: number;
}

/** The store's books of the event logs (the sidecar's and the operator's stores keep the same fields). */
export interface EventLogBooks {
  eventLogs(): EventLogRecord[];
  addEventLog(name: string, createdAt: number): void;
  saveEventLog(rec: EventLogRecord): void;
  removeEventLog(name: string): void;
  /** How many records that are live, or ended after `since`, name each log. */
  eventLogUsers(since: number): Map<string, number>;
}

/** The words of the log messages: the users name their jobs and themselves differently. */
export interface EventLogWords {
  /** What a polled log's jobs are called: "jobs", "clusters". */
  jobs: string;
  /** What a job over the event cap is counted as: "job(s)", "proc(s)". */
  capped: string;
  /** Who does not read a format: "sidecar", "operator". */
  reader: string;
  /** The warning when a gap is noticed. */
  gap: string;
  /** The warning when the events folder fails its check. */
  untrusted: string;
  /** The warning when a log none of whose jobs is queued cannot be deleted. */
  undeletable: string;
  /** The warning when a pass throws. */
  passFailed: string;
}

export interface EventLogFollowOptions {
  /** The folder whose `events/` subfolder holds the logs. */
  root: string;
  books: EventLogBooks;
  /** Is this job id one of ours (events for any other id are dropped before anything is counted)? */
  follows(id: string): boolean;
  /** The pass the user runs: reads (`read`), asks the queue, then saves (`save`). */
  pass(): Promise<void>;
  /** Called when which jobs are polled may have changed (a log stopped being read, the folder failed its check). */
  pollingChanged?(): void;
  /** Let other work (HTTP) run between passes that follow each other at once. */
  breathe?: boolean;
  words: EventLogWords;
  log: Logger;
}

export type SetTimer = (fn: () => void, ms: number) => () => void;

export interface EventLogFollow {
  readonly dir: string;
  /** Are a record's jobs polled rather than followed through this log (no log, an unread log, an untrusted folder)? */
  polled(log: string | undefined): boolean;
  /** Is this log one of the records? */
  known(log: string): boolean;
  /** Reads every log that is read into `ids` (and the ids whose run ended into `ends`); returns the states to save once acted on. */
  read(ids: Set<string>, ends: Set<string>, now: number): { saves: EventLogRecord[]; readable: boolean };
  save(saves: readonly EventLogRecord[]): void;
  /** Deletes the logs no job uses, at most every CLEANUP_MS. */
  cleanupIfDue(now: number): void;
  /** Is a gap waiting, and may a full query run for it now? */
  gapDue(now: number): boolean;
  /** The full query for the waiting gap ran. */
  gapTaken(now: number): void;
  /** The log a new job writes to, started anew when the current one is old, big, or no longer read. */
  logForNewJob(now: number): { name: string; path: string };
  /** One pass; runs again at once if called while running. */
  tick(): Promise<void>;
  /** The folder watch, and a pass at least every POLL_MS. */
  start(opts: { timer: SetTimer; watchFolder?: (dir: string, onChange: () => void) => () => void }): void;
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

/** What the parts of a follower share: its options, its folder, and the logs' records and what is known of each. */
interface FollowState {
  o: EventLogFollowOptions;
  w: EventLogWords;
  dir: string;
  logs: Map<string, EventLogRecord>;
  /**
   * Logs no longer read: in another format, or replaced or deleted while shadows keep writing to
   * the file they opened. Their jobs are polled until they are gone.
   */
  polledLogs: Set<string>;
  /** Whether the events folder passed its check on the last pass; while not, no log is read. */
  dirOk: boolean;
  /** Logs whose event at the offset is longer than READ_MAX: where the scan for its end stands. */
  skipping: Map<string, { resume: number; atLineStart: boolean }>;
  rates: ReturnType<typeof emptyRateWindow>;
  /** Why a gap waits for its full query. */
  pendingGap: string | undefined;
  /** Another pass runs at once (a log has more to read, or a tick came during the pass). */
  again: boolean;
}

/** The log new jobs write to: the newest. */
function current(logs: ReadonlyMap<string, EventLogRecord>): EventLogRecord | undefined {
  let newest: EventLogRecord | undefined;
  for (const r of logs.values()) if (!newest || r.createdAt >= newest.createdAt) newest = r;
  return newest;
}

/** Reading the logs: each from its saved offset, the gaps it finds, and the logs it stops reading. */
function createLogReader(s: FollowState): { readOne: (rec: EventLogRecord, ids: Set<string>, ends: Set<string>, now: number) => EventLogRecord | undefined } {
  const { o, w, dir, polledLogs, skipping, rates } = s;

  function gap(why: string): void {
    o.log.warn(w.gap, { reason: why });
    s.pendingGap = why;
  }

  /** Stops reading a log: its jobs are polled until they are gone, and new jobs go to a new log. */
  function poll(rec: EventLogRecord, why: string): void {
    gap(why);
    if (polledLogs.has(rec.name)) return;
    polledLogs.add(rec.name);
    skipping.delete(rec.name);
    o.pollingChanged?.();
  }

  /** Reads one log from its saved offset into `ids`; returns the state to save once they were acted on. */
  function readOne(rec: EventLogRecord, ids: Set<string>, ends: Set<string>, now: number): EventLogRecord | undefined {
    const path = join(dir, rec.name);
    const st = statEventLog(path);
    if (!st) {
      // Not written yet (no job of it has started), or deleted under the reader.
      if (rec.inode === 0) return undefined;
      poll(rec, `event log ${rec.name} is gone; its ${w.jobs} are polled`);
      return undefined;
    }
    let state = { offset: rec.offset, inode: rec.inode, size: rec.size };
    if (rec.inode !== 0) {
      const change = compareLogFile(state, st);
      if (change === "replaced") {
        // Shadows keep writing to the file they opened (write_user_log.cpp): what they write is out of reach.
        poll(rec, `event log ${rec.name} was replaced; its ${w.jobs} are polled`);
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
      return readOne({ ...rec, offset: 0, inode: r.inode, size: 0 }, ids, ends, now);
    }
    const read = readEventLog(r.bytes, state.offset, { year: new Date(now).getFullYear(), localOffsetMinutes: -new Date(now).getTimezoneOffset() });
    // Ids that are not followed jobs are dropped before anything is counted or kept for them.
    const capped = capEvents(read.events, rates, now, { follows: o.follows });
    for (const e of capped.kept) {
      const id = `${e.cluster}.${e.proc}`;
      ids.add(id);
      if (ENDS_RUN.has(e.type)) ends.add(id);
    }
    for (const j of capped.limited) ids.add(`${j.cluster}.${j.proc}`);
    // A forged header with no `...` may have swallowed a real event: the jobs it names are asked about.
    for (const j of read.named) {
      const id = `${j.cluster}.${j.proc}`;
      if (o.follows(id)) ids.add(id);
    }
    if (capped.limited.length > 0) gap(`${capped.limited.length} ${w.capped} wrote more than the event cap to ${rec.name}`);
    if (read.malformed > 0) gap(`${read.malformed} malformed event(s) in ${rec.name}`);
    if (read.format !== "classic" && read.format !== "empty") {
      poll(rec, `event log ${rec.name} holds events in a format the ${w.reader} does not read (${read.format}); its ${w.jobs} are polled`);
    } else if (read.offset === state.offset && r.bytes.length >= READ_MAX) {
      // READ_MAX bytes without the end of one event: scan on, chunk by chunk, for the next boundary.
      const scan = scanForBoundary(r.bytes, state.offset, true);
      skipping.set(rec.name, { resume: scan.resume, atLineStart: scan.atLineStart });
    }
    if (r.bytes.length >= READ_MAX) s.again = true;
    return { ...rec, offset: read.offset, inode: r.inode, size: r.size };
  }

  /** One chunk of the scan for the end of an oversized event; its jobs are asked about through the gap. */
  function skipOn(rec: EventLogRecord, path: string, skip: { resume: number; atLineStart: boolean }): EventLogRecord | undefined {
    const r = readEventLogBytes(path, skip.resume, READ_MAX);
    if (!r) return undefined;
    const scan = scanForBoundary(r.bytes, skip.resume, skip.atLineStart);
    if (r.bytes.length >= READ_MAX) s.again = true;
    if (scan.boundary === undefined) {
      skipping.set(rec.name, { resume: scan.resume, atLineStart: scan.atLineStart });
      return undefined;
    }
    skipping.delete(rec.name);
    s.again = true;
    gap(`event log ${rec.name} has an event longer than ${READ_MAX} bytes; it was skipped`);
    return { ...rec, offset: scan.boundary, inode: r.inode, size: r.size };
  }

  return { readOne };
}

/** Deletes the logs no job uses (but the current one), and the files no record names once old. */
function cleanup(s: FollowState, now: number): void {
  const { o, w, dir, logs, polledLogs, skipping } = s;
  const users = o.books.eventLogUsers(now - LOG_KEEP_MS);
  const cur = current(logs);
  for (const rec of [...logs.values()]) {
    if (rec === cur || (users.get(rec.name) ?? 0) > 0) continue;
    try {
      removeEventLogFile(join(dir, rec.name));
    } catch (err) {
      o.log.warn(w.undeletable, { log: rec.name, error: errorText(err) });
      continue;
    }
    o.books.removeEventLog(rec.name);
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
      o.log.warn("cannot delete an event log no record names", { log: f.name, error: errorText(err) });
    }
  }
}

export function createEventLogFollow(o: EventLogFollowOptions): EventLogFollow {
  const s: FollowState = {
    o,
    w: o.words,
    dir: ensureEventsDir(o.root),
    logs: new Map<string, EventLogRecord>(o.books.eventLogs().map((r) => [r.name, r])),
    polledLogs: new Set<string>(),
    dirOk: true,
    skipping: new Map(),
    rates: emptyRateWindow(),
    pendingGap: undefined,
    again: false,
  };
  const { w, dir, logs, polledLogs } = s;
  const { readOne } = createLogReader(s);
  let lastGap = -Infinity;
  let lastCleanup = -Infinity;
  let sizeChecked = { at: -Infinity, size: 0 };
  let running: Promise<void> | undefined;
  let stopped = false;

  function checkDir(): boolean {
    const bad = checkEventsDir(o.root);
    if ((bad === undefined) !== s.dirOk) {
      s.dirOk = bad === undefined;
      if (bad) {
        o.log.warn(w.untrusted, { reason: bad });
        o.pollingChanged?.();
      }
    }
    return s.dirOk;
  }

  function tick(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (running) {
      s.again = true;
      return running;
    }
    running = (async () => {
      do {
        s.again = false;
        try {
          await o.pass();
        } catch (err) {
          o.log.warn(w.passFailed, { error: errorText(err) });
        }
        // Passes back to back (a log read READ_MAX at a time) leave room for HTTP between them.
        if (o.breathe && s.again && !stopped) await new Promise<void>((r) => setTimeout(r, 0));
      } while (s.again && !stopped);
    })().finally(() => (running = undefined));
    return running;
  }

  let cancelTimer: (() => void) | undefined;
  let unwatch = () => {};

  return {
    dir,
    polled: (log) => log === undefined || !s.dirOk || polledLogs.has(log),
    known: (log) => logs.has(log),
    read(ids, ends, now) {
      const saves: EventLogRecord[] = [];
      const readable = checkDir();
      if (readable) {
        for (const rec of logs.values()) {
          if (polledLogs.has(rec.name)) continue;
          const next = readOne(rec, ids, ends, now);
          if (next && (next.offset !== rec.offset || next.inode !== rec.inode || next.size !== rec.size)) saves.push(next);
        }
      }
      return { saves, readable };
    },
    save(saves) {
      for (const s of saves) {
        o.books.saveEventLog(s);
        logs.set(s.name, s);
      }
    },
    cleanupIfDue(now) {
      if (now - lastCleanup < CLEANUP_MS) return;
      lastCleanup = now;
      cleanup(s, now);
    },
    gapDue: (now) => s.pendingGap !== undefined && now - lastGap >= GAP_MIN_MS,
    gapTaken(now) {
      lastGap = now;
      s.pendingGap = undefined;
    },
    logForNewJob(now) {
      let cur = current(logs);
      if (cur && now - sizeChecked.at >= 1000) sizeChecked = { at: now, size: statEventLog(join(dir, cur.name))?.size ?? 0 };
      // A log no longer read takes no new jobs: they would be polled too.
      if (!cur || now - cur.createdAt >= ROTATE_MS || sizeChecked.size >= ROTATE_BYTES || polledLogs.has(cur.name)) {
        cur = { name: logName(now, (n) => logs.has(n)), createdAt: now, offset: 0, inode: 0, size: 0 };
        o.books.addEventLog(cur.name, cur.createdAt);
        logs.set(cur.name, cur);
        sizeChecked = { at: now, size: 0 };
      }
      return { name: cur.name, path: join(dir, cur.name) };
    },
    tick,
    start({ timer, watchFolder }) {
      if (stopped) return;
      const loop = () => {
        if (stopped) return;
        void tick().finally(() => {
          if (!stopped) cancelTimer = timer(loop, POLL_MS);
        });
      };
      unwatch = watchFolder?.(dir, () => void tick()) ?? (() => {});
      cancelTimer = timer(loop, POLL_MS);
    },
    async stop() {
      stopped = true;
      cancelTimer?.();
      unwatch();
      await running;
    },
  };
}
