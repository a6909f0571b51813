/**
 * The operator's own store: which HTCondor cluster belongs to which HTCJob, keyed by the HTCJob's
 * UID (never its name, which a new object can reuse). A SQLite file of its own (`htcjobs.db`
 * under DataRootFolder), so that a sidecar and an operator never read each other's records
 * (docs/operator.md#the-store). Every write is one transaction; the cluster is recorded here
 * before the HTCJob's status is written (docs/operator.md#never-twice).
 */
import { errorText, SidecarError } from "../core/errors.ts";
import type { Sqlite } from "../runtime/types.ts";
import { migrate } from "../store/migrate.ts";
import type { EventLogRecord } from "../eventlog/index.ts";
import type { ProcFiles } from "./output.ts";

/**
 * - `submitting`: a condor_submit began (or is about to); whether it queued a cluster is not known
 *   until it answers, or until a search by the HTCJob's UID says so.
 * - `refused`: the spec cannot be run; nothing was submitted.
 * - `submitted`: the cluster is known; its procs are followed.
 * - `finished`: every proc has its final outcome; nothing is asked of HTCondor any more.
 * - `deleted`: the object is gone and its procs are removed or gone; only the kept output remains.
 */
export type HTCJobPhase = "submitting" | "refused" | "submitted" | "finished" | "deleted";

/** A proc's final outcome, kept once known so that a finished HTCJob costs HTCondor nothing. */
export interface ProcOutcome {
  state: "succeeded" | "failed";
  exitCode?: number;
  /** Why it failed, one line: `exited with code 3`, `removed outside the operator: …`, `held: …`. */
  reason?: string;
  /** An exited proc's working-directory files (docs/operator.md#output). */
  files?: ProcFiles;
}

export interface HTCJobRecord {
  uid: string;
  namespace: string;
  name: string;
  phase: HTCJobPhase;
  generation: number;
  /** The HTCJob's folder (job.sh, job.sub, procs/<ProcId>/). */
  dir: string;
  procs: number;
  cluster?: number;
  spooled: boolean;
  /**
   * The job event log its procs write (a file name under the operator's events folder), or none:
   * spooled, adopted, or submitted before the operator read logs; those are polled
   * (docs/operator.md#following-the-procs).
   */
  eventLog?: string;
  /** When the latest condor_submit began (epoch ms). */
  submitStartedAt: number;
  /**
   * A random token of the latest condor_submit (`MY.HTCJobSubmitToken`), written here before it
   * runs: a search that settles a lost answer asks for it, so that only what this submit queued
   * is taken, whenever the search runs.
   */
  submitToken?: string;
  submittedAt?: number;
  /** Why the spec was refused (phase `refused`). */
  refusal?: string;
  /** Per ProcId, the final outcome once known. */
  outcomes: (ProcOutcome | null)[];
  /** Per ProcId, whether its spooled output was fetched. */
  fetched: boolean[];
  deletedAt?: number;
  updatedAt: number;
}

interface Row {
  uid: string;
  namespace: string;
  name: string;
  phase: HTCJobPhase;
  generation: number;
  dir: string;
  procs: number;
  cluster: number | null;
  spooled: number;
  submit_started_at: number;
  submit_token: string | null;
  submitted_at: number | null;
  refusal: string | null;
  outcomes: string;
  fetched: string;
  deleted_at: number | null;
  updated_at: number;
  event_log: string | null;
}

const MIGRATIONS: string[] = [
  `CREATE TABLE htcjobs (
     uid TEXT PRIMARY KEY,
     namespace TEXT NOT NULL,
     name TEXT NOT NULL,
     phase TEXT NOT NULL,
     generation INTEGER NOT NULL,
     dir TEXT NOT NULL,
     procs INTEGER NOT NULL,
     cluster INTEGER,
     spooled INTEGER NOT NULL DEFAULT 0,
     submit_started_at INTEGER NOT NULL,
     submitted_at INTEGER,
     refusal TEXT,
     outcomes TEXT NOT NULL DEFAULT '[]',
     fetched TEXT NOT NULL DEFAULT '[]',
     deleted_at INTEGER,
     updated_at INTEGER NOT NULL
   );
   CREATE INDEX htcjobs_phase ON htcjobs(phase);
   CREATE INDEX htcjobs_name ON htcjobs(namespace, name);
   CREATE UNIQUE INDEX htcjobs_cluster ON htcjobs(cluster) WHERE cluster IS NOT NULL;`,
  `ALTER TABLE htcjobs ADD COLUMN submit_token TEXT;
   CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);`,
  `ALTER TABLE htcjobs ADD COLUMN event_log TEXT;
   CREATE TABLE event_logs (
     name TEXT PRIMARY KEY,
     created_at INTEGER NOT NULL,
     offset INTEGER NOT NULL DEFAULT 0,
     inode INTEGER NOT NULL DEFAULT 0,
     size INTEGER NOT NULL DEFAULT 0
   );`,
];

