/**
 * The service behind the routes: one module per use case around a shared context (context.ts).
 * Data flows one way: validate → plan → render → condor → store → status mapping.
 */
import type { Api } from "../app.ts";
import { createContext, type ServiceDeps } from "./context.ts";
import { createCreateService } from "./create.ts";
import { createDeleteService } from "./delete.ts";
import { createHealthService } from "./health.ts";
import { createLogService } from "./logs.ts";
import { createReconcileService } from "./reconcile.ts";
import { createStatusService } from "./status.ts";
import { createSubmitter } from "./submitter.ts";

import type { ServiceView } from "./health.ts";
import type { StatusActivity } from "../core/forgotten.ts";

export type { ServiceDeps } from "./context.ts";

export interface Service extends Api {
  /**
   * Brings the store in line with the schedd (interrupted creates, a lost store, jobs of pods
   * deleted meanwhile). Run at start and by the reaper until it has succeeded once.
   */
  reconcile(): Promise<void>;
  /** One pass of the background work: reconcile if still needed, pending removals, tombstones. */
  reap(): Promise<void>;
  /** What the metrics' gauges read (core/metrics.ts). */
  view(): ServiceView;
  /** Runs a refresh of the queue's view now (and what it asks for), and waits for it. */
  refresh(): Promise<void>;
  /** Stops the refresher and waits (up to `deadlineMs`) for creates, a refresh and a reaper pass still running. */
  drain(deadlineMs: number): Promise<void>;
}

/** One schedd's service: what the router in front of several schedds (schedds.ts) also asks of it. */
export interface ScheddService extends Service {
  /**
   * This sidecar's jobs the schedd has not started yet, as far as the view knows (a job whose ad
   * the view has not seen yet counts): what placement over several schedds compares (schedds.ts).
   */
  idleJobs(): number;
  /** Whether the last condor_q of the view failed (the schedd does not answer now). */
  scheddFailing(): boolean;
  /** One condor_q of nothing: whether the schedd answers (counted in its streak, as the ping's). */
  probe(): Promise<boolean>;
  /**
   * Counts status calls on this clock from now on (core/forgotten.ts): several schedds' services
   * share one, so that a call about a pod on one schedd is activity for all (schedds.ts).
   */
  shareActivity?(activity: StatusActivity): void;
}

export function createService(d: ServiceDeps): ScheddService {
  const c = createContext(d);
  const status = createStatusService(c);
  const deletes = createDeleteService(c);
  const background = createReconcileService(c, deletes);
  const health = createHealthService(c);
  const logs = createLogService(c);
  let reaping: Promise<void> | undefined;
  // Jobs followed before a restart: the first full condor_q runs now.
  c.queue.wake();

  return {
    create: withJidPrefix(d.jidPrefix, createCreateService(c, createSubmitter(c, d.onSubmitBatch)).create),
    remove: deletes.remove,
    status: statusWithJidPrefix(d.jidPrefix, status.status),
    ping: health.ping,
    systemInfo: health.systemInfo,
    view: health.view,
    logs: logs.logs,
    reconcile: background.reconcile,
    reap() {
      // Pods interLink forgot are logged, and removed when due, on the same beat.
      reaping ??= Promise.all([background.reap(), c.forget.sweep()]).then(() => {}).finally(() => (reaping = undefined));
      return reaping;
    },
    refresh: () => c.queue.refreshNow(),
    idleJobs() {
      const ads = c.queue.current()?.ads;
      let n = 0;
      for (const j of c.store.liveJobs()) if ((ads?.get(`${j.cluster}.${j.proc}`)?.JobStatus ?? 1) === 1) n++;
      return n;
    },
    scheddFailing: () => c.queue.schedd.failures > 0,
    probe: () => c.queue.probe().then(() => true, () => false),
    shareActivity: c.forget.shareActivity,
    async drain(deadlineMs) {
      const work = Promise.allSettled([...c.inflight.values(), reaping, c.follower.stop(), c.queue.stop()]);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([work, new Promise<void>((r) => (timer = setTimeout(r, deadlineMs)))]);
      clearTimeout(timer);
    },
  };
}

/** The create, its PodJID prefixed (docs/schedds.md#job-ids): with no prefix, the create itself. */
function withJidPrefix(prefix: string | undefined, create: Service["create"]): Service["create"] {
  if (!prefix) return create;
  return async (req) => {
    const a = await create(req);
    return a.PodJID === "" ? a : { ...a, PodJID: prefix + a.PodJID };
  };
}

/** The status, each pod's JID prefixed as its create answered it: with no prefix, the status itself. */
function statusWithJidPrefix(prefix: string | undefined, status: Service["status"]): Service["status"] {
  if (!prefix) return status;
  return async (pods) => {
    const a = await status(pods);
    const withPrefix = (st: unknown) => {
      const p = st as { JID?: unknown };
      return typeof p.JID === "string" && p.JID !== "" ? { ...p, JID: prefix + p.JID } : st;
    };
    return { ...a, statuses: a.statuses.map(withPrefix) };
  };
}
