// The adaptive limit on condor_submit processes (src/core/concurrency.ts;
// docs/performance.md#bursts): a sequence of measured runs → the limit after each.
import { describe, expect, test } from "bun:test";
import { currentLimit, initialLimit, type LimitState, nextLimit, RECENT_MS, slowdown, type SubmitRun } from "../../src/core/concurrency.ts";

/**
 * One measured condor_submit: jobs, ms, the most condor_submit at once while it ran, whether work
 * waited for a slot; `stale` marks a run that started before the last cut; `after` the ms since
 * the previous run ended (1 s unless said).
 */
type Row = { jobs: number; ms: number; alongside?: number; limited?: boolean; stale?: boolean; after?: number };

/** Plays the rows from a fresh state with this cap: the limit after each row. */
function play(cap: number, rows: Row[], from: LimitState = initialLimit(cap)): { limits: number[]; decisions: string[]; state: LimitState } {
  let state = from;
  let at = 1_000_000;
  const limits: number[] = [];
  const decisions: string[] = [];
  for (const r of rows) {
    at += r.after ?? 1000;
    const run: SubmitRun = {
      jobs: r.jobs,
      ms: r.ms,
      at,
      overlap: r.alongside === undefined ? currentLimit(state) : r.alongside + 1,
      limited: r.limited ?? true,
      cuts: r.stale ? state.cuts - 1 : state.cuts,
    };
    const next = nextLimit(state, run);
    state = next.state;
    limits.push(currentLimit(state));
    decisions.push(next.decision);
  }
  return { limits, decisions, state };
}

const full = (ms: number, more: Partial<Row> = {}): Row => ({ jobs: 200, ms, ...more });

describe("slowdown: a run against the best recent ones, sized fairly", () => {
  test.each<[string, { jobs: number; ms: number }[], { jobs: number; ms: number }, number]>([
    ["nothing to compare with", [], { jobs: 200, ms: 900 }, 1],
    ["as fast as the same size", [{ jobs: 200, ms: 300 }], { jobs: 200, ms: 300 }, 1],
    ["twice as slow as the same size", [{ jobs: 200, ms: 300 }], { jobs: 200, ms: 600 }, 2],
    ["a smaller run is bounded by a bigger one as it is", [{ jobs: 200, ms: 300 }], { jobs: 50, ms: 150 }, 0.5],
    ["a bigger run is bounded by a smaller one scaled by jobs", [{ jobs: 1, ms: 50 }], { jobs: 200, ms: 300 }, 0.03],
    ["the best bound wins", [{ jobs: 200, ms: 900 }, { jobs: 100, ms: 150 }, { jobs: 200, ms: 600 }], { jobs: 200, ms: 600 }, 2],
    ["a lone pod after a full batch", [{ jobs: 200, ms: 300 }], { jobs: 1, ms: 60 }, 0.2],
  ])("%s", (_, recent, run, want) => {
    expect(slowdown(recent.map((r) => ({ ...r, at: 0 })), run)).toBeCloseTo(want, 2);
  });
});

describe("the limit after a sequence of runs", () => {
  test("cheap submits: every flat run while work waits adds a slot per limit's worth of runs, up to the cap", () => {
    const { limits, decisions } = play(4, Array.from({ length: 8 }, () => full(300)));
    expect(limits).toEqual([2, 2, 3, 3, 3, 4, 4, 4]);
    expect(decisions.slice(-2)).toEqual(["hold", "hold"]);
  });

  test("a schedd that commits one submit at a time: a run's time grows with the runs beside it, and the limit falls back", () => {
    // 300 ms a transaction; a run waits for every other one in flight.
    const serial = (n: number): Row => full(300 * n, { alongside: n - 1 });
    const { limits, decisions } = play(8, [serial(1), serial(2), serial(1), serial(2), serial(1), serial(2)]);
    expect(limits).toEqual([2, 1, 2, 1, 2, 1]);
    expect(decisions).toEqual(["raise", "lower", "raise", "lower", "raise", "lower"]);
  });

  test("eight at once on a schedd that slows as they pile up: halved until it keeps its pace", () => {
    const warm = play(8, Array.from({ length: 28 }, () => full(300)));
    expect(currentLimit(warm.state)).toBe(8);
    // Real pool, 2,000 creates: 2.6-3.8 s per batch of ~170 at 8, 1.0 s at 2, 0.15 s alone (docs/performance.md#bursts).
    const { limits } = play(8, [
      full(3200, { alongside: 7 }),
      full(3000, { alongside: 7, stale: true }),
      full(1000, { alongside: 3 }),
      full(350, { alongside: 1 }),
    ], warm.state);
    expect(limits).toEqual([4, 4, 2, 2]);
  });

  test("runs that started before a cut measured the old limit: they cut nothing more", () => {
    const warm = play(8, Array.from({ length: 28 }, () => full(300))).state;
    const { limits } = play(8, [full(900, { alongside: 7 }), ...Array.from({ length: 6 }, () => full(900, { alongside: 7, stale: true }))], warm);
    expect(limits).toEqual([4, 4, 4, 4, 4, 4, 4]);
  });

  test("without work waiting for a slot the limit does not grow: the arrivals set the pace", () => {
    expect(play(8, Array.from({ length: 6 }, () => full(300, { limited: false }))).limits).toEqual([1, 1, 1, 1, 1, 1]);
  });

  test("a run slow alone is not the concurrency's doing: the limit holds", () => {
    const { limits, decisions } = play(8, [full(300), full(300), full(900, { alongside: 0 }), full(900, { alongside: 0 })]);
    expect(limits).toEqual([2, 2, 2, 2]);
    expect(decisions.slice(2)).toEqual(["hold", "hold"]);
  });

  test("between flat and grown the limit holds", () => {
    const { limits, decisions } = play(8, [full(300), full(400, { alongside: 1 }), full(420, { alongside: 1 })]);
    expect(limits).toEqual([2, 2, 2]);
    expect(decisions).toEqual(["raise", "hold", "hold"]);
  });

  test("batches of every size: a lone pod and a full batch are each compared fairly", () => {
    // A lone create (one job, mostly the tool's start-up), then full batches, then a lone one again.
    const { decisions } = play(8, [{ jobs: 1, ms: 50, limited: false }, full(300), { jobs: 1, ms: 60, limited: false, alongside: 1 }, full(320)]);
    expect(decisions).toEqual(["hold", "raise", "hold", "raise"]);
  });

  test("a run from before an idle spell is forgotten: the schedd's pace today decides", () => {
    // Both plays start their clock at the same time: the second's first run ends `after` later.
    const yesterday = play(8, [full(100, { limited: false })]).state;
    const grown = play(8, [full(300, { alongside: 1, after: 60_000 })], { ...yesterday, limit: 2 });
    expect(grown.decisions).toEqual(["lower"]);
    const forgotten = play(8, [full(300, { alongside: 1, after: 2 * RECENT_MS })], { ...yesterday, limit: 2 });
    expect(forgotten.decisions).toEqual(["raise"]);
  });

  test("a condor_submit killed at its timeout while others ran counts as grown", () => {
    const { limits } = play(8, [full(300), full(300), full(300), full(60_000, { alongside: 2 })]);
    expect(limits).toEqual([2, 2, 3, 1]);
  });

  test("MaxConcurrentSubmits: 1 stays one", () => {
    expect(play(1, Array.from({ length: 4 }, () => full(300))).limits).toEqual([1, 1, 1, 1]);
  });
});
