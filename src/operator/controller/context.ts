/**
 * What every use case of the HTCJob controller shares (docs/operator.md#behaviour): its
 * dependencies, what it remembers between passes, and the few rules about an HTCJob and its
 * record that all of them apply, the search of clusters by UID among them.
 */
import { join } from "node:path";
import type { Condor } from "../../condor/tools.ts";
import type { HTCJobConfig, PlanConfig } from "../../core/types.ts";
import type { KubeClient, KubeObject } from "../../kube/client.ts";
import type { EventRecorder } from "../../kube/events.ts";
import type { Logger } from "../../logger.ts";
import { findClustersByUid } from "../follow.ts";
import type { HTCJobStatus, ProcState } from "../status.ts";
import type { HTCJobStore, NewHTCJob } from "../store.ts";

export const FINALIZER = "htc.cern.ch/finalizer";

export interface HTCJob extends KubeObject {
  spec?: unknown;
  status?: Partial<HTCJobStatus>;
}

export interface ControllerDeps {
  client: KubeClient;
  /** The informer's cache: what the watch last said of an object. */
  cached(namespace: string, name: string): HTCJob | undefined;
  cachedAll(): HTCJob[];
  /** Ask for `namespace/name` to be reconciled (again), after `delayMs`. */
  enqueue(key: string, delayMs?: number): void;
  store: HTCJobStore;
  condor: Condor;
  events: EventRecorder;
  planConfig: PlanConfig;
  htcjob: HTCJobConfig;
  /** Namespaces whose HTCJobs run; empty: all. */
  namespaces: readonly string[];
  /** `--namespace`: the only namespace watched, so the only one whose records this term may act on. */
  watchedNamespace?: string;
  dataRoot: string;
  spool: boolean;
  terminalHoldCodes: readonly number[];
  /** How long a proc may be in neither the queue nor the history before it counts as lost. */
  lostAfterMs: number;
  log: Logger;
  now: () => number;
  /** This term: aborted once another replica may lead. Checked again right before a submit. */
  leading?: AbortSignal;
  /** condor_submit's timeout: a submit begun by an earlier term may still be queueing until then. */
  submitTimeoutMs?: number;
  /** How long a proc held with a code in TerminalHoldCodes is left alone before it is removed. */
  holdGraceMs?: number;
  /** A submit's random token (default: a random UUID). */
  token?: () => string;
  /** Told of every API write (metrics and the steady-state benchmark). */
  onWrite?: (what: string) => void;
  /** The job event log a new, non-spooled cluster writes (events.ts); without it the cluster has its own job.log and is polled. */
  eventLog?: () => { name: string; path: string } | undefined;
  /** A cluster was recorded: its procs are asked about at once (their submit events may have been read already). */
  recorded?: (cluster: number, procs: number) => void;
}

export interface Ctx extends ControllerDeps {
  /** What the follower last saw of each live HTCJob's procs, by UID. */
  views: Map<string, ProcState[]>;
  /** The status last written, by UID: the informer's copy may lag behind our own write. */
  written: Map<string, HTCJobStatus>;
  /** UIDs whose latest submit ran in this term and is over: no earlier term's condor_submit can still be queueing. */
  settledHere: Set<string>;
}

export function createContext(d: ControllerDeps): Ctx {
  return { ...d, views: new Map(), written: new Map(), settledHere: new Set() };
}

export const keyOf = (o: { metadata: { namespace?: string; name: string } }) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** The HTCJob's folder: keyed by its UID, never its name. */
export const htcjobDir = (dataRoot: string, uid: string) => join(dataRoot, "htcjobs", uid);

/** A key for one record by UID, not by name: the object it belonged to is gone, and its name may be another's now. */
export const ORPHAN = "uid:";

/** Records an Event about the object; a failure to write it is logged, never thrown. */
export const event = (c: Ctx, o: HTCJob, type: "Normal" | "Warning", reason: string, message: string) =>
  c.events.record(o, type, reason, message).then(() => c.onWrite?.("event"), (err) => c.log.warn("cannot write an Event", { reason, error: String(err) }));

/** The record of an HTCJob of `procs` procs, as a submit (or an adoption) begins it. */
export function newRecord(c: Ctx, obj: HTCJob, procs: number): NewHTCJob {
  const uid = obj.metadata.uid!;
  return {
    uid,
    namespace: obj.metadata.namespace ?? "",
    name: obj.metadata.name,
    generation: obj.metadata.generation ?? 1,
    dir: htcjobDir(c.dataRoot, uid),
    procs,
    spooled: c.spool,
  };
}

/** The proc count a spec asks for, for a refusal's `failed` (1 when it cannot be read). */
export function procsAsked(spec: unknown): number {
  const s = (spec ?? {}) as { queue?: unknown; script?: { queue?: unknown } };
  const q = typeof s.queue === "number" ? s.queue : typeof s.script?.queue === "number" ? s.script.queue : 0;
  return Number.isSafeInteger(q) && q > 0 && q <= 1_000_000 ? q : 1;
}

/** The UID search (follow.ts), with the owner learned from the operator's own condor_q answers: cluster → its ProcIds. */
export async function search(c: Ctx, uid: string, token: string | undefined, history: boolean, claimedCluster?: number): Promise<Map<number, Set<number>>> {
  const found = await findClustersByUid(c.condor, { operatorId: c.htcjob.operatorId, uid, token, owner: c.store.owner(), history, claimedCluster });
  if (found.owner !== undefined && found.owner !== c.store.owner()) c.store.setOwner(found.owner);
  return found.clusters;
}
