/**
 * What every use case of the service shares: its dependencies, the view of the queue, the
 * remover, the event log follower, the creates in flight. Each part is built before the bag,
 * from the dependencies it needs; the rules about a pod record are records.ts, the search of
 * jobs by pod UID find-by-uid.ts.
 */
import type { CredentialRead, CredentialSource } from "../core/credentials.ts";
import type { Condor } from "../condor/tools.ts";
import { classAdString } from "../core/classad.ts";
import type { PlanConfig } from "../core/types.ts";
import type { FileConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { Store } from "../store/store.ts";
import { createQueueView, type QueueView, realTimer, type SetTimer } from "./queue.ts";
import { createRemover, type Remover } from "./remover.ts";
import { createSubmitLimit, type SubmitLimit } from "./submit-limit.ts";
import { createFollower, type Follower } from "./follow.ts";
import { createForgetService, type ForgetService } from "./forgotten.ts";
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
  /** The job event log follower (follow.ts). */
  follower: Follower;
  /** Pods interLink forgot (forgotten.ts). */
  forget: ForgetService;
  tracing: ServiceTracing;
}

export function createContext(d: ServiceDeps): Ctx {
  const queue = createQueueView({ ...d, sidecarId: d.planConfig.sidecarId, timer: d.timer ?? realTimer });
  const submitLimit = createSubmitLimit({ cap: d.config.MaxConcurrentSubmits, now: d.now, log: d.log });
  const remove = createRemover({ condor: d.condor, submitLimit });
  return {
    ...d,
    sidecarConstraint: `InterLinkSidecarId == ${classAdString(d.planConfig.sidecarId)}`,
    queue,
    remove,
    submitLimit,
    inflight: new Map(),
    lastFetch: new Map(),
    removedSeen: new Map(),
    reconciled: false,
    follower: createFollower({ ...d, queue }),
    forget: createForgetService({ ...d, queue, remove }),
    tracing: d.tracing ?? noTracing,
  };
}
