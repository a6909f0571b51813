/**
 * getLogs (docs/interlink.md#get-getlogs): one container's log with every kubectl option.
 *
 * Where the bytes come from: a running job → `condor_tail -no-stdout` of the container's log file
 * (listed in transfer_output_files, so the starter may send it; always with a timeout, since
 * condor_tail waits forever on a job that is not running); a finished job → the file that came
 * back with the output (fetched once with condor_transfer_data for spooled jobs); a shared
 * filesystem → the file, read directly. Finished logs are streamed from disk, never loaded whole;
 * a one-off read of a running job's log returns its last 16 MiB at most.
 *
 * Follow polls every second with a small tail window and finds what is new by overlap with the
 * last complete line already seen (see findAfterAnchor), so neither a window that moves nor the
 * job ending (live tail → returned file) loses or repeats lines. It ends, after a last read, when
 * the container's own state line reads terminated (the wrapper writes that only once the log is
 * complete and the container will not be restarted), when the container restarts (the instance
 * ended, as kubectl logs -f on a kubelet; the rest of it is read from the rotated file), when the
 * job has ended, when the byte budget is spent, or when the client or the sidecar goes away.
 */
import { adNumber } from "../core/classad.ts";
import { SidecarError } from "../core/errors.ts";
import {
  completeEnd,
  findAfterAnchor,
  firstLineStart,
  formatLines,
  lastCompleteLine,
  type LogOpts,
  type LogRequest,
  sinceMs,
  truncateBytes,
} from "../core/log-options.ts";
import type { StateLine } from "../core/state-line.ts";
import { linesFromAd } from "../core/status.ts";
import { containerKey, logFileName } from "../core/types.ts";
import { type JobFile, jobFileSize, readJobFile, readStateFiles, UnsafeJobFile } from "../store/files.ts";
import { sleep } from "../runtime/sleep.ts";
import type { PodRecord } from "../store/store.ts";
import type { Ctx } from "./context.ts";
import { jid, jobId, unsafeFileWarning } from "./records.ts";

type Container = { name: string; init: boolean };

/** What condor_tail may bring back of a running job's log in one call. */
const LIVE_MAX_BYTES = 16 * 1024 * 1024;
/** Follow starts with this window and grows it (up to LIVE_MAX_BYTES) until it overlaps what was seen. */
const FOLLOW_MIN_WINDOW = 64 * 1024;
const CHUNK = 64 * 1024;
const FOLLOW_POLL_MS = 1000;
/** Polls in a row where the last line sent is in neither log file before follow gives up. */
const ROTATION_RETRIES = 5;

/** The last bytes of a log; `whole` when they are the whole file. */
type Window = { bytes: Uint8Array; whole: boolean; missing?: boolean };
/** Where the log is now: a live tail window, a local file, or nowhere yet (queued, not running). */
type Source = { kind: "live"; window: Window } | { kind: "file"; file: JobFile } | { kind: "none" };

const enc = new TextEncoder();
const dec = new TextDecoder();

/** JobStatus from the shared condor_q snapshot, or undefined when the job is not in the queue. */
async function jobStatus(d: Ctx, r: PodRecord): Promise<number | undefined> {
  const ad = d.queue.current()?.ads.get(jid(r));
  return ad ? adNumber(ad, "JobStatus") : undefined;
}

/**
 * The container's own state line: chirped into the job ad while the job is in the queue (the
 * shared condor_q snapshot), the returned podstate file once it has left; undefined when not
 * known (yet).
 */
async function containerState(d: Ctx, r: PodRecord, c: Container): Promise<StateLine | undefined> {
  const k = containerKey(c.name, c.init);
  const ad = d.queue.current()?.ads.get(jid(r));
  return ad ? linesFromAd(ad, r.containers).get(k) : readStateFiles(r.dir, [k], unsafeFileWarning(d, r)).get(k);
}

