/**
 * The one abortable sleep: resolves after `ms`, or at once when `signal` aborts (already aborted:
 * at once). It leaves nothing behind on the signal, so a loop that sleeps on one long-lived
 * signal (a `kubectl logs -f` held open, polling every second) does not add a listener a poll.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
