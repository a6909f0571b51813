/**
 * The ping (GET /status with `[]`, docs/interlink.md#the-ping) and GET /system-info: whether the
 * schedd and the collector answer, the credential, and what the pool offers.
 */
import type { JobAd } from "../core/classad.ts";
import { credentialState } from "../core/credentials.ts";
import type { MetricsView } from "../core/metrics.ts";
import { errorText, SidecarError } from "../core/errors.ts";
import { blamesHTCondor, PING_ANSWER_KEEP_MS, pingAnswer, recordFailure, recordSuccess, type Streak } from "../core/health.ts";
import { type Ctx } from "./context.ts";

/** How long the ping waits for the schedd's answer (condor_q) before answering without it. */
const PING_SCHEDD_WAIT_MS = 5_000;
/** A condor_q this recent tells the ping about the schedd (the reconciler alone runs only every few minutes). */
const PING_HEARD_MS = 10_000;
/** Forgotten pods the ping lists at most (the count is always whole). */
const FORGOTTEN_LISTED = 50;

/** What the service's gauges show (core/metrics.ts), read at scrape time. */
export type ServiceView = Omit<MetricsView, "rss" | "startTime">;

export interface HealthService {
  ping(): Promise<{ healthy: boolean; body: unknown }>;
  systemInfo(): Promise<unknown>;
  view(): ServiceView;
}

/**
 * One call in flight for any number of callers, and its outcome (answer or failure) kept for
 * `keepMs` after it ended: a burst of pings costs HTCondor one tool process
 * (docs/status.md#the-ping).
 */
function shared<T>(ask: () => Promise<T>, keepMs: number, now: () => number): () => Promise<T> {
  let current: { promise: Promise<T>; endedAt?: number } | undefined;
  return () => {
    if (current && (current.endedAt === undefined || now() - current.endedAt < keepMs)) return current.promise;
    const entry: { promise: Promise<T>; endedAt?: number } = { promise: ask() };
    const ended = () => void (entry.endedAt = now());
    entry.promise.then(ended, ended);
    current = entry;
    return entry.promise;
  };
}

export function createHealthService(c: Ctx): HealthService {
  const startedAt = c.now();
  const collector: Streak = { failures: 0 };
  let lastMachines: JobAd[] | undefined;

  /** condor_status for the ping; its outcome counts once, however many pings share it. */
  const askCollector = shared(
    async () => {
      const at = c.now();
      try {
        const m = await c.condor.machines(["Name", "Cpus", "Memory", "GPUs", "TotalSlotCpus", "SlotType"]);
        recordSuccess(collector);
        lastMachines = m;
        return m;
      } catch (err) {
        const timedOut = err instanceof SidecarError && err.kind === "timeout";
        if (blamesHTCondor({ timedOut, starved: timedOut && (c.starved?.(at) ?? false) })) {
          recordFailure(collector, errorText(err), c.now());
          c.log.warn("ping: condor_status failed", { failures: collector.failures, error: errorText(err) });
        } else {
          c.log.warn("ping: condor_status timed out while the sidecar was starved of CPU: not counted as a failure of the collector", {
            error: errorText(err),
          });
        }
        return undefined;
      }
    },
    PING_ANSWER_KEEP_MS,
    c.now,
  );
  /** The ping's own condor_q (counted by the queue view, once per call). */
  const probeSchedd = shared(
    () => c.queue.probe().catch((err: unknown) => c.log.warn("ping: condor_q failed", { failures: c.queue.schedd.failures, error: errorText(err) })),
    PING_ANSWER_KEEP_MS,
    c.now,
  );

  /** The first problem of the credentials, and the soonest expiry among them. */
  function credential(): { problem?: string; expiry?: number } {
    const read = c.readCredential;
    if (!read) return {};
    const states = (c.credentials ?? []).map((s) => credentialState(s, read(s), c.now(), c.certificateExpiry ?? (() => undefined)));
    const expiries = states.flatMap((s) => (s.expiry === undefined ? [] : [s.expiry]));
    return { problem: states.find((s) => s.problem)?.problem, expiry: expiries.length ? Math.min(...expiries) : undefined };
  }

  return {
    async ping() {
      // The collector (condor_status) for the pool's capacity; the schedd (condor_q, the same
      // cached snapshot status uses) because a pool whose schedd is down cannot run pods.
      const [machines] = await Promise.all([
        askCollector(),
        // A condor_q of the view within the last PING_HEARD_MS (a targeted one of changed jobs,
        // the reconciler's, the polling's) speaks for the schedd; otherwise the ping asks on its
        // own. A slow condor_q must not hold the ping: it counts when it ends.
        c.queue.heardWithin(PING_HEARD_MS) ? undefined : Promise.race([
          probeSchedd(),
          new Promise<void>((r) => setTimeout(r, PING_SCHEDD_WAIT_MS).unref?.()),
        ]),
      ]);
      const answer = pingAnswer({
        credentialProblem: credential().problem,
        schedd: c.queue.schedd,
        collector,
        threshold: c.config.PingFailureThreshold,
        machines: machines ?? lastMachines,
        node: c.config.Node,
      });
      // Pods interLink forgot (docs/status.md#pods-interlink-forgot): reported, never a reason for a 503.
      const forgotten = c.forget.list();
      if (forgotten.length > 0) answer.body.forgotten = { count: forgotten.length, pods: forgotten.slice(0, FORGOTTEN_LISTED) };
      return answer;
    },

    view() {
      // The view is as fresh as the schedd's last answer: between changes the event log keeps it, and no query runs.
      const answered = c.queue.lastAnswer();
      return {
        pods: c.store.countByPhase(),
        failures: { schedd: c.queue.schedd.failures, collector: collector.failures },
        threshold: c.config.PingFailureThreshold,
        credentialExpiry: credential().expiry,
        snapshotAgeSeconds: c.queue.running() && answered !== undefined ? Math.max(0, (c.now() - answered) / 1000) : 0,
        submitConcurrency: c.submitLimit.current(),
        forgottenPods: c.forget.list().length,
      };
    },

    async systemInfo() {
      let connected = false;
      let output = "";
      try {
        const m = await c.condor.machines(["Name", "State", "Activity", "Cpus", "Memory"]);
        connected = true;
        output = `${m.length} slot(s): ${m.map((ad) => `${ad.Name} ${ad.State}/${ad.Activity}`).join(", ")}`.slice(0, 2000);
      } catch (err) {
        output = errorText(err);
      }
      const schedd = c.queue.schedd;
      const counts = c.store.countByPhase();
      return {
        status: connected && schedd.failures === 0 ? "healthy" : "unhealthy",
        timestamp: new Date(c.now()).toISOString(),
        htcondor_connected: connected,
        condor_status_output: output,
        condor_q_failing_since: schedd.since === undefined ? null : new Date(schedd.since).toISOString(),
        version: c.version,
        uptime_seconds: Math.floor((c.now() - startedAt) / 1000),
        tracked_pods: counts.creating + counts.submitted + counts.finished + counts.removing,
      };
    },
  };
}
