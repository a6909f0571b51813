/**
 * The life of a pod record, in one place: its phases and the transitions between them.
 *
 * ```
 *  accept             recordJob              finish
 * ───────► creating ───────────► submitted ────────► finished
 *             │  abandon ──► (gone)  │                   │
 *             └──────────────┬───────┴───────────────────┘
 *                            │ requestRemoval
 *                            ▼          completeRemoval           forget
 *                         removing ─────────────────► deleted ─────────► (gone)
 *  adopt ──► submitted        (a lost store)
 *  tombstone ──► deleted      (a delete for a pod never seen)
 * ```
 *
 * The names are stored in the state store and are the `phase` label of the pods metric: they
 * do not change without a store migration.
 */

export const PHASES = ["creating", "submitted", "finished", "removing", "deleted"] as const;

/**
 * - `creating`: accepted; files being written or condor_submit running (no job id yet);
 * - `submitted`: a job exists (its id is recorded) and is followed;
 * - `finished`: the job has left and the pod's final status is recorded (never queried again);
 * - `removing`: interLink deleted the pod; condor_rm not confirmed yet (the reaper retries);
 * - `deleted`: a tombstone: job gone, files removed; keeps a late create out, then forgotten.
 */
export type PodPhase = (typeof PHASES)[number];

/** A transition: the phases it leaves (`null`: no record yet) and the phase it enters (`null`: the record goes). */
interface Transition {
  from: readonly (PodPhase | null)[];
  to: PodPhase | null;
}

export const TRANSITIONS = {
  /** A create starts: the record exists before any file or job does. */
  accept: { from: [null], to: "creating" },
  /** condor_submit answered (or the schedd was asked after a timeout or a crash) with the job id. */
  recordJob: { from: ["creating"], to: "submitted" },
  /** The create failed before HTCondor queued anything: nothing to keep. */
  abandon: { from: ["creating"], to: null },
  /** A job of this sidecar found in the schedd with no record (the store was lost). */
  adopt: { from: [null], to: "submitted" },
  /** The job left the queue (or was removed by the sidecar): the final status is recorded. */
  finish: { from: ["submitted"], to: "finished" },
  /** interLink deleted the pod: condor_rm, then the files. */
  requestRemoval: { from: ["creating", "submitted", "finished", "removing"], to: "removing" },
  /** condor_rm confirmed (or the job had already left) and the files are gone. */
  completeRemoval: { from: ["removing"], to: "deleted" },
  /** A delete for a pod this sidecar never knew: keeps a late create from submitting it. */
  tombstone: { from: [null], to: "deleted" },
  /** The tombstone has expired. */
  forget: { from: ["deleted"], to: null },
} as const satisfies Record<string, Transition>;

export type TransitionName = keyof typeof TRANSITIONS;

/** Whether a record in `phase` (`null`: none) may take the transition. */
export function allowed(name: TransitionName, phase: PodPhase | null): boolean {
  return (TRANSITIONS[name].from as readonly (PodPhase | null)[]).includes(phase);
}
