/** The Bun runtime adapter: Bun.spawn and bun:sqlite. */
import { Database } from "bun:sqlite";
import { randomUUID } from "node:crypto";
import { closeSync, fstatSync, openSync, readSync, unlinkSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { watchFolder } from "./watch.ts";
import type { HttpClient, Runtime, SpawnOptions, SpawnResult, Sqlite, SqlValue, TlsClientOptions } from "./types.ts";
import { DEFAULT_MAX_OUTPUT, KILL_GRACE_MS, readCapped, readCappedBytes, room, toBytes } from "./spawn-util.ts";
import { checkTlsMaterial } from "./tls-check.ts";

async function spawn(opts: SpawnOptions): Promise<SpawnResult> {
  const started = performance.now();
  const max = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const outFd = opts.stdoutInto ? unlinkedFile() : undefined;
  try {
    const proc = Bun.spawn([...opts.argv], {
      env: opts.env ?? {},
      cwd: opts.cwd,
      stdin: opts.stdin === undefined ? "ignore" : toBytes(opts.stdin),
      stdout: outFd ?? "pipe",
      stderr: "pipe",
    });
    let timedOut = false;
    let killTimer: ReturnType<typeof setTimeout> | undefined;
    const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => {
      timedOut = true;
      proc.kill("SIGTERM");
      killTimer = setTimeout(() => proc.kill("SIGKILL"), KILL_GRACE_MS);
    }, opts.timeoutMs);
    const [piped, stderr] = await Promise.all([
      outFd === undefined ? readCappedBytes(proc.stdout as ReadableStream<Uint8Array>, max, opts.stdoutInto) : undefined,
      readCapped(proc.stderr, max),
    ]);
    await proc.exited;
    clearTimeout(timer);
    clearTimeout(killTimer);
    const out = outFd === undefined ? piped! : readFileInto(outFd, opts.stdoutInto!, max);
    return {
      code: proc.signalCode ? null : proc.exitCode,
      signal: proc.signalCode ? String(proc.signalCode) : null,
      stdout: opts.stdoutInto ? "" : new TextDecoder().decode(out),
      ...(opts.stdoutInto ? { stdoutBytes: out } : {}),
      stderr,
      timedOut,
      durationMs: performance.now() - started,
    };
  } finally {
    if (outFd !== undefined) closeSync(outFd);
  }
}

/**
 * A new file of our own (O_EXCL, mode 0600) in the temporary folder, unlinked at once so that
 * nothing is left behind: the child writes its stdout there. Undefined when the folder does not
 * take it (stdout then goes through a pipe).
 */
function unlinkedFile(): number | undefined {
  const path = join(tmpdir(), `htcondor-sidecar-${process.pid}-${randomUUID()}.out`);
  let fd: number;
  try {
    fd = openSync(path, "wx+", 0o600);
  } catch {
    return undefined;
  }
  try {
    unlinkSync(path);
  } catch {
    /* left behind: still read and closed */
  }
  return fd;
}

/** The file's first `max` bytes, read into `into` (or a larger buffer). */
function readFileInto(fd: number, into: Uint8Array, max: number): Uint8Array {
  const size = Math.min(fstatSync(fd).size, max);
  const buf = room(into, 0, size);
  let at = 0;
  while (at < size) {
    const n = readSync(fd, buf, at, size - at, at);
    if (n <= 0) break;
    at += n;
  }
  return buf.subarray(0, at);
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

/** Bun takes the TLS material per request, as fetch's `tls` option; its own pool keeps the connections. */
function httpClient(opts: TlsClientOptions): HttpClient {
  checkTlsMaterial(opts);
  const tls = {
    ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
    ...(opts.cert !== undefined ? { cert: opts.cert } : {}),
    ...(opts.key !== undefined ? { key: opts.key } : {}),
  };
  return {
    fetch: (url, init) => fetch(url, { ...init, tls }),
    close: () => {},
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
  watchFolder,
  httpClient,
};
