/**
 * The contract between the sidecar and the JavaScript runtime it runs on.
 *
 * Only `src/runtime/` knows whether it runs on Bun or Deno; everything else receives a
 * {@link Runtime} from the entry file (`main.bun.ts` / `main.deno.ts`). Only `src/condor/`
 * calls {@link Runtime.spawn}: the sidecar never builds a command line from a string and never
 * invokes a shell.
 */

/** What to run: an argv array, never a command string. */
export interface SpawnOptions {
  /** argv[0] is the executable (absolute path, or a name looked up in PATH). */
  argv: readonly string[];
  /** The complete environment of the child (not merged with ours). */
  env?: Record<string, string>;
  cwd?: string;
  /** Written to the child's stdin, which is then closed. Without it stdin is /dev/null. */
  stdin?: string | Uint8Array;
  /** Kill the child (SIGTERM, then SIGKILL 2 s later) after this many milliseconds. */
  timeoutMs?: number;
  /** Keep at most this many bytes of each of stdout and stderr (default 16 MiB). */
  maxOutputBytes?: number;
  /**
   * Hand stdout over as bytes (`stdoutBytes`, with `stdout` empty), read into this buffer: the
   * result is a view of it, or of a new, larger buffer when the output did not fit. A large
   * answer then never becomes one big string, and a caller that hands the same buffers back
   * allocates nothing per call. On Bun the child writes to an unlinked temporary file rather than
   * a pipe (pipe chunks of a large answer pile up between garbage collections).
   */
  stdoutInto?: Uint8Array;
}

export interface SpawnResult {
  /** Exit code, or null when killed by a signal. */
  code: number | null;
  /** The signal name (e.g. "SIGTERM") when killed by one. */
  signal: string | null;
  stdout: string;
  /** stdout as bytes, when asked for with `stdoutInto`. */
  stdoutBytes?: Uint8Array;
  stderr: string;
  timedOut: boolean;
  durationMs: number;
}

/** A tiny synchronous SQLite surface that both `bun:sqlite` and `node:sqlite` provide. */
export type SqlValue = string | number | bigint | null | Uint8Array;

export interface Sqlite {
  exec(sql: string): void;
  run(sql: string, params?: readonly SqlValue[]): { changes: number };
  get<T>(sql: string, params?: readonly SqlValue[]): T | undefined;
  all<T>(sql: string, params?: readonly SqlValue[]): T[];
  /** Runs fn inside BEGIN IMMEDIATE … COMMIT (ROLLBACK on throw). */
  transaction<T>(fn: () => T): T;
  close(): void;
}

/**
 * TLS material for an HTTPS client, all PEM text. The key is a secret: it goes to the TLS
 * library and nowhere else (no argv, no log, no error reason).
 */
export interface TlsClientOptions {
  /**
   * The certificate authorities to trust. Bun trusts only these; Deno trusts them in addition to
   * its system roots (Deno.createHttpClient offers nothing else; docs/operator.md#tls).
   */
  ca?: string;
  /** A client certificate (X.509 v3) and its private key, sent when the server asks for one. */
  cert?: string;
  key?: string;
}

/** A fetch bound to one TLS configuration, for talking to an API server. */
export interface HttpClient {
  fetch(url: string, init?: RequestInit): Promise<Response>;
  /** Frees the connections this client keeps. */
  close(): void;
}

export interface Runtime {
  readonly name: "bun" | "deno";
  readonly version: string;
  spawn(opts: SpawnOptions): Promise<SpawnResult>;
  openSqlite(path: string): Sqlite;
  /** The process environment (a copy). */
  env(): Record<string, string>;
  hostname(): string;
  /** The effective user id (HTCondor refuses jobs owned by root). */
  uid(): number;
  /** Resident set size of this process in bytes. */
  rss(): number;
  exit(code: number): never;
  onSignal(signal: "SIGTERM" | "SIGINT", fn: () => void): void;
  /**
   * Calls `onChange` when something in folder `dir` changes; returns the function that stops
   * watching. Best effort: a folder that cannot be watched never calls (the caller also polls).
   */
  watchFolder(dir: string, onChange: () => void): () => void;
  /** An HTTPS client with its own trust roots and client certificate (Bun: fetch's `tls`; Deno: createHttpClient). */
  httpClient(tls: TlsClientOptions): HttpClient;
}
