/**
 * Job ClassAd + per-container state lines → interLink PodStatus (docs/interlink.md#get-status).
 * Pure: everything it needs, `now` included, is passed in.
 *
 * The rules that decide a pod's fate
 * (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status,
 * docs/interlink.md#unknown-and-in-flight-pods):
 * - one entry per offloaded container, init containers in spec order, never empty;
 * - exactly one of waiting/running/terminated; exit codes are integers; times RFC 3339 UTC;
 * - every container reads terminated only once the job has really ended;
 * - removed, lost and unrecoverably held jobs never read as Succeeded (a non-zero code);
 * - a failed init container terminates everything after it, or the pod stays Pending forever.
 */
import { adNumber, adString, type JobAd } from "./classad.ts";
import { usedItsRequest } from "./holds.ts";
import type { StateLine } from "./state-line.ts";
import { parseStateLine } from "./state-line.ts";
import { stateAttrName } from "./types.ts";

export interface ContainerInfo {
  name: string;
  init: boolean;
  image: string;
}

export interface ContainerStatus {
  name: string;
  state: {
    waiting?: { reason: string; message?: string };
    running?: { startedAt: string };
    terminated?: {
      exitCode: number;
      signal?: number;
      reason: string;
      message?: string;
      startedAt?: string;
      finishedAt?: string;
      containerID?: string;
    };
  };
  lastState: ContainerStatus["state"];
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID: string;
  started: boolean;
}

export interface PodStatus {
  name: string;
  UID: string;
  namespace: string;
  JID: string;
  containers: ContainerStatus[];
  initContainers: ContainerStatus[];
}

export interface PodIdentity {
  uid: string;
  name: string;
  namespace: string;
  jid: string;
  containers: readonly ContainerInfo[];
}

/** What we know about the pod's job. */
export type Observation =
  /** The create is still in flight (no job yet). */
  | { kind: "creating" }
  /** The job is in the queue (idle, running, held, suspended). */
  | { kind: "queued"; ad: JobAd }
  /** The job has ended; `lines` are the final state lines from the returned output (by container key). */
  | { kind: "ended"; ad: JobAd; lines: ReadonlyMap<string, StateLine> }
  /**
   * Neither queue nor history knows the job any more (`JobLost`), or its id names another job now
   * (`JobReplaced`, core/job-identity.ts).
   */
  | { kind: "lost"; message: string; reason?: "JobLost" | "JobReplaced" }
  /** The sidecar removed the job (unrecoverable hold); the reason and code to report. */
  | { kind: "failed"; reason: string; message: string; exitCode: number; lines: ReadonlyMap<string, StateLine> };

const key = (c: ContainerInfo) => `${c.init ? "i" : "c"}.${c.name}`;
const rfc3339 = (epoch: number) => new Date(epoch * 1000).toISOString().replace(/\.000Z$/, "Z");

/** State lines the wrapper chirped into the job ad, by container key. */
export function linesFromAd(ad: JobAd, containers: readonly ContainerInfo[]): Map<string, StateLine> {
  const out = new Map<string, StateLine>();
  const counters = { init: 0, main: 0 };
  for (const c of containers) {
    const index = c.init ? counters.init++ : counters.main++;
    const raw = adString(ad, stateAttrName(index, c.init));
    const line = raw === undefined ? undefined : parseStateLine(raw);
    if (line) out.set(key(c), line);
  }
  return out;
}

