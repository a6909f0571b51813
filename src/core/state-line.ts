/**
 * The per-container state line: how the job's wrapper reports each container.
 *
 * The wrapper writes it to `podstate/<key>` in the sandbox and chirps it into the job attribute
 * `stateAttrName(index, init)` as a ClassAd string literal. Chirped strings do not round-trip
 * backslashes and silently drop values with newlines (spec: htcondor-observed.md, "condor_chirp
 * set_job_attr with string values"), so the line holds only plain tokens: digits, letters, `-`.
 *
 *   1 <state> <reason> <exitCode> <startedAt> <finishedAt> <ready> <restartCount> \
 *     <lastExitCode> <lastReason> <lastStartedAt> <lastFinishedAt> <signal>
 *
 * - `1` is the format version.
 * - state: `waiting` | `running` | `terminated`.
 * - reason: a token matching [A-Za-z0-9_.:]+ (e.g. ContainerCreating, CrashLoopBackOff,
 *   Completed, Error, DeadlineExceeded, StartupProbeFailed), or `-`.
 * - exitCode, signal: integers or `-`; times: epoch seconds or `-`; ready: 0 | 1.
 * - last*: the previous terminated instance of the container (after a restart), or `-`.
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
}

const TOKEN = /^[A-Za-z0-9_.:]+$/;

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
  return {
    state,
    reason: reasonTok(t[2]),
    exitCode: int(t[3]),
    startedAt: int(t[4]),
    finishedAt: int(t[5]),
    ready: t[6] === "1",
    restartCount,
    last:
      lastExit === undefined
        ? undefined
        : { exitCode: lastExit, reason: reasonTok(t[9]), startedAt: int(t[10]), finishedAt: int(t[11]) },
    signal: int(t[12]),
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
  ].join(" ");
}
