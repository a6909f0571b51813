/**
 * The one way this project opens a SQLite store, the sidecar's (store/store.ts) and the
 * operator's (operator/store.ts): WAL, a busy timeout, `synchronous = NORMAL` (why NORMAL:
 * docs/architecture.md#3-nothing-is-lost-on-restart), then the store's migrations. `migrations[i]`
 * takes the schema from version i to i + 1; each runs in its own transaction with the version it
 * brings, so a crash between two leaves a store that the next start migrates on from there.
 */
import { SidecarError } from "../core/errors.ts";
import type { Sqlite } from "../runtime/types.ts";

/** `store`: how errors name it ("The state store"); `program`: who reads it ("sidecar"). */
export function migrate(db: Sqlite, migrations: readonly string[], store: string, program: string): void {
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const current = db.get<{ version: number }>("SELECT version FROM schema_version")?.version ?? 0;
  if (current > migrations.length) {
    throw new SidecarError(
      "unavailable",
      `${store} has schema version ${current}, newer than this ${program} knows (${migrations.length}); upgrade the ${program}`,
    );
  }
  for (let v = current; v < migrations.length; v++) {
    db.transaction(() => {
      db.exec(migrations[v]!);
      db.run("DELETE FROM schema_version");
      db.run("INSERT INTO schema_version (version) VALUES (?)", [v + 1]);
    });
  }
}
