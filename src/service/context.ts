/**
 * What every use case of the service shares: its dependencies, the view of the queue, the
 * creates in flight, and the few rules about a pod record that all of them apply.
 */
import type { CredentialRead, CredentialSource } from "../core/credentials.ts";
import type { Condor, OwnedJob } from "../condor/tools.ts";
import { type JobId, jobIdString } from "../condor/parse.ts";
import { adNumber, type JobAd } from "../core/classad.ts";
import { classAdString } from "../core/classad.ts";
import { ownedConstraint, type RecordedJob } from "../core/job-identity.ts";
import { SidecarError } from "../core/errors.ts";
import type { ContainerInfo } from "../core/status.ts";
import { containerKey, type PlanConfig } from "../core/types.ts";
import type { FileConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { UnsafeJobFile } from "../store/files.ts";
import type { PodRecord, Store } from "../store/store.ts";
import { createQueueView, type QueueView, realTimer, type SetTimer } from "./queue.ts";
import { createRemover, type Remover } from "./remover.ts";
import { createSubmitLimit, type SubmitLimit } from "./submit-limit.ts";
import type { Follower } from "./follow.ts";
import type { ForgetService } from "./forgotten.ts";
import { newActivity, type StatusActivity } from "../core/forgotten.ts";
import { noTracing, type ServiceTracing } from "../tracing/tracing.ts";

export interface ServiceDeps {
  store: Store;
  condor: Condor;
  config: FileConfig;
  planConfig: PlanConfig;
  dataRoot: string;
  spool: boolean;
  /** The credentials that must be there and unexpired for the sidecar to be healthy (flags.ts condorAccess). */
  credentials?: readonly CredentialSource[];
  /** Reads one of them (condor/credentials.ts readCredential). */
  readCredential?: (source: CredentialSource) => CredentialRead;
  /** The notAfter time (epoch ms) of the first certificate in a PEM text, if it has one. */
  certificateExpiry?: (pem: string) => number | undefined;
  log: Logger;
  /** Epoch milliseconds. */
  now: () => number;
  version: string;
  /** The refresher's and the reaper's timer (tests move their own clock). */
  timer?: SetTimer;
  /** Told the size of every condor_submit's batch (metrics). */
  onSubmitBatch?: (size: number) => void;
  /** Calls back when something in a folder changes (the runtime's watchFolder); without it the event log follower only polls. */
  watchFolder?: (dir: string, onChange: () => void) => () => void;
  /** Whether the sidecar was starved of CPU since a time (service/starvation.ts): such timeouts are not HTCondor's. */
  starved?: (since: number) => boolean;
  /**
   * What the PodJIDs this service answers begin with (docs/schedds.md#job-ids): "" (the default)
   * for the schedd of DataRootFolder, `<schedd>#` for another one of several.
   */
  jidPrefix?: string;
  /** Spans of the create's steps and of each pod's life (docs/tracing.md); none without it. */
  tracing?: ServiceTracing;
}

/** What /create answers. */
export interface CreateAnswer {
  PodUID: string;
  PodJID: string;
}

export interface Ctx extends ServiceDeps {
  /** Selects this sidecar's jobs in searches. Never decides which pod a job is: a job can rewrite it. */
  sidecarConstraint: string;
  queue: QueueView;
  /** condor_rm, batched (remover.ts). */
  remove: Remover;
  /** How many condor_submit (and condor_rm) run at once, adapted to what they take (submit-limit.ts). */
  submitLimit: SubmitLimit;
  /** Creates running now, by pod UID: a repeated create joins the one that runs. */
  inflight: Map<string, Promise<CreateAnswer>>;
  /** When condor_transfer_data last ran for a pod (spooled output, retried at intervals). */
  lastFetch: Map<string, number>;
  /** When a job was first seen removed but still in the queue, by job id (asked about again, less often as it stays). */
  removedSeen: Map<string, number>;
  /** Whether reconcile has succeeded once (the reaper retries it until then). */
  reconciled: boolean;
  /** The job event log follower (follow.ts), set up by createService. */
  follower?: Follower;
  activity: StatusActivity;
  /** Pods interLink forgot (forgotten.ts), set up by createService. */
  forget?: ForgetService;
  tracing: ServiceTracing;
}

export function createContext(d: ServiceDeps): Ctx {
  const c: Ctx = {
    ...d,
    sidecarConstraint: `InterLinkSidecarId == ${classAdString(d.planConfig.sidecarId)}`,
    queue: createQueueView({ ...d, sidecarId: d.planConfig.sidecarId, timer: d.timer ?? realTimer }),
    remove: () => Promise.reject(new Error("the remover is not set up")),
    submitLimit: createSubmitLimit({ cap: d.config.MaxConcurrentSubmits, now: d.now, log: d.log }),
    inflight: new Map(),
    lastFetch: new Map(),
    removedSeen: new Map(),
    reconciled: false,
    activity: newActivity(),
    tracing: d.tracing ?? noTracing,
  };
  c.remove = createRemover(c);
  return c;
}

/** The job id as interLink sees it (`cluster.proc`), or "" before the job exists. */
export const jid = (r: PodRecord): string => (r.cluster === undefined ? "" : `${r.cluster}.${r.proc}`);

/** The recorded job id (only for records that have one). */
export const jobId = (r: PodRecord): JobId => ({ cluster: r.cluster!, proc: r.proc! });

/** What the sidecar recorded of a pod's job (records with a job id only): what proves an ad is that job (core/job-identity.ts). */
export const recordedJob = (r: Pick<PodRecord, "uid" | "cluster" | "proc" | "globalJobId" | "createdAt">): RecordedJob => ({
  cluster: r.cluster!,
  proc: r.proc!,
  uid: r.uid,
  globalJobId: r.globalJobId,
  queuedSince: Math.floor(r.createdAt / 1000) - QDATE_SLACK_SECONDS,
});

/** The pod's job as condor_rm and condor_transfer_data name it: by the constraint that proves it the pod's, never by its bare id. */
export const ownedJob = (r: Pick<PodRecord, "uid" | "cluster" | "proc" | "globalJobId">): OwnedJob => ({
  id: { cluster: r.cluster!, proc: r.proc! },
  constraint: ownedConstraint({ cluster: r.cluster!, proc: r.proc!, uid: r.uid, globalJobId: r.globalJobId }),
});

export const containerKeys = (r: PodRecord): string[] => r.containers.map((c) => containerKey(c.name, c.init));

/** What the status mapping needs to know of the pod. */
export const identity = (r: PodRecord) => ({ uid: r.uid, name: r.name, namespace: r.namespace, jid: jid(r), containers: r.containers as ContainerInfo[] });

/** Secret files of the pod: env files (always) and the secret volume files recorded at create. */
export const secretPaths = (r: PodRecord): string[] => [...new Set([...containerKeys(r).map((k) => `env/${k}.env`), ...r.secrets])];

/** Logs a file the job left in its pod folder that the sidecar will not read (a symlink, …). */
export const unsafeFileWarning = (c: Ctx, r: PodRecord) => (err: UnsafeJobFile) =>
  c.log.warn("ignoring a file of the job that is not a plain file of its pod folder", { uid: r.uid, jid: jid(r), error: err.message });

/**
 * A search by pod UID trusts an attribute the job can rewrite (condor_chirp set_job_attr), so it
 * only takes jobs queued at or after the submit began: such a job cannot have run and rewritten
 * anything yet. The slack allows for a schedd clock behind the sidecar's (a remote schedd).
 */
const QDATE_SLACK_SECONDS = 5;

/** Two jobs claim one pod UID (see findJobByUid): neither is adopted, and an operator must look. */
export class UidConflict extends SidecarError {
  constructor(uid: string, ids: readonly JobId[]) {
    super(
      "unavailable",
      `Jobs ${ids.map(jobIdString).join(" and ")} both claim pod ${uid}; neither is adopted: remove the one that is not the pod's (condor_rm)`,
    );
  }
}

/**
 * The jobs creates submitted, found by the pods' UIDs when their ids were never recorded (the
 * sidecar died, or condor_submit timed out, between the schedd's commit and the record): one
 * condor_q for any number of records, then one condor_history for those the queue lacks.
 * The UID is an attribute a job can rewrite, so a record only takes jobs queued since its
 * create began (they cannot have run yet), never one recorded for another pod, and two
 * candidates are a conflict that nothing here can settle: neither is adopted.
 */
export async function findJobsByUid(c: Ctx, records: readonly Pick<PodRecord, "uid" | "createdAt">[]): Promise<Map<string, JobId | UidConflict | undefined>> {
  const out = new Map<string, JobId | UidConflict | undefined>();
  if (records.length === 0) return out;
  const since = (r: Pick<PodRecord, "createdAt">) => Math.floor(r.createdAt / 1000) - QDATE_SLACK_SECONDS;
  const byUid = new Map(records.map((r) => [r.uid, r]));
  const one = records.length === 1 ? ` && InterLinkPodUID == ${classAdString(records[0]!.uid)}` : "";
  const constraint = `${c.sidecarConstraint} && QDate >= ${Math.min(...records.map(since))}${one}`;
  const attributes = ["ClusterId", "ProcId", "InterLinkPodUID", "QDate"];
  const claims = (ads: readonly JobAd[]) => {
    const found = new Map<string, JobId[]>();
    for (const ad of ads) {
      const r = typeof ad.InterLinkPodUID === "string" ? byUid.get(ad.InterLinkPodUID) : undefined;
      if (!r || typeof ad.ClusterId !== "number" || typeof ad.ProcId !== "number" || (adNumber(ad, "QDate") ?? 0) < since(r)) continue;
      if ((c.store.byJob(ad.ClusterId, ad.ProcId)?.uid ?? r.uid) !== r.uid) continue;
      found.set(r.uid, [...(found.get(r.uid) ?? []), { cluster: ad.ClusterId, proc: ad.ProcId }]);
    }
    return found;
  };
  const found = claims(await c.condor.query({ constraint, attributes }));
  if (records.some((r) => !found.has(r.uid))) {
    const ended = claims(await c.condor.history({ constraint, attributes, limit: 10_000, scanLimit: 100_000 }));
    for (const [uid, ids] of ended) if (!found.has(uid)) found.set(uid, ids);
  }
  for (const r of records) {
    const ids = found.get(r.uid) ?? [];
    out.set(r.uid, ids.length > 1 ? new UidConflict(r.uid, ids) : ids[0]);
  }
  return out;
}

/** {@link findJobsByUid} for one record; a conflict is thrown. */
export async function findJobByUid(c: Ctx, r: Pick<PodRecord, "uid" | "createdAt">): Promise<JobId | undefined> {
  const found = (await findJobsByUid(c, [r])).get(r.uid);
  if (found instanceof UidConflict) throw found;
  return found;
}
