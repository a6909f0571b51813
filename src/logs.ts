/**
 * getLogs (spec: interlink §7): one container's log with every kubectl option.
 *
 * Where the bytes come from: a running job → `condor_tail -no-stdout` of the container's log file
 * (listed in transfer_output_files, so the starter may send it; always with a timeout, since
 * condor_tail waits forever on a job that is not running); a finished job → the file that came
 * back with the output (fetched once with condor_transfer_data for spooled jobs); a shared
 * filesystem → the file, read directly. Finished logs are streamed from disk, never loaded whole.
 */
import type { Condor } from "./condor/cli.ts";
import type { JobId } from "./condor/parse.ts";
import type { FileConfig } from "./config.ts";
import { SidecarError } from "./core/errors.ts";
import { type LogOpts, LogRequestSchema, formatLines, sinceMs, truncateBytes } from "./core/logs.ts";
import { logFileName } from "./core/types.ts";
import type { Logger } from "./log.ts";
import { fileSize, readRange } from "./store/files.ts";
import type { PodRecord, Store } from "./store/store.ts";

export interface LogDeps {
  store: Store;
  condor: Condor;
  config: FileConfig;
  log: Logger;
  now: () => number;
  /** JobStatus from the shared condor_q snapshot, or undefined when the job is not in the queue. */
  jobStatus(r: PodRecord): Promise<number | undefined>;
  /** Brings the record up to date (finalizes a job that has ended). */
  refresh(r: PodRecord): Promise<void>;
  fetchOutput(r: PodRecord): Promise<void>;
}

/** What condor_tail may bring back of a running job's log in one call. */
const LIVE_MAX_BYTES = 16 * 1024 * 1024;
const CHUNK = 64 * 1024;
const FOLLOW_POLL_MS = 1000;

type Container = { name: string; init: boolean };

