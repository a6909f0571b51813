/** The Deno runtime adapter: Deno.Command and node:sqlite. */
import { DatabaseSync } from "node:sqlite";
import { watchFolder } from "./watch.ts";
import type { HttpClient, Runtime, SpawnOptions, SpawnResult, Sqlite, SqlValue, TlsClientOptions } from "./types.ts";
import { DEFAULT_MAX_OUTPUT, KILL_GRACE_MS, readCapped, readCappedBytes, toBytes } from "./spawn-util.ts";
import { checkTlsMaterial } from "./tls-check.ts";

async function spawn(opts: SpawnOptions): Promise<SpawnResult> {
  const started = performance.now();
  const [cmd, ...args] = opts.argv;
  if (cmd === undefined) throw new Error("spawn: empty argv");
  const proc = new Deno.Command(cmd, {
    args,
    env: opts.env ?? {},
    clearEnv: true,
    cwd: opts.cwd,
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (opts.stdin !== undefined) {
    const w = proc.stdin.getWriter();
    await w.write(toBytes(opts.stdin)).catch(() => {});
    await w.close().catch(() => {});
  }
  let timedOut = false;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const kill = (s: Deno.Signal) => {
    try {
      proc.kill(s);
    } catch { /* already gone */ }
  };
  const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => {
    timedOut = true;
    kill("SIGTERM");
    killTimer = setTimeout(() => kill("SIGKILL"), KILL_GRACE_MS);
  }, opts.timeoutMs);
  const max = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const [out, stderr, status] = await Promise.all([readCappedBytes(proc.stdout, max, opts.stdoutInto), readCapped(proc.stderr, max), proc.status]);
  clearTimeout(timer);
  clearTimeout(killTimer);
  return {
    code: status.signal ? null : status.code,
    signal: status.signal ?? null,
    stdout: opts.stdoutInto ? "" : new TextDecoder().decode(out),
    ...(opts.stdoutInto ? { stdoutBytes: out } : {}),
    stderr,
    timedOut,
    durationMs: performance.now() - started,
  };
}

function openSqlite(path: string): Sqlite {
  const db = new DatabaseSync(path);
  const bind = (params: readonly SqlValue[]) => params as SqlValue[];
  return {
    exec: (sql) => db.exec(sql),
    run: (sql, params = []) => ({ changes: Number(db.prepare(sql).run(...bind(params)).changes) }),
    // node:sqlite returns null-prototype rows; plain objects keep both runtimes alike.
    get: <T>(sql: string, params: readonly SqlValue[] = []) => {
      const row = db.prepare(sql).get(...bind(params));
      return (row === undefined ? undefined : { ...row }) as T | undefined;
    },
    all: <T>(sql: string, params: readonly SqlValue[] = []) => db.prepare(sql).all(...bind(params)).map((row: object) => ({ ...row })) as T[],
    transaction: <T>(fn: () => T): T => {
      db.exec("BEGIN IMMEDIATE");
      try {
        const out = fn();
        db.exec("COMMIT");
        return out;
      } catch (err) {
        db.exec("ROLLBACK");
        throw err;
      }
    },
    close: () => db.close(),
  };
}

/** Deno binds the TLS material to a client object that each fetch names. */
function httpClient(opts: TlsClientOptions): HttpClient {
  checkTlsMaterial(opts);
  const client = Deno.createHttpClient({
    ...(opts.ca !== undefined ? { caCerts: [opts.ca] } : {}),
    ...(opts.cert !== undefined && opts.key !== undefined ? { cert: opts.cert, key: opts.key } : {}),
  });
  return {
    // The `client` member is typed by a Deno lib this project's deno.json does not load; it is stable at run time.
    fetch: (url, init) => fetch(url, { ...init, client } as RequestInit),
    close: () => client.close(),
  };
}

export const denoRuntime: Runtime = {
  name: "deno",
  version: Deno.version.deno,
  spawn,
  openSqlite,
  env: () => Deno.env.toObject(),
  hostname: () => Deno.hostname(),
  uid: () => Deno.uid() ?? -1,
  rss: () => Deno.memoryUsage().rss,
  exit: (code) => Deno.exit(code),
  onSignal: (signal, fn) => Deno.addSignalListener(signal, fn),
  watchFolder,
  httpClient,
};
