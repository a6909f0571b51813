/**
 * What every mode of the executable does at start (main.ts picks the mode): the configuration
 * file, the condor tools and how to reach HTCondor, the data folder, a /metrics-only listener,
 * and the end: the exit codes of a usage or configuration error, and a stop on SIGTERM or SIGINT.
 * The sidecar (service/main.ts) and the operator (operator/main.ts) use it; neither imports the other.
 */
import { X509Certificate } from "node:crypto";
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { readCredential } from "./condor/credentials.ts";
import { type Condor, CONDOR_TOOLS, type CondorTool, createCondor } from "./condor/tools.ts";
import { ConfigError, type FileConfig, parseConfig } from "./config.ts";
import { credentialKind, type CredentialSource, credentialState } from "./core/credentials.ts";
import { defaultTokenDirectory } from "./core/idtokens.ts";
import { METRICS_CONTENT_TYPE } from "./core/metrics.ts";
import { type CliOptions, type CondorAccess, condorAccess, UsageError } from "./flags.ts";
import { createLogger, type Logger } from "./logger.ts";
import { type HttpServer, serveHttp } from "./runtime/http.ts";
import type { Runtime } from "./runtime/types.ts";
import { errorText } from "./core/errors.ts";

export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** A usage or configuration error: nothing started, the command line or the file must change. */
export const EXIT_USAGE = 2;
/** Anything else that stops a mode from starting, or a stop that failed. */
export const EXIT_FAILURE = 1;

/** What a mode's start gives back: the exit code of a command that is done, or a running service. */
export type Outcome = number | { stop(): Promise<void> };

/**
 * Runs a mode: an error while it starts is one line on stderr and an exit code (EXIT_USAGE for a
 * UsageError or ConfigError); a running service runs until SIGTERM or SIGINT, then stops (exit 0,
 * or EXIT_FAILURE when its stop fails). The signals are caught before the mode starts: one that
 * arrives while it starts (a supervisor's, the moment "listening" is logged) stops the service once
 * it runs, rather than killing it with the default action.
 */
export async function runMode(runtime: Runtime, io: Io, mode: () => Promise<Outcome>): Promise<void> {
  // deno-lint-ignore prefer-const -- the signal handler below reads it before the mode has started
  let running: { stop(): Promise<void> } | undefined;
  let asked = false;
  let stopping = false;
  const stop = () => {
    asked = true;
    if (!running || stopping) return;
    stopping = true;
    running.stop().then(() => runtime.exit(0), () => runtime.exit(EXIT_FAILURE));
  };
  runtime.onSignal("SIGTERM", stop);
  runtime.onSignal("SIGINT", stop);
  let outcome: Outcome;
  try {
    outcome = await mode();
  } catch (err) {
    io.err(`htcondor-sidecar: ${errorText(err)}`);
    return runtime.exit(err instanceof UsageError || err instanceof ConfigError ? EXIT_USAGE : EXIT_FAILURE);
  }
  if (typeof outcome === "number") return runtime.exit(outcome);
  running = outcome;
  if (asked) stop();
}

export function loadConfig(o: Pick<CliOptions, "config" | "given">): { config: FileConfig; warnings: string[]; dir: string } {
  const path = resolve(o.config);
  const label = o.given.has("config") ? o.config : "SidecarConfig.yaml";
  if (!existsSync(path)) {
    if (o.given.has("config")) throw new ConfigError(`${label}: cannot read the file: it does not exist`);
    return { config: parseConfig(undefined).config, warnings: [`no ${o.config}; using the defaults`], dir: process.cwd() };
  }
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`${label}: cannot read the file: ${errorText(err)}`);
  }
  const { config, warnings } = parseConfig(text, label);
  return { config, warnings, dir: dirname(path) };
}

/** DataRootFolder, a relative one taken from the configuration file's folder. */
export function dataRootOf(config: FileConfig, configDir: string): string {
  return isAbsolute(config.DataRootFolder) ? config.DataRootFolder : resolve(configDir, config.DataRootFolder);
}

/** Finds the directory of the condor tools: --condor-bin, else PATH. Never falls back. */
export function findCondorBin(o: CliOptions, env: Record<string, string>): string {
  const missing = (dir: string) => CONDOR_TOOLS.filter((t) => !isExecutable(join(dir, t)));
  if (o.condorBin) {
    const dir = resolve(o.condorBin);
    const m = missing(dir);
    if (m.length) throw new Error(`HTCondor tools not found in --condor-bin ${dir}: missing ${m.join(", ")}`);
    return dir;
  }
  for (const dir of (env.PATH ?? "").split(delimiter).filter(Boolean)) {
    if (isExecutable(join(dir, "condor_submit"))) {
      const m = missing(dir);
      if (m.length) throw new Error(`HTCondor tools in ${dir} are incomplete: missing ${m.join(", ")}`);
      return dir;
    }
  }
  throw new Error("HTCondor tools not found: condor_submit is not in PATH. Install HTCondor or pass --condor-bin DIR");
}

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * HTCondor fails on a named config file it cannot read, and SSL authentication quietly falls
 * back to anonymous without its certificate: a path that is not there is a usage error now,
 * not a mystery later. The credential (--proxy) may appear later (it is renewed by others).
 */