export function podStatus(pod: PodIdentity, obs: Observation): PodStatus {
  const build = (line: Line | undefined, c: ContainerInfo) => containerStatus(c, line, pod.jid);
  let lines: Map<string, Line | undefined>;

  switch (obs.kind) {
    case "creating":
      lines = new Map(pod.containers.map((c) => [key(c), withMessage(waiting("ContainerCreating"), "Submitting the job to HTCondor")]));
      break;
    case "queued":
      lines = queuedLines(obs.ad, pod.containers);
      break;
    case "ended": {
      const status = adNumber(obs.ad, "JobStatus");
      if (status === 3) {
        const why = adString(obs.ad, "RemoveReason") ?? "the job was removed";
        lines = finish(
          pod.containers,
          obs.lines,
          { exitCode: 137, reason: "JobRemoved", message: why },
          false,
          stoppedBy({ reason: "JobRemoved", message: why }),
        );
      } else {
        const exit = jobExit(obs.ad);
        lines = finish(pod.containers, obs.lines, exit, false, oomKilled(exit.reason === "OOMKilled" ? exit : memoryExit(obs.ad)));
      }
      break;
    }
    case "lost":
      lines = finish(pod.containers, new Map(), { exitCode: 1, reason: obs.reason ?? "JobLost", message: obs.message });
      break;
    case "failed": {
      const exit = { exitCode: obs.exitCode, reason: obs.reason, message: obs.message };
      lines = finish(pod.containers, obs.lines, exit, true, oomKilled(obs.reason === "OOMKilled" ? exit : undefined));
      break;
    }
  }

  const consistent = enforceInitOrder(pod.containers, lines, obs.kind !== "creating" && obs.kind !== "queued");
  return {
    name: pod.name,
    UID: pod.uid,
    namespace: pod.namespace,
    JID: pod.jid,
    initContainers: pod.containers.filter((c) => c.init).map((c) => build(consistent.get(key(c)), c)),
    containers: pod.containers.filter((c) => !c.init).map((c) => build(consistent.get(key(c)), c)),
  };
}

function waiting(reason: string): StateLine {
  return { state: "waiting", reason, ready: false, restartCount: 0 };
}

/**
 * A state line and its message: the wrapper's own (e.g. the mount it refused, decoded by
 * parseStateLine), or one the sidecar puts in its place (hold reasons, removal reasons).
 */
type Line = StateLine;
function withMessage(line: StateLine, message: string | undefined): Line {
  return message ? { ...line, message } : line;
}

function queuedLines(ad: JobAd, containers: readonly ContainerInfo[]): Map<string, Line | undefined> {
  const status = adNumber(ad, "JobStatus");
  const holdCode = adNumber(ad, "HoldReasonCode");
  const all = (reason: string, message: string) => new Map(containers.map((c) => [key(c), withMessage(waiting(reason), message)] as const));
  if (status === 1) {
    const starts = adNumber(ad, "NumJobStarts") ?? 0;
    return all("ContainerCreating", starts > 0 ? "The job was evicted and waits for an HTCondor slot again" : "Waiting for an HTCondor slot");
  }
  if (status === 5) {
    // Spooled jobs are held with code 16 while their input is copied
    // (docs/htcondor.md#condor_submit-options).
    if (holdCode === 16) return all("ContainerCreating", "Spooling input files to the schedd");
    return all("JobHeld", `${adString(ad, "HoldReason") ?? "held"} (HoldReasonCode ${holdCode ?? "unknown"})`);
  }
  // Running, suspended, or completed-but-not-yet-left: what the wrapper reported.
  const reported = linesFromAd(ad, containers);
  const out = new Map<string, Line | undefined>(containers.map((c) => [key(c), reported.get(key(c)) ?? waiting("ContainerCreating")] as const));
  holdBackLast(containers, out);
  return out;
}

/**
 * The pod ends when every container reads terminated
 * (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status), but the job has not ended yet
 * (output still to come back): the container that finished last reads running until the job leaves
 * the queue (docs/interlink.md#check-22).
 */
function holdBackLast(containers: readonly ContainerInfo[], lines: Map<string, Line | undefined>): void {
  const main = containers.filter((c) => !c.init);
  if (main.length === 0 || !main.every((c) => lines.get(key(c))?.state === "terminated")) return;
  const last = main.reduce((a, b) => ((lines.get(key(b))?.finishedAt ?? 0) >= (lines.get(key(a))?.finishedAt ?? 0) ? b : a));
  const line = lines.get(key(last))!;
  lines.set(key(last), { state: "running", startedAt: line.startedAt, ready: false, restartCount: line.restartCount, last: line.last });
}

