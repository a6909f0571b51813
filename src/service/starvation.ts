/**
 * Notices when the sidecar is starved of CPU: a timer that should fire every `tickMs` fires late.
 * A tool call that timed out while this happened is not held against HTCondor
 * (core/health.ts blamesHTCondor, docs/status.md#the-ping).
 */
import { STARVED_LATE_MS } from "../core/health.ts";

export interface StarvationWatch {
  /** Whether the event loop ran more than STARVED_LATE_MS late at any time since `since` (epoch ms), now included. */
  starvedSince(since: number): boolean;
  stop(): void;
}

export function watchStarvation(o: { now: () => number; tickMs?: number }): StarvationWatch {
  const tickMs = o.tickMs ?? 250;
  let last = performance.now();
  let lastStarvedAt = -Infinity;
  const late = () => performance.now() - last - tickMs;
  const t = setInterval(() => {
    if (late() > STARVED_LATE_MS) lastStarvedAt = o.now();
    last = performance.now();
  }, tickMs);
  (t as { unref?: () => void }).unref?.();
  return {
    // A tick still pending that is already late counts too: the caller may be the first code to
    // run after the stall.
    starvedSince: (since) => lastStarvedAt >= since || late() > STARVED_LATE_MS,
    stop: () => clearInterval(t),
  };
}
