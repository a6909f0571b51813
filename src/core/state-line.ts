/**
 * The per-container state line: how the job's wrapper reports each container.
 *
 * The wrapper writes it to `podstate/<key>` in the sandbox and chirps it into the job attribute
 * `stateAttrName(index, init)` as a ClassAd string literal. Chirped strings do not round-trip
 * backslashes and silently drop values with newlines
 * (docs/htcondor.md#what-condor_chirp-does-to-strings), so the line holds only plain tokens:
 * digits, letters, `-`.
 *
 *   1 <state> <reason> <exitCode> <startedAt> <finishedAt> <ready> <restartCount> \
 *     <lastExitCode> <lastReason> <lastStartedAt> <lastFinishedAt> <signal> [<message>]
 *
 * - `1` is the format version.
 * - state: `waiting` | `running` | `terminated`.
 * - reason: a token matching [A-Za-z0-9_.:]+ (e.g. ContainerCreating, CrashLoopBackOff,
 *   Completed, Error, DeadlineExceeded, StartupProbeFailed), or `-`.
 * - exitCode, signal: integers or `-`; times: epoch seconds or `-`; ready: 0 | 1.
 * - last*: the previous terminated instance of the container (after a restart), or `-`.
 * - message (optional, added after the first 13 fields, which parsers before it ignore): why the
 *   container is in this state, for people (e.g. the mount the wrapper refused), as unpadded
 *   base64url of its UTF-8 text: the only free text a chirped string keeps whole. Decoded, it is
 *   made one line and cut to MAX_MESSAGE characters, since the job can chirp anything.
 */

export type ContainerStateName = "waiting" | "running" | "terminated";

export interface StateLine {
  state: ContainerStateName;
  reason?: string;
  exitCode?: number;
  startedAt?: number;
  finishedAt?: number;
  ready: boolean;
  restartCount: number;
  last?: { exitCode: number; reason?: string; startedAt?: number; finishedAt?: number };
  signal?: number;
  message?: string;
}

const TOKEN = /^[A-Za-z0-9_.:]+$/;
/** The wrapper encodes at most 400 bytes; anything much longer was not written by it. */
const MESSAGE_TOKEN = /^[A-Za-z0-9_-]{1,1100}$/;
/** Longest message passed on, in characters. */
export const MAX_MESSAGE = 400;

/** Line breaks and control characters (C0, DEL, C1, U+2028/2029) become one space. */
function oneLineText(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029]+/gu, " ").trim();
}

function decodeMessage(tok: string | undefined): string | undefined {
  if (tok === undefined || !MESSAGE_TOKEN.test(tok) || tok.length % 4 === 1) return undefined;
  const b64 = tok.replaceAll("-", "+").replaceAll("_", "/");
  let raw: string;
  try {
    const binary = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
    // Not fatal: the wrapper cuts at 400 bytes, which may split the last character (dropped).
    raw = new TextDecoder().decode(Uint8Array.from(binary, (ch) => ch.charCodeAt(0))).replace(/\uFFFD+$/, "");
  } catch {
    return undefined;
  }
  // Bytes that are not UTF-8 text: not a message.
  if (raw.includes("\uFFFD")) return undefined;
  const text = oneLineText(raw);
  return text === "" ? undefined : [...text].slice(0, MAX_MESSAGE).join("");
}

function encodeMessage(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function int(tok: string | undefined): number | undefined {
  if (tok === undefined || tok === "-") return undefined;
  return /^-?\d+$/.test(tok) ? Number(tok) : undefined;
}

function reasonTok(tok: string | undefined): string | undefined {
  return tok !== undefined && tok !== "-" && TOKEN.test(tok) ? tok : undefined;
}

/** Parses one state line; returns undefined for anything malformed (a torn write, an old format). */
export function parseStateLine(text: string): StateLine | undefined {
  const t = text.trim().split(/\s+/);
  if (t.length < 13 || t[0] !== "1") return undefined;
  const state = t[1];
  if (state !== "waiting" && state !== "running" && state !== "terminated") return undefined;
  const restartCount = int(t[7]);
  if (restartCount === undefined || restartCount < 0) return undefined;
  const lastExit = int(t[8]);
  const message = decodeMessage(t[13]);
  return {
    state,
    reason: reasonTok(t[2]),
    exitCode: int(t[3]),
    startedAt: int(t[4]),
    finishedAt: int(t[5]),
    ready: t[6] === "1",
    restartCount,
    last: lastExit === undefined ? undefined : { exitCode: lastExit, reason: reasonTok(t[9]), startedAt: int(t[10]), finishedAt: int(t[11]) },
    signal: int(t[12]),
    ...(message !== undefined ? { message } : {}),
  };
}

/** Renders a state line (used by tests and by the dummy job; the wrapper writes the same in bash). */
export function formatStateLine(s: StateLine): string {
  const o = (v: number | string | undefined) => (v === undefined ? "-" : String(v));
  return [
    "1",
    s.state,
    o(s.reason),
    o(s.exitCode),
    o(s.startedAt),
    o(s.finishedAt),
    s.ready ? "1" : "0",
    String(s.restartCount),
    o(s.last?.exitCode),
    o(s.last?.reason),
    o(s.last?.startedAt),
    o(s.last?.finishedAt),
    o(s.signal),
    ...(s.message ? [encodeMessage(s.message)] : []),
  ].join(" ");
}