async function source(d: Ctx, uid: string, file: string, maxBytes: number): Promise<Source> {
  let r = d.store.get(uid);
  if (!r || r.phase === "creating") return { kind: "none" };
  if (r.terminal === undefined && r.cluster !== undefined && !d.config.SharedFilesystem) {
    const status = await jobStatus(d, r);
    if (status === 2) {
      const res = await d.condor.tail(jobId(r), file, maxBytes, d.config.QueryTimeoutSeconds * 1000);
      if (res.code === 0 && !res.timedOut) {
        // condor_tail's output arrives decoded; valid UTF-8 re-encodes to the same bytes, and
        // anything else only grows, so a short result is surely the whole file.
        const bytes = enc.encode(res.stdout);
        return { kind: "live", window: { bytes, whole: bytes.byteLength < maxBytes } };
      }
      d.log.debug("condor_tail gave nothing", { uid, code: res.code, stderr: res.stderr.slice(0, 200) });
    }
    // Not running, or it stopped just now: if the job has ended, the refresher records its end
    // once its output is in place; a refresh now saves waiting for the next one.
    await d.queue.refreshNow();
    r = d.store.get(uid) ?? r;
    if (r.terminal === undefined) {
      // Held: the log of a container the kernel killed, which the wrapper put in the pod folder
      // since a held job sends no output back (docs/logs.md#a-job-killed-for-memory).
      if (status === 5 && !r.spooled && keptLog(r, file)) return { kind: "file", file: { dir: r.dir, rel: file } };
      // Still queued (idle, held, transferring output): nothing to show yet.
      return { kind: "none" };
    }
  }
  return { kind: "file", file: { dir: r.dir, rel: file } };
}

/** Whether the pod folder holds this log as a plain file (it is checked again when it is read). */
function keptLog(r: PodRecord, file: string): boolean {
  try {
    return jobFileSize({ dir: r.dir, rel: file }) !== undefined;
  } catch {
    return false;
  }
}

/** The last `maxBytes` of a log wherever it is; undefined when it is nowhere yet. */
async function tailWindow(d: Ctx, uid: string, file: string, maxBytes: number): Promise<Window | undefined> {
  const src = await source(d, uid, file, maxBytes);
  if (src.kind === "none") return undefined;
  if (src.kind === "live") return src.window;
  const size = jobFileSize(src.file);
  if (size === undefined) return { bytes: new Uint8Array(), whole: true, missing: true };
  const start = Math.max(0, size - maxBytes);
  // Decoded and encoded as condor_tail's output is, so that a line seen live matches in the file.
  const bytes = size > start ? enc.encode(dec.decode(readJobFile(src.file, start, size - start))) : new Uint8Array();
  return { bytes, whole: start === 0 };
}

/**
 * The complete lines written after `anchor` (and the partial last line too when `final`).
 * "none": the log is nowhere yet; "rotated": the file no longer holds the anchor.
 */
async function readNew(
  d: Ctx,
  uid: string,
  file: string,
  anchor: Uint8Array | undefined,
  hint: number,
  final: boolean,
): Promise<"none" | "rotated" | { bytes: Uint8Array; anchor: Uint8Array | undefined; hint: number }> {
  let max = hint;
  for (;;) {
    const w = await tailWindow(d, uid, file, max);
    if (!w) return "none";
    // No file: not written yet (shared filesystem), or a job that ended without it (lost).
    if (w.missing) return final ? { bytes: w.bytes, anchor, hint } : "none";
    let at = findAfterAnchor(w.bytes, anchor, w.whole);
    if (at === undefined && !w.whole && max < LIVE_MAX_BYTES) {
      // Each try is one more condor_tail: grow fast (64 KiB → 16 MiB in four steps).
      max = Math.min(max * 4, LIVE_MAX_BYTES);
      continue;
    }
    if (at === undefined && w.whole) return "rotated";
    if (at === undefined) {
      d.log.warn("log follow skipped lines: more than 16 MiB arrived between two polls", { uid, file });
      at = firstLineStart(w.bytes);
    }
    const fresh = w.bytes.subarray(at);
    const complete = fresh.subarray(0, completeEnd(fresh));
    // The next poll starts with a window that fits what arrived in this one.
    const next = fresh.byteLength > max / 4 ? max : Math.max(FOLLOW_MIN_WINDOW, max / 2);
    return { bytes: final ? fresh : complete, anchor: lastCompleteLine(complete) ?? anchor, hint: next };
  }
}

