/**
 * Group commit: many requests, few condor processes. A request that arrives when nothing is in
 * flight runs at once, alone (batching never delays a lone request). Requests that arrive while
 * a run is in flight wait, and the next run of their group takes all of them together (up to
 * `maxBatch`). Up to `maxInFlight` runs at a time: when one ends, every waiting group gets a run
 * while slots are free; a group that fills a whole batch starts one as soon as a slot is free.
 * `maxInFlight` may change between runs (an adaptive limit, service/submit-limit.ts), which
 * `onLimited` tells when work that could start waits for a slot.
 *
 * `run` settles every item of its batch: a value, or the error that item gets.
 */

export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface GroupCommitOptions<T, R> {
  /** Runs at once at most: a number, or asked afresh whenever a run could start. */
  maxInFlight: number | (() => number);
  maxBatch: number;
  /** Items of one group may share a run; different groups never do. */
  group(item: T): string;
  /** Runs one batch (all of one group); one settled result per item, in order. */
  run(batch: T[]): Promise<Settled<R>[]>;
  /** Told the size of every batch that starts (metrics). */
  onBatch?(size: number): void;
  /** Told when a run could start but every slot is taken. */
  onLimited?(): void;
}

export interface GroupCommit<T, R> {
  (item: T): Promise<R>;
  /** Items waiting and runs in flight (shutdown waits for both). */
  pending(): number;
}

interface Waiting<T, R> {
  item: T;
  resolve(value: R): void;
  reject(error: unknown): void;
}

export function groupCommit<T, R>(o: GroupCommitOptions<T, R>): GroupCommit<T, R> {
  const waiting = new Map<string, Waiting<T, R>[]>();
  let inFlight = 0;
  let queued = 0;
  const max = typeof o.maxInFlight === "number" ? () => o.maxInFlight as number : o.maxInFlight;

  function start(key: string): void {
    const list = waiting.get(key)!;
    const batch = list.splice(0, o.maxBatch);
    if (list.length === 0) waiting.delete(key);
    queued -= batch.length;
    inFlight++;
    o.onBatch?.(batch.length);
    o.run(batch.map((w) => w.item))
      .then(
        (results) =>
          batch.forEach((w, i) => {
            const r = results[i];
            if (!r) w.reject(new Error("group commit: the run returned no result for this item"));
            else if (r.ok) w.resolve(r.value);
            else w.reject(r.error);
          }),
        (err) => batch.forEach((w) => w.reject(err)),
      )
      .finally(() => {
        inFlight--;
        pump(true);
      });
  }

  /** Starts runs while slots are free: any waiting group after a run ended, else only a lone or a full one. */
  function pump(afterRun: boolean): void {
    for (const key of [...waiting.keys()]) {
      while ((waiting.get(key)?.length ?? 0) >= o.maxBatch || (waiting.has(key) && (afterRun || inFlight === 0))) {
        if (inFlight >= max()) return o.onLimited?.();
        const full = waiting.get(key)!.length >= o.maxBatch;
        start(key);
        if (!full) break;
      }
    }
  }

  const submit = ((item: T) =>
    new Promise<R>((resolve, reject) => {
      const key = o.group(item);
      const list = waiting.get(key) ?? [];
      list.push({ item, resolve, reject });
      waiting.set(key, list);
      queued++;
      pump(false);
    })) as GroupCommit<T, R>;
  submit.pending = () => queued + inFlight;
  return submit;
}