const fromRow = (r: Row): HTCJobRecord => ({
  uid: r.uid,
  namespace: r.namespace,
  name: r.name,
  phase: r.phase,
  generation: r.generation,
  dir: r.dir,
  procs: r.procs,
  cluster: r.cluster ?? undefined,
  spooled: r.spooled === 1,
  eventLog: r.event_log ?? undefined,
  submitStartedAt: r.submit_started_at,
  submitToken: r.submit_token ?? undefined,
  submittedAt: r.submitted_at ?? undefined,
  refusal: r.refusal ?? undefined,
  outcomes: JSON.parse(r.outcomes) as (ProcOutcome | null)[],
  fetched: JSON.parse(r.fetched) as boolean[],
  deletedAt: r.deleted_at ?? undefined,
  updatedAt: r.updated_at,
});

export type NewHTCJob = Pick<HTCJobRecord, "uid" | "namespace" | "name" | "generation" | "dir" | "procs" | "spooled" | "eventLog">;

export interface HTCJobStore {
  get(uid: string): HTCJobRecord | undefined;
  /** The newest record of a name (`htcjob logs`): a deleted object's output is still found. */
  byName(namespace: string, name: string): HTCJobRecord | undefined;
  /** Every record of a name not yet deleted: an object re-created under a name leaves the old one's here. */
  named(namespace: string, name: string): HTCJobRecord[];
  list(phases: readonly HTCJobPhase[]): HTCJobRecord[];
  /** The operator's HTCondor user (`Owner`), as its own condor_q answers last showed it. */
  owner(): string | undefined;
  setOwner(owner: string): void;
  count(): Record<HTCJobPhase, number>;
  /** A submit is about to begin: the record, and its token, exist (phase `submitting`) before condor_submit runs. */
  beginSubmit(rec: NewHTCJob, now: number, token?: string): void;
  /** condor_submit answered, or a search found the cluster: from `submitting` (or a lost store) to `submitted`. */
  recordCluster(uid: string, cluster: number, procs: number, now: number): void;
  refuse(rec: NewHTCJob, reason: string, now: number): void;
  /** A refused spec changed (a new generation): it may be planned again. */
  forget(uid: string): void;
  setOutcomes(uid: string, outcomes: (ProcOutcome | null)[], now: number): void;
  setFetched(uid: string, fetched: boolean[], now: number): void;
  markDeleted(uid: string, now: number): void;
  eventLogs(): EventLogRecord[];
  addEventLog(name: string, createdAt: number): void;
  saveEventLog(log: EventLogRecord): void;
  removeEventLog(name: string): void;
  /** Per event log, how many records may still have procs queued that write to it (finished or deleted since `since` included). */
  eventLogUsers(since: number): Map<string, number>;
  close(): void;
}

const PHASES: HTCJobPhase[] = ["submitting", "refused", "submitted", "finished", "deleted"];

