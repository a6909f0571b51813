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
 * over the event cap) is a gap: one full condor_q (the queue's `kick`). A file in a format this
 * reader does not read falls back to polling for the jobs that write to it.
 */
import { join } from "node:path";
import { boundaryIntact, capEvents, compareLogFile, emptyRateWindow, nextBoundary, readEventLog } from "../condor/eventlog.ts";
import { ensureEventsDir, readEventLogBytes, removeEventLogFile, statEventLog } from "../store/eventlog-file.ts";
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
  /** Logs in a format this reader does not read (or stalled on an event with no end): their jobs are polled. */
  const unsupported = new Set<string>();
  c.queue.polled = (log) => log === undefined || unsupported.has(log);
  let rates = emptyRateWindow();
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

  /** Reads one log from its saved offset; returns the state to save and the job ids its events name. */
  function readOne(rec: EventLogRecord, ids: Set<string>, now: number): EventLogRecord | undefined {
    const path = join(dir, rec.name);
    const st = statEventLog(path);
    if (!st) {
      // Not written yet (no job of it has started), or deleted under the sidecar.
      if (rec.inode === 0) return undefined;
      gap(`event log ${rec.name} is gone`);
      return { ...rec, offset: 0, inode: 0, size: 0 };
    }
    let state = { offset: rec.offset, inode: rec.inode, size: rec.size };
    if (rec.inode !== 0) {
      const change = compareLogFile(state, st);
      if (change !== "continue") {
        gap(`event log ${rec.name} was ${change}`);
        state = { offset: 0, inode: st.inode, size: 0 };
      }
    }
    if (st.size === state.offset) return { ...rec, ...state, inode: st.inode, size: st.size };
    const r = readEventLogBytes(path, state.offset, READ_MAX);
    if (!r || r.inode !== st.inode) return undefined; // replaced between stat and open: the next pass sees it
    if (!boundaryIntact(state.offset, r.before)) {
      gap(`event log ${rec.name} was rewritten before offset ${state.offset}`);
      // Read again from the start (offset 0 needs no check, so this recurses once).
      return readOne({ ...rec, offset: 0, inode: r.inode, size: 0 }, ids, now);
    }
    const read = readEventLog(r.bytes, state.offset, { year: new Date(now).getFullYear(), localOffsetMinutes: -new Date(now).getTimezoneOffset() });
    const capped = capEvents(read.events, rates, now);
    rates = capped.window;
    for (const e of capped.kept) ids.add(`${e.cluster}.${e.proc}`);
    for (const j of capped.limited) ids.add(`${j.cluster}.${j.proc}`);
    if (capped.limited.length > 0) gap(`${capped.limited.length} job(s) wrote more than the event cap to ${rec.name}`);
    if (read.malformed > 0) gap(`${read.malformed} malformed event(s) in ${rec.name}`);
    let offset = read.offset;
    if (read.format !== "classic" && read.format !== "empty") {
      unsupported.add(rec.name);
      gap(`event log ${rec.name} holds events in a format the sidecar does not read (${read.format}); its jobs are polled`);
    } else if (read.events.length === 0 && read.unknown === 0 && read.malformed === 0 && r.bytes.length >= READ_MAX) {
      // READ_MAX bytes without the end of one event: skip to the next boundary, or give up on the file.
      const next = nextBoundary(r.bytes, state.offset);
      if (next === null) {
        unsupported.add(rec.name);
        gap(`event log ${rec.name} has an event longer than ${READ_MAX} bytes; its jobs are polled`);
      } else offset = next;
    }
    if (r.bytes.length >= READ_MAX) again = true;
    return { ...rec, offset, inode: r.inode, size: r.size };
  }

  function cleanup(now: number): void {
    lastCleanup = now;
    const users = c.store.eventLogUsers();
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
      unsupported.delete(rec.name);
    }
  }

  async function pass(): Promise<void> {
    const now = c.now();
    if (now < backoffUntil) return;
    const ids = new Set<string>(c.queue.takeDue(now));
    const saves: EventLogRecord[] = [];
    for (const rec of logs.values()) {
      if (unsupported.has(rec.name)) continue;
      const next = readOne(rec, ids, now);
      if (next && (next.offset !== rec.offset || next.inode !== rec.inode || next.size !== rec.size)) saves.push(next);
    }
    // Events for ids that are not this sidecar's followed jobs cost nothing: refreshIds asks
    // about followed jobs only (and reads the followed jobs from the store only when it has ids).
    const mine = [...ids];
    if (mine.length > 0 && !(await c.queue.refreshIds(mine))) {
      // Nothing is saved: after a restart or the next try, these events are read again.
      backoffUntil = c.now() + c.config.StatusCacheSeconds * 1000;
      for (const id of mine) c.queue.recheck(id, backoffUntil);
      return;
    }
    for (const s of saves) {
      c.store.saveEventLog(s.name, s);
      logs.set(s.name, s);
    }
    if (pendingGap !== undefined && c.now() - lastGap >= GAP_MIN_MS) {
      lastGap = c.now();
      pendingGap = undefined;
      c.queue.kick();
    }
    if (c.now() - lastCleanup >= CLEANUP_MS) cleanup(c.now());
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
      } while (again && !stopped);
    })().finally(() => (running = undefined));
    return running;
  }

  let cancelTimer: (() => void) | undefined;
  const poll = () => {
    if (stopped) return;
    void tick().finally(() => {
      if (!stopped) cancelTimer = timer(poll, POLL_MS);
    });
  };
  const unwatch = c.watchFolder?.(dir, () => void tick()) ?? (() => {});
  const timer = c.timer ?? realTimer;
  cancelTimer = timer(poll, POLL_MS);

  return {
    logForNewJob() {
      if (c.spool) return undefined;
      const now = c.now();
      let cur = current();
      if (cur && now - sizeChecked.at >= 1000) sizeChecked = { at: now, size: statEventLog(join(dir, cur.name))?.size ?? 0 };
      if (!cur || now - cur.createdAt >= ROTATE_MS || sizeChecked.size >= ROTATE_BYTES) {
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
