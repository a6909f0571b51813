/**
 * What the queue's view (queue.ts) knows of the schedd's answers: whether the last condor_q
 * failed (the view is stale), when the schedd was last heard, and condor_q's failure streak
 * (core/health.ts), which counts a failure at most every FAILURE_COUNT_INTERVAL_MS and never a
 * timeout while the sidecar was starved of CPU.
 */
import type { Condor } from "../condor/tools.ts";
import { errorText, SidecarError } from "../core/errors.ts";
import { blamesHTCondor, recordSuccess, type Streak } from "../core/health.ts";

/**
 * A failed condor_q counts towards the schedd's failure streak at most once in this long: the
 * refresher runs every few seconds, and three failures in a row within seconds (a schedd busy
 * for a moment) must not make the node NotReady (core/health.ts).
 */
const FAILURE_COUNT_INTERVAL_MS = 10_000;

export interface QueueHealth {
  /** condor_q's failure streak. */
  readonly schedd: Streak;
  /** Whether the last condor_q failed (or a targeted one did, and no targeted or full one answered since). */
  failing(): boolean;
  /** A condor_q that started at `startedAt` failed. */
  failed(err: unknown, startedAt: number): void;
  /**
   * Whether the last targeted condor_q (or the watch's) failed: a probe that answers does not
   * make the view fresh again. A full condor_q's answer does: its caller clears this first.
   */
  targetedFailed: boolean;
  /** A full condor_q or the probe answered. */
  answered(): void;
  /** A targeted condor_q (the watch's, or a full one) answered. */
  askedAnswered(): void;
  /** A targeted condor_q (or the watch's) that started at `at` failed. */
  askedFailed(err: unknown, at: number): void;
  /** Whether condor_q answered or failed within the last `ms`. */
  heardWithin(ms: number): boolean;
  /** When the schedd last answered; undefined before the first. */
  lastAnswer(): number | undefined;
  /** One condor_q that asks for no job (one at a time): does the schedd answer? */
  probe(): Promise<void>;
}

export interface QueueHealthDeps {
  condor: Condor;
  now: () => number;
  log: { warn(msg: string, fields?: Record<string, unknown>): void };
  /** Whether the sidecar was starved of CPU since a time (service/starvation.ts); never, without it. */
  starved?: (since: number) => boolean;
}

export function createQueueHealth(d: QueueHealthDeps): QueueHealth {
  const schedd: Streak = { failures: 0 };
  let lastCounted = -Infinity;
  let lastHeard = -Infinity;
  let lastAnswerAt: number | undefined;
  let failing = false;
  let probing: Promise<void> | undefined;

  function failed(err: unknown, startedAt: number): void {
    failing = true;
    lastHeard = d.now();
    schedd.error = errorText(err);
    const timedOut = err instanceof SidecarError && err.kind === "timeout";
    if (!blamesHTCondor({ timedOut, starved: timedOut && (d.starved?.(startedAt) ?? false) })) {
      d.log.warn("condor_q timed out while the sidecar was starved of CPU: not counted as a failure of the schedd", { error: schedd.error });
      return;
    }
    const now = d.now();
    if (now - lastCounted < FAILURE_COUNT_INTERVAL_MS) return;
    lastCounted = now;
    if (schedd.failures === 0) schedd.since = now;
    schedd.failures++;
  }
  function answered(): void {
    if (!h.targetedFailed) failing = false;
    lastHeard = d.now();
    lastAnswerAt = lastHeard;
    lastCounted = -Infinity;
    recordSuccess(schedd);
  }
  function askedAnswered(): void {
    h.targetedFailed = false;
    answered();
  }
  function askedFailed(err: unknown, at: number): void {
    h.targetedFailed = true;
    failed(err, at);
  }

  const h: QueueHealth = {
    schedd,
    targetedFailed: false,
    failing: () => failing,
    failed,
    answered,
    askedAnswered,
    askedFailed,
    heardWithin: (ms) => d.now() - lastHeard < ms,
    lastAnswer: () => lastAnswerAt,
    probe() {
      const at = d.now();
      probing ??= d.condor.query({ constraint: "false", attributes: ["ClusterId"] }).then(
        () => answered(),
        (err: unknown) => {
          failed(err, at);
          throw err;
        },
      ).finally(() => (probing = undefined));
      return probing;
    },
  };
  return h;
}
