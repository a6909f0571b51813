/**
 * A keyed work queue, as controller-runtime's: a key waits at most once however often it is
 * added, one key is never worked on by two workers at once, and a key that failed comes back
 * after a growing delay. Keys are `namespace/name`.
 */
import { backoffDelay, type BackoffPolicy } from "../kube/backoff.ts";

export interface WorkQueue {
  /** Work on `key` (again), after `delayMs` if given. */
  add(key: string, delayMs?: number): void;
  /** Runs `work` on keys with `workers` at a time until the signal aborts. */
  run(workers: number, signal: AbortSignal, work: (key: string) => Promise<void>): Promise<void>;
  /** Keys waiting or being worked on (tests, metrics). */
  size(): number;
}

export function createWorkQueue(opts: { random: () => number; backoff: BackoffPolicy; log: (key: string, err: unknown, delayMs: number) => void }): WorkQueue {
  const waiting: string[] = [];
  const queued = new Set<string>();
  const busy = new Set<string>();
  /** Added while busy: worked on again once the running pass ends. */
  const again = new Set<string>();
  const failures = new Map<string, number>();
  const timers = new Map<string, ReturnType<typeof setTimeout>>();
  const sleepers: (() => void)[] = [];
  const wake = () => sleepers.shift()?.();

  const push = (key: string) => {
    if (busy.has(key)) {
      again.add(key);
      return;
    }
    if (queued.has(key)) return;
    queued.add(key);
    waiting.push(key);
    wake();
  };

  const add = (key: string, delayMs = 0) => {
    if (delayMs <= 0) return push(key);
    if (timers.has(key)) return;
    timers.set(
      key,
      setTimeout(() => {
        timers.delete(key);
        push(key);
      }, delayMs),
    );
  };

  return {
    add,
    async run(workers, signal, work) {
      const worker = async () => {
        while (!signal.aborted) {
          const key = waiting.shift();
          if (key === undefined) {
            // The abort listener goes on wake-up: one per idle spell would pile up on `signal` for the whole term.
            await new Promise<void>((r) => {
              const done = () => {
                signal.removeEventListener("abort", done);
                r();
              };
              sleepers.push(done);
              signal.addEventListener("abort", done, { once: true });
            });
            continue;
          }
          queued.delete(key);
          busy.add(key);
          try {
            await work(key);
            failures.delete(key);
          } catch (err) {
            const n = (failures.get(key) ?? 0) + 1;
            failures.set(key, n);
            const delay = backoffDelay(n, opts.random, opts.backoff);
            opts.log(key, err, delay);
            if (!signal.aborted) {
              busy.delete(key);
              again.delete(key);
              add(key, delay);
            }
          } finally {
            busy.delete(key);
            if (again.delete(key)) push(key);
          }
          if (waiting.length > 0) wake();
        }
      };
      await Promise.all(Array.from({ length: workers }, worker));
      for (const t of timers.values()) clearTimeout(t);
      timers.clear();
    },
    size: () => queued.size + busy.size + timers.size,
  };
}
