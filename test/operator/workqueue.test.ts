// The operator's work queue (src/operator/workqueue.ts; docs/operator.md#watch-not-poll).
import { expect, test } from "bun:test";
import { createWorkQueue } from "../../src/operator/workqueue.ts";

/** An AbortSignal that counts the abort listeners still attached to it. */
function countingSignal() {
  const ac = new AbortController();
  let live = 0;
  const add = ac.signal.addEventListener.bind(ac.signal);
  const remove = ac.signal.removeEventListener.bind(ac.signal);
  ac.signal.addEventListener = ((type: string, fn: EventListener, o?: AddEventListenerOptions) => {
    if (type === "abort") live++;
    add(type, fn, o);
  }) as typeof ac.signal.addEventListener;
  ac.signal.removeEventListener = ((type: string, fn: EventListener, o?: EventListenerOptions) => {
    if (type === "abort") live--;
    remove(type, fn, o);
  }) as typeof ac.signal.removeEventListener;
  return { ac, live: () => live };
}

test("a worker that goes idle a thousand times leaves no abort listener behind on the leading signal", async () => {
  const q = createWorkQueue({ random: () => 0.5, backoff: { initialMs: 1, maxMs: 1 }, log: () => {} });
  const { ac, live } = countingSignal();
  let done = 0;
  const running = q.run(2, ac.signal, async () => void done++);
  for (let i = 0; i < 1000; i++) {
    q.add(`ns/k${i}`);
    await new Promise((r) => setTimeout(r, 0));
  }
  while (done < 1000) await new Promise((r) => setTimeout(r, 1));
  // Two idle workers wait now: one listener each, not one per wake-up.
  expect(live()).toBeLessThanOrEqual(2);
  ac.abort();
  await running;
});
