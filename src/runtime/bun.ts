/** The Bun runtime adapter: Bun.spawn and bun:sqlite. */
import { Database } from "bun:sqlite";
import { hostname } from "node:os";
import type { Runtime, SpawnOptions, SpawnResult, Sqlite, SqlValue } from "./types.ts";
import { DEFAULT_MAX_OUTPUT, KILL_GRACE_MS, readCapped, readCappedBytes, toBytes } from "./spawn-util.ts";

async function spawn(opts: SpawnOptions): Promise<SpawnResult> {
  const started = performance.now();
  const proc = Bun.spawn([...opts.argv], {
    env: opts.env ?? {},
    cwd: opts.cwd,
    stdin: opts.stdin === undefined ? "ignore" : toBytes(opts.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  let timedOut = false;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const timer =
    opts.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          proc.kill("SIGTERM");
          killTimer = setTimeout(() => proc.kill("SIGKILL"), KILL_GRACE_MS);
        }, opts.timeoutMs);
  const max = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const [out, stderr] = await Promise.all([readCappedBytes(proc.stdout, max), readCapped(proc.stderr, max)]);
  await proc.exited;
  clearTimeout(timer);
  clearTimeout(killTimer);
  return {
    code: proc.signalCode ? null : proc.exitCode,
    signal: proc.signalCode ? String(proc.signalCode) : null,
    stdout: opts.stdoutBytes ? "" : new TextDecoder().decode(out),
    ...(opts.stdoutBytes ? { stdoutBytes: out } : {}),
    stderr,
    timedOut,
    durationMs: performance.now() - started,
  };
}

function openSqlite(path: string): Sqlite {
  const db = new Database(path, { create: true, strict: true });
  return {
    exec: (sql) => void db.run(sql),
    run: (sql, params = []) => ({ changes: db.query(sql).run(...(params as SqlValue[])).changes }),
    get: <T>(sql: string, params: readonly SqlValue[] = []) => (db.query(sql).get(...(params as SqlValue[])) ?? undefined) as T | undefined,
    all: <T>(sql: string, params: readonly SqlValue[] = []) => db.query(sql).all(...(params as SqlValue[])) as T[],
    transaction: <T>(fn: () => T): T => db.transaction(fn).immediate(),
    close: () => db.close(),
  };
}

export const bunRuntime: Runtime = {
  name: "bun",
  version: Bun.version,
  spawn,
  openSqlite,
  env: () => ({ ...(process.env as Record<string, string>) }),
  hostname: () => hostname(),
  uid: () => process.getuid?.() ?? -1,
  rss: () => process.memoryUsage.rss(),
  exit: (code) => process.exit(code),
  onSignal: (signal, fn) => void process.on(signal, fn),
};