interface Exit {
  exitCode: number;
  reason: string;
  message?: string;
}

/**
 * The memory the job used against its request, when the peak the starter measured reached it
 * (MemoryUsage >= RequestMemory): an end by SIGKILL is then the kernel's OOM killer
 * (docs/status.md#memory-kills).
 */
function memoryExit(ad: JobAd): Exit | undefined {
  const usage = adNumber(ad, "ResidentSetSize");
  const request = adNumber(ad, "RequestMemory");
  if (!usedItsRequest(usage, request)) return undefined;
  return {
    exitCode: 137,
    reason: "OOMKilled",
    message: `Killed by SIGKILL after its memory reached the job's request_memory (${Math.ceil(usage! / 1024)} of ${request} megabytes)`,
  };
}

function jobExit(ad: JobAd): Exit {
  if (ad.ExitBySignal === true) {
    const sig = adNumber(ad, "ExitSignal") ?? 9;
    const oom = sig === 9 ? memoryExit(ad) : undefined;
    if (oom) return oom;
    return { exitCode: 128 + sig, reason: "Error", message: `The job's wrapper was killed by signal ${sig}` };
  }
  const code = adNumber(ad, "ExitCode");
  if (code === undefined) return { exitCode: 1, reason: "Error", message: "The job ended without an exit code" };
  return { exitCode: code, reason: code === 0 ? "Completed" : "Error" };
}

/**
 * A container the kernel killed (exit 137, SIGKILL, which its wrapper did not send) in a job that
 * HTCondor killed or held for memory: that kill was the OOM killer's (docs/status.md#memory-kills).
 */
function killedBySigkill(line: StateLine | undefined): line is StateLine {
  return line?.state === "terminated" && line.exitCode === 137 && line.signal === undefined && (line.reason === undefined || line.reason === "Error");
}

/** What a final line reads instead of its own, when the way the job ended explains it better. */
type Instead = (line: StateLine | undefined) => Line | undefined;

/** When the job was killed or held for memory: a container killed by SIGKILL reads OOMKilled. */
function oomKilled(oom: Exit | undefined): Instead | undefined {
  if (!oom) return undefined;
  return (line) => (killedBySigkill(line) ? withMessage({ ...line, reason: oom.reason, exitCode: oom.exitCode }, oom.message) : undefined);
}

/**
 * When the job was removed: a container the wrapper stopped because the job was told to stop
 * (reason Killed, the SIGTERM the starter sends on condor_rm) reads the removal, with its own
 * exit code and signal. A container that had ended on its own keeps its line.
 */
function stoppedBy(removal: { reason: string; message: string }): Instead {
  return (line) => (line?.state === "terminated" && line.reason === "Killed" ? withMessage({ ...line, reason: removal.reason }, removal.message) : undefined);
}

/**
 * The job has ended: every container must read terminated. `instead` says what a final line reads
 * when the job's end explains it better than the line does (a memory kill, a removal).
 */
function finish(
  containers: readonly ContainerInfo[],
  lines: ReadonlyMap<string, StateLine>,
  exit: Exit,
  override = false,
  instead?: Instead,
): Map<string, Line | undefined> {
  const out = new Map<string, Line | undefined>();
  for (const c of containers) {
    const line = lines.get(key(c));
    const replaced = instead?.(line);
    if (replaced) {
      out.set(key(c), replaced);
      continue;
    }
    if (line?.state === "terminated" && !override) {
      out.set(key(c), line);
      continue;
    }
    if (line?.state === "terminated" && override && line.exitCode !== 0) {
      out.set(key(c), line);
      continue;
    }
    out.set(
      key(c),
      withMessage(
        {
          state: "terminated",
          reason: exit.reason,
          exitCode: exit.exitCode === 0 && line !== undefined && line.state !== "terminated" ? 1 : exit.exitCode,
          startedAt: line?.startedAt,
          finishedAt: line?.finishedAt,
          ready: false,
          restartCount: line?.restartCount ?? 0,
          last: line?.last,
        },
        exit.message,
      ),
    );
  }
  return out;
}

