/**
 * Durable state: the pod → job mapping in SQLite (WAL) under DataRootFolder, with versioned
 * migrations. Survives restarts and `kill -9`; every write is one transaction.
 */
import { SidecarError } from "../core/errors.ts";
import type { Sqlite } from "../runtime/types.ts";

/**
 * - `creating`: accepted, files being written or condor_submit running (no job id yet);
 * - `submitted`: a job exists (cluster/proc set);
 * - `removing`: deleted by interLink, condor_rm not yet confirmed (the reaper retries);
 * - `deleted`: tombstone: job gone and files removed; keeps a late create out.
 */
export type PodPhase = "creating" | "submitted" | "removing" | "deleted";

export interface ContainerRef {
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
  /** The final PodStatus (JSON) once the job ended; never queried again. */
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
  };
}

export interface Store {
  get(uid: string): PodRecord | undefined;
  /** Every record in the given phases. */
  list(phases: readonly PodPhase[]): PodRecord[];
  /** The record that holds this job id, if any. */
  byJob(cluster: number, proc: number): PodRecord | undefined;
  /** The job ids of the pods whose job is still followed (submitted, no final status). */
  liveJobs(): { uid: string; cluster: number; proc: number }[];
  insertCreating(rec: Omit<PodRecord, "phase" | "updatedAt" | "outputFetched" | "submittedAt" | "fetchAttempts">): void;
  markSubmitted(uid: string, cluster: number, proc: number, now: number): void;
  update(uid: string, patch: Partial<Pick<PodRecord, "phase" | "terminal" | "outputFetched" | "missingSince" | "heldSince" | "fetchAttempts">>, now: number): void;
  remove(uid: string): void;
  count(): number;
  close(): void;
}

/** A store that cannot be written (disk full, read-only file) answers with a clear error, not a crash. */
function guarded<T extends object>(what: string, target: T): T {
  const out = {} as T;
  for (const [k, v] of Object.entries(target)) {
    (out as Record<string, unknown>)[k] =
      typeof v !== "function"
        ? v
        : (...args: unknown[]) => {
            try {
              return v(...args);
            } catch (err) {
              if (err instanceof SidecarError) throw err;
              throw new SidecarError("unavailable", `The state store ${what} failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
            }
          };
  }
  return out;
}

export function openStore(db: Sqlite, path = "state.db"): Store {
  return guarded(path, openStoreUnguarded(db));
}

function openStoreUnguarded(db: Sqlite): Store {
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const current = db.get<{ version: number }>("SELECT version FROM schema_version")?.version ?? 0;
  if (current > MIGRATIONS.length) {
    throw new Error(`The state store has schema version ${current}, newer than this sidecar knows (${MIGRATIONS.length}); upgrade the sidecar`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.run("DELETE FROM schema_version");
      db.run("INSERT INTO schema_version (version) VALUES (?)", [v + 1]);
    });
  }

  return {
    get(uid) {
      const r = db.get<Row>("SELECT * FROM pods WHERE uid = ?", [uid]);
      return r ? fromRow(r) : undefined;
    },
    list(phases) {
      if (phases.length === 0) return [];
      return db.all<Row>(`SELECT * FROM pods WHERE phase IN (${phases.map(() => "?").join(",")})`, phases).map(fromRow);
    },
    byJob(cluster, proc) {
      const r = db.get<Row>("SELECT * FROM pods WHERE cluster = ? AND proc = ?", [cluster, proc]);
      return r ? fromRow(r) : undefined;
    },
    liveJobs() {
      return db.all<{ uid: string; cluster: number; proc: number }>(
        "SELECT uid, cluster, proc FROM pods WHERE phase = 'submitted' AND terminal IS NULL AND cluster IS NOT NULL",
      );
    },
    insertCreating(rec) {
      db.run(
        `INSERT INTO pods (uid, namespace, name, phase, dir, spooled, containers, created_at, updated_at, secrets)
         VALUES (?, ?, ?, 'creating', ?, ?, ?, ?, ?, ?)`,
        [rec.uid, rec.namespace, rec.name, rec.dir, rec.spooled ? 1 : 0, JSON.stringify(rec.containers), rec.createdAt, rec.createdAt, JSON.stringify(rec.secrets)],
      );
    },
    markSubmitted(uid, cluster, proc, now) {
      db.run("UPDATE pods SET phase = 'submitted', cluster = ?, proc = ?, submitted_at = ?, updated_at = ? WHERE uid = ?", [cluster, proc, now, now, uid]);
    },
    update(uid, patch, now) {
      const sets: string[] = [];
      const params: (string | number | null)[] = [];
      const put = (col: string, v: string | number | null) => {
        sets.push(`${col} = ?`);
        params.push(v);
      };
      if (patch.phase !== undefined) put("phase", patch.phase);
      if ("terminal" in patch) put("terminal", patch.terminal ?? null);
      if (patch.outputFetched !== undefined) put("output_fetched", patch.outputFetched ? 1 : 0);
      if ("missingSince" in patch) put("missing_since", patch.missingSince ?? null);
      if ("heldSince" in patch) put("held_since", patch.heldSince ?? null);
      if (patch.fetchAttempts !== undefined) put("fetch_attempts", patch.fetchAttempts);
      put("updated_at", now);
      db.run(`UPDATE pods SET ${sets.join(", ")} WHERE uid = ?`, [...params, uid]);
    },
    remove(uid) {
      db.run("DELETE FROM pods WHERE uid = ?", [uid]);
    },
    count() {
      return db.get<{ n: number }>("SELECT COUNT(*) AS n FROM pods WHERE phase != 'deleted'")?.n ?? 0;
    },
    close() {
      db.close();
    },
  };
}