export function createLogService(d: LogDeps) {
  const jobId = (r: PodRecord): JobId => ({ cluster: r.cluster!, proc: r.proc! });

  /** Where the log is now: the bytes of a live tail, or a local file to stream. */
  async function source(r: PodRecord, c: Container, previous: boolean): Promise<{ kind: "bytes"; text: string } | { kind: "file"; path: string }> {
    const file = logFileName(c.name, c.init, previous);
    const path = `${r.dir}/${file}`;
    if (r.terminal === undefined && r.cluster !== undefined && !d.config.SharedFilesystem) {
      if ((await d.jobStatus(r)) === 2) {
        const res = await d.condor.tail(jobId(r), file, LIVE_MAX_BYTES, d.config.QueryTimeoutSeconds * 1000);
        if (res.code === 0 && !res.timedOut) return { kind: "bytes", text: dropPartialFirstLine(res.stdout, LIVE_MAX_BYTES) };
        d.log.debug("condor_tail gave nothing", { uid: r.uid, code: res.code, stderr: res.stderr.slice(0, 200) });
      }
      // Not running, or it stopped just now: if the job has ended, finalizing it puts its output in place.
      await d.refresh(r);
      r = d.store.get(r.uid) ?? r;
      // Still queued (idle, held, transferring output): nothing to show yet.
      if (r.terminal === undefined) return { kind: "bytes", text: "" };
    }
    if (r.spooled && r.terminal !== undefined) await d.fetchOutput(r).catch(() => undefined);
    return { kind: "file", path };
  }

  return {
    async logs(body: unknown, signal: AbortSignal): Promise<ReadableStream<Uint8Array> | string> {
      const parsed = LogRequestSchema.safeParse(body);
      if (!parsed.success) {
        const i = parsed.error.issues[0]!;
        throw new SidecarError("invalid", `getLogs: ${i.path.join(".") || "body"}: ${i.message}`);
      }
      const req = parsed.data;
      const r = d.store.get(req.PodUID);
      if (!r || r.phase === "deleted" || r.phase === "removing") {
        throw new SidecarError("not_found", `Pod ${req.Namespace}/${req.PodName} (${req.PodUID}) is not known to this sidecar`);
      }
      const c = r.containers.find((x) => x.name === req.ContainerName) ?? (req.ContainerName === "" && r.containers.filter((x) => !x.init).length === 1 ? r.containers.find((x) => !x.init) : undefined);
      if (!c) throw new SidecarError("not_found", `Pod ${r.namespace}/${r.name} has no container "${req.ContainerName}"`);
      if (r.phase === "creating") return "";

      const opts = req.Opts;
      const since = sinceMs(opts, d.now());
      const src = await source(r, c, opts.Previous);
      const follow = opts.Follow && !opts.Previous;
      return pacedStream(opts.Bytes, async (out) => {
        let offset = 0;
        if (src.kind === "bytes") {
          await emitText(src.text, opts, since, out);
          offset = byteLength(src.text.slice(0, src.text.lastIndexOf("\n") + 1));
        } else {
          offset = await emitFile(src.path, opts, since, out);
        }
        if (follow) await followLog(r.uid, c, opts, offset, src.kind === "bytes", out, signal);
      });
    },
  };

  /**
   * Follow: every second, send the complete lines written since; end when the pod has ended
   * (after a last read), is deleted, the byte budget is spent, or the client goes away.
   */
  async function followLog(uid: string, c: Container, opts: LogOpts, offset: number, live: boolean, out: Limiter, signal: AbortSignal) {
    // A live tail counts bytes of condor_tail's window, a file counts bytes of the file.
    let liveSeen = offset;
    while (!out.full() && !signal.aborted) {
      await sleep(FOLLOW_POLL_MS, signal);
      let r = d.store.get(uid);
      if (signal.aborted || !r || r.phase === "deleted" || r.phase === "removing") return;
      if (r.terminal === undefined) {
        await d.refresh(r);
        r = d.store.get(uid) ?? r;
      }
      const src = await source(r, c, false).catch(() => undefined);
      if (src?.kind === "bytes") {
        // condor_tail returns the last bytes of a growing file: what is new is beyond what was seen.
        const bytes = new TextEncoder().encode(src.text);
        const fresh = new TextDecoder().decode(bytes.subarray(Math.min(liveSeen, bytes.byteLength)));
        const cut = fresh.lastIndexOf("\n");
        if (cut >= 0) {
          await emitText(fresh.slice(0, cut + 1), opts, undefined, out);
          liveSeen += byteLength(fresh.slice(0, cut + 1));
        }
        live = true;
      } else if (src?.kind === "file") {
        if (live) {
          // The job ended while we followed it live: continue in the returned file where the tail was.
          offset = liveSeen;
          live = false;
        }
        offset = await emitFileFrom(src.path, offset, opts, out);
      }
      if (r.terminal !== undefined) return;
    }
  }
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
  const enc = new TextEncoder();
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

function byteLength(s: string): number {
  return new TextEncoder().encode(s).byteLength;
}

/** condor_tail returns the last N bytes: the first line may be cut in the middle. */
function dropPartialFirstLine(text: string, max: number): string {
  if (byteLength(text) < max) return text;
  const nl = text.indexOf("\n");
  return nl < 0 ? "" : text.slice(nl + 1);
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
 * Streams a finished log file through the options without loading it: the start offset for
 * `Tail` is found by scanning backwards; the rest is read forward in chunks. Returns the offset
 * just past the last complete line sent.
 */
async function emitFile(path: string, opts: LogOpts, since: number | undefined, out: Limiter): Promise<number> {
  const size = fileSize(path) ?? 0;
  if (size === 0) return 0;
  let start = 0;
  // Lines are in time order, so the since-filtered lines are a suffix: tail first, then filter.
  if (opts.Tail > 0) start = tailStart(path, size, opts.Tail);
  return emitRange(path, start, size, opts, since, out);
}

async function emitFileFrom(path: string, from: number, opts: LogOpts, out: Limiter): Promise<number> {
  const size = fileSize(path) ?? 0;
  if (size <= from) return from;
  return emitRange(path, from, size, { ...opts, Tail: 0 }, undefined, out, true);
}

async function emitRange(path: string, from: number, to: number, opts: LogOpts, since: number | undefined, out: Limiter, completeOnly = false): Promise<number> {
  let pos = from;
  let carry = "";
  const dec = new TextDecoder();
  while (pos < to && !out.full()) {
    const chunk = readRange(path, pos, Math.min(CHUNK, to - pos));
    if (chunk.byteLength === 0) break;
    pos += chunk.byteLength;
    const text = carry + dec.decode(chunk, { stream: true });
    const cut = text.lastIndexOf("\n");
    if (cut < 0) {
      carry = text;
      continue;
    }
    carry = text.slice(cut + 1);
    const lines = formatLines(text.slice(0, cut).split("\n"), opts, since);
    if (lines.length) await out.push(`${lines.join("\n")}\n`);
  }
  if (carry !== "" && !completeOnly) {
    const lines = formatLines([carry], opts, since);
    if (lines.length) await out.push(`${lines.join("\n")}\n`);
    return pos;
  }
  return pos - byteLength(carry);
}

/** Byte offset where the last `n` lines begin. */
function tailStart(path: string, size: number, n: number): number {
  let pos = size;
  let newlines = 0;
  // A trailing newline ends the last line; it does not start a new one.
  const last = readRange(path, size - 1, 1);
  let skipFinal = last[0] === 0x0a;
  while (pos > 0) {
    const len = Math.min(CHUNK, pos);
    const chunk = readRange(path, pos - len, len);
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

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
