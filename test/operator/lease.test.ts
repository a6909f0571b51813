// Leader election's term (src/kube/lease.ts; docs/operator.md#only-one-submits), with a lock
// double: a renewal that hangs, and a leader whose work fails.
import { expect, test } from "bun:test";
import { type LeaseLock, runLeaderElection } from "../../src/kube/lease.ts";

function lock(renew: () => Promise<boolean>): LeaseLock & { attempts: number } {
  const l = {
    attempts: 0,
    identity: "me",
    async tryAcquireOrRenew() {
      l.attempts++;
      return l.attempts === 1 ? true : renew();
    },
    release: async () => {},
    holder: () => "me",
  };
  return l;
}

test("a renewal that hangs past the renew deadline ends the term: the work is told to stop (docs/operator.md#only-one-submits)", async () => {
  // Each API call may take its whole 30 s timeout; the deadline must not wait for it.
  const l = lock(() => new Promise<boolean>(() => {}));
  const stop = new AbortController();
  let stoppedWork = false;
  const outcome = await runLeaderElection({ lock: l, retryMs: 5, renewDeadlineMs: 40, now: Date.now }, stop.signal, async (leading) => {
    await new Promise((r) => leading.addEventListener("abort", r));
    stoppedWork = true;
  });
  expect(outcome).toBe("lost");
  expect(stoppedWork).toBe(true);
}, 5000);

test("a leader whose work fails gives up the term instead of renewing the Lease and doing nothing", async () => {
  const l = lock(async () => true);
  const stop = new AbortController();
  const logs: string[] = [];
  const outcome = await runLeaderElection(
    { lock: l, retryMs: 5, renewDeadlineMs: 1000, now: Date.now, log: (m) => logs.push(m) },
    stop.signal,
    async () => {
      throw new Error("The operator's store failed");
    },
  );
  expect(outcome).toBe("lost");
  expect(logs.join("\n")).toContain("The operator's store failed");
}, 5000);

test("a stop still ends the term as stopped and gives the Lease back", async () => {
  let released = false;
  const l = { ...lock(async () => true), release: async () => void (released = true) };
  const stop = new AbortController();
  const run = runLeaderElection({ lock: l, retryMs: 5, renewDeadlineMs: 1000, now: Date.now }, stop.signal, async (leading) => {
    await new Promise((r) => leading.addEventListener("abort", r));
  });
  setTimeout(() => stop.abort(), 30);
  expect(await run).toBe("stopped");
  expect(released).toBe(true);
}, 5000);
