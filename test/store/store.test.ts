// The state store: versioned migrations keep what an older sidecar wrote (issue: API, durable state).
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bunRuntime } from "../../src/runtime/bun.ts";
import { openStore } from "../../src/store/store.ts";

const dir = mkdtempSync(join(tmpdir(), "store-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a version-1 store is migrated in place: records kept, new columns defaulted, WAL on", () => {
  const path = join(dir, "v1.db");
  const db = bunRuntime.openSqlite(path);
  // What the first released schema wrote.
  db.exec(`CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1);
    CREATE TABLE pods (uid TEXT PRIMARY KEY, namespace TEXT NOT NULL, name TEXT NOT NULL, phase TEXT NOT NULL,
      cluster INTEGER, proc INTEGER, dir TEXT NOT NULL, spooled INTEGER NOT NULL DEFAULT 0, containers TEXT NOT NULL,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, terminal TEXT, output_fetched INTEGER NOT NULL DEFAULT 0,
      missing_since INTEGER, held_since INTEGER);
    CREATE INDEX pods_phase ON pods(phase);
    INSERT INTO pods (uid, namespace, name, phase, cluster, proc, dir, containers, created_at, updated_at)
      VALUES ('u1', 'default', 'web', 'submitted', 12, 0, '/d/pods/u1', '[{"name":"main","init":false,"image":"docker://busybox"}]', 1, 2);`);
  db.close();

  const store = openStore(bunRuntime.openSqlite(path), path);
  const r = store.get("u1")!;
  expect(r).toMatchObject({ uid: "u1", phase: "submitted", cluster: 12, proc: 0, secrets: [], fetchAttempts: 0, submittedAt: undefined });
  expect(r.containers[0]!.name).toBe("main");
  // The columns added since work on the migrated file.
  store.accept({ uid: "u3", name: "n", namespace: "ns", dir: "/d/pods/u3", spooled: false, containers: [], secrets: [], createdAt: 4 });
  store.recordJob("u3", 13, 0, 5);
  expect(store.get("u3")!.submittedAt).toBe(5);
  store.close();

  const raw = bunRuntime.openSqlite(path);
  expect(raw.get<{ version: number }>("SELECT version FROM schema_version")!.version).toBe(6);
  // A job queued before the sidecar kept a shared event log keeps its own job.log (docs/status.md#what-drives-status).
  expect(raw.get<{ event_log: string | null }>("SELECT event_log FROM pods WHERE uid = 'u1'")!.event_log).toBe(null);
  expect(raw.get<{ journal_mode: string }>("PRAGMA journal_mode")!.journal_mode).toBe("wal");
  raw.close();
});

test("a store newer than this sidecar is refused, not misread", () => {
  const path = join(dir, "future.db");
  const db = bunRuntime.openSqlite(path);
  db.exec("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (99);");
  db.close();
  expect(() => openStore(bunRuntime.openSqlite(path), path)).toThrow(/schema version 99, newer than this sidecar knows/);
});

test("secret paths round-trip", () => {
  const path = join(dir, "new.db");
  const store = openStore(bunRuntime.openSqlite(path), path);
  store.accept({ uid: "u2", name: "n", namespace: "ns", dir: "/d", spooled: true, containers: [], secrets: ["volumes/s/pw", "env/c.main.env"], createdAt: 1 });
  expect(store.get("u2")!.secrets).toEqual(["volumes/s/pw", "env/c.main.env"]);
  store.update("u2", { fetchAttempts: 3 }, 2);
  expect(store.get("u2")!.fetchAttempts).toBe(3);
  store.close();
});

test("a store written by the version before the lifecycle phases (schema 3) opens: a pod with a final status is 'finished'", () => {
  const path = join(dir, "v3.db");
  const db = bunRuntime.openSqlite(path);
  // Schema 3 as that version wrote it: 'submitted' with a terminal status meant finished.
  db.exec(`CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (3);
    CREATE TABLE pods (uid TEXT PRIMARY KEY, namespace TEXT NOT NULL, name TEXT NOT NULL, phase TEXT NOT NULL,
      cluster INTEGER, proc INTEGER, dir TEXT NOT NULL, spooled INTEGER NOT NULL DEFAULT 0, containers TEXT NOT NULL,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, terminal TEXT, output_fetched INTEGER NOT NULL DEFAULT 0,
      missing_since INTEGER, held_since INTEGER, secrets TEXT NOT NULL DEFAULT '[]', submitted_at INTEGER,
      fetch_attempts INTEGER NOT NULL DEFAULT 0);
    CREATE INDEX pods_phase ON pods(phase);
    CREATE INDEX pods_job ON pods(cluster, proc);
    INSERT INTO pods (uid, namespace, name, phase, cluster, proc, dir, containers, created_at, updated_at, terminal)
      VALUES ('done', 'default', 'a', 'submitted', 7, 0, '/d/pods/done', '[]', 1, 2, '{"name":"a"}'),
             ('running', 'default', 'b', 'submitted', 8, 0, '/d/pods/running', '[]', 1, 2, NULL),
             ('gone', 'default', 'c', 'deleted', 9, 0, '/d/pods/gone', '[]', 1, 2, '{"name":"c"}');`);
  db.close();
  const store = openStore(bunRuntime.openSqlite(path), path);
  expect(store.get("done")).toMatchObject({ phase: "finished", cluster: 7, terminal: '{"name":"a"}' });
  expect(store.get("running")!.phase).toBe("submitted");
  expect(store.get("gone")!.phase).toBe("deleted");
  // A row older than the GlobalJobId column has none: it is proved by the pod's UID until learned (core/job-identity.ts).
  expect(store.liveJobs()).toEqual([
    { uid: "running", cluster: 8, proc: 0, submittedAt: 0, heldSince: undefined, missingSince: undefined, createdAt: 1, globalJobId: undefined },
  ]);
  store.update("running", { globalJobId: "peer@h#8.0#1764400000" }, 3);
  expect(store.get("running")!.globalJobId).toBe("peer@h#8.0#1764400000");
  expect(store.countByPhase()).toEqual({ creating: 0, submitted: 1, finished: 1, removing: 0, deleted: 1 });
  store.close();
});

test("the lifecycle: each transition applies only from the phases core/lifecycle.ts allows", () => {
  const path = join(dir, "lifecycle.db");
  const store = openStore(bunRuntime.openSqlite(path), path);
  const rec = (uid: string) => ({ uid, name: "n", namespace: "ns", dir: `/d/${uid}`, spooled: false, containers: [], secrets: [], createdAt: 1 });
  expect(store.accept(rec("a"))).toBe(true);
  expect(store.accept(rec("a"))).toBe(false); // one record per UID
  expect(store.finish("a", "{}", 2)).toBe(false); // creating → finished skips the job
  expect(store.recordJob("a", 3, 1, 2)).toBe(true);
  expect(store.get("a")).toMatchObject({ phase: "submitted", cluster: 3, proc: 1, submittedAt: 2 });
  expect(store.abandon("a")).toBe(false); // a submitted job is never dropped
  expect(store.finish("a", '{"x":1}', 3)).toBe(true);
  expect(store.get("a")).toMatchObject({ phase: "finished", terminal: '{"x":1}' });
  expect(store.requestRemoval("a", 4)).toBe(true);
  expect(store.requestRemoval("a", 5)).toBe(true); // the reaper retries a pending removal
  expect(store.finish("a", "{}", 5)).toBe(false); // a delete came first: status does not finish it
  expect(store.completeRemoval("a", 6)).toBe(true);
  expect(store.accept(rec("a"))).toBe(false); // the tombstone keeps a late create out
  expect(store.forget("a")).toBe(true);
  expect(store.get("a")).toBeUndefined();

  expect(store.tombstone(rec("t"), 7)).toBe(true);
  expect(store.get("t")).toMatchObject({ phase: "deleted", createdAt: 7 });
  expect(store.adopt(rec("b"), 9, 0, 8)).toBe(true);
  expect(store.get("b")).toMatchObject({ phase: "submitted", cluster: 9, proc: 0 });
  expect(store.byJob(9, 0)!.uid).toBe("b");
  expect(store.accept(rec("c")) && store.abandon("c")).toBe(true);
  expect(store.get("c")).toBeUndefined();
  store.close();
});

test("version: every write makes it grow, reads leave it (the refresher reads the followed jobs again only then)", () => {
  const path = join(dir, "version.db");
  const store = openStore(bunRuntime.openSqlite(path), path);
  const rec = { uid: "v", name: "n", namespace: "ns", dir: "/d/v", spooled: false, containers: [], secrets: [], createdAt: 1 };
  const seen = [store.version()];
  const step = (write: () => unknown) => {
    write();
    seen.push(store.version());
  };
  step(() => store.accept(rec));
  step(() => store.recordJob("v", 3, 0, 2));
  step(() => store.update("v", { heldSince: 5 }, 5));
  step(() => store.finish("v", "{}", 6));
  step(() => store.requestRemoval("v", 7));
  step(() => store.completeRemoval("v", 8));
  step(() => store.forget("v"));
  for (let i = 1; i < seen.length; i++) expect(seen[i]!).toBeGreaterThan(seen[i - 1]!);
  const before = store.version();
  store.get("v");
  store.liveJobs();
  store.list(["submitted"]);
  store.countByPhase();
  expect(store.version()).toBe(before);
  store.close();
});
