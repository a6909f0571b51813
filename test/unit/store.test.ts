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
  store.markSubmitted("u1", 12, 0, 5);
  expect(store.get("u1")!.submittedAt).toBe(5);
  store.close();

  const raw = bunRuntime.openSqlite(path);
  expect(raw.get<{ version: number }>("SELECT version FROM schema_version")!.version).toBe(3);
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
  store.insertCreating({ uid: "u2", name: "n", namespace: "ns", dir: "/d", spooled: true, containers: [], secrets: ["volumes/s/pw", "env/c.main.env"], createdAt: 1 });
  expect(store.get("u2")!.secrets).toEqual(["volumes/s/pw", "env/c.main.env"]);
  store.update("u2", { fetchAttempts: 3 }, 2);
  expect(store.get("u2")!.fetchAttempts).toBe(3);
  store.close();
});
