/**
 * The rules about a pod record that every use case of the service applies: the job id interLink
 * sees, the job as condor_rm names it, what proves an ad is the record's job, the pod's secret
 * files.
 */
import type { OwnedJob } from "../condor/tools.ts";
import type { JobId } from "../condor/parse.ts";
import { ownedConstraint, type RecordedJob } from "../core/job-identity.ts";
import type { ContainerInfo } from "../core/status.ts";
import { containerKey } from "../core/types.ts";
import type { Logger } from "../logger.ts";
import type { UnsafeJobFile } from "../store/files.ts";
import type { PodRecord } from "../store/store.ts";

/**
 * A search by pod UID trusts an attribute the job can rewrite (condor_chirp set_job_attr), so it
 * only takes jobs queued at or after the submit began: such a job cannot have run and rewritten
 * anything yet. The slack allows for a schedd clock behind the sidecar's (a remote schedd).
 */
export const QDATE_SLACK_SECONDS = 5;

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
export const unsafeFileWarning = (c: { log: Logger }, r: PodRecord) => (err: UnsafeJobFile) =>
  c.log.warn("ignoring a file of the job that is not a plain file of its pod folder", { uid: r.uid, jid: jid(r), error: err.message });
