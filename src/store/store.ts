/**
 * Durable state: the pod → job mapping in SQLite (WAL) under DataRootFolder, with versioned
 * migrations. Survives restarts and `kill -9`; every write is one transaction. A record changes
 * phase only through the named transitions of core/lifecycle.ts, each one method here.
 */
import { errorText, SidecarError } from "../core/errors.ts";
import { PHASES, type PodPhase, type TransitionName, TRANSITIONS } from "../core/lifecycle.ts";
import type { Sqlite } from "../runtime/types.ts";
import type { EventLogRecord } from "../eventlog/index.ts";
import { migrate } from "./migrate.ts";

export type { PodPhase };

interface ContainerRef {
  name: string;
  init: boolean;
  image: string;
}

export interface PodRecord {
  uid: string;
  namespace: string;
  name: string;
  phase: PodPhase;
  cluster?: number;
  proc?: number;
  dir: string;
  spooled: boolean;
  containers: ContainerRef[];
  createdAt: number;
  updatedAt: number;
  /** The final PodStatus (JSON), from `finish` on. */
  terminal?: string;
  outputFetched: boolean;
  /** When the job was first missing from both queue and history. */
  missingSince?: number;
  /** When the job was first seen held with an unrecoverable code. */
  heldSince?: number;
  /** Paths (relative to `dir`) of the secret files written for the job: removed when it leaves. */
  secrets: string[];
  /** When the job id was recorded: a queue snapshot older than this cannot know the job. */
  submittedAt?: number;
  /** condor_transfer_data runs that did not bring the expected files back (spooled jobs). */
  fetchAttempts: number;
  /**
   * The sidecar's shared job event log the job writes to (a file name in the events folder), or
   * undefined for a job that has its own job.log: queued before the sidecar kept one, or spooled
   * (docs/status.md#what-drives-status).
   */
  eventLog?: string;
  /**
   * The job's `GlobalJobId`, recorded when the job was first seen: what proves that the ad at
   * `cluster.proc` is still this pod's job (core/job-identity.ts). Undefined until then, and in
   * records older than the column.
   */
  globalJobId?: string;
}

interface Row {
  uid: string;
  namespace: string;
  name: string;
  phase: PodPhase;
  cluster: number | null;
  proc: number | null;
  dir: string;
  spooled: number;
  containers: string;
  created_at: number;
  updated_at: number;
  terminal: string | null;
  output_fetched: number;
  missing_since: number | null;
  held_since: number | null;
  secrets: string;
  submitted_at: number | null;
  fetch_attempts: number;
  event_log: string | null;
  global_job_id: string | null;
}

const MIGRATIONS: string[] = [
  `CREATE TABLE pods (
     uid TEXT PRIMARY KEY,
     namespace TEXT NOT NULL,
     name TEXT NOT NULL,
     phase TEXT NOT NULL,
     cluster INTEGER,
     proc INTEGER,
     dir TEXT NOT NULL,
     spooled INTEGER NOT NULL DEFAULT 0,
     containers TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL,
     terminal TEXT,
     output_fetched INTEGER NOT NULL DEFAULT 0,
     missing_since INTEGER,
     held_since INTEGER
   );
   CREATE INDEX pods_phase ON pods(phase);`,
  `ALTER TABLE pods ADD COLUMN secrets TEXT NOT NULL DEFAULT '[]';
   ALTER TABLE pods ADD COLUMN submitted_at INTEGER;
   ALTER TABLE pods ADD COLUMN fetch_attempts INTEGER NOT NULL DEFAULT 0;`,
  // Jobs are matched to pods by their id alone (a job can rewrite any other attribute of its ad).
  `CREATE INDEX pods_job ON pods(cluster, proc);`,
  // A pod with its final status has a phase of its own (it was 'submitted' with a terminal status).
  `UPDATE pods SET phase = 'finished' WHERE phase = 'submitted' AND terminal IS NOT NULL;`,
  // The shared job event log: which file a job writes to, and how far each file has been read
  // (the offset sits just past a "..." line; inode and size show a truncated or replaced file).
  `ALTER TABLE pods ADD COLUMN event_log TEXT;
   CREATE TABLE event_logs (
     name TEXT PRIMARY KEY,
     created_at INTEGER NOT NULL,
     read_offset INTEGER NOT NULL DEFAULT 0,
     inode INTEGER NOT NULL DEFAULT 0,
     size INTEGER NOT NULL DEFAULT 0
   );`,
  // A job id is not an identity (a schedd hands ids out again): the GlobalJobId the job had when
  // it was first seen. Older rows have none; they are proved by the pod's UID until it is learned.
  `ALTER TABLE pods ADD COLUMN global_job_id TEXT;`,
];

