/**
 * Capped exponential backoff with jitter (pure; the random source is injected). Jitter keeps
 * replicas, and the operator's several loops, from retrying in step after an API-server restart.
 */
export interface BackoffPolicy {
  /** The first delay's upper bound. */
  initialMs: number;
  /** No delay exceeds this. */
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 30_000 };

/**
 * The delay before retry number `attempt` (1, 2, …): between half and all of
 * min(maxMs, initialMs · 2^(attempt−1)), placed by `random()` in [0, 1).
 */
export function backoffDelay(attempt: number, random: () => number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const exp = Math.min(Math.max(attempt, 1) - 1, 30);
  const ceiling = Math.min(policy.maxMs, policy.initialMs * 2 ** exp);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.round(ceiling / 2 + (ceiling / 2) * r);
}