/**
 * Init containers in spec order with consistent states
 * (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status): a later init container is never
 * ahead of an earlier one; once one failed, everything after it, main containers included, reads
 * terminated with a non-zero code.
 */
function enforceInitOrder(
  containers: readonly ContainerInfo[],
  lines: Map<string, Line | undefined>,
  ended: boolean,
): Map<string, Line | undefined> {
  const out = new Map(lines);
  let blocked: "no" | "pending" | "failed" = "no";
  let failedCode = 1;
  for (const c of containers) {
    const line = out.get(key(c));
    if (blocked === "failed") {
      if (line?.state !== "terminated" || line.exitCode === 0) {
        out.set(
          key(c),
          withMessage(
            { state: "terminated", reason: "InitContainerFailed", exitCode: failedCode, ready: false, restartCount: line?.restartCount ?? 0 },
            "An init container failed; the pod did not run this container",
          ),
        );
      }
      continue;
    }
    if (blocked === "pending" && !ended) {
      // A container behind a pending init container cannot have started; a job-level waiting
      // reason (held, idle) is kept as it is.
      if (line?.state !== "waiting" || (line.reason === "ContainerCreating" && !line.message)) out.set(key(c), waiting("PodInitializing"));
      continue;
    }
    if (!c.init) continue;
    if (line?.state === "terminated" && (line.exitCode ?? 1) !== 0) {
      blocked = "failed";
      failedCode = line.exitCode ?? 1;
    } else if (line?.state !== "terminated") {
      blocked = "pending";
    }
  }
  return out;
}

function containerStatus(c: ContainerInfo, line: Line | undefined, jid: string): ContainerStatus {
  const l: Line = line ?? waiting("ContainerCreating");
  const message = l.message;
  const containerID = `htcondor://${jid}/${c.name}`;
  let state: ContainerStatus["state"];
  if (l.state === "running" && l.startedAt !== undefined) {
    state = { running: { startedAt: rfc3339(l.startedAt) } };
  } else if (l.state === "terminated") {
    const code = l.exitCode ?? 1;
    state = {
      terminated: {
        exitCode: code,
        ...(l.signal !== undefined ? { signal: l.signal } : {}),
        reason: l.reason ?? (code === 0 ? "Completed" : "Error"),
        ...(message ? { message } : {}),
        ...(l.startedAt !== undefined ? { startedAt: rfc3339(l.startedAt) } : {}),
        ...(l.finishedAt !== undefined ? { finishedAt: rfc3339(l.finishedAt) } : {}),
        containerID,
      },
    };
  } else {
    state = { waiting: { reason: l.reason ?? "ContainerCreating", ...(message ? { message } : {}) } };
  }
  const lastState: ContainerStatus["state"] = l.last
    ? {
      terminated: {
        exitCode: l.last.exitCode,
        reason: l.last.reason ?? (l.last.exitCode === 0 ? "Completed" : "Error"),
        ...(l.last.startedAt !== undefined ? { startedAt: rfc3339(l.last.startedAt) } : {}),
        ...(l.last.finishedAt !== undefined ? { finishedAt: rfc3339(l.last.finishedAt) } : {}),
        containerID,
      },
    }
    : {};
  return {
    name: c.name,
    state,
    lastState,
    ready: state.running !== undefined && l.ready,
    restartCount: l.restartCount,
    image: c.image,
    imageID: "",
    containerID,
    started: state.running !== undefined,
  };
}