function fromRow(r: Row): PodRecord {
  return {
    uid: r.uid,
    namespace: r.namespace,
    name: r.name,
    phase: r.phase,
    cluster: r.cluster ?? undefined,
    proc: r.proc ?? undefined,
    dir: r.dir,
    spooled: r.spooled === 1,
    containers: JSON.parse(r.containers) as ContainerRef[],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    terminal: r.terminal ?? undefined,
    outputFetched: r.output_fetched === 1,
    missingSince: r.missing_since ?? undefined,
    heldSince: r.held_since ?? undefined,
    secrets: JSON.parse(r.secrets) as string[],
    submittedAt: r.submitted_at ?? undefined,
    fetchAttempts: r.fetch_attempts,
    eventLog: r.event_log ?? undefined,
    globalJobId: r.global_job_id ?? undefined,
  };
}

/** A pod whose job is followed: its job id and the bookkeeping a refresh of the queue checks. */
export interface LiveJob {
  uid: string;
  cluster: number;
  proc: number;
  submittedAt: number;
  heldSince?: number;
  missingSince?: number;
  /** The shared event log the job writes to; undefined: the job is followed by polling the queue. */
  eventLog?: string;
  /** When the create began (epoch ms): a job queued before it is not this pod's. */
  createdAt: number;
  /** See {@link PodRecord.globalJobId}. */
  globalJobId?: string;
}

/** What a new record is made of (accept, adopt, tombstone). */
export type NewRecord =
  & Pick<PodRecord, "uid" | "namespace" | "name" | "dir" | "spooled" | "containers" | "secrets" | "createdAt">
  & Partial<Pick<PodRecord, "eventLog" | "globalJobId">>;

/** The bookkeeping fields of a record; its phase changes only through the transitions. */
type RecordPatch = Partial<Pick<PodRecord, "outputFetched" | "missingSince" | "heldSince" | "fetchAttempts" | "globalJobId">>;

/**
 * Every transition returns whether it applied: false when the record was not in a phase the
 * transition leaves (core/lifecycle.ts), e.g. a delete that moved it on meanwhile.
 */
export interface Store {
  get(uid: string): PodRecord | undefined;
  /** Every record in the given phases. */
  list(phases: readonly PodPhase[]): PodRecord[];
  /** The record that holds this job id, if any. */
  byJob(cluster: number, proc: number): PodRecord | undefined;
  /** The pods whose job is followed (phase `submitted`), with what a refresh of the queue checks. */
  liveJobs(): LiveJob[];
  /** How many records each phase has. */
  countByPhase(): Record<PodPhase, number>;
  /** Grows with every write: what was read before is still current while it has not grown. */
  version(): number;

  accept(rec: NewRecord): boolean;
  recordJob(uid: string, cluster: number, proc: number, now: number): boolean;
  abandon(uid: string): boolean;
  /** A job found in the queue or the history; `askedAt`: when that query began (its `submittedAt`). */
  adopt(rec: NewRecord, cluster: number, proc: number, askedAt: number): boolean;
  finish(uid: string, terminal: string, now: number): boolean;
  requestRemoval(uid: string, now: number): boolean;
  completeRemoval(uid: string, now: number): boolean;
  tombstone(rec: NewRecord, now: number): boolean;
  forget(uid: string): boolean;

  update(uid: string, patch: RecordPatch, now: number): void;

  /** The shared event logs, oldest first. */
  eventLogs(): EventLogRecord[];
  /** Starts following a new event log (no-op when it is known). */
  addEventLog(name: string, createdAt: number): void;
  /**
   * Saves how far a log has been read: only after what its events named was asked about, so
   * that a restart reads those events again rather than losing them. Does not change `version()`:
   * the followed jobs are the same.
   */
  saveEventLog(name: string, state: { offset: number; inode: number; size: number }): void;
  removeEventLog(name: string): void;
  /**
   * How many jobs that may still be queued write to each event log: creating, submitted or being
   * removed, and finished or deleted since `since`. A job finished or deleted through condor_rm
   * stays in the queue while its shadow exits, and the schedd then appends its 009 to the log by
   * path, creating the file again if it was deleted (docs/status.md#following-the-event-log).
   */
  eventLogUsers(since: number): Map<string, number>;
  close(): void;
}

