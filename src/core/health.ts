/**
 * The sidecar's health as the ping reports it (docs/interlink.md#the-ping), from what the tools
 * said. Pure: the streaks are updated by the caller, the answer is computed from them.
 *
 * A failed ping makes interLink mark the node NotReady, and Kubernetes may then evict every pod
 * on it (each eviction a condor_rm): one failed tool call must not fail the ping, only a streak
 * of `threshold` failures in a row.
 */
import { adNumber, type JobAd } from "./classad.ts";
import { tryParseQuantity } from "./quantity.ts";

/** Consecutive failures of one HTCondor daemon, as seen through its tool. */
export interface Streak {
  failures: number;
  /** When the streak began (epoch ms). */
  since?: number;
  error?: string;
}

export function recordSuccess(s: Streak): void {
  s.failures = 0;
  s.since = undefined;
  s.error = undefined;
}

export function recordFailure(s: Streak, error: string, now: number): void {
  if (s.failures === 0) s.since = now;
  s.failures++;
  s.error = error;
}

/**
 * How late the sidecar's event loop may run before the sidecar counts as starved of CPU (its own
 * work, garbage collection, or a machine with more runnable processes than cores). A tool call
 * that timed out meanwhile was starved too, or was waiting on a daemon the sidecar itself flooded:
 * its timeout says nothing about HTCondor (docs/status.md#the-ping).
 */
export const STARVED_LATE_MS = 1_000;

/** How long a ping's condor_status or condor_q answer serves later pings (docs/status.md#the-ping). */
export const PING_ANSWER_KEEP_MS = 5_000;

/**
 * Whether a failed tool call counts towards its daemon's streak: always when the tool answered
 * (an exit code and HTCondor's own words), but a timeout only when the sidecar was not starved
 * while the call ran.
 */
export function blamesHTCondor(failure: { timedOut: boolean; starved: boolean }): boolean {
  return !failure.timedOut || !failure.starved;
}

/** What a status answer says while the schedd does not answer (undefined when it does). */
export function staleness(schedd: Streak): string | undefined {
  if (schedd.failures === 0 || schedd.since === undefined) return undefined;
  return `condor_q failing since ${new Date(schedd.since).toISOString()} (${schedd.failures} consecutive): ${schedd.error ?? "unknown error"}`;
}

/** The caps on what the virtual node advertises (config `Node`). */
interface NodeCaps {
  Cpu?: string;
  Memory?: string;
  Gpus?: number;
  Pods: string;
  Taints?: unknown[];
}

interface PingInput {
  /** Why the credential stops the sidecar from working (core/credentials.ts), if it does. */
  credentialProblem?: string;
  schedd: Streak;
  collector: Streak;
  threshold: number;
  /** The last slot ads condor_status answered with; undefined before it ever answered. */
  machines?: readonly JobAd[];
  node: NodeCaps;
}

/** The ping's answer: healthy (200) or not (503), and its body. */
export function pingAnswer(p: PingInput): { healthy: boolean; body: Record<string, unknown> } {
  const down = [
    p.schedd.failures >= p.threshold ? `schedd: ${p.schedd.error}` : "",
    p.collector.failures >= p.threshold ? `collector: ${p.collector.error}` : "",
  ].filter(Boolean);
  const failing = [p.schedd.failures > 0 ? "condor_q" : "", p.collector.failures > 0 ? "condor_status" : ""].filter(Boolean);
  const healthy = !p.credentialProblem && down.length === 0;
  const body: Record<string, unknown> = {
    status: p.credentialProblem
      ? `unhealthy: ${p.credentialProblem}`
      : !healthy
      ? `unhealthy: HTCondor unreachable (${down.join("; ")})`
      : failing.length > 0
      ? `degraded: ${failing.join(" and ")} failing`
      : "ok",
  };
  // Capacity only from a condor_status that answered: zeros would shrink the node to nothing.
  const m = p.machines;
  if (m) {
    const sum = (k: string) => m.reduce((s, ad) => s + (adNumber(ad, k) ?? 0), 0);
    // The node advertises the smaller of the pool's totals and the configured caps.
    const cap = (q: string | undefined, unit: number) => {
      const v = q === undefined ? undefined : tryParseQuantity(q);
      return v === undefined ? Infinity : Number(v.num) / Number(v.den) / unit;
    };
    body.resources = {
      cpu: String(Math.floor(Math.min(sum("Cpus"), cap(p.node.Cpu, 1)))),
      memory: `${Math.floor(Math.min(sum("Memory"), cap(p.node.Memory, 1024 * 1024)))}Mi`,
      pods: p.node.Pods,
      accelerators: [{ resourceType: "nvidia.com/gpu", available: String(Math.floor(Math.min(sum("GPUs"), p.node.Gpus ?? Infinity))) }],
    };
  }
  if (p.node.Taints) body.taints = p.node.Taints;
  return { healthy, body };
}
