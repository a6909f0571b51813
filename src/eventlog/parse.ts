/**
 * The HTCondor job event log ("user log"), read incrementally and defensively
 * (docs/htcondor.md#the-job-event-log). Pure: the caller reads the file's bytes from a saved
 * offset and stats it; these functions say which events those bytes hold, where the next read
 * starts, and whether the file is still the one the offset belongs to.
 *
 * The log tells which jobs changed, never what they are: a job that runs as the log's owner can
 * append any event, for any job id. Forged events are parsed like real ones; deciding what to
 * believe is the caller's job (a confirming condor_q of the ids named here).
 */
import type { JobId } from "../core/classad.ts";

/** The events the sidecar acts on (docs/htcondor.md#the-events-as-written). */
export const EVENT = {
  submit: 0,
  execute: 1,
  evicted: 4,
  terminated: 5,
  shadowException: 7,
  generic: 8,
  aborted: 9,
  held: 12,
  released: 13,
  reconnectFailed: 24,
  attributeUpdate: 33,
} as const;

const KNOWN = new Set<number>(Object.values(EVENT));

/**
 * Where reading stands. `offset` only ever sits just past a `...` line (or at 0); `inode` and
 * `size` are the file's at that read, so that a truncated or replaced file is noticed
 * (docs/htcondor.md#following-the-log).
 */
export interface EventLogState {
  offset: number;
  inode: number;
  size: number;
}

export interface JobEvent {
  /** The event number, e.g. 5 for "Job terminated." */
  type: number;
  cluster: number;
  proc: number;
  subproc: number;
  /** Seconds since the epoch (fractional with SUB_SECOND); see `zone`. */
  time: number;
  /** "utc" when the header said so (`Z`); "local" when it was converted with the caller's offset. */
  zone: "utc" | "local";
  /** Byte offset of the event's first byte in the file. */
  offset: number;
  /** 005 and a requeued 004: the job's exit code, when it exited normally. */
  exitCode?: number;
  /** 005 and a requeued 004: the signal that killed the job. */
  exitSignal?: number;
  /** 033: the attribute the schedd set (one per event). */
  attribute?: string;
}

/**
 * What the bytes at the offset hold. Only "classic" is read; the caller falls back to polling
 * the queue for the others (docs/htcondor.md#formats-of-the-log).
 */
export type LogFormat = "classic" | "xml" | "json" | "unknown" | "empty";

export interface ReadOptions {
  /** Year for the legacy `MM/DD` dates, which have none (HTCondor's reader uses the current one). */
  year: number;
  /** The host's offset from UTC in minutes (east positive) for times written without `Z`. */
  localOffsetMinutes: number;
}

export interface ReadResult {
  format: LogFormat;
  events: JobEvent[];
  /** The new offset: just past the last complete event read, or unchanged. */
  offset: number;
  /** Complete events skipped: an unknown type, or a header or body this reader does not accept. */
  unknown: number;
  malformed: number;
  /** Bytes after `offset` that do not end in a `...` line yet: an event still being written. */
  pendingBytes: number;
  /**
   * The jobs named by header-shaped lines of malformed events (a forged header with no `...`
   * that swallowed the next event): the caller asks about them, as the swallowed event may have
   * been real.
   */
  named: JobId[];
}

const LF = 0x0a;
const decoder = new TextDecoder("utf-8", { fatal: false });

/** Is `line` (without its LF) a sync line? HTCondor accepts `...` and `...\r` (condor_event.cpp is_sync_line). */
function isSync(b: Uint8Array, start: number, end: number): boolean {
  const n = end - start;
  if (n !== 3 && n !== 4) return false;
  if (b[start] !== 0x2e || b[start + 1] !== 0x2e || b[start + 2] !== 0x2e) return false;
  return n === 3 || b[start + 3] === 0x0d;
}

/**
 * Detects the format from the first non-blank byte at an event boundary, as ReadUserLog's
 * determineLogType does at the start of a file and readEventNormal does in auto mode:
 * `<` is XML, `{` is JSON, a digit is the classic text.
 */
export function detectFormat(bytes: Uint8Array): LogFormat {
  for (const c of bytes) {
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
    if (c === 0x3c) return "xml";
    if (c === 0x7b) return "json";
    if (c >= 0x30 && c <= 0x39) return "classic";
    return "unknown";
  }
  return "empty";
}

