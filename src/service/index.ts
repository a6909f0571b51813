/**
 * The service behind the routes: one module per use case around a shared context (context.ts).
 * Data flows one way: validate → plan → render → condor → store → status mapping.
 */
import type { Api } from "../app.ts";
import { type ServiceDeps, createContext } from "./context.ts";
import { createCreateService } from "./create.ts";
import { createDeleteService } from "./delete.ts";
import { createHealthService } from "./health.ts";
import { createLogService } from "./logs.ts";
import { createReconcileService } from "./reconcile.ts";
import { createStatusService } from "./status.ts";

export type { ServiceDeps } from "./context.ts";

export interface Service extends Api {
  /**
   * Brings the store in line with the schedd (interrupted creates, a lost store, jobs of pods
   * deleted meanwhile). Run at start and by the reaper until it has succeeded once.
   */
  reconcile(): Promise<void>;
  /** One pass of the background work: reconcile if still needed, pending removals, tombstones. */
  reap(): Promise<void>;
  /** Waits (up to `deadlineMs`) for creates and a reaper pass that are still running. */
  drain(deadlineMs: number): Promise<void>;
}

export function createService(d: ServiceDeps): Service {
  const c = createContext(d);
  const status = createStatusService(c);
  const deletes = createDeleteService(c);
  const background = createReconcileService(c, deletes);
  const health = createHealthService(c);
  const logs = createLogService(c, status);
  let reaping: Promise<void> | undefined;

  return {
    create: createCreateService(c).create,
    remove: deletes.remove,
    status: status.status,
    ping: health.ping,
    systemInfo: health.systemInfo,
    logs: logs.logs,
    reconcile: background.reconcile,
    reap() {
      reaping ??= background.reap().finally(() => (reaping = undefined));
      return reaping;
    },
    async drain(deadlineMs) {
      const work = Promise.allSettled([...c.inflight.values(), reaping]);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([work, new Promise<void>((r) => (timer = setTimeout(r, deadlineMs)))]);
      clearTimeout(timer);
    },
  };
}