/** Follow: every second, send the complete lines written since; see the module comment for the end. */
async function followLog(
  d: Ctx,
  uid: string,
  c: Container,
  opts: LogOpts,
  anchor: Uint8Array | undefined,
  restarts: number | undefined,
  out: Limiter,
  signal: AbortSignal,
) {
  const current = logFileName(c.name, c.init);
  const previous = logFileName(c.name, c.init, true);
  let hint = FOLLOW_MIN_WINDOW;
  let misses = 0;
  const send = (bytes: Uint8Array) => emitText(dec.decode(bytes), opts, undefined, out);
  while (!out.full() && !signal.aborted) {
    await sleep(FOLLOW_POLL_MS, signal);
    const r = d.store.get(uid);
    if (signal.aborted || !r || r.phase === "deleted" || r.phase === "removing") return;
    const st = await containerState(d, r, c).catch(() => undefined);
    restarts ??= st?.restartCount;
    const restarted = st !== undefined && restarts !== undefined && st.restartCount > restarts;
    const final = st?.state === "terminated" || r.terminal !== undefined;
    const got = restarted ? "rotated" : await readNew(d, uid, current, anchor, hint, final);
    // Not running and not ended (queued again, or between queue and history): try again.
    if (got === "none") continue;
    if (got === "rotated") {
      // The instance ended (a restart, or the current file no longer holds the last line sent):
      // the wrapper moved its log to the previous file, which must hold that line. If it does
      // not, the read was torn (a sandbox going away as the job ends): look again.
      const rest = await readNew(d, uid, previous, anchor, hint, true);
      if (typeof rest === "object") {
        await send(rest.bytes);
        d.log.debug("log follow ends with the container instance (restarted)", { uid, container: c.name, restarts: st?.restartCount });
        return;
      }
      if (++misses < ROTATION_RETRIES) continue;
      d.log.warn("log follow: the last line sent is in neither log file (restarted twice between two polls?); lines may be missing", {
        uid,
        container: c.name,
      });
      return;
    }
    misses = 0;
    await send(got.bytes);
    anchor = got.anchor;
    hint = got.hint;
    if (final) {
      d.log.debug("log follow ends: the container terminated or the job ended", {
        uid,
        container: c.name,
        state: st?.state,
        jobEnded: r.terminal !== undefined,
      });
      return;
    }
  }
}

/** The last complete line of a file before `offset` (a line of up to 16 MiB), or undefined. */
function lastLineBefore(path: JobFile, offset: number): Uint8Array | undefined {
  if (offset === 0) return undefined;
  for (let len = CHUNK;; len *= 2) {
    const start = Math.max(0, offset - len);
    const bytes = enc.encode(dec.decode(readJobFile(path, start, offset - start)));
    const line = lastCompleteLine(bytes);
    // A line that starts at the window's edge may be cut, unless the window is the file's start.
    if (line && (start === 0 || line.byteLength + 1 < bytes.byteLength)) return line;
    if (start === 0 || len >= LIVE_MAX_BYTES) return line;
  }
}