/**
 * Past the start of the file only `<` and `{` mean another format (a site switched
 * DEFAULT_USERLOG_FORMAT_OPTIONS for new writers); anything else, blanks included, is a classic
 * event to be read or skipped as malformed, so that a job writing junk or whitespace cannot stop
 * the reader. "empty" is for no bytes at all.
 */
function atBoundary(bytes: Uint8Array, offset: number): LogFormat {
  if (bytes.length === 0) return "empty";
  const f = detectFormat(bytes.subarray(0, 64));
  if (f === "xml" || f === "json") return f;
  if (offset === 0 && f === "unknown") return f;
  return "classic";
}

// A line that starts like an event header (`005 (1.0.0) `). Real body lines start with a tab or
// spaces (condor_event.cpp formatBody), so one at column 0 inside an event was written by a job.
const HEADER_SHAPE = /^(\d{3}) \((\d{1,10})\.(\d{1,10})\.\d{1,10}\)/;

/**
 * Reads the complete events in `bytes`, which are the file's bytes from `offset` on. Lines are
 * split on LF only. An event is the lines from a boundary (offset 0 or just past a `...` line)
 * to the next `...` line; nothing inside it can move that boundary, so a malformed line costs at
 * most the event it is in. What follows the last `...` line is left for the next read.
 */
export function readEventLog(bytes: Uint8Array, offset: number, opts: ReadOptions): ReadResult {
  const format = atBoundary(bytes, offset);
  const result: ReadResult = { format, events: [], offset, unknown: 0, malformed: 0, pendingBytes: bytes.length, named: [] };
  if (format !== "classic") return result;
  let start = 0; // first byte of the current event
  let lineStart = 0;
  while (lineStart < bytes.length) {
    const nl = bytes.indexOf(LF, lineStart);
    if (nl < 0) break; // a line still being written
    if (isSync(bytes, lineStart, nl)) {
      const block = decoder.decode(bytes.subarray(start, lineStart));
      const hidden = headersInside(block);
      const parsed = hidden.length > 0 ? "malformed" : parseEvent(block, offset + start, opts);
      if (hidden.length > 0) result.named.push(...hidden);
      if (parsed === "unknown") result.unknown++;
      else if (parsed === "malformed") result.malformed++;
      else result.events.push(parsed);
      start = nl + 1;
      // a site may switch formats for new writers: stop at the first event in another one
      if (start < bytes.length) {
        const next = atBoundary(bytes.subarray(start), offset + start);
        if (next === "xml" || next === "json") {
          result.format = next;
          break;
        }
      }
    }
    lineStart = nl + 1;
  }
  result.offset = offset + start;
  result.pendingBytes = bytes.length - start;
  return result;
}

/**
 * Where a scan for the end of an oversized event stands: `resume` is the next byte to read, and
 * whether it starts a line (only a line's start can begin a `...` line).
 */
export interface BoundaryScan {
  /** The offset just past the first `...` line found, or undefined. */
  boundary?: number;
  resume: number;
  atLineStart: boolean;
}

/**
 * Scans `bytes` (the file's bytes from `offset`, which starts a line when `atLineStart`) for the
 * first `...` line. For a caller whose bounded read found no complete event: it reads on chunk by
 * chunk from `resume` until a boundary ends the oversized event, keeping its offset on one. A
 * short partial line at the end is read again with the next chunk, as it may be a `...` line
 * being written.
 */
export function scanForBoundary(bytes: Uint8Array, offset: number, atLineStart: boolean): BoundaryScan {
  let lineStart = 0;
  let candidate = atLineStart;
  for (;;) {
    const nl = bytes.indexOf(LF, lineStart);
    if (nl < 0) {
      if (candidate && bytes.length - lineStart <= 4) return { resume: offset + lineStart, atLineStart: true };
      return { resume: offset + bytes.length, atLineStart: lineStart === bytes.length && candidate };
    }
    if (candidate && isSync(bytes, lineStart, nl)) return { boundary: offset + nl + 1, resume: offset + nl + 1, atLineStart: true };
    lineStart = nl + 1;
    candidate = true;
  }
}