export function openHTCJobStore(db: Sqlite, path = "htcjobs.db"): HTCJobStore {
  const guard = <A extends unknown[], R>(fn: (...a: A) => R) => (...a: A): R => {
    try {
      return fn(...a);
    } catch (err) {
      if (err instanceof SidecarError) throw err;
      throw new SidecarError("unavailable", `The operator's store "${path}" failed: ${errorText(err)}`, { cause: err });
    }
  };
  guard(() => migrate(db, MIGRATIONS, `The operator's store "${path}"`, "operator"))();

  const get = (uid: string) => {
    const r = db.get<Row>("SELECT * FROM htcjobs WHERE uid = ?", [uid]);
    return r ? fromRow(r) : undefined;
  };
  const mustChange = (what: string, uid: string, changes: number) => {
    if (changes !== 1) throw new SidecarError("internal", `Cannot ${what} for HTCJob ${uid}: its record is not in a phase that allows it`);
  };

  return {
    get: guard(get),
    byName: guard((namespace: string, name: string) => {
      const r = db.get<Row>("SELECT * FROM htcjobs WHERE namespace = ? AND name = ? ORDER BY submit_started_at DESC LIMIT 1", [namespace, name]);
      return r ? fromRow(r) : undefined;
    }),
    named: guard((namespace: string, name: string) =>
      db.all<Row>("SELECT * FROM htcjobs WHERE namespace = ? AND name = ? AND phase != 'deleted'", [namespace, name]).map(fromRow)
    ),
    owner: guard(() => db.get<{ value: string }>("SELECT value FROM meta WHERE key = 'owner'")?.value),
    setOwner: guard((owner: string) => {
      db.run("INSERT INTO meta (key, value) VALUES ('owner', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", [owner]);
    }),
    list: guard((phases: readonly HTCJobPhase[]) =>
      db.all<Row>(`SELECT * FROM htcjobs WHERE phase IN (${phases.map(() => "?").join(", ")})`, [...phases]).map(fromRow)
    ),
    count: guard(() => {
      const out = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<HTCJobPhase, number>;
      for (const r of db.all<{ phase: HTCJobPhase; n: number }>("SELECT phase, COUNT(*) AS n FROM htcjobs GROUP BY phase")) out[r.phase] = r.n;
      return out;
    }),
    beginSubmit: guard((rec: NewHTCJob, now: number, token?: string) => {
      db.transaction(() => {
        const old = get(rec.uid);
        if (old && old.phase !== "submitting") {
          throw new SidecarError("internal", `Cannot submit HTCJob ${rec.uid} again: it is already ${old.phase}`);
        }
        db.run(
          `INSERT INTO htcjobs (uid, namespace, name, phase, generation, dir, procs, spooled, submit_started_at, submit_token, event_log, updated_at)
           VALUES (?, ?, ?, 'submitting', ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(uid) DO UPDATE SET procs = excluded.procs, generation = excluded.generation,
             submit_started_at = excluded.submit_started_at, submit_token = excluded.submit_token,
             event_log = excluded.event_log, updated_at = excluded.updated_at`,
          [rec.uid, rec.namespace, rec.name, rec.generation, rec.dir, rec.procs, rec.spooled ? 1 : 0, now, token ?? null, rec.eventLog ?? null, now],
        );
      });
    }),
    recordCluster: guard((uid: string, cluster: number, procs: number, now: number) => {
      const r = db.run(
        `UPDATE htcjobs SET phase = 'submitted', cluster = ?, procs = ?, submitted_at = ?, outcomes = ?, fetched = ?, updated_at = ?
         WHERE uid = ? AND phase = 'submitting'`,
        [cluster, procs, now, JSON.stringify(Array(procs).fill(null)), JSON.stringify(Array(procs).fill(false)), now, uid],
      );
      mustChange("record a cluster", uid, r.changes);
    }),
    refuse: guard((rec: NewHTCJob, reason: string, now: number) => {
      db.run(
        `INSERT INTO htcjobs (uid, namespace, name, phase, generation, dir, procs, spooled, submit_started_at, refusal, updated_at)
         VALUES (?, ?, ?, 'refused', ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(uid) DO UPDATE SET phase = 'refused', generation = excluded.generation, procs = excluded.procs,
           refusal = excluded.refusal, updated_at = excluded.updated_at WHERE htcjobs.phase IN ('refused', 'submitting')`,
        [rec.uid, rec.namespace, rec.name, rec.generation, rec.dir, rec.procs, rec.spooled ? 1 : 0, now, reason, now],
      );
    }),
    forget: guard((uid: string) => {
      db.run("DELETE FROM htcjobs WHERE uid = ? AND phase IN ('refused', 'deleted')", [uid]);
    }),
    setOutcomes: guard((uid: string, outcomes: (ProcOutcome | null)[], now: number) => {
      const done = outcomes.every((o) => o !== null);
      db.run(
        `UPDATE htcjobs SET outcomes = ?, phase = CASE WHEN ? AND phase = 'submitted' THEN 'finished' ELSE phase END, updated_at = ?
         WHERE uid = ? AND phase IN ('submitted', 'finished')`,
        [JSON.stringify(outcomes), done ? 1 : 0, now, uid],
      );
    }),
    setFetched: guard((uid: string, fetched: boolean[], now: number) => {
      db.run("UPDATE htcjobs SET fetched = ?, updated_at = ? WHERE uid = ?", [JSON.stringify(fetched), now, uid]);
    }),
    markDeleted: guard((uid: string, now: number) => {
      db.run("UPDATE htcjobs SET phase = 'deleted', deleted_at = ?, updated_at = ? WHERE uid = ?", [now, now, uid]);
    }),
    eventLogs: guard(() =>
      db.all<{ name: string; created_at: number; offset: number; inode: number; size: number }>("SELECT * FROM event_logs").map((r) => ({
        name: r.name,
        createdAt: r.created_at,
        offset: r.offset,
        inode: r.inode,
        size: r.size,
      }))
    ),
    addEventLog: guard((name: string, createdAt: number) => {
      db.run("INSERT INTO event_logs (name, created_at) VALUES (?, ?) ON CONFLICT(name) DO NOTHING", [name, createdAt]);
    }),
    saveEventLog: guard((l: EventLogRecord) => {
      db.run("UPDATE event_logs SET offset = ?, inode = ?, size = ? WHERE name = ?", [l.offset, l.inode, l.size, l.name]);
    }),
    removeEventLog: guard((name: string) => {
      db.run("DELETE FROM event_logs WHERE name = ?", [name]);
    }),
    // A record still submitting may have queued procs; a submitted one has procs without an outcome;
    // a proc of one finished or deleted lately may still be leaving the queue.
    eventLogUsers: guard((since: number) =>
      new Map(
        db.all<{ event_log: string; n: number }>(
          `SELECT event_log, COUNT(*) AS n FROM htcjobs WHERE event_log IS NOT NULL
             AND (phase IN ('submitting', 'submitted') OR updated_at >= ?) GROUP BY event_log`,
          [since],
        ).map((r) => [r.event_log, r.n]),
      )
    ),
    close: () => db.close(),
  };
}