export function checkFlagPaths(o: CliOptions): void {
  const paths: [string, string | undefined, "file" | "dir"][] = [
    ["condor-config", o.condorConfig, "file"],
    ["cadir", o.cadir, "dir"],
    ["certfile", o.certfile, "file"],
    ["keyfile", o.keyfile, "file"],
    ["token-dir", o.tokenDir, "dir"],
  ];
  for (const [flag, p, kind] of paths) {
    if (p === undefined) continue;
    let st;
    try {
      st = statSync(p);
    } catch {
      throw new UsageError(`--${flag}: ${p} does not exist`);
    }
    if (kind === "dir" ? !st.isDirectory() : !st.isFile()) throw new UsageError(`--${flag}: ${p} is not a ${kind === "dir" ? "directory" : "file"}`);
  }
}

/** The kind of the credential file (core/credentials.ts), or undefined when it cannot be read yet. */
export function credentialFileKind(path: string): "token" | "x509" | undefined {
  try {
    return credentialKind(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * A credential that does not work at start is worth a line in the log: the ping answers 503 until
 * it does, and it may yet appear (others renew it).
 */
export function warnCredentials(credentials: readonly CredentialSource[], uid: number, log: Logger): void {
  for (const c of credentials) {
    const { problem } = credentialState(c, readCredential(c, uid), Date.now(), certificateNotAfter);
    if (problem) log.warn(`${problem}: the ping answers 503 until that changes`);
  }
}

/**
 * `--auth-method` with IDTOKENS and no token named (--token-file, --token-dir): the tools look in
 * HTCondor's default token folder, which the site may not know of. Said once, at start.
 */
function noteDefaultTokenDirectory(o: CliOptions, access: CondorAccess, env: Record<string, string>, uid: number, log: Logger): void {
  const methods = (access.env._condor_SEC_CLIENT_AUTHENTICATION_METHODS ?? "").split(",");
  if (o.tokenFile || o.tokenDir || !methods.some((m) => ["IDTOKENS", "IDTOKEN", "TOKEN", "TOKENS"].includes(m))) return;
  const { dir, rule } = defaultTokenDirectory(env, uid);
  log.warn(
    `--auth-method ${
      methods.join(",")
    } without --token-file or --token-dir: the tools look for IDTOKENS in ${dir} (${rule}; the HTCondor configuration may set SEC_TOKEN_DIRECTORY otherwise)`,
  );
}

/** The notAfter time (epoch ms) of the first certificate in a PEM text, if it has one. */
export function certificateNotAfter(pem: string): number | undefined {
  try {
    return Date.parse(new X509Certificate(pem).validTo);
  } catch {
    return undefined;
  }
}

/** What both modes know once the shared steps are done. */
export interface Prepared {
  config: FileConfig;
  log: Logger;
  /** The process environment, the base of every tool's. */
  env: Record<string, string>;
  /** The folder of the condor tools. */
  bin: string;
  access: CondorAccess;
  /** --spool, else the configuration's Spool. */
  spoolMode: CliOptions["spool"];
  /** Whether jobs are submitted with -spool: the mode, and for `auto` where the schedd is. */
  spool: boolean;
  /** DataRootFolder (not created yet: a mode may still refuse to start). */
  dataRoot: string;
}

/**
 * The shared steps, in the order their errors matter: the configuration file, the logger, the
 * condor tools, the flags' paths, how to reach HTCondor and whether its credentials work,
 * spooling, and where the data folder is. `tokenCopies`: the folder under DataRootFolder for the
 * private copy of --token-file (each mode its own: both may share DataRootFolder).
 */
export function prepare(runtime: Runtime, o: CliOptions, io: Io, tokenCopies: string): Prepared {
  const { config, warnings, dir } = loadConfig(o);
  const log = createLogger({ level: o.logLevel, format: o.logFormat, write: io.err });
  for (const w of warnings) log.warn(w);
  const env = runtime.env();
  const bin = findCondorBin(o, env);
  checkFlagPaths(o);
  const dataRoot = dataRootOf(config, dir);
  const access = condorAccess(o, runtime.hostname(), o.proxy ? credentialFileKind(o.proxy) : undefined, join(dataRoot, tokenCopies));
  for (const w of access.warnings) log.warn(w);
  warnCredentials(access.credentials, runtime.uid(), log);
  noteDefaultTokenDirectory(o, access, env, runtime.uid(), log);
  const spoolMode = o.given.has("spool") ? o.spool : config.Spool;
  const spool = spoolMode === "always" || (spoolMode === "auto" && access.remoteSchedd);
  return { config, log, env, bin, access, spoolMode, spool, dataRoot };
}

/** The condor tools as the configuration says to run them; `onCommand` is told of every run (metrics). */
export function openCondor(runtime: Runtime, p: Prepared, onCommand: (tool: CondorTool, outcome: "ok" | "error" | "timeout", seconds: number) => void): Condor {
  return createCondor({
    runtime,
    bin: p.bin,
    access: p.access,
    baseEnv: p.env,
    submitTimeoutMs: p.config.SubmitTimeoutSeconds * 1000,
    queryTimeoutMs: p.config.QueryTimeoutSeconds * 1000,
    log: p.log,
    onCommand,
  });
}

/** A TCP listener of its own for GET /metrics (Prometheus cannot scrape a unix socket), and nothing else. */
export function serveMetrics(at: { host: string; port: number }, config: FileConfig, render: () => string): Promise<HttpServer> {
  return serveHttp(
    { target: { kind: "tcp", ...at }, bodyLimitBytes: 1024, keepAliveTimeoutMs: config.KeepAliveTimeoutSeconds * 1000 },
    (req) =>
      new URL(req.url).pathname === "/metrics"
        ? new Response(render(), { status: 200, headers: { "content-type": METRICS_CONTENT_TYPE } })
        : new Response("This listener serves GET /metrics only\n", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } }),
  );
}
