/**
 * kubectl logs options applied to a container log (docs/interlink.md#get-getlogs). Pure.
 *
 * The wrapper writes every line as `<RFC 3339 UTC timestamp> <line>` (stdout and stderr
 * interleaved); the timestamp is kept internally so that SinceSeconds/SinceTime/Timestamps work,
 * and stripped unless Timestamps is asked for. Order as the kubelet: since → tail → bytes.
 */
import { z } from "zod";

export const LogRequestSchema = z.object({
  Namespace: z.string(),
  PodUID: z.string().min(1),
  PodName: z.string(),
  ContainerName: z.string(),
  Opts: z
    .object({
      Tail: z.number().int().nonnegative().default(0),
      Bytes: z.number().int().nonnegative().default(0),
      Timestamps: z.boolean().default(false),
      Follow: z.boolean().default(false),
      Previous: z.boolean().default(false),
      SinceSeconds: z.number().int().nonnegative().default(0),
      SinceTime: z.string().nullable().default(null),
    })
    .default({ Tail: 0, Bytes: 0, Timestamps: false, Follow: false, Previous: false, SinceSeconds: 0, SinceTime: null }),
});
export type LogRequest = z.infer<typeof LogRequestSchema>;
export type LogOpts = LogRequest["Opts"];

/** The earliest time (epoch ms) a line may have, or undefined for no limit. `0001-01-01…` means unset. */
export function sinceMs(opts: LogOpts, nowMs: number): number | undefined {
  if (opts.SinceSeconds > 0) return nowMs - opts.SinceSeconds * 1000;
  if (opts.SinceTime && !opts.SinceTime.startsWith("0001-01-01")) {
    const t = Date.parse(opts.SinceTime);
    if (!Number.isNaN(t)) return t;
  }
  return undefined;
}

const STAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) /;

/** Splits a stamped line; lines without a stamp (never expected) pass through with none. */
function splitStamp(line: string): { stamp?: string; text: string } {
  const m = STAMP.exec(line);
  return m ? { stamp: m[1], text: line.slice(m[0].length) } : { text: line };
}

function stampMs(stamp: string): number {
  // Date.parse keeps milliseconds only; enough for since-filters.
  return Date.parse(stamp);
}

/** Formats complete lines (each ending in "\n") for the response. */
export function formatLines(lines: readonly string[], opts: LogOpts, since: number | undefined): string[] {
  const out: string[] = [];
  for (const line of lines) {
    const { stamp, text } = splitStamp(line);
    if (since !== undefined && stamp !== undefined && stampMs(stamp) < since) continue;
    out.push(opts.Timestamps && stamp ? `${stamp} ${text}` : text);
  }
  return out;
}

/**
 * The first `max` bytes. `Bytes` is the kubelet's LimitBytes, a byte limit: a multibyte character
 * at the cut is cut too (decoding and re-encoding would turn one byte of "é" into three).
 */
export function truncateBytes(bytes: Uint8Array, max: number): Uint8Array {
  return bytes.byteLength <= max ? bytes : bytes.subarray(0, max);
}

const NL = 0x0a;

function startsWith(hay: Uint8Array, prefix: Uint8Array): boolean {
  if (hay.byteLength < prefix.byteLength) return false;
  for (let i = 0; i < prefix.byteLength; i++) if (hay[i] !== prefix[i]) return false;
  return true;
}

/** Last index of `needle` in `hay` that starts at or before `from`, or -1. */
function lastIndexOfBytes(hay: Uint8Array, needle: Uint8Array, from = hay.byteLength - needle.byteLength): number {
  const n = needle.byteLength;
  outer: for (let i = Math.min(from, hay.byteLength - n); i >= 0; i--) {
    for (let j = n - 1; j >= 0; j--) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/**
 * Where the bytes not yet seen begin in the tail window of a growing log, found by overlap: just
 * after the last complete line already seen (`anchor`, without its newline). Lines carry a
 * microsecond timestamp, so a line is as good as an offset, and unlike an offset it survives a
 * window whose start moves. `whole`: the window holds the whole file.
 *
 * Returns the index, or undefined when the anchor is not in the window: a bigger window may find
 * it (not whole), or the file is not the one the anchor came from (whole: it was rotated).
 */
export function findAfterAnchor(tail: Uint8Array, anchor: Uint8Array | undefined, whole: boolean): number | undefined {
  if (anchor === undefined) return whole ? 0 : undefined;
  const needle = new Uint8Array(anchor.byteLength + 2);
  needle[0] = NL;
  needle.set(anchor, 1);
  needle[needle.byteLength - 1] = NL;
  const at = lastIndexOfBytes(tail, needle);
  if (at >= 0) return at + needle.byteLength;
  // The anchor is the file's first line: only a whole window proves the line starts there.
  if (whole && startsWith(tail, needle.subarray(1))) return needle.byteLength - 1;
  return undefined;
}

/** The index just past the last newline (0 when there is none): where a partial last line starts. */
export function completeEnd(bytes: Uint8Array): number {
  return bytes.lastIndexOf(NL) + 1;
}

/** The last complete line (without its newline) of bytes, or undefined when there is none. */
export function lastCompleteLine(bytes: Uint8Array): Uint8Array | undefined {
  const end = completeEnd(bytes);
  if (end === 0) return undefined;
  // (A negative fromIndex would count from the end.)
  const start = end >= 2 ? bytes.lastIndexOf(NL, end - 2) + 1 : 0;
  return bytes.slice(start, end - 1);
}

/** Index of the first line start in a window whose first line may be cut (after the first newline). */
export function firstLineStart(bytes: Uint8Array): number {
  return bytes.indexOf(NL) + 1;
}