export function createLogService(d: Ctx): { logs(req: LogRequest, signal: AbortSignal): Promise<ReadableStream<Uint8Array> | string> } {
  return {
    async logs(req, signal) {
      const r = d.store.get(req.PodUID);
      if (!r || r.phase === "deleted" || r.phase === "removing") {
        throw new SidecarError("not_found", `Pod ${req.Namespace}/${req.PodName} (${req.PodUID}) is not known to this sidecar`);
      }
      const c = r.containers.find((x) => x.name === req.ContainerName) ??
        (req.ContainerName === "" && r.containers.filter((x) => !x.init).length === 1 ? r.containers.find((x) => !x.init) : undefined);
      if (!c) throw new SidecarError("not_found", `Pod ${r.namespace}/${r.name} has no container "${req.ContainerName}"`);
      const opts = req.Opts;
      const follow = opts.Follow && !opts.Previous;
      if (r.phase === "creating" && !follow) return "";

      const since = sinceMs(opts, d.now());
      // Read before the log: a container that reads terminated has its whole log written.
      const state = follow && r.terminal === undefined ? await containerState(d, r, c).catch(() => undefined) : undefined;
      const src = await source(d, r.uid, logFileName(c.name, c.init, opts.Previous), LIVE_MAX_BYTES);
      // Checked before the answer starts, so that a refusal is a status, not a broken stream.
      if (src.kind === "file") {
        try {
          jobFileSize(src.file);
        } catch (err) {
          if (!(err instanceof UnsafeJobFile)) throw err;
          d.log.warn("refusing to serve a log that is not a plain file of the pod folder", { uid: r.uid, error: err.message });
          throw new SidecarError(
            "forbidden",
            `Pod ${r.namespace}/${r.name}: container "${c.name}": ${err.message} in the pod folder; the sidecar does not read it`,
          );
        }
      }
      if (src.kind === "file" && !follow) return logFileStream(src.file, opts, since);
      const ended = () => state?.state === "terminated" || d.store.get(r.uid)?.terminal !== undefined;
      return pacedStream(opts.Bytes, async (out) => {
        let anchor: Uint8Array | undefined;
        if (src.kind === "live") {
          const w = src.window;
          const bytes = w.whole ? w.bytes : w.bytes.subarray(firstLineStart(w.bytes));
          // While following, a partial last line waits until it is complete.
          const complete = bytes.subarray(0, completeEnd(bytes));
          await emitText(dec.decode(follow && !ended() ? complete : bytes), opts, since, out);
          anchor = lastCompleteLine(complete);
        } else if (src.kind === "file") {
          const final = !follow || ended();
          const offset = await emitFile(src.file, opts, since, out, !final);
          if (!final) anchor = lastLineBefore(src.file, offset);
        }
        if (!follow || (src.kind !== "none" && ended())) return;
        try {
          await followLog(d, r.uid, c, opts, anchor, state?.restartCount, out, signal);
        } catch (err) {
          // The job replaced its log while it was followed: the stream ends, without the file.
          if (!(err instanceof UnsafeJobFile)) throw err;
          d.log.warn("log follow ends: the log is no longer a plain file of the pod folder", { uid: r.uid, error: err.message });
        }
      });
    },
  };
}

/** A log file with the kubectl options applied (all but follow), as the answer's byte stream. */
export function logFileStream(file: JobFile, opts: LogOpts, since: number | undefined): ReadableStream<Uint8Array> {
  return pacedStream(opts.Bytes, async (out) => {
    await emitFile(file, opts, since, out);
  });
}

interface Limiter {
  /** Sends text, cut at the byte budget; resolves when the reader wants more. */
  push(s: string): Promise<void>;
  /** The budget is spent or the reader went away. */
  full(): boolean;
}

/**
 * A byte stream produced at the reader's pace: `produce` awaits each push until the consumer
 * (the HTTP response, itself paced by the socket) asks for more, so a 100 MB log never queues
 * up in memory. `maxBytes` is the `Bytes` budget (0: none), counted and cut in bytes.
 */
