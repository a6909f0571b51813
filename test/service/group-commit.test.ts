// Group commit (src/service/group-commit.ts), the rule behind batched condor_submit and
// condor_rm (docs/architecture.md#2-one-condor-process-per-burst-not-per-pod): a lone request runs at once, the ones that arrive meanwhile go together,
// groups never mix, batches are capped, and at most maxInFlight runs at a time (a number, or an
// adaptive limit asked afresh: src/service/submit-limit.ts).
import { describe, expect, test } from "bun:test";
import { groupCommit, type Settled } from "../../src/service/group-commit.ts";

/** A run the test ends by hand: every batch it was given, and a way to settle the oldest open one. */
function controlled() {
  const batches: string[][] = [];
  const open: ((r: Settled<string>[]) => void)[] = [];
  let inFlight = 0;
  let most = 0;
  return {
    batches,
    most: () => most,
    run: (batch: string[]) => {
      batches.push(batch);
      most = Math.max(most, ++inFlight);
      return new Promise<Settled<string>[]>((resolve) =>
        open.push((r) => {
          inFlight--;
          resolve(r);
        })
      );
    },
    /** Ends the oldest run: every item ok, its value the item upper-cased. */
    async end() {
      const batch = batches[batches.length - open.length]!;
      open.shift()!(batch.map((v) => ({ ok: true, value: v.toUpperCase() })));
      await Bun.sleep(0);
    },
  };
}

describe("groupCommit", () => {
  test("a lone request runs at once and alone; the ones that arrive meanwhile go together", async () => {
    const c = controlled();
    const submit = groupCommit<string, string>({ maxInFlight: 8, maxBatch: 100, group: () => "g", run: c.run });
    const first = submit("a");
    expect(c.batches).toEqual([["a"]]);
    const rest = ["b", "c", "d"].map((x) => submit(x));
    expect(c.batches).toEqual([["a"]]); // waiting for the first run, though slots are free
    await c.end();
    expect(await first).toBe("A");
    expect(c.batches).toEqual([["a"], ["b", "c", "d"]]);
    await c.end();
    expect(await Promise.all(rest)).toEqual(["B", "C", "D"]);
    expect(submit.pending()).toBe(0);
  });

  test("groups never share a run; each waiting group gets one when a run ends, up to maxInFlight", async () => {
    const c = controlled();
    const submit = groupCommit<string, string>({ maxInFlight: 2, maxBatch: 100, group: (x) => x[0]!, run: c.run });
    void submit("a0");
    const waiting = ["b1", "a1", "c1", "b2"].map((x) => submit(x));
    await c.end();
    // Two slots: the two oldest groups; the third waits for a slot.
    expect(c.batches).toEqual([["a0"], ["b1", "b2"], ["a1"]]);
    await c.end();
    expect(c.batches.at(-1)).toEqual(["c1"]);
    await c.end();
    await c.end();
    expect(await Promise.all(waiting)).toEqual(["B1", "A1", "C1", "B2"]);
    expect(c.most()).toBe(2);
  });

  test("batches are capped, and a full batch starts without waiting for a run to end", async () => {
    const c = controlled();
    const submit = groupCommit<string, string>({ maxInFlight: 3, maxBatch: 2, group: () => "g", run: c.run });
    const all = ["a", "b", "c", "d", "e"].map((x) => submit(x));
    expect(c.batches).toEqual([["a"], ["b", "c"], ["d", "e"]]);
    for (let i = 0; i < 3; i++) await c.end();
    expect(await Promise.all(all)).toEqual(["A", "B", "C", "D", "E"]);
  });

  test("each item gets its own outcome; a run that throws rejects its whole batch", async () => {
    let calls = 0;
    const submit = groupCommit<number, number>({
      maxInFlight: 1,
      maxBatch: 10,
      group: () => "g",
      async run(batch) {
        if (++calls === 2) throw new Error("schedd down");
        return batch.map((n) => (n % 2 ? { ok: true, value: n * 10 } : { ok: false, error: new Error(`bad ${n}`) }));
      },
    });
    const a = submit(1);
    const rest = [submit(2), submit(3)];
    expect(await a).toBe(10);
    const settled = await Promise.allSettled(rest);
    expect(settled.map((s) => (s.status === "rejected" ? String(s.reason) : s.value))).toEqual(["Error: schedd down", "Error: schedd down"]);
    const [two, three] = [submit(2), submit(3)];
    await expect(two).rejects.toThrow("bad 2");
    expect(await three).toBe(30);
  });

  test("an adaptive limit is asked whenever a run could start; onLimited hears when work waits only for a slot", async () => {
    const c = controlled();
    let limit = 1;
    let limited = 0;
    const submit = groupCommit<string, string>({ maxInFlight: () => limit, maxBatch: 2, group: () => "g", run: c.run, onLimited: () => limited++ });
    const all = ["a", "b"].map((x) => submit(x));
    // "b" waits to be batched, not for a slot: nothing is limited yet.
    expect(limited).toBe(0);
    all.push(submit("c"));
    // "b" and "c" fill a batch that could start but for the limit.
    expect(c.batches).toEqual([["a"]]);
    expect(limited).toBe(1);
    all.push(...["d", "e"].map((x) => submit(x)));
    limit = 3;
    await c.end();
    expect(c.batches).toEqual([["a"], ["b", "c"], ["d", "e"]]);
    limit = 1;
    all.push(...["f", "g"].map((x) => submit(x)));
    expect(c.batches.length).toBe(3);
    for (let i = 0; i < 3; i++) await c.end();
    expect(await Promise.all(all)).toEqual(["A", "B", "C", "D", "E", "F", "G"]);
    expect(c.most()).toBe(2);
  });

  test("onBatch hears the size of every batch", async () => {
    const sizes: number[] = [];
    const c = controlled();
    const submit = groupCommit<string, string>({ maxInFlight: 1, maxBatch: 10, group: () => "g", run: c.run, onBatch: (n) => sizes.push(n) });
    void submit("a");
    void submit("b");
    void submit("c");
    await c.end();
    await c.end();
    expect(sizes).toEqual([1, 2]);
  });
});
