// Which pods interLink forgot (docs/status.md#pods-interlink-forgot): status-call activity, not the
// wall clock; rounds of the virtual kubelet's loop (docs/interlink.md#how-often-the-virtual-kubelet-asks).
import { describe, expect, test } from "bun:test";
import { type ForgetRules, judgeForgotten, type Mark, newActivity, noteNamed, type StatusActivity } from "../../src/core/forgotten.ts";

const RULES: ForgetRules = { afterMs: 30_000, rounds: 3, maxGapMs: 10_000, removeAfterMs: 60_000 };

/**
 * One round of the virtual kubelet's loop over `pods`, starting at `t`: one call per pod, `step` ms
 * apart; then the loop's pause. Returns the time after the pause.
 */
function round(a: StatusActivity, marks: Map<string, Mark>, pods: readonly string[], t: number, step = 10, pause = 5_000): number {
  for (const uid of pods) {
    noteNamed(a, [uid], t, RULES.maxGapMs);
    marks.set(uid, { activeMs: a.activeMs, round: a.round });
    t += step;
  }
  return t + pause;
}

function run(rounds: number, asked: readonly string[], before = 0): { a: StatusActivity; marks: Map<string, Mark>; t: number } {
  const a = newActivity();
  const marks = new Map<string, Mark>();
  let t = before;
  for (let i = 0; i < rounds; i++) t = round(a, marks, asked, t);
  return { a, marks, t };
}

describe("judgeForgotten", () => {
  const pods = ["a", "b", "c", "d"];

  test("pods asked about in every round are never forgotten", () => {
    const { a, marks } = run(50, pods);
    expect(judgeForgotten(pods, marks, a, RULES)).toEqual([]);
  });

  test("pods no longer asked about while others are: forgotten after afterMs and rounds, removed after removeAfterMs", () => {
    const a = newActivity();
    const marks = new Map<string, Mark>();
    let t = round(a, marks, pods, 0);
    expect(judgeForgotten(pods, marks, a, RULES)).toEqual([]);
    const rows: [number, string[], string[]][] = [];
    for (let i = 1; i <= 14; i++) {
      t = round(a, marks, ["a", "b"], t);
      const v = judgeForgotten(pods, marks, a, RULES);
      rows.push([i, v.map((f) => f.uid), v.filter((f) => f.remove).map((f) => f.uid)]);
    }
    // a round of two calls 10 ms apart and a 5 s pause is 5.02 s of activity: 30 s after 6 rounds, 60 s after 12
    // (3 rounds, the other rule, pass earlier)
    const forgottenFrom = rows.find(([, f]) => f.length > 0)![0];
    const removedFrom = rows.find(([, , r]) => r.length > 0)![0];
    expect(forgottenFrom).toBe(Math.ceil(RULES.afterMs / 5_020));
    expect(removedFrom).toBe(Math.ceil(RULES.removeAfterMs / 5_020));
    expect(rows.at(-1)!.slice(1)).toEqual([["c", "d"], ["c", "d"]]);
  });

  test("a silent interLink forgets nothing, however long the silence", () => {
    const a = newActivity();
    const marks = new Map<string, Mark>();
    let t = round(a, marks, pods, 0);
    // a day without a call, then one
    t += 86_400_000;
    noteNamed(a, [], t, RULES.maxGapMs);
    expect(a.activeMs).toBeLessThan(100);
    expect(judgeForgotten(pods, marks, a, RULES)).toEqual([]);
    // pings (calls naming no pod) are silence too
    for (let i = 0; i < 1000; i++) noteNamed(a, [], t += 5_000, RULES.maxGapMs);
    expect(judgeForgotten(pods, marks, a, RULES)).toEqual([]);
  });

  test("the wall clock between rounds longer than maxGapMs does not count", () => {
    const a = newActivity();
    const marks = new Map<string, Mark>();
    let t = round(a, marks, pods, 0);
    // many rounds about a and b, each after a gap longer than the silence limit: rounds pass, no activity
    for (let i = 0; i < 20; i++) t = round(a, marks, ["a", "b"], t, 10, 60_000);
    expect(a.round).toBeGreaterThanOrEqual(20);
    expect(judgeForgotten(pods, marks, a, RULES)).toEqual([]);
  });

  test("a rapid burst of calls about one pod is not enough rounds of time: both rules must hold", () => {
    const a = newActivity();
    const marks = new Map<string, Mark>();
    let t = round(a, marks, pods, 0);
    // 10 rounds in one second: rounds pass, but only a second of activity
    for (let i = 0; i < 10; i++) t = round(a, marks, ["a"], t, 10, 90);
    expect(judgeForgotten(pods, marks, a, RULES)).toEqual([]);
    // 40 s in one long round of calls about many other pods: activity, but no round completes
    const many = Array.from({ length: 4000 }, (_, i) => `other-${i}`);
    const b = newActivity();
    const mb = new Map<string, Mark>();
    round(b, mb, ["x"], 0);
    round(b, mb, many, 5_000, 10, 0);
    expect(b.activeMs).toBeGreaterThan(RULES.afterMs);
    expect(judgeForgotten(["x"], mb, b, RULES)).toEqual([]);
  });

  test("a forgotten pod asked about again is remembered", () => {
    const a = newActivity();
    const marks = new Map<string, Mark>();
    let t = round(a, marks, pods, 0);
    for (let i = 0; i < 10; i++) t = round(a, marks, ["a", "b"], t);
    expect(judgeForgotten(pods, marks, a, RULES).map((f) => f.uid)).toEqual(["c", "d"]);
    t = round(a, marks, ["a", "b", "c"], t);
    expect(judgeForgotten(pods, marks, a, RULES).map((f) => f.uid)).toEqual(["d"]);
  });

  test("a pod first seen is marked then, never taken as forgotten for the time before (a restart starts the clock again)", () => {
    const { a, marks, t } = run(20, ["a", "b"]);
    expect(judgeForgotten(["a", "b", "late"], marks, a, RULES)).toEqual([]);
    expect(marks.has("late")).toBe(true);
    let u = t;
    for (let i = 0; i < 7; i++) u = round(a, marks, ["a", "b"], u);
    expect(judgeForgotten(["a", "b", "late"], marks, a, RULES).map((f) => f.uid)).toEqual(["late"]);
  });

  test("pods that are no longer candidates lose their marks (their job ended, or their schedd does not answer)", () => {
    const { a, marks } = run(3, pods);
    judgeForgotten(["a"], marks, a, RULES);
    expect([...marks.keys()]).toEqual(["a"]);
  });

  test("removeAfterMs 0 never removes", () => {
    const { a, marks, t } = run(1, pods);
    let u = t;
    for (let i = 0; i < 100; i++) u = round(a, marks, ["a"], u);
    const v = judgeForgotten(pods, marks, a, { ...RULES, removeAfterMs: 0 });
    expect(v.map((f) => f.uid)).toEqual(["b", "c", "d"]);
    expect(v.some((f) => f.remove)).toBe(false);
  });
});
