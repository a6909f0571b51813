/**
 * The adaptive limit on condor_submit processes (core/concurrency.ts decides; this measures):
 * each condor_submit is timed, with the most of them that ran beside it and whether work waited
 * for a slot meanwhile. The remover follows the same limit without feeding it
 * (docs/performance.md#bursts).
 */
import { SidecarError } from "../core/errors.ts";
import { currentLimit, initialLimit, type LimitState, nextLimit, type SubmitRun } from "../core/concurrency.ts";
import type { Logger } from "../logger.ts";

export interface SubmitLimit {
  /** condor_submit processes allowed at once now. */
  current(): number;
  /** Work that could start waits for a free slot (group-commit.ts onLimited). */
  limited(): void;
  /** Runs one condor_submit of `jobs` jobs and measures it: a failure says nothing of the schedd's pace, a timeout that it was slow. */
  measure<T>(jobs: number, submit: () => Promise<T>): Promise<T>;
}

interface Running {
  started: number;
  overlap: number;
  limited: boolean;
  cuts: number;
}

export function createSubmitLimit(o: { cap: number; now: () => number; log: Logger }): SubmitLimit {
  let state: LimitState = initialLimit(o.cap);
  const running = new Set<Running>();

  function ended(r: Running, jobs: number): void {
    const at = o.now();
    const run: SubmitRun = { jobs, ms: at - r.started, at, overlap: r.overlap, limited: r.limited, cuts: r.cuts };
    const before = currentLimit(state);
    const next = nextLimit(state, run);
    state = next.state;
    const after = currentLimit(state);
    if (after === before) return;
    o.log.info(`condor_submit concurrency ${after > before ? "raised" : "lowered"} to ${after}`, {
      jobs,
      ms: Math.round(run.ms),
      slowdown: Number(next.slowdown.toFixed(2)),
      alongside: run.overlap - 1,
      cap: state.cap,
    });
  }

  return {
    current: () => currentLimit(state),
    limited() {
      for (const r of running) r.limited = true;
    },
    async measure(jobs, submit) {
      const r: Running = { started: o.now(), overlap: 0, limited: false, cuts: state.cuts };
      running.add(r);
      for (const other of running) other.overlap = Math.max(other.overlap, running.size);
      let outcome: "ok" | "timeout" | "failed" = "failed";
      try {
        const value = await submit();
        outcome = "ok";
        return value;
      } catch (err) {
        if (err instanceof SidecarError && err.kind === "timeout") outcome = "timeout";
        throw err;
      } finally {
        running.delete(r);
        if (outcome !== "failed") ended(r, jobs);
      }
    },
  };
}