/** A store that cannot be written (disk full, read-only file) answers with a clear error, not a crash. */
function guarded<T extends object>(what: string, target: T): T {
  const out = {} as T;
  for (const [k, v] of Object.entries(target)) {
    (out as Record<string, unknown>)[k] = typeof v !== "function" ? v : (...args: unknown[]) => {
      try {
        return v(...args);
      } catch (err) {
        if (err instanceof SidecarError) throw err;
        throw new SidecarError("unavailable", `The state store ${what} failed: ${errorText(err)}`, { cause: err });
      }
    };
  }
  return out;
}

export function openStore(db: Sqlite, path = "state.db"): Store {
  return guarded(path, openStoreUnguarded(db));
}

/** `phase IN (…)` for the phases a transition leaves (none of them null). */
function fromPhases(name: TransitionName): { sql: string; params: string[] } {
  const from = TRANSITIONS[name].from.filter((p): p is PodPhase => p !== null);
  return { sql: `phase IN (${from.map(() => "?").join(", ")})`, params: from };
}

interface LiveRow {
  uid: string;
  cluster: number;
  proc: number;
  submitted_at: number | null;
  held_since: number | null;
  missing_since: number | null;
  event_log: string | null;
  created_at: number;
  global_job_id: string | null;
}

function liveJobsOf(rows: readonly LiveRow[]): LiveJob[] {
  // Thousands of jobs write to the same few logs: one string per log name, not one per job.
  const names = new Map<string, string>();
  return rows.map((r) => ({
    uid: r.uid,
    cluster: r.cluster,
    proc: r.proc,
    submittedAt: r.submitted_at ?? 0,
    heldSince: r.held_since ?? undefined,
    missingSince: r.missing_since ?? undefined,
    eventLog: r.event_log === null ? undefined : names.get(r.event_log) ?? (names.set(r.event_log, r.event_log), r.event_log),
    createdAt: r.created_at,
    globalJobId: r.global_job_id ?? undefined,
  }));
}