/**
 * `...\n` are the four bytes before every offset this module returns but 0. A file rewritten in
 * place to at least its old size keeps its inode and size; these bytes are what shows it.
 */
export function boundaryIntact(offset: number, before: Uint8Array): boolean {
  if (offset === 0) return true;
  const tail = (n: number) => String.fromCharCode(...before.subarray(Math.max(0, before.length - n)));
  return tail(4) === "...\n" || tail(5) === "...\r\n";
}

export type FileChange = "continue" | "truncated" | "replaced";

/**
 * Compares the saved state with a new stat of the path: another inode is another file (the log
 * was deleted and created again, or moved away); the same inode, shorter than the offset, was
 * truncated (ReadUserLogState scores a shrunk file the same way). Either way the offset means
 * nothing any more and the caller reconciles from the queue.
 */
export function compareLogFile(saved: EventLogState, now: { inode: number; size: number }): FileChange {
  if (saved.inode !== now.inode) return "replaced";
  if (now.size < saved.offset || now.size < saved.size) return "truncated";
  return "continue";
}

// ---------------------------------------------------------------- one event

const MAX_ID = 2 ** 31 - 1;

// `005 (123.000.000) ` then the date and time, then one space and the body's first line
// (condor_event.cpp ULogEvent::formatHeader; readHeader for what is accepted back).
const HEADER =
  /^(\d{3}) \((\d{1,10})\.(\d{1,10})\.(\d{1,10})\) (?:(\d{2})\/(\d{2}) |(\d{4})-(\d{2})-(\d{2})[ T])(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(Z)? (.*)$/s;

/** The job ids of header-shaped lines after the first line of `block` (and of the first, when there are any). */
function headersInside(block: string): JobId[] {
  const lines = block.split("\n");
  const out: JobId[] = [];
  for (let i = 1; i < lines.length; i++) {
    const m = HEADER_SHAPE.exec(lines[i]!);
    if (m) out.push({ cluster: Number(m[2]), proc: Number(m[3]) });
  }
  const m0 = out.length > 0 ? HEADER_SHAPE.exec(lines[0]!) : null;
  if (m0) out.unshift({ cluster: Number(m0[2]), proc: Number(m0[3]) });
  return out.filter((j) => j.cluster <= MAX_ID && j.proc <= MAX_ID);
}

function parseEvent(block: string, offset: number, opts: ReadOptions): JobEvent | "unknown" | "malformed" {
  const lines = block.split("\n");
  const m = HEADER.exec(lines[0]!.replace(/\r$/, ""));
  if (!m) return "malformed";
  const type = Number(m[1]);
  const [cluster, proc, subproc] = [Number(m[2]), Number(m[3]), Number(m[4])];
  if (cluster > MAX_ID || proc > MAX_ID || subproc > MAX_ID) return "malformed";
  if (!KNOWN.has(type)) return "unknown";
  const time = headerTime(m, opts);
  if (time === null) return "malformed";
  const ev: JobEvent = { type, cluster, proc, subproc, time, zone: m[14] ? "utc" : "local", offset };
  const first = m[15]!;
  const body = lines.slice(1, -1).map((l) => l.replace(/\r$/, ""));
  switch (type) {
    case EVENT.terminated: {
      if (first !== "Job terminated.") return "malformed";
      const exit = terminationOf(body[0]);
      if (!exit) return "malformed";
      Object.assign(ev, exit);
      break;
    }
    case EVENT.evicted: {
      if (!/^Job was evicted\.(?: Code -?\d+ Subcode -?\d+)?$/.test(first)) return "malformed";
      // "(0) Job terminated and was requeued" carries the exit like a 005 (JobEvictedEvent::formatBody)
      if (body[0] === "\t(0) Job terminated and was requeued") {
        const exit = body.map(terminationOf).find((x) => x);
        if (exit) Object.assign(ev, exit);
      }
      break;
    }
    case EVENT.attributeUpdate: {
      // AttributeUpdate::formatBody: "Setting job attribute A to V" or "Changing job attribute A from O to V"
      const a = /^(?:Setting|Changing) job attribute ([A-Za-z_][A-Za-z0-9_]*) (?:to|from) /.exec(first);
      if (!a) return "malformed";
      ev.attribute = a[1]!;
      break;
    }
    case EVENT.submit:
      if (!first.startsWith("Job submitted from host: ")) return "malformed";
      break;
    case EVENT.execute:
      if (!first.startsWith("Job executing on host: ")) return "malformed";
      break;
    case EVENT.aborted:
      if (first !== "Job was aborted.") return "malformed";
      break;
    case EVENT.held:
      if (first !== "Job was held.") return "malformed";
      break;
    case EVENT.released:
      if (first !== "Job was released.") return "malformed";
      break;
    case EVENT.shadowException:
      if (first !== "Shadow exception!") return "malformed";
      break;
    case EVENT.reconnectFailed:
      if (first !== "Job reconnection failed") return "malformed";
      break;
      // 008 (generic) is free text by design: any first line
  }
  return ev;
}

function terminationOf(line: string | undefined): { exitCode: number } | { exitSignal: number } | null {
  const n = line && /^\t\(1\) Normal termination \(return value (-?\d{1,10})\)$/.exec(line);
  if (n) return { exitCode: Number(n[1]) };
  const s = line && /^\t\(0\) Abnormal termination \(signal (\d{1,10})\)$/.exec(line);
  if (s) return { exitSignal: Number(s[1]) };
  return null;
}

function headerTime(m: RegExpExecArray, opts: ReadOptions): number | null {
  const legacy = m[5] !== undefined;
  const year = legacy ? opts.year : Number(m[7]);
  const month = Number(legacy ? m[5] : m[8]), day = Number(legacy ? m[6] : m[9]);
  const [h, mi, s] = [Number(m[10]), Number(m[11]), Number(m[12])];
  if (month < 1 || month > 12 || day < 1 || day > 31 || h > 24 || mi > 59 || s > 60) return null;
  const frac = m[13] ? Number(`0.${m[13]}`) : 0;
  const wall = Date.UTC(year, month - 1, day, h, mi, s) / 1000 + frac;
  return m[14] ? wall : wall - opts.localOffsetMinutes * 60;
}

// ---------------------------------------------------------------- the cap

/**
 * At most this many events per job per minute are passed on: a job that floods the log with
 * events about itself (or about others) costs the caller one confirming query per job per
 * minute, not one per event (docs/htcondor.md#following-the-log). The sidecar's own wrapper
 * writes a handful of 033 events per container start, readiness and exit.
 */
export const EVENTS_PER_JOB_PER_MINUTE = 120;

/** Counts per job in the current minute of the caller's clock (not the log's, which a job can write). */
export interface RateWindow {
  minute: number;
  counts: Map<string, number>;
}

export const emptyRateWindow = (): RateWindow => ({ minute: -1, counts: new Map() });

/** Jobs counted in one minute at most: the window's size does not grow with what a job writes. */
const WINDOW_MAX_JOBS = 100_000;

/**
 * Keeps the events within the cap; `limited` names the jobs some of whose events were dropped
 * (the caller still asks the queue about them: the drop loses detail, never the change). Events
 * for jobs `follows` does not know are dropped before counting: forged ids cost neither memory
 * nor a query. The window is updated in place.
 */
export function capEvents(
  events: readonly JobEvent[],
  window: RateWindow,
  nowMs: number,
  opts: { follows?: (id: string) => boolean; cap?: number } = {},
): { kept: JobEvent[]; limited: JobId[] } {
  const cap = opts.cap ?? EVENTS_PER_JOB_PER_MINUTE;
  const minute = Math.floor(nowMs / 60_000);
  if (window.minute !== minute) {
    window.minute = minute;
    window.counts.clear();
  }
  const counts = window.counts;
  const kept: JobEvent[] = [];
  const limited = new Map<string, JobId>();
  for (const e of events) {
    const key = `${e.cluster}.${e.proc}`;
    if (opts.follows && !opts.follows(key)) continue;
    const n = (counts.get(key) ?? 0) + 1;
    // Followed jobs only, so the bound is never reached in practice; past it a job counts from 1 again.
    if (n === 1 && counts.size >= WINDOW_MAX_JOBS) counts.clear();
    counts.set(key, n);
    if (n <= cap) kept.push(e);
    else limited.set(key, { cluster: e.cluster, proc: e.proc });
  }
  return { kept, limited: [...limited.values()] };
}