function pacedStream(maxBytes: number, produce: (out: Limiter) => Promise<void>): ReadableStream<Uint8Array> {
  let left = maxBytes > 0 ? maxBytes : Infinity;
  let cancelled = false;
  let wake: (() => void) | undefined;
  const resume = () => {
    wake?.();
    wake = undefined;
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const out: Limiter = {
          async push(s) {
            if (s === "" || left <= 0 || cancelled) return;
            const bytes = truncateBytes(enc.encode(s), left);
            left -= bytes.byteLength;
            controller.enqueue(bytes);
            if ((controller.desiredSize ?? 1) <= 0 && !cancelled) await new Promise<void>((r) => (wake = r));
          },
          full: () => left <= 0 || cancelled,
        };
        // Not awaited: pull() can only run once start() has returned.
        produce(out).then(
          () => !cancelled && controller.close(),
          (err) => !cancelled && controller.error(err),
        );
      },
      pull: resume,
      cancel() {
        cancelled = true;
        resume();
      },
    },
    { highWaterMark: 2 },
  );
}

function splitLines(text: string): string[] {
  if (text === "") return [];
  return (text.endsWith("\n") ? text.slice(0, -1) : text).split("\n");
}

async function emitText(text: string, opts: LogOpts, since: number | undefined, out: Limiter): Promise<void> {
  let lines = formatLines(splitLines(text), opts, since);
  if (opts.Tail > 0 && lines.length > opts.Tail) lines = lines.slice(-opts.Tail);
  if (lines.length) await out.push(`${lines.join("\n")}\n`);
}

/**
 * Streams a log file through the options without loading it: the start offset for `Tail` is
 * found by scanning backwards; the rest is read forward in chunks. Returns the offset just past
 * the last line sent; with `completeOnly` a partial last line is held back.
 */
async function emitFile(path: JobFile, opts: LogOpts, since: number | undefined, out: Limiter, completeOnly = false): Promise<number> {
  const size = jobFileSize(path) ?? 0;
  if (size === 0) return 0;
  let start = 0;
  // Lines are in time order, so the since-filtered lines are a suffix: tail first, then filter.
  if (opts.Tail > 0) start = tailStart(path, size, opts.Tail);
  return emitRange(path, start, size, opts, since, out, completeOnly);
}

async function emitRange(
  path: JobFile,
  from: number,
  to: number,
  opts: LogOpts,
  since: number | undefined,
  out: Limiter,
  completeOnly: boolean,
): Promise<number> {
  let pos = from;
  let carry = new Uint8Array();
  while (pos < to && !out.full()) {
    const chunk = readJobFile(path, pos, Math.min(CHUNK, to - pos));
    if (chunk.byteLength === 0) break;
    pos += chunk.byteLength;
    const bytes = carry.byteLength ? concat(carry, chunk) : chunk;
    const cut = completeEnd(bytes);
    carry = bytes.slice(cut);
    if (cut === 0) continue;
    const lines = formatLines(dec.decode(bytes.subarray(0, cut - 1)).split("\n"), opts, since);
    if (lines.length) await out.push(`${lines.join("\n")}\n`);
  }
  if (carry.byteLength && !completeOnly) {
    const lines = formatLines([dec.decode(carry)], opts, since);
    if (lines.length) await out.push(`${lines.join("\n")}\n`);
    return pos;
  }
  return pos - carry.byteLength;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
}

/** Byte offset where the last `n` lines begin. */
function tailStart(path: JobFile, size: number, n: number): number {
  let pos = size;
  let newlines = 0;
  // A trailing newline ends the last line; it does not start a new one.
  const last = readJobFile(path, size - 1, 1);
  let skipFinal = last[0] === 0x0a;
  while (pos > 0) {
    const len = Math.min(CHUNK, pos);
    const chunk = readJobFile(path, pos - len, len);
    for (let i = chunk.byteLength - 1; i >= 0; i--) {
      if (chunk[i] !== 0x0a) continue;
      if (skipFinal) {
        skipFinal = false;
        continue;
      }
      newlines++;
      if (newlines === n) return pos - len + i + 1;
    }
    pos -= len;
  }
  return 0;
}