function openStoreUnguarded(db: Sqlite): Store {
  let writes = 0;
  /** A transition from no record: an insert, refused when the UID has one. */
  const insert = (name: TransitionName, rec: NewRecord, job?: { cluster: number; proc: number; submittedAt: number }): boolean => {
    const to = TRANSITIONS[name].to;
    const r = db.run(
      `INSERT OR IGNORE INTO pods (uid, namespace, name, phase, dir, spooled, containers, created_at, updated_at, secrets, cluster, proc, submitted_at, event_log, global_job_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        rec.uid,
        rec.namespace,
        rec.name,
        to,
        rec.dir,
        rec.spooled ? 1 : 0,
        JSON.stringify(rec.containers),
        rec.createdAt,
        rec.createdAt,
        JSON.stringify(rec.secrets),
        job?.cluster ?? null,
        job?.proc ?? null,
        job?.submittedAt ?? null,
        rec.eventLog ?? null,
        rec.globalJobId ?? null,
      ],
    );
    writes++;
    return r.changes === 1;
  };
  /** A transition between phases, with the columns it sets besides phase and updated_at. */
  const move = (name: TransitionName, uid: string, now: number, sets = "", params: (string | number)[] = []): boolean => {
    const from = fromPhases(name);
    const r = db.run(`UPDATE pods SET phase = ?, updated_at = ?${sets} WHERE uid = ? AND ${from.sql}`, [
      TRANSITIONS[name].to,
      now,
      ...params,
      uid,
      ...from.params,
    ]);
    writes++;
    return r.changes === 1;
  };
  /** A transition to no record. */
  const drop = (name: TransitionName, uid: string): boolean => {
    const from = fromPhases(name);
    writes++;
    return db.run(`DELETE FROM pods WHERE uid = ? AND ${from.sql}`, [uid, ...from.params]).changes === 1;
  };

  migrate(db, MIGRATIONS, "The state store", "sidecar");

  return {
    get(uid) {
      const r = db.get<Row>("SELECT * FROM pods WHERE uid = ?", [uid]);
      return r ? fromRow(r) : undefined;
    },
    list(phases) {
      if (phases.length === 0) return [];
      return db.all<Row>(`SELECT * FROM pods WHERE phase IN (${phases.map(() => "?").join(",")})`, phases).map(fromRow);
    },
    version: () => writes,
    countByPhase() {
      const out = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<PodPhase, number>;
      for (const row of db.all<{ phase: PodPhase; n: number }>("SELECT phase, COUNT(*) AS n FROM pods GROUP BY phase")) out[row.phase] = row.n;
      return out;
    },
    byJob(cluster, proc) {
      const r = db.get<Row>("SELECT * FROM pods WHERE cluster = ? AND proc = ?", [cluster, proc]);
      return r ? fromRow(r) : undefined;
    },
    liveJobs() {
      return liveJobsOf(
        db.all<LiveRow>(
          "SELECT uid, cluster, proc, submitted_at, held_since, missing_since, event_log, created_at, global_job_id FROM pods WHERE phase = 'submitted' AND cluster IS NOT NULL",
        ),
      );
    },

    accept: (rec) => insert("accept", rec),
    recordJob: (uid, cluster, proc, now) => move("recordJob", uid, now, ", cluster = ?, proc = ?, submitted_at = ?", [cluster, proc, now]),
    abandon: (uid) => drop("abandon", uid),
    adopt: (rec, cluster, proc, askedAt) => insert("adopt", rec, { cluster, proc, submittedAt: askedAt }),
    finish: (uid, terminal, now) => move("finish", uid, now, ", terminal = ?", [terminal]),
    requestRemoval: (uid, now) => move("requestRemoval", uid, now),
    completeRemoval: (uid, now) => move("completeRemoval", uid, now),
    tombstone: (rec, now) => insert("tombstone", { ...rec, createdAt: now }),
    forget: (uid) => drop("forget", uid),

    update(uid, patch, now) {
      const sets: string[] = [];
      const params: (string | number | null)[] = [];
      const put = (col: string, v: string | number | null) => {
        sets.push(`${col} = ?`);
        params.push(v);
      };
      if (patch.outputFetched !== undefined) put("output_fetched", patch.outputFetched ? 1 : 0);
      if ("missingSince" in patch) put("missing_since", patch.missingSince ?? null);
      if ("heldSince" in patch) put("held_since", patch.heldSince ?? null);
      if (patch.fetchAttempts !== undefined) put("fetch_attempts", patch.fetchAttempts);
      if (patch.globalJobId !== undefined) put("global_job_id", patch.globalJobId);
      put("updated_at", now);
      writes++;
      db.run(`UPDATE pods SET ${sets.join(", ")} WHERE uid = ?`, [...params, uid]);
    },
    eventLogs() {
      return db
        .all<{ name: string; created_at: number; read_offset: number; inode: number; size: number }>(
          "SELECT name, created_at, read_offset, inode, size FROM event_logs ORDER BY created_at, name",
        )
        .map((r) => ({ name: r.name, createdAt: r.created_at, offset: r.read_offset, inode: r.inode, size: r.size }));
    },
    addEventLog(name, createdAt) {
      db.run("INSERT OR IGNORE INTO event_logs (name, created_at) VALUES (?, ?)", [name, createdAt]);
    },
    saveEventLog(name, st) {
      db.run("UPDATE event_logs SET read_offset = ?, inode = ?, size = ? WHERE name = ?", [st.offset, st.inode, st.size, name]);
    },
    removeEventLog(name) {
      db.run("DELETE FROM event_logs WHERE name = ?", [name]);
    },
    eventLogUsers(since) {
      const rows = db.all<{ event_log: string; n: number }>(
        `SELECT event_log, COUNT(*) AS n FROM pods WHERE event_log IS NOT NULL
           AND (phase IN ('creating', 'submitted', 'removing') OR (phase IN ('finished', 'deleted') AND updated_at >= ?))
         GROUP BY event_log`,
        [since],
      );
      return new Map(rows.map((r) => [r.event_log, r.n]));
    },
    close() {
      db.close();
    },
  };
}
